"""Two-threshold spike-list generation with static capacity K (scan + combine).

A layer's list per sample holds up to K ids: real spikes (U > theta1) first, then
gradient candidates (theta2 < U <= theta1). Count 0 = spikes kept, count 1 = ids kept.

On the chip (Finkbeiner et al. 2024) this takes two codelets:

* ``spike_scan``: each worker scans ``chunk`` (64) neurons' threshold flags into a
  partial list of at most ``chunk_cap`` entries (spikes before candidates);
* ``spike_combine``: one worker per sample merges the partial lists in neuron order and
  truncates at K with the overflow policy.

Overflow policy: ``lowest-index`` keeps the partial-list entries in neuron order (the
published code's behaviour); ``random`` keeps a uniformly random subset of the spikes
(then of the candidates) that survived the scan. Dropped spikes are not sent, but the
neurons still reset (reset depends on U, not on the list). Drops are counted.
"""
from __future__ import annotations

from .._jit import njit
import numpy as np

from ..codelet import register
from ..tile import Tile, deal_jobs

LOWEST_INDEX, RANDOM = 0, 1


@njit(cache=True)
def _choose(buf, count, keep, out, out_pos, random_policy):
    """Copy ``keep`` of ``buf[:count]`` into ``out[out_pos:]`` (ascending ids)."""
    if keep < count and random_policy:
        # Partial Fisher-Yates: the first `keep` slots become a uniform random subset.
        for s in range(keep):
            r = s + np.random.randint(0, count - s)
            buf[s], buf[r] = buf[r], buf[s]
        chosen = np.sort(buf[:keep])
        for s in range(keep):
            out[out_pos + s] = chosen[s]
    else:
        for s in range(keep):
            out[out_pos + s] = buf[s]


@njit(cache=True)
def spike_lists(U, theta1, theta2, K, chunk, chunk_cap, random_policy, seed,
                ids, counts, dropped, flagged):
    """Build the lists of all samples of one layer and timestep (scalar thresholds).

    U[B, n] -> ids[B, K] (unused slots -1), counts[B, 2] = (spikes kept, ids kept),
    dropped[B, 2] = (spikes dropped, candidates dropped), flagged[B, n_chunks] = neurons
    above theta2 in each scan chunk (the scan's work).
    """
    n = U.shape[1]
    th1 = np.full(n, theta1, dtype=U.dtype)
    th2 = np.full(n, theta2, dtype=U.dtype)
    spike_lists_per_neuron(U, th1, th2, K, chunk, chunk_cap, random_policy, seed, ids, counts, dropped, flagged)


@njit(cache=True)
def spike_lists_per_neuron(U, theta1, theta2, K, chunk, chunk_cap, random_policy, seed,
                           ids, counts, dropped, flagged):
    """As ``spike_lists`` with one threshold pair per neuron (``theta1[n]``, ``theta2[n]``)."""
    B, n = U.shape
    if random_policy:
        np.random.seed(seed)
    spk = np.empty(n, dtype=np.int64)
    cand = np.empty(n, dtype=np.int64)
    # a neuron is a spike or a candidate only above the lower threshold: a branch-free pass
    # collects those (few at low activity), the chunks then look at them only
    low = np.minimum(theta1, theta2)
    found = np.empty(n, dtype=np.int64)
    for b in range(B):
        m = 0
        for i in range(n):
            found[m] = i
            m += U[b, i] > low[i]
        ns = 0
        nc = 0
        total_s = 0
        total_c = 0
        q = 0
        for c0 in range(0, n, chunk):
            c1 = min(c0 + chunk, n)
            room = chunk_cap
            ci = c0 // chunk
            f = 0
            q0 = q
            while q < m and found[q] < c1:
                q += 1
            for r in range(q0, q):  # spikes of this chunk first
                i = found[r]
                if U[b, i] > theta1[i]:
                    f += 1
                    total_s += 1
                    if room > 0:
                        spk[ns] = i
                        ns += 1
                        room -= 1
            for r in range(q0, q):
                i = found[r]
                u = U[b, i]
                if u > theta2[i] and u <= theta1[i]:
                    f += 1
                    total_c += 1
                    if room > 0:
                        cand[nc] = i
                        nc += 1
                        room -= 1
            flagged[b, ci] = f
        keep_s = min(ns, K)
        keep_c = min(nc, K - keep_s)
        _choose(spk, ns, keep_s, ids[b], 0, random_policy)
        _choose(cand, nc, keep_c, ids[b], keep_s, random_policy)
        for s in range(keep_s + keep_c, K):
            ids[b, s] = -1
        counts[b, 0] = keep_s
        counts[b, 1] = keep_s + keep_c
        dropped[b, 0] = total_s - keep_s
        dropped[b, 1] = total_c - keep_c


