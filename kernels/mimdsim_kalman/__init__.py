"""mimdsim's own Kalman track-fitting codelet: a register-resident worker loop, scalar and float2 variants
(:mod:`.track_fit`). Imports the shared base only.

Imported by: kernels (the registry; TRACKR's codelet reads its instruction mixes), workloads.kalman.
"""
from . import track_fit  # noqa: F401 (registers the codelets)
