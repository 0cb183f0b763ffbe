"""Codelets: tile programs, each with a functional implementation (numba/numpy, all
vertices at once), a cycle estimator and a memory footprint. Codelets know a tile,
never a chip.

Grouped by the library their vertices come from, as poplibs groups its own: poplin/, popops/ (poplibs),
graphcore_snn/ (the published sparse-BPTT op), trackr/ (TRACKR's Kalman codelet), ttnn/ (a Tensix core's reader,
compute and writer kernels), and mimdsim's own mimdsim_snn/ and mimdsim_kalman/; the shared base (tile.py, codelet.py, assumed.py, _jit.py) sits here.

Imported by: assumptions, optim, snn (the model's numerics), compiler, engine, energy, gpu, poplibs,
workloads, training.
"""
from . import graphcore_snn, mimdsim_kalman, mimdsim_snn, poplin, popops, trackr, ttnn  # noqa: F401 (registers the codelets)
from .codelet import CODELETS, Codelet
from .tile import Tile

__all__ = ["CODELETS", "Codelet", "Tile"]
