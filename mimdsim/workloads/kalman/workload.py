"""Kalman-filter track fitting as a registered workload (:mod:`mimdsim.workloads.registry`): its
settings, built into :func:`~mimdsim.workloads.compare.compare_kalman`'s arguments, and the stored
measurements of TRACKR it is checked against.

Data only (see :mod:`mimdsim.workloads.declaration`): it imports nothing that runs.
"""
from __future__ import annotations

from ...setting import Rows, Setting
from ..declaration import Source, Workload

TRACKS = (
    Setting("workload.tracks_per_tile", "--tracks-per-tile", "int", 408, "kalman: tracks on each tile",
            commands=("compare",)),
    Setting("workload.planes", "--planes", "int", 5, "kalman: detector planes per track", commands=("compare",)),
    Setting("workload.variant", "--variant", "str", "vectorised", "kalman: codelet variant",
            choices=("scalar", "vectorised"), commands=("compare",)),
    Setting("workload.covariance", "--covariance", "str", "shared",
            "kalman: one covariance pass per worker (shared) or per track", choices=("shared", "per-track"),
            commands=("compare",)),
)

CPU = (
    Setting("workload.cpu", "--cpu", "str", "i7-9750h", "kalman: CPU preset, or none", commands=("compare",)),
    Setting("workload.cpu_cores", "--cpu-cores", "int", None, "kalman: CPU cores used (default: all)",
            commands=("compare",)),
)

WORKLOAD = Workload(
    "kalman", "Kalman track fitting",
    settings=(Rows(TRACKS, after="workload.name"), Rows(CPU, after="workload.batches")),
    build="mimdsim.workloads.compare:kalman_from_settings",
    run="mimdsim.workloads.kalman.program:kalman",
    compare="mimdsim.workloads.compare:compare_kalman",
    reads=("run.schedule",),
    bounds={"workload.tracks_per_tile": (1, None, False, "each tile fits at least one track"),
            "workload.cpu_cores": (1, None, False, "a CPU has at least one core")},
    validation=(Source("trackr", "chip", "mimdsim.validation:trackr_points"),
                Source("trackr-cpu", "cpu", "mimdsim.validation:trackr_cpu_points")),
)
