"""The workloads, one folder each: the SNN training step (``snn/``), Kalman-filter track fitting
(``kalman/``) and dense networks (MLPs, ``mlp/``) on a MIMD chip, with GPU and CPU estimates of the same
work (docs/workloads.md). Each folder declares itself in its ``workload.py`` (settings rows, build, run,
compare, validation sources) and :mod:`.registry` lists them once; :mod:`.compare` compares the Kalman
and MLP workloads across machines. (The package's own ``__init__`` loads every module first, so the
settings table reading the declarations loads nothing it would not anyway.)

Imported by: config (the registry and the declarations: data only), compare, sweep, training,
validation, cli, trace_seed, mimdsim (the package exports simulate, compare and the other workloads).
"""
from .compare import WorkloadComparison, compare_kalman, compare_mlp
from .kalman.cpu import kalman_estimate as cpu_kalman, trackr_cpu_estimate as trackr_cpu
from .kalman.program import KalmanRun, kalman, synthetic_tracks
from .mlp.program import MlpRun, mlp
from .registry import WORKLOADS
from ..arch.cpu import CpuSpec, cpu  # the hardware spec, re-exported

__all__ = ["kalman", "KalmanRun", "synthetic_tracks", "mlp", "MlpRun", "CpuSpec", "cpu", "cpu_kalman", "trackr_cpu",
           "compare_kalman", "compare_mlp", "WorkloadComparison", "WORKLOADS"]
