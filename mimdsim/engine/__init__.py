"""The engine: runs any compiled program against its work source; costs through the codelet
registry and the fabric model (``run.py``), every charge handed to one recorder (``recorder.py``).
Knows no network, neuron or workload.

Imported by: energy (its band), gpu (the band of its microbenchmark checks), poplibs, tensix, workloads, compare;
never by the codelets, the specs or the model.
"""
from .run import WorkSource, loop_cycles, memory_summary, run_program

__all__ = ["run_program", "loop_cycles", "WorkSource", "memory_summary"]
