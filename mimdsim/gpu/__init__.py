"""SIMD (GPU) and systolic-array cost models of the same training step. Know no MIMD chip."""
from .estimate import estimate, kernel_seconds
from .kernels import STRATEGIES, Kernel, training_step_kernels
from .systolic import SYSTOLIC_PRESETS, SystolicSpec, gemm_utilization, systolic, systolic_gemm_cycles
from .systolic_estimate import systolic_estimate
# The hardware spec (mimdsim.arch), re-exported.
from ..arch.gpu import PRECISIONS, PRESETS, GpuSpec, gpu

__all__ = ["GpuSpec", "gpu", "PRESETS", "PRECISIONS", "estimate", "kernel_seconds", "STRATEGIES", "Kernel",
           "training_step_kernels", "SystolicSpec", "systolic", "SYSTOLIC_PRESETS", "systolic_gemm_cycles",
           "gemm_utilization", "systolic_estimate"]
