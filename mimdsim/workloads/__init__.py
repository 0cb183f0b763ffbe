"""Workloads beyond SNN training: Kalman-filter track fitting and dense networks (MLPs) on a
MIMD chip, with GPU and CPU estimates of the same work (``reference/algorithms.md`` §4;
docs/workloads.md)."""
from .compare import WORKLOADS, WorkloadComparison, compare_kalman, compare_mlp
from .cpu import kalman_estimate as cpu_kalman
from ..arch.cpu import CpuSpec, cpu  # the hardware spec, re-exported; binds the name cpu to the function
from .kalman import KalmanRun, kalman, synthetic_tracks
from .mlp import MlpRun, mlp

__all__ = ["kalman", "KalmanRun", "synthetic_tracks", "mlp", "MlpRun", "CpuSpec", "cpu", "cpu_kalman",
           "compare_kalman", "compare_mlp", "WorkloadComparison", "WORKLOADS"]
