"""The published sparse-BPTT op's own C++ vertices (github jrfinkbeiner/graphcore_snn), counted from its
source as popc emits them (:mod:`.vertices`). Imports the shared base only.

Imported by: kernels (the registry imports every group), workloads.snn (the published program).
"""
from . import vertices  # noqa: F401 (registers the codelets)
