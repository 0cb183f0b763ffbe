"""Optimizer updates, element-wise on each neuron tile's weights (all tiles at once).

SGD:  w -= lr * g
Adam: m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;
      w -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
"""
from __future__ import annotations

import numpy as np

from ..codelet import register
from ..tile import Tile


def sgd_step(w, g, lr):
    w -= np.asarray(lr, dtype=w.dtype) * g.astype(w.dtype)


def adam_step(w, g, m, v, step, lr, b1, b2, eps):
    g = g.astype(w.dtype)
    m *= b1
    m += (1 - b1) * g
    v *= b2
    v += (1 - b2) * g * g
    mhat = m / (1 - b1 ** step)
    vhat = v / (1 - b2 ** step)
    w -= (lr * mhat / (np.sqrt(vhat) + eps)).astype(w.dtype)


# Instructions per float2 vector of weights (see docs/cost-model.md); both zero the
# per-worker gradient copies for the next step (ZERO_COPIES_PER_VECTOR).
SGD_PER_VECTOR = 4  # ld w; ld g; f32v2axpy; st w
ADAM_PER_VECTOR = 23  # ld w,g,m,v (4); m: 2 mul + add (3); v: g*g, 2 mul, add (4); sqrt (2); add eps; div (4); mul lr; sub; st w,m,v (3)
ZERO_COPIES_PER_VECTOR = 1  # st64 zero per copy
OPTIMIZER_OVERHEAD = 6  # per worker: pointers, bias-corrected step size, loop setup
OPTIMIZERS = {"sgd": SGD_PER_VECTOR, "adam": ADAM_PER_VECTOR}


def optimizer_cycles(elements, kind, copies, tile: Tile):
    """Vectors of ``elements[v]`` weights split over the workers; per vector the update
    plus zeroing ``copies`` gradient copies."""
    n_vec = -(-np.asarray(elements) // tile.simd)
    per_worker_vec = -(-n_vec // tile.workers)
    instr = OPTIMIZER_OVERHEAD + per_worker_vec * (OPTIMIZERS[kind] + copies * ZERO_COPIES_PER_VECTOR)
    return tile.workers * instr + tile.vertex_launch_cycles


def sgd_cycles(elements, copies, tile: Tile):
    """SGD: SGD_PER_VECTOR + copies * ZERO_COPIES_PER_VECTOR instructions per weight vector."""
    return optimizer_cycles(elements, "sgd", copies, tile)


def adam_cycles(elements, copies, tile: Tile):
    """Adam: ADAM_PER_VECTOR + copies * ZERO_COPIES_PER_VECTOR instructions per weight vector."""
    return optimizer_cycles(elements, "adam", copies, tile)


def _sgd_cost(tiles, g, work, tile):
    return tiles, sgd_cycles(g["elements"], g["copies"], tile)


def _adam_cost(tiles, g, work, tile):
    return tiles, adam_cycles(g["elements"], g["copies"], tile)


SGD = register("sgd", sgd_cycles, code_bytes=256, cost=_sgd_cost, static=True)
ADAM = register("adam", adam_cycles, code_bytes=768, cost=_adam_cost, static=True)
