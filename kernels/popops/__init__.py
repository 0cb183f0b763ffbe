"""popops' vertices (and poprand's ``uniform``), costed with poplibs' own estimators: the programs the
published sparse-BPTT op and ``mimdsim op`` call (:mod:`.vertices`), and a neuron update run as a popops
element-wise map (:mod:`.neuron_map`). Imports the shared base only.

Imported by: kernels (the registry), poplibs, workloads.kalman.
"""
from . import neuron_map, vertices  # noqa: F401 (registers the codelets)
