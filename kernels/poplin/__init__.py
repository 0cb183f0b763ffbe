"""poplin's vertices: the AMP matmul vertex ``ConvPartial1x1Out`` and the partials' reduction, with poplibs'
own estimators (:mod:`.matmul`), and a dense layer costed on it (:mod:`.amp_layer`). Imports the shared
base (tile, codelet registry) only."""
from . import amp_layer, matmul  # noqa: F401 (registers the codelets)
