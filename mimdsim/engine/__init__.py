"""The engine: runs any compiled program against its work source; costs through the codelet
registry and the fabric model (``run.py``), every charge handed to one recorder (``recorder.py``).
Knows no network, neuron or workload."""
from .run import WorkSource, memory_summary, run_program

__all__ = ["run_program", "WorkSource", "memory_summary"]
