"""One layer's numerics for every timestep of a loop in one compiled call.

The execution-driven step runs the same codelet kernels as the per-superstep path
(``lif.gather_rows``, ``lif.leaky_update``, ``bptt.leaky_backward``) in a loop over the
timesteps inside compiled code, instead of one Python call per vertex set and timestep. The
list and the scan's work come from one pass (``scan_lists``: what
``spikes.spike_lists_per_neuron`` and ``graphcore_snn.scan_hits`` give); the state update
stores once where the carried state is ``u`` itself (``leaky_update_in_place``); the weight
gradient is formed from the whole loop's ``dI`` at the end (``weight_grad_reduced``: what
``bptt.weight_grad`` into per-worker copies and ``reduce.reduce_copies`` give). With
feedforward layers (no recurrence between layers) a layer's values at every step depend only on
its own earlier steps and on the layer below (forward) or above (backward), so the layers can
run one after the other, each over all its steps: every number is the per-step path's.

The cross-tile reduction of the input-spike gradient is fused into the partial products of
``bptt.input_grad_partials`` (``input_grad_reduced``): the per-tile partials, their stage-1
group sums and the stage-2 sum are added in the order NumPy adds them (``np.add.reduceat`` and
``ndarray.sum`` over the last axis: pairwise summation, see ``pairwise_sum``), so the results
are bit for bit the ones of ``reduce.reduce_groups(P, starts).sum(-1)`` (``tests/test_sources.py``
checks both against NumPy; a NumPy that changed its summation would show there).
"""
from __future__ import annotations

import numpy as np

from .._jit import njit
from .bptt import leaky_backward
from .lif import NONE, SUBTRACT, ZERO, gather_rows, leaky_update


PAIRWISE_BLOCK = 128  # NumPy's PW_BLOCKSIZE: longer runs are split in halves (not done here)


@njit(cache=True)
def pairwise_sum(a, lo, hi):
    """``a[lo:hi]`` (at most ``PAIRWISE_BLOCK`` values) summed as NumPy's float reductions sum
    a contiguous run (its ``pairwise_sum``: below 8 values one by one from -0.0; else eight
    running sums combined as a tree, then the rest one by one). Not recursive: numba's cache
    does not reload recursive functions safely; callers check the length."""
    n = hi - lo
    if n < 8:
        res = a.dtype.type(-0.0)
        for i in range(lo, hi):
            res += a[i]
        return res
    r0 = a[lo]
    r1 = a[lo + 1]
    r2 = a[lo + 2]
    r3 = a[lo + 3]
    r4 = a[lo + 4]
    r5 = a[lo + 5]
    r6 = a[lo + 6]
    r7 = a[lo + 7]
    i = 8
    end = n - n % 8
    while i < end:
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


def reducible(group_starts, tiles) -> bool:
    """True where ``reduce_partials`` sums every run exactly as NumPy does (no run longer than
    ``PAIRWISE_BLOCK``)."""
    starts = np.asarray(group_starts)
    sizes = np.diff(np.append(starts, tiles))
    return starts.size <= PAIRWISE_BLOCK and (sizes.size == 0 or sizes.max() - 1 <= PAIRWISE_BLOCK)


@njit(cache=True)
def reduce_partials(P, group_starts, out, scratch):
    """``out[b, k] = np.add.reduceat(P, group_starts, axis=-1).sum(axis=-1)[b, k]``, exactly:
    a group's sum is its first partial plus the pairwise sum of the rest (``reduceat``), the
    groups' sums are added as ``sum`` adds them (from zero, pairwise). ``scratch``: ``[groups]``."""
    B, K, tiles = P.shape
    zero = P.dtype.type(0)
    for b in range(B):
        for k in range(K):
            out[b, k] = reduce_row(P[b, k], group_starts, tiles, scratch, zero)


