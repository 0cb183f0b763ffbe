"""Reports: one schema for MIMD chips, GPU models and systolic arrays; tables and JSON."""
from .report import KINDS, PHASES, Report, empty_cycles

__all__ = ["Report", "KINDS", "PHASES", "empty_cycles"]
