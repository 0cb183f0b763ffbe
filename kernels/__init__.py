"""Codelets: tile programs, each with a functional implementation (numba/numpy, all
vertices at once), a cycle estimator and a memory footprint. Codelets know a tile,
never a chip.

Imported by: assumptions, optim, snn (the model's numerics), compiler, engine, energy, gpu, poplibs,
workloads, training.
"""
from . import (amp, bptt, dense_snn, graphcore_snn, kalman, lif, loss, optim, poplibs, poplin,  # noqa: F401
                popops_map, reduce, spikes, trackr)  # (registers the codelets)
from .codelet import CODELETS, Codelet
from .tile import Tile

__all__ = ["CODELETS", "Codelet", "Tile"]
