"""Reductions: cross-tile partial sums (two stages) and per-worker gradient copies.

Cross-tile: the input-spike gradient partials ``P[b, k, p]`` of a layer's tiles are
summed in groups (stage 1, on one tile per group and sample) and the group sums are
summed again (stage 2, one tile per sample) into ``dS[b, k]``.
"""
from __future__ import annotations

import numpy as np

from ..codelet import register
from ..tile import Tile, deal_jobs


def reduce_groups(P, group_starts):
    """Sum ``P[..., p]`` over consecutive groups of tiles starting at ``group_starts``."""
    return np.add.reduceat(P, group_starts, axis=-1)


def reduce_copies(dW_copies):
    """Sum the per-worker gradient copies ``[workers, n_in, n]`` into one gradient."""
    out = dW_copies[0].copy()
    for w in range(1, dW_copies.shape[0]):  # a fixed, small number of workers
        out += dW_copies[w]
    return out


# Instruction counts (see docs/cost-model.md).
REDUCE_JOB_OVERHEAD = 8
REDUCE_PER_VECTOR = 1  # ld64 co-issued with f32v2add
REDUCE_STORE_PER_VECTOR = 1
COPIES_PER_VECTOR_PER_COPY = 1  # ld64 co-issued with f32v2add per extra copy
COPIES_STORE_PER_VECTOR = 2  # st64 result; pointer bump
COPIES_OVERHEAD = 6  # per worker: pointers to the copies, loop setup


def partial_reduce_instructions(inputs, length, tile: Tile):
    """One single-worker job sums ``inputs`` vectors of ``length`` floats:
    instructions = overhead + (inputs * PER_VECTOR + STORE) * ceil(length / simd)"""
    n_vec = -(-int(length) // tile.simd)
    return REDUCE_JOB_OVERHEAD + (np.asarray(inputs) * REDUCE_PER_VECTOR + REDUCE_STORE_PER_VECTOR) * n_vec


def partial_reduce_cycles(job_tiles, inputs, length, tile: Tile):
    """(tiles, cycles): one job per (sample, group), dealt to the workers of its tile."""
    return deal_jobs(job_tiles, partial_reduce_instructions(inputs, length, tile), tile)


def grad_copies_cycles(elements, copies, tile: Tile):
    """Sum ``copies`` per-worker copies of ``elements[v]`` weights, vectors split over workers."""
    n_vec = -(-np.asarray(elements) // tile.simd)
    per_worker_vec = -(-n_vec // tile.workers)
    instr = COPIES_OVERHEAD + per_worker_vec * ((copies - 1) * COPIES_PER_VECTOR_PER_COPY + COPIES_STORE_PER_VECTOR)
    return tile.workers * instr + tile.vertex_launch_cycles


def _partial_reduce_cost(tiles, g, work, tile):
    return partial_reduce_cycles(tiles, g["inputs"], g["length"], tile)


def _grad_copies_cost(tiles, g, work, tile):
    return tiles, grad_copies_cycles(g["elements"], g["copies"], tile)


PARTIAL_REDUCE = register("partial_reduce", partial_reduce_cycles, code_bytes=384, cost=_partial_reduce_cost,
                          static=True)
GRAD_COPIES_REDUCE = register("grad_copies_reduce", grad_copies_cycles, code_bytes=384, cost=_grad_copies_cost,
                              static=True)
