"""Reports: one schema for MIMD chips, GPU models and systolic arrays; tables and JSON."""
from .report import KINDS, PHASES, JsonOutput, Report, empty_cycles

__all__ = ["Report", "JsonOutput", "KINDS", "PHASES", "empty_cycles"]
