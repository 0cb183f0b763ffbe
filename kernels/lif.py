"""Sparse LIF forward: gather-sum of weight rows for the active input ids + state update.

Equations (Finkbeiner et al. 2024; ``reference/algorithms.md`` §1)::

    I[b, i] = sum_{k < n_spk[b]} W[ids[b, k], i]
    U[b, i] = alpha * U_prev[b, i] * (1 - H(U_prev[b, i] - theta1)) + c * (1 - alpha) * I[b, i]

One vertex per neuron tile; the batch is split over the workers in contiguous blocks.
"""
from __future__ import annotations

import numba
import numpy as np

from .codelet import register
from .tile import Tile, barrel_cycles, per_worker, vectors


@numba.njit(cache=True)
def lif_forward(W, U_prev, in_ids, in_spikes, alpha, c, theta1, U_out):
    """Fill ``U_out[B, n]`` from ``U_prev`` and the input spike lists (ids, counts)."""
    B, n = U_prev.shape
    scale = c * (1 - alpha)
    for b in range(B):
        for i in range(n):
            U_out[b, i] = 0
        for k in range(in_spikes[b]):
            row = W[in_ids[b, k]]
            for i in range(n):
                U_out[b, i] += row[i]
        for i in range(n):
            u = U_prev[b, i]
            keep = alpha * u if u <= theta1 else u * 0
            U_out[b, i] = keep + scale * U_out[b, i]


# Instruction counts of the worker loop, per sample (see docs/cost-model.md):
SAMPLE_OVERHEAD = 10  # load list pointer and counts, set up U/history pointers, loop
ROW_OVERHEAD = 4  # ld16 id; row address (mul + add); loop branch
ROW_PER_VECTOR_REG = 1  # ld64 weights co-issued with f32v2add into a register accumulator
ROW_PER_VECTOR_MEM = 3  # accumulator too large for registers: ld64 acc, ld64 w || add, st64 acc
ACCUMULATOR_VECTORS = 4  # float2 registers available for accumulators
UPDATE_PER_VECTOR = 10  # ld U; cmp theta1; mask; mul alpha; mul scale*I; add; st U; st history; flags (2 cmp)


def row_cost_per_vector(n_vec):
    return np.where(np.asarray(n_vec) <= ACCUMULATOR_VECTORS, ROW_PER_VECTOR_REG, ROW_PER_VECTOR_MEM)


def lif_forward_cycles(n_local, in_spikes, tile: Tile):
    """Cycles per vertex: ``n_local[v]`` neurons on the tile, ``in_spikes[B]`` active inputs.

    instructions(b) = SAMPLE_OVERHEAD + in_spikes[b] * (ROW_OVERHEAD + vec * row_cost)
                      + vec * UPDATE_PER_VECTOR,   vec = ceil(n_local / simd)
    """
    n_vec = vectors(n_local, tile)[:, None]
    instr = (SAMPLE_OVERHEAD + np.asarray(in_spikes)[None, :] * (ROW_OVERHEAD + n_vec * row_cost_per_vector(n_vec))
             + n_vec * UPDATE_PER_VECTOR)
    return barrel_cycles(per_worker(instr, tile.workers), tile)


LIF_FORWARD = register("lif_forward", lif_forward_cycles, code_bytes=1024)
