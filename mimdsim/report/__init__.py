"""Reports: one schema for MIMD chips, GPU models and systolic arrays; tables and JSON; comparisons.

Imported by: engine, energy, gpu, workloads, compare, sweep, training, validation, cli.
"""
from .comparison import Comparison
from .report import KINDS, PHASES, JsonOutput, Report, empty_cycles

__all__ = ["Report", "JsonOutput", "Comparison", "KINDS", "PHASES", "empty_cycles"]
