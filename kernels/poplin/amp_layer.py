"""Dense layer on the AMP (Accumulating Matrix Product) unit: ``Y = act(X W + b)``.

One vertex per tile computes its block ``Y[rows, cols] = act(X[rows, :] W[:, cols] + b[cols])``
(the layer's blocks tile Y exactly, so the functional implementation computes the whole layer at
once)::

    amp cycles = poplin.amp_matmul_cycles(rows, depth, cols)     (field rows, depth in, cols out)
    epilogue   = workers · (EPILOGUE_OVERHEAD + ceil(ceil(rows · cols / simd) / workers) · per_vector[act])
                 + vertex_launch_cycles

The product is costed by the simulator's one AMP model, poplibs' own estimator of its AMP
vertex ``ConvPartial1x1Out`` (``getConvPartial1x1SupervisorCycleEstimate``,
``lib/poplin/PerformanceEstimation.hpp``; ``kernels/poplin/matmul.py``), the vertex poplin runs for a
matmul. fp16 multiplies fp16 inputs and accumulates in fp32 (AMP partials), then rounds the layer
output to fp16.
"""
from __future__ import annotations

import numpy as np

from ..codelet import register
from .matmul import amp_matmul_cycles
from ..tile import Tile

EPILOGUE_OVERHEAD = 4  # per worker: pointers and loop setup
# Instructions per output vector (float2 in fp32, half4 in fp16):
EPILOGUE_PER_VECTOR = {
    "relu": 3,  # ld Y co-issued with add bias; max 0; st
    "none": 2,  # ld Y co-issued with add bias; st
    "sigmoid": 1 + 12 + 1 + 4 + 1,  # add bias; exp (12); 1 + e; reciprocal (4); st
}
ACTIVATIONS = tuple(EPILOGUE_PER_VECTOR)
PRECISIONS = ("fp32", "fp16")


def activation(y, act):
    if act == "relu":
        return np.maximum(y, 0)
    if act == "sigmoid":
        return 1 / (1 + np.exp(-y))
    return y


def amp_layer(X, W, b, act="relu", precision="fp32"):
    """``act(X W + b)`` of the whole layer (all tiles' blocks at once)."""
    if precision == "fp16":
        x, w, bb = (np.asarray(a, dtype=np.float16).astype(np.float32) for a in (X, W, b))
        return activation(x @ w + bb, act).astype(np.float16)
    return activation(np.asarray(X, np.float32) @ np.asarray(W, np.float32) + np.asarray(b, np.float32),
                      act).astype(np.float32)


def epilogue_cycles(rows, cols, tile: Tile, act="relu", precision="fp32"):
    """Bias and activation over the tile's ``rows x cols`` outputs, vectors split over the workers."""
    n = np.asarray(rows) * np.asarray(cols)
    vec = -(-n // (tile.simd_fp16 if precision == "fp16" else tile.simd_fp32))
    per_worker = -(-vec // tile.workers)
    cyc = tile.workers * (EPILOGUE_OVERHEAD + per_worker * EPILOGUE_PER_VECTOR[act]) + tile.vertex_launch_cycles
    return np.where(n > 0, cyc, 0).astype(np.float64)


def amp_layer_cycles(rows, cols, depth, tile: Tile, act="relu", precision="fp32"):
    """The dense-layer vertex: poplin's AMP product, then the epilogue."""
    return amp_matmul_cycles(rows, depth, cols, tile, precision) + epilogue_cycles(rows, cols, tile, act, precision)


def _layer_cost(tiles, g, work, tile):
    return tiles, amp_layer_cycles(g["rows"], g["cols"], g["depth"], tile, g["act"], g["precision"])


AMP_LAYER = register("amp_layer", amp_layer_cycles, code_bytes=1024, cost=_layer_cost, static=True)
