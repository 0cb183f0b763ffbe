"""Reports: one schema for MIMD chips and GPU models; tables and JSON."""
from .report import KINDS, Report

__all__ = ["Report", "KINDS"]
