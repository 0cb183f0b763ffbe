"""SIMD (GPU) and systolic-array cost models of the same training step. Know no MIMD chip."""
from .estimate import estimate, kernel_seconds
from .kernels import STRATEGIES, Kernel, training_step_kernels
from .systolic import gemm_utilization, systolic_gemm_cycles
from .systolic_estimate import systolic_estimate
# The hardware specs (mimdsim.arch), re-exported; imported last so that the name systolic is the
# function, not the submodule of the same name.
from ..arch.gpu import PRECISIONS, PRESETS, GpuSpec, gpu
from ..arch.systolic import SYSTOLIC_PRESETS, SystolicSpec, systolic

__all__ = ["GpuSpec", "gpu", "PRESETS", "PRECISIONS", "estimate", "kernel_seconds", "STRATEGIES", "Kernel",
           "training_step_kernels", "SystolicSpec", "systolic", "SYSTOLIC_PRESETS", "systolic_gemm_cycles",
           "gemm_utilization", "systolic_estimate"]
