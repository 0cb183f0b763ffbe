"""Models. Knows no hardware."""
from .network import LIFParams, Network, capacity_for

__all__ = ["Network", "LIFParams", "capacity_for"]