@njit(cache=True)
def reduce_row(row, group_starts, tiles, scratch, zero):
    """One row of ``reduce_partials``: each group's first partial plus the pairwise sum of the
    rest (into ``scratch[groups]``), then ``zero`` plus the pairwise sum of the groups."""
    G = group_starts.shape[0]
    for g in range(G):
        lo = group_starts[g]
        hi = group_starts[g + 1] if g + 1 < G else tiles
        if hi - lo > 1:
            scratch[g] = row[lo] + pairwise_sum(row, lo + 1, hi)
        else:
            scratch[g] = row[lo]
    return zero + pairwise_sum(scratch, 0, G)


@njit(cache=True)
def scan_lists(U, theta1, theta2, theta_low, K, bounds, cap, worker_of, ids, cnt, drop, hits, scanned, cand, found):
    """One pass over ``U[B, n]`` for the list and the published scan's work: what
    ``spikes.spike_lists_per_neuron(U, theta1, theta2, K, n, n, False, ...)`` (the lowest K
    spikes, then the lowest candidates theta2 < U <= theta1 up to K) and
    ``graphcore_snn.scan_hits`` compute. A branch-free pass first collects the neurons above
    ``theta_low = min(theta1, theta2)`` (a spike or a candidate: few at low activity) into
    ``found[n]``; only those are then sorted into spikes and candidates. ``worker_of[i]``: the
    scan worker whose range holds neuron i; ``cand``: ``[K]``."""
    B, n = U.shape
    W = bounds.shape[0] - 1
    for b in range(B):
        cb = b if cap.shape[0] > 1 else 0
        for w in range(W):
            hits[b, 0, w] = 0
            hits[b, 1, w] = 0
            scanned[b, 0, w] = bounds[w + 1] - bounds[w]
            scanned[b, 1, w] = bounds[w + 1] - bounds[w]
        row = U[b]
        m = 0
        for i in range(n):
            found[m] = i
            m += row[i] > theta_low[i]
        ns = 0
        nc = 0
        for q in range(m):
            i = found[q]
            u = row[i]
            if u > theta1[i]:
                w = worker_of[i]
                h = hits[b, 0, w] + 1
                hits[b, 0, w] = h
                if h == cap[cb, 0, w]:
                    scanned[b, 0, w] = i - bounds[w] + 1
                if ns < K:
                    ids[b, ns] = i
                ns += 1
            elif u > theta2[i]:
                w = worker_of[i]
                h = hits[b, 1, w] + 1
                hits[b, 1, w] = h
                if h == cap[cb, 1, w]:
                    scanned[b, 1, w] = i - bounds[w] + 1
                if nc < K:
                    cand[nc] = i
                nc += 1
        keep_s = min(ns, K)
        keep_c = min(nc, K - keep_s)
        for s in range(keep_c):
            ids[b, keep_s + s] = cand[s]
        for s in range(keep_s + keep_c, K):
            ids[b, s] = -1
        cnt[b, 0] = keep_s
        cnt[b, 1] = keep_s + keep_c
        drop[b, 0] = ns - keep_s
        drop[b, 1] = nc - keep_c


@njit(cache=True)
def leaky_update_in_place(I, gain, m_prev, decay, theta, reset, whole, u):
    """``lif.leaky_update`` with the delayed reset (or none), where the state after the step is
    ``u`` itself (``m`` and ``u`` one array): the same arithmetic, one store per neuron and a loop
    per reset rule, which the compiler vectorises (``lif.leaky_update`` stores twice)."""
    B, n = I.shape
    one = u.dtype.type(1)
    zero = one * 0
    for b in range(B):
        ib = I[b]
        mb = m_prev[b]
        ub = u[b]
        if reset == SUBTRACT:
            for i in range(n):
                R = one if mb[i] > theta[i] else zero
                ub[i] = decay[i] * mb[i] + gain[i] * ib[i] - R * theta[i]
        elif reset == ZERO and whole:
            for i in range(n):
                R = one if mb[i] > theta[i] else zero
                ub[i] = (one - R) * (decay[i] * mb[i] + gain[i] * ib[i])
        elif reset == ZERO:
            for i in range(n):
                R = one if mb[i] > theta[i] else zero
                ub[i] = decay[i] * ((one - R) * mb[i]) + gain[i] * ib[i]
        else:
            for i in range(n):
                ub[i] = decay[i] * mb[i] + gain[i] * ib[i]


