"""Sparse BPTT on a neuron tile: surrogate scatter, weight gradients, input-spike gradients.

Per layer and reverse timestep t (Finkbeiner et al. 2024, ``reference/algorithms.md`` §1)::

    dU[b, i]  = alpha * dU[b, i]                                     (carry from t + 1)
    dU[b, j] += dS[b, k] * sg(U_t[b, j]),  j = ids[b, k], k < listed[b]
    dI[b, i]  = c * (1 - alpha) * dU[b, i]
    dW_w[j, i] += dI[b, i]   for every actual input spike j of sample b (w = worker of b)
    P[b, k, p] = sum_{i on tile p} W[in_ids[b, k], i] * dI[b, i],  k < in_listed[b]

with the SuperSpike surrogate ``sg(U) = 1 / (beta |U - theta1| + 1)^2``. P is then
reduced over the tiles (``kernels.reduce``) into the previous layer's dS.
"""
from __future__ import annotations

import numba
import numpy as np

from .codelet import register
from .tile import Tile, barrel_cycles, per_worker, vectors


@numba.njit(cache=True)
def surrogate_scatter(dU, dS, ids, listed, U_t, alpha, c, theta1, beta, dI):
    """In place: carry ``dU`` by alpha, add surrogate gradients of listed ids, write ``dI``."""
    B, n = dU.shape
    one = U_t.dtype.type(1)
    for b in range(B):
        for i in range(n):
            dU[b, i] = alpha * dU[b, i]
        for k in range(listed[b]):
            j = ids[b, k]
            x = beta * abs(U_t[b, j] - theta1) + one
            dU[b, j] += dS[b, k] / (x * x)
        for i in range(n):
            dI[b, i] = c * (one - alpha) * dU[b, i]


@numba.njit(cache=True)
def weight_grad(dW_copies, worker, in_ids, in_spikes, dI):
    """Add ``dI[b]`` into row j of worker ``worker[b]``'s copy for each input spike j."""
    B, n = dI.shape
    for b in range(B):
        w = worker[b]
        for k in range(in_spikes[b]):
            row = dW_copies[w, in_ids[b, k]]
            for i in range(n):
                row[i] += dI[b, i]


@numba.njit(cache=True)
def input_grad_partials(W, in_ids, in_listed, dI, tile_starts, P):
    """Per-tile partial dot products ``P[b, k, p]`` (tile p holds neurons tile_starts[p]:[p+1])."""
    B = dI.shape[0]
    tiles = tile_starts.shape[0] - 1
    for b in range(B):
        for k in range(P.shape[1]):
            for p in range(tiles):
                P[b, k, p] = 0
        for k in range(in_listed[b]):
            row = W[in_ids[b, k]]
            for p in range(tiles):
                s = row[0] * 0
                for i in range(tile_starts[p], tile_starts[p + 1]):
                    s += row[i] * dI[b, i]
                P[b, k, p] = s


# Instruction counts per sample (see docs/cost-model.md).
SCATTER_SAMPLE_OVERHEAD = 10
CARRY_PER_VECTOR = 5  # ld64 dU; mul alpha; st64 dU; mul c(1-alpha); st64 dI
SCATTER_SCAN_PER_ID = 3  # every listed id is checked: ld16 id; sub tile base; cmp+branch
SCATTER_OWN_PER_ID = 15  # id->U addr; ld U; sub theta1; abs; mul beta; add 1; square; recip (4); mul dS; ld dU; add; st dU
ROW_OVERHEAD = 4  # ld16 id; row address; loop branch
WGRAD_SAMPLE_OVERHEAD = 6  # pick the worker's copy; list pointer and count; loop setup
INPUT_GRAD_SAMPLE_OVERHEAD = 6  # list pointer and count; partials pointer; loop setup
WGRAD_PER_VECTOR = 3  # ld64 copy row; f32v2add (co-issued load of dI); st64
DOT_PER_VECTOR = 1  # ld64 w co-issued with f32v2mac into a register accumulator
DOT_FINISH = 3  # horizontal add of the two lanes; st partial


def surrogate_scatter_cycles(n_local, listed, own_listed, tile: Tile):
    """``n_local[v]``, ``listed[B]`` ids in the list, ``own_listed[v, B]`` of them on tile v.

    instructions(b) = overhead + vec * CARRY + listed[b] * SCAN + own_listed[v, b] * OWN
    """
    n_vec = vectors(n_local, tile)[:, None]
    instr = (SCATTER_SAMPLE_OVERHEAD + n_vec * CARRY_PER_VECTOR
             + np.asarray(listed)[None, :] * SCATTER_SCAN_PER_ID
             + np.asarray(own_listed) * SCATTER_OWN_PER_ID)
    return barrel_cycles(per_worker(instr, tile.workers), tile)


def weight_grad_cycles(n_local, in_spikes, tile: Tile):
    """instructions(b) = WGRAD_SAMPLE_OVERHEAD + in_spikes[b] * (ROW_OVERHEAD + vec * WGRAD_PER_VECTOR)."""
    n_vec = vectors(n_local, tile)[:, None]
    instr = WGRAD_SAMPLE_OVERHEAD + np.asarray(in_spikes)[None, :] * (ROW_OVERHEAD + n_vec * WGRAD_PER_VECTOR)
    return barrel_cycles(per_worker(instr, tile.workers), tile)


def input_grad_cycles(n_local, in_listed, tile: Tile):
    """instructions(b) = INPUT_GRAD_SAMPLE_OVERHEAD + in_listed[b] * (ROW_OVERHEAD + vec * DOT_PER_VECTOR + DOT_FINISH).

    One float2 accumulator per dot product, whatever the tile's neuron count.
    """
    n_vec = vectors(n_local, tile)[:, None]
    instr = INPUT_GRAD_SAMPLE_OVERHEAD + np.asarray(in_listed)[None, :] * (ROW_OVERHEAD + n_vec * DOT_PER_VECTOR + DOT_FINISH)
    return barrel_cycles(per_worker(instr, tile.workers), tile)


SURROGATE_SCATTER = register("surrogate_scatter", surrogate_scatter_cycles, code_bytes=1024)
WEIGHT_GRAD = register("weight_grad", weight_grad_cycles, code_bytes=512)
INPUT_GRAD = register("input_grad", input_grad_cycles, code_bytes=512)
