"""Workloads beyond SNN training: Kalman-filter track fitting and dense networks (MLPs) on a
MIMD chip, with GPU and CPU estimates of the same work (``reference/algorithms.md`` §4;
docs/workloads.md).

Imported by: compare, sweep, training, validation, cli, trace_seed, mimdsim (the package exports simulate,
compare and the other workloads).
"""
from .compare import WorkloadComparison, compare_kalman, compare_mlp
from .kalman.cpu import kalman_estimate as cpu_kalman, trackr_cpu_estimate as trackr_cpu
from .kalman.program import KalmanRun, kalman, synthetic_tracks
from .mlp.program import MlpRun, mlp
from .registry import WORKLOADS
from ..arch.cpu import CpuSpec, cpu  # the hardware spec, re-exported

__all__ = ["kalman", "KalmanRun", "synthetic_tracks", "mlp", "MlpRun", "CpuSpec", "cpu", "cpu_kalman", "trackr_cpu",
           "compare_kalman", "compare_mlp", "WorkloadComparison", "WORKLOADS"]