@njit(cache=True)
def input_grad_reduced(W, in_ids, in_listed, dI, tile_starts, group_starts, out, prod, part, scratch):
    """``out[b, k]``: the input-spike gradient of list slot k, bit for bit what
    ``bptt.input_grad_partials`` (per-tile partials ``P``) then ``reduce_partials(P, ...)`` give,
    one slot at a time (its partials stay in ``part[tiles]``; ``prod[n]``, ``scratch[groups]``);
    slots past ``in_listed[b]`` have zero partials and sum to +0.0."""
    B, n = dI.shape
    tiles = tile_starts.shape[0] - 1
    pairs = n == 2 * tiles and tile_starts[0] == 0
    for p in range(tiles):
        if tile_starts[p + 1] - tile_starts[p] != 2:
            pairs = False
    zero_out = out.dtype.type(0)
    for b in range(B):
        dIb = dI[b]
        for k in range(out.shape[1]):
            if k >= in_listed[b]:
                out[b, k] = zero_out
                continue
            row = W[in_ids[b, k]]
            for i in range(n):
                prod[i] = row[i] * dIb[i]
            zero = row[0] * 0  # as input_grad_partials starts each tile's sum
            if pairs:
                for p in range(tiles):
                    part[p] = (zero + prod[2 * p]) + prod[2 * p + 1]
            else:
                for p in range(tiles):
                    acc = zero
                    for i in range(tile_starts[p], tile_starts[p + 1]):
                        acc += prod[i]
                    part[p] = acc
            out[b, k] = reduce_row(part, group_starts, tiles, scratch, zero_out)


@njit(cache=True)
def forward_leaky(W, in_ids, in_cnt, delay, gain, decay, theta, theta2, reset, whole, reset_delay, K,
                  U, M, I, zero_state, ids, cnt, drop, bounds, cap, hits, scanned, m_is_u):
    """Forward pass of one leaky layer over all steps ``t = 0..T-1``: ``I = W^T x`` of the input
    list of step ``t - delay`` (nothing before it), the state update into ``U[t]``/``M[t]``, the
    step's list (lowest ids, spikes then candidates, capacity K: ``ids[t]``, ``cnt[t]``,
    ``drop[t]``) and the published scan's work (``hits[t]``, ``scanned[t]``)."""
    T, B, n = U.shape
    theta_low = np.minimum(theta, theta2)
    W_ = bounds.shape[0] - 1
    worker_of = np.empty(n, dtype=np.int64)
    for w in range(W_):
        for i in range(bounds[w], bounds[w + 1]):
            worker_of[i] = w
    cand = np.empty(max(K, 1), dtype=np.int64)
    found = np.empty(n, dtype=np.int64)
    for t in range(T):
        ts = t - delay
        if ts >= 0:
            gather_rows(W, in_ids[ts], in_cnt[ts], I, False)
        else:
            I[...] = 0
        m_prev = M[t - 1] if t > 0 else zero_state
        if m_is_u and (reset_delay or reset == NONE):  # M is U: the carried state is u itself
            leaky_update_in_place(I, gain, m_prev, decay, theta, reset, whole, U[t])
        else:
            leaky_update(I, gain, m_prev, decay, theta, reset, whole, reset_delay, U[t], M[t])
        scan_lists(U[t], theta, theta2, theta_low, K, bounds, cap, worker_of, ids[t], cnt[t], drop[t], hits[t],
                   scanned[t], cand, found)


