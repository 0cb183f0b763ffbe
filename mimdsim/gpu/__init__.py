"""The GPU and systolic-array cost models: kernels (or GEMMs) costed on a device spec. They know
no MIMD chip and no workload; each workload brings its kernel list (``mimdsim/workloads/*/gpu.py``)."""
from .model import Kernel, kernel_seconds, workload_estimate
from .spec import PRECISIONS, PRESETS, GpuSpec, gpu
from .systolic import SYSTOLIC_PRESETS, SystolicSpec, gemm_utilization, systolic, systolic_gemm_cycles

__all__ = ["GpuSpec", "gpu", "PRESETS", "PRECISIONS", "kernel_seconds", "Kernel", "workload_estimate",
           "SystolicSpec", "systolic", "SYSTOLIC_PRESETS", "systolic_gemm_cycles", "gemm_utilization"]
