"""ttnn's kernels on a Tensix core, as cost estimators: each core runs a reader, a compute and a writer
kernel joined by circular buffers in its L1 (:mod:`.dataflow`). Imports the shared base (codelet
registry) only; the rates of the core arrive in the vertex set's geometry from the lowering
(``mimdsim.tensix``), since a Tensix core is not an IPU tile.

Imported by: kernels (the registry), tensix.
"""
from . import dataflow  # noqa: F401 (registers the codelets)
