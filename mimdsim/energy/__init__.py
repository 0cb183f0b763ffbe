"""Energy beside throughput: an activity-based model per architecture (``docs/energy.md``).

Reads a :class:`~mimdsim.report.Report`'s counts (``Report.activity``) and the hardware spec;
every constant is in :mod:`.constants` with its source and range.

Imported by: workloads (each run's report gets its energy), compare.
"""
from .chip import chip_energy
from .constants import CONSTANTS, Constant, constant, power_limits
from .gpu import gpu_energy, kernel_activity
from .summary import COMPONENTS
from .systolic import gemm_sram_bytes, systolic_energy

__all__ = ["CONSTANTS", "COMPONENTS", "Constant", "constant", "power_limits", "chip_energy", "gpu_energy",
           "kernel_activity", "systolic_energy", "gemm_sram_bytes"]
