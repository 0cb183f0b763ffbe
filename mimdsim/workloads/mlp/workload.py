"""MLP inference as a registered workload (:mod:`mimdsim.workloads.registry`): its settings, built
into :func:`~mimdsim.workloads.compare.compare_mlp`'s arguments.

Data only (see :mod:`mimdsim.workloads.declaration`): it imports nothing that runs.
"""
from __future__ import annotations

from ...setting import Rows, Setting
from ..declaration import Workload

SIZES = (
    Setting("workload.mlp_layers", "--mlp-layers", "int_list", [1800, 128, 128, 1],
            "mlp: layer sizes, input first (batch: --batch)", commands=("compare",)),
)

WORKLOAD = Workload(
    "mlp", "MLP inference",
    settings=(Rows(SIZES, after="workload.batches"),),
    build="mimdsim.workloads.compare:mlp_from_settings",
    run="mimdsim.workloads.mlp.program:mlp",
    compare="mimdsim.workloads.compare:compare_mlp",
    reads=("model.batch", "gpu.precision"),
    hints={"run.precision": "the MLP runs the chip and the GPU in --precision's format"},
)
