"""Readout and loss on the loss tile: snnTorch's losses (``mimdsim/snn/readout.py``).

ce_count (the default)::

    C[b, i] = sum_t S_out[t, b, i]              (population code: group sums, see below)
    L       = mean_b ( logsumexp(C[b]) - C[b, y_b] )
    dL/dC   = (softmax(C) - onehot(y)) / B      (the same dL/dS_out for every t)

ce_rate: ``L = (1/T) sum_t mean_b CE(S[t, b], y_b)``, ``dL/dS[t] = (softmax(S[t]) - onehot) / (B T)``.
mse_count: ``L = mean_{b,c} (C - target)^2 / T``, ``dL/dC = 2 (C - target) / (B K T)``.
ce_max_membrane: ``L = mean_b CE(max_t M[t, b], y_b)``; ``dL/dM[t]`` is nonzero only at the
(first) step of the maximum. A population code sums contiguous groups of outputs
``[int(N c / K), int(N (c + 1) / K))`` and gives every neuron of a group its group's gradient.
"""
from __future__ import annotations

import numpy as np

from ..codelet import register
from ..tile import Tile, barrel_cycles, deal_jobs, per_worker

KINDS = ("ce_count", "ce_rate", "mse_count", "ce_max_membrane")  # the losses readout_loss computes


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


def _softmax_ce(z, labels):
    """Mean cross-entropy of logits ``z[B, K]`` and its gradient (float64)."""
    z = np.asarray(z, dtype=np.float64)
    B = z.shape[0]
    m = z.max(axis=-1, keepdims=True)
    e = np.exp(z - m)
    s = e.sum(axis=-1, keepdims=True)
    loss = float((m[..., 0] + np.log(s[..., 0]) - z[np.arange(B), labels]).mean())
    grad = e / s
    grad[np.arange(B), labels] -= 1.0
    return loss, grad / B


def group_bounds(n_out, classes):
    """Start of each population group (snnTorch: ``int(N c / K)``), plus N."""
    return np.array([int(n_out * c / classes) for c in range(classes)] + [n_out])


def population(x, classes):
    """Sum contiguous groups of the last axis: ``[..., N] -> [..., classes]``."""
    x = np.asarray(x, dtype=np.float64)
    if classes == x.shape[-1]:
        return x
    return np.add.reduceat(x, group_bounds(x.shape[-1], classes)[:-1], axis=-1)


def expand(g, n_out):
    """Give every neuron its group's gradient: ``[..., classes] -> [..., N]``."""
    classes = g.shape[-1]
    if classes == n_out:
        return g
    return np.repeat(g, np.diff(group_bounds(n_out, classes)), axis=-1)


def readout_loss(kind, labels, *, counts=None, spikes=None, membrane=None, timesteps=1, classes=None,
                 correct_rate=1.0, incorrect_rate=0.0):
    """Loss and its gradient for ``kind`` (see the module docstring).

    Returns ``(loss, grad)`` where grad is dL/dC ``[B, N]`` (ce_count, mse_count: the same
    dL/dS_out for every step), dL/dS ``[T, B, N]`` (ce_rate) or dL/dM ``[T, B, N]``
    (ce_max_membrane).
    """
    labels = np.asarray(labels)
    if kind == "ce_count":
        n = counts.shape[-1]
        loss, g = _softmax_ce(population(counts, classes or n), labels)
        return loss, expand(g, n)
    if kind == "mse_count":
        n = counts.shape[-1]
        K = classes or n
        scale = n / K if K != n else 1
        on = int(timesteps * correct_rate * scale) if K != n else int(timesteps * correct_rate)
        off = int(timesteps * incorrect_rate * scale) if K != n else int(timesteps * incorrect_rate)
        C = population(counts, K)
        target = np.full(C.shape, float(off))
        target[np.arange(C.shape[0]), labels] = on
        d = C - target
        loss = float((d * d).mean() / timesteps)
        return loss, expand(2 * d / (d.size * timesteps), n)
    if kind == "ce_rate":
        S = np.asarray(spikes, dtype=np.float64)
        T = S.shape[0]
        losses, grads = zip(*(_softmax_ce(S[t], labels) for t in range(T)))
        return float(sum(losses) / T), np.stack(grads) / T
    if kind == "ce_max_membrane":
        M = np.asarray(membrane, dtype=np.float64)
        arg = M.argmax(axis=0)  # first maximum over time
        mx = np.take_along_axis(M, arg[None], axis=0)[0]
        loss, g = _softmax_ce(mx, labels)
        grad = np.zeros_like(M)
        np.put_along_axis(grad, arg[None], g[None], axis=0)
        return loss, grad
    raise ValueError(f"unknown loss kind {kind!r}; expected one of {', '.join(KINDS)}")


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


POPULATION_PER_OUTPUT = 2  # ld count; add into the group sum
MSE_PER_CLASS = 8  # ld count; ld target (select on/off); sub; square; add to sum; mul 2/(BKT); st grad; loop
RATE_PER_SPIKE = 2  # ld16 id; set the one-hot entry


def loss_instructions(kind, classes, outputs=None, timesteps=1, listed=0):
    """Instructions per sample of the loss vertex.

    ce_count / ce_max_membrane: LOSS_SAMPLE_OVERHEAD + classes * LOSS_PER_CLASS (+ outputs *
    POPULATION_PER_OUTPUT with a population code); mse_count: MSE_PER_CLASS per class;
    ce_rate: per step LOSS_SAMPLE_OVERHEAD + classes * LOSS_PER_CLASS + listed * RATE_PER_SPIKE.
    """
    outputs = classes if outputs is None else outputs
    pop = outputs * POPULATION_PER_OUTPUT if outputs != classes else 0
    if kind == "ce_rate":
        return timesteps * (LOSS_SAMPLE_OVERHEAD + classes * LOSS_PER_CLASS + listed * RATE_PER_SPIKE)
    if kind == "mse_count":
        return LOSS_SAMPLE_OVERHEAD + classes * MSE_PER_CLASS + pop
    return LOSS_SAMPLE_OVERHEAD + classes * LOSS_PER_CLASS + pop


def loss_cycles(batch, classes, tile: Tile, kind="ce_count", outputs=None, timesteps=1, listed=0):
    """One vertex on the loss tile, samples split over the workers; per sample
    ``loss_instructions(kind, ...)`` (ce_count: LOSS_SAMPLE_OVERHEAD + classes * LOSS_PER_CLASS)."""
    instr = np.full((1, batch), loss_instructions(kind, classes, outputs, timesteps, listed), dtype=np.float64)
    return barrel_cycles(per_worker(instr, tile.workers), tile)


def count_cycles(job_tiles, spikes, tile: Tile):
    """(tiles, cycles): one job per sample adds its ``spikes`` output ids to the counts."""
    return deal_jobs(job_tiles, COUNT_JOB_OVERHEAD + np.asarray(spikes) * COUNT_PER_SPIKE, tile)


def _loss_cost(tiles, g, work, tile):
    return tiles, loss_cycles(g["batch"], g["classes"], tile, g.get("kind", "ce_count"), g.get("outputs"),
                              g.get("timesteps", 1), g.get("listed", 0))


def _count_cost(tiles, g, work, tile):
    return count_cycles(tiles, work["spikes"], tile)


LOSS = register("count_cross_entropy", loss_cycles, code_bytes=768, cost=_loss_cost, static=True)
READOUT_LOSS = register("readout_loss", loss_cycles, code_bytes=1024, cost=_loss_cost, static=True)
COUNT = register("count_spikes", count_cycles, code_bytes=256, cost=_count_cost, batched=True)
