"""poplin's vertices: the AMP matmul vertex ``ConvPartial1x1Out`` and the partials' reduction, with poplibs'
own estimators (:mod:`.matmul`), and a dense layer costed on it (:mod:`.amp_layer`). Imports the shared
base (tile, codelet registry) only.

Imported by: kernels (the registry; the dense SNN codelets' fp16 products), poplibs, workloads.mlp,
workloads.snn.
"""
from . import amp_layer, matmul  # noqa: F401 (registers the codelets)
