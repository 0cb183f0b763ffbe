"""TRACKR's Kalman codelet as built (lohedges/trackr ``KalmanFilterCodelet.cpp``), counted call by call
(:mod:`.kalman_filter`). Imports the shared base and mimdsim_kalman's instruction mixes.

Imported by: kernels (the registry), workloads.kalman.
"""
from . import kalman_filter  # noqa: F401 (registers the codelets)
