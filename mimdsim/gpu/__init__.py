"""The GPU and systolic-array cost models: kernels (or GEMMs) costed on a device spec. They know
no MIMD chip and no workload; each workload brings its kernel list (``mimdsim/workloads/*/gpu_kernels.py``).

Imported by: workloads (their GPU kernel lists), compare, validation, mimdsim (the package exports
trace_torch and the GPU estimates).
"""
from .model import Kernel, kernel_seconds, workload_estimate
from .systolic import gemm_utilization, systolic_gemm_cycles
# The hardware specs (mimdsim.arch), re-exported; imported last so that the name systolic is the
# function, not the submodule of the same name.
from ..arch.gpu import PRECISIONS, PRESETS, GpuSpec, gpu
from ..arch.systolic import SYSTOLIC_PRESETS, SystolicSpec, systolic

__all__ = ["GpuSpec", "gpu", "PRESETS", "PRECISIONS", "kernel_seconds", "Kernel", "workload_estimate",
           "SystolicSpec", "systolic", "SYSTOLIC_PRESETS", "systolic_gemm_cycles", "gemm_utilization"]