@njit(cache=True)
def weight_grad_reduced(dI_hist, worker, workers, in_ids, in_spk, delay, out):
    """The weight gradient ``out[rows, n]`` of a whole backward loop, bit for bit what
    ``bptt.weight_grad`` into ``workers`` zeroed per-worker copies at every step ``t = T-1..0``
    (``dI_hist[t]``, the input list of step ``t - delay``), then ``reduce.reduce_copies``, give:
    each copy's row adds its samples' ``dI`` in the same order (steps descending, samples
    ascending), from zero, and the copies are summed in worker order. The adds of a row are
    gathered by a counting sort of the (row, worker) keys and done into a small buffer, so no
    per-worker copy of the whole matrix is written."""
    T, B, n = dI_hist.shape
    rows = out.shape[0]
    nkeys = rows * workers
    starts = np.zeros(nkeys + 1, dtype=np.int64)
    for t in range(T - 1, -1, -1):
        ts = t - delay
        if ts < 0:
            continue
        for b in range(B):
            for k in range(in_spk[ts, b]):
                starts[in_ids[ts, b, k] * workers + worker[b] + 1] += 1
    for key in range(nkeys):
        starts[key + 1] += starts[key]
    fill = starts[:-1].copy()
    events = np.empty(starts[nkeys], dtype=np.int64)  # t * B + b, in the order the steps added them
    for t in range(T - 1, -1, -1):
        ts = t - delay
        if ts < 0:
            continue
        for b in range(B):
            for k in range(in_spk[ts, b]):
                key = in_ids[ts, b, k] * workers + worker[b]
                events[fill[key]] = t * B + b
                fill[key] += 1
    # A copy's row sums from +0.0, so it is never -0.0, and neither is the running sum of the copies:
    # an empty copy adds nothing (x + 0.0 == x), the first non-empty copy's adds can go straight
    # into the sum (0.0 + c == c) and so can a copy's single add (0.0 + d == d, then sum + d).
    acc = np.empty(n, dtype=out.dtype)
    zero = out.dtype.type(0)
    for row in range(rows):
        o = out[row]
        for i in range(n):
            o[i] = zero
        first = True
        for w in range(workers):
            lo = starts[row * workers + w]
            hi = starts[row * workers + w + 1]
            if lo == hi:
                continue
            if first or hi - lo == 1:
                for e in range(lo, hi):
                    src = dI_hist[events[e] // B, events[e] % B]
                    for i in range(n):
                        o[i] += src[i]
                first = False
                continue
            for i in range(n):
                acc[i] = zero
            for e in range(lo, hi):
                src = dI_hist[events[e] // B, events[e] % B]
                for i in range(n):
                    acc[i] += src[i]
            for i in range(n):
                o[i] += acc[i]


@njit(cache=True)
def backward_leaky(dm, dS_all, ids, listed, dSd, U, M, zero_state, gain, decay, theta, reset, whole, reset_delay,
                   in_grad, sgk, p1, p2, du, dmdS, dbeta, dtheta, dI_hist, in_ids, in_listed,
                   delay, W, tile_starts, group_starts, prod, part, scratch, dS_in, has_input_grad):
    """Backward pass of one leaky layer over all steps ``t = T-1..0``: the surrogate scatter
    (``leaky_backward``, the list gradient ``dS_all[t]``) with its ``dI`` written to
    ``dI_hist[t]`` (the weight gradient is formed from them at the end, ``weight_grad_reduced``)
    and, with ``has_input_grad``, the input-spike gradient of the input list of step
    ``t - delay``, reduced over the tiles into ``dS_in[t - delay]`` (``input_grad_reduced``)."""
    T = U.shape[0]
    for t in range(T - 1, -1, -1):
        m_prev = M[t - 1] if t > 0 else zero_state
        leaky_backward(dm, dS_all[t], ids[t], listed[t], dSd, U[t], m_prev, gain, decay, theta, reset, whole,
                       reset_delay, in_grad, sgk, p1, p2, du, dmdS, dI_hist[t], dbeta, dtheta)
        ts = t - delay
        if ts >= 0 and has_input_grad:
            input_grad_reduced(W, in_ids[ts], in_listed[ts], dI_hist[t], tile_starts, group_starts, dS_in[ts],
                               prod, part, scratch)