# Instruction counts (see docs/cost-model.md).
SCAN_CHUNK_OVERHEAD = 8  # per worker: pointers, counters, loop setup
SCAN_PER_NEURON = 3  # ld8 flag; test; branch
SCAN_PER_ENTRY = 3  # st16 id; bump pointer; count
COMBINE_SAMPLE_OVERHEAD = 10
COMBINE_PER_PARTIAL = 6  # ld count pair (2); min with room; set copy count; branch; bump partial pointer
COMBINE_PER_ENTRY = 2  # ld16 / st16 of one id (a random policy adds a draw per entry, see below)
COMBINE_RANDOM_PER_ENTRY = 4  # draw and swap for the random subset
COMBINE_FINISH = 4  # write both counts


def spike_scan_instructions(widths, entries):
    """One single-worker job per (sample, chunk): ``widths`` neurons scanned, ``entries`` written.

    instructions = SCAN_CHUNK_OVERHEAD + width * SCAN_PER_NEURON + entries * SCAN_PER_ENTRY
    """
    return SCAN_CHUNK_OVERHEAD + np.asarray(widths) * SCAN_PER_NEURON + np.asarray(entries) * SCAN_PER_ENTRY


def spike_scan_cycles(job_tiles, widths, entries, tile: Tile):
    """(tiles, cycles): scan jobs dealt to the workers of the tiles they are placed on."""
    return deal_jobs(job_tiles, spike_scan_instructions(widths, entries), tile)


def spike_combine_instructions(partials, copied, random_policy=False):
    """One single-worker job per sample: ``partials`` lists merged, ``copied`` ids kept.

    instructions = overhead + partials * PER_PARTIAL + copied * PER_ENTRY + FINISH
    """
    per_entry = COMBINE_PER_ENTRY + (COMBINE_RANDOM_PER_ENTRY if random_policy else 0)
    return (COMBINE_SAMPLE_OVERHEAD + np.asarray(partials) * COMBINE_PER_PARTIAL
            + np.asarray(copied) * per_entry + COMBINE_FINISH)


def spike_combine_cycles(job_tiles, partials, copied, tile: Tile, random_policy=False):
    """(tiles, cycles): one combine job per sample, dealt to the workers of its tile."""
    return deal_jobs(job_tiles, spike_combine_instructions(partials, copied, random_policy), tile)


def _scan_cost(tiles, g, work, tile):  # tiles: one entry per (sample, chunk) job
    entries = np.asarray(work["entries"])  # [..., B, chunks]
    return spike_scan_cycles(tiles, g["widths"], entries.reshape(entries.shape[:-2] + (-1,)), tile)


def _combine_cost(tiles, g, work, tile):
    return spike_combine_cycles(tiles, g["partials"], work["listed"], tile, work.get("random", False))


SPIKE_SCAN = register("spike_scan", spike_scan_cycles, code_bytes=512, cost=_scan_cost, batched=True)
SPIKE_COMBINE = register("spike_combine", spike_combine_cycles, code_bytes=768, cost=_combine_cost, batched=True)
