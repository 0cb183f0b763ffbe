"""Readout and loss: output spike counts over time, softmax cross-entropy.

    C[b, i] = sum_t S_out[t, b, i]
    L       = mean_b ( logsumexp(C[b]) - C[b, y_b] )
    dL/dC   = (softmax(C) - onehot(y)) / B      (the same dL/dS_out for every t)
"""
from __future__ import annotations

import numpy as np

from .codelet import register
from .tile import Tile, barrel_cycles, deal_jobs, per_worker


def count_cross_entropy(counts, labels):
    """Loss and ``dL/dC`` from ``counts[B, n_out]`` and integer ``labels[B]``."""
    C = np.asarray(counts, dtype=np.float64)
    B = C.shape[0]
    m = C.max(axis=1, keepdims=True)
    e = np.exp(C - m)
    z = e.sum(axis=1, keepdims=True)
    logp = C - m - np.log(z)
    loss = float(-logp[np.arange(B), labels].mean())
    grad = e / z
    grad[np.arange(B), labels] -= 1.0
    return loss, grad / B


def accumulate_counts(counts, ids, n_spikes):
    """``counts[b, ids[b, :n_spikes[b]]] += 1`` for all samples (vectorised)."""
    K = ids.shape[1]
    live = np.arange(K)[None, :] < np.asarray(n_spikes)[:, None]
    b = np.broadcast_to(np.arange(ids.shape[0])[:, None], ids.shape)
    np.add.at(counts, (b[live], ids[live]), 1)


# Instruction counts per sample and class (see docs/cost-model.md).
LOSS_SAMPLE_OVERHEAD = 12
LOSS_PER_CLASS = 24  # ld count; max (cmp+select 2); sub max; exp (12, polynomial); add to sum; mul 1/sum; sub onehot; mul 1/B; ld/st (2): 1+2+1+12+1+1+1+1+2 = 22, +2 loop
COUNT_PER_SPIKE = 4  # ld16 id; ld count; add; st count
COUNT_JOB_OVERHEAD = 4  # list pointer, count, loop setup


def loss_cycles(batch, classes, tile: Tile):
    """One vertex on the loss tile: per sample LOSS_SAMPLE_OVERHEAD + classes * LOSS_PER_CLASS."""
    instr = np.full((1, batch), LOSS_SAMPLE_OVERHEAD + classes * LOSS_PER_CLASS, dtype=np.float64)
    return barrel_cycles(per_worker(instr, tile.workers), tile)


def count_cycles(job_tiles, spikes, tile: Tile):
    """(tiles, cycles): one job per sample adds its ``spikes`` output ids to the counts."""
    return deal_jobs(job_tiles, COUNT_JOB_OVERHEAD + np.asarray(spikes) * COUNT_PER_SPIKE, tile)


LOSS = register("count_cross_entropy", loss_cycles, code_bytes=768)
COUNT = register("count_spikes", count_cycles, code_bytes=256)
