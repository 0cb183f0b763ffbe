"""An element-wise neuron update spread over tiles, as popops runs element-wise ops on a
linearly mapped tensor: each tile updates its ``elements`` (batch x neuron entries), the
vectors split over the workers.

The instruction counts per vector are the neuron zoo's own (``kernels.mimdsim_snn.lif.forward_update_instructions``
forward; ``kernels.mimdsim_snn.bptt.backward_instructions`` backward: ``carry`` per vector plus the
surrogate's ``own`` per element), so a model costs on this program what its update costs in
the other programs. Per worker::

    MAP_WORKER_OVERHEAD + ceil(vectors / workers) per_vector + ceil(elements / workers) per_element

and the tile ``workers x (run + busiest worker) + vertex_launch_cycles`` (the barrel model).
``MAP_WORKER_OVERHEAD`` is poplibs' per-worker entry cost of its 1D element-wise vertices
(``broadcastArithmetic1DCycleEstimate``: 20 + loops x cycles per loop).
"""
from __future__ import annotations

import numpy as np

from ..codelet import register
from ..tile import VERTEX_RUN_INSTRUCTIONS, Tile

MAP_WORKER_OVERHEAD = 20  # poplibs lib/popops/popopsCycleEstimators.cpp broadcastArithmetic1DCycleEstimate: 20


def neuron_map_cycles(elements, per_vector, per_element, tile: Tile):
    """Cycles per tile of the element-wise update of ``elements[v]`` entries."""
    e = np.asarray(elements, dtype=np.int64)
    W = tile.workers
    vec_w = -(-(-(-e // tile.simd)) // W)
    el_w = -(-e // W)
    busiest = MAP_WORKER_OVERHEAD + vec_w * np.asarray(per_vector) + el_w * np.asarray(per_element)
    cyc = W * (VERTEX_RUN_INSTRUCTIONS + busiest) + tile.vertex_launch_cycles
    return np.where(e > 0, cyc, 0).astype(np.float64)


def _map_cost(tiles, g, work, tile):
    e = np.broadcast_to(np.asarray(g["elements"]), np.shape(tiles))
    return tiles, neuron_map_cycles(e, g["per_vector"], g.get("per_element", 0), tile)


NEURON_MAP = register("popops.neuron_map", neuron_map_cycles, code_bytes=1024, cost=_map_cost, static=True)
