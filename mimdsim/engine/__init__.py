"""The engine: runs any compiled program against its work source; costs through the codelet
registry and the fabric model. Knows no network, neuron or workload."""
from .run import WorkSource, memory_summary, run_program

__all__ = ["run_program", "WorkSource", "memory_summary"]
