"""Hardware specifications (chips, systems, GPUs and their host CPUs, systolic arrays, CPUs) with presets.
Knows no model.

Imported by: assumptions, config, program, energy, gpu, poplibs, tensix, workloads, compare, sweep, training,
validation, cli, mimdsim (the package exports the presets).
"""
from .chip import PRESETS, ChipSpec, SystemSpec, as_system, chip, chip_description, system
from .cpu import CpuSpec, cpu
from .gpu import GpuSpec, gpu, gpu_description
from .host import HostSpec, default_host, host
from .systolic import SystolicSpec, systolic
from .tensix import TensixSpec  # registers the Tensix family (a preset name picks it)

__all__ = ["ChipSpec", "SystemSpec", "PRESETS", "chip", "chip_description", "system", "as_system",
           "GpuSpec", "gpu", "gpu_description", "SystolicSpec", "systolic", "CpuSpec", "cpu",
           "HostSpec", "host", "default_host", "TensixSpec"]
