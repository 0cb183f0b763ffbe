"""The rate-driven work source: no numerics; the same work counts drawn from given activities,
a loop's iterations at once where numba is loaded (:mod:`mimdsim.workloads.snn.sources`)."""
from __future__ import annotations

import numpy as np

from ....kernels import CODELETS
from ....kernels._jit import njit, numba_loaded

from .work import SourceBase


class RateSource(SourceBase):
    """No numerics: per-(t, sample, layer) counts drawn from given activities.

    ``activity[l]``: fraction of layer l's neurons that spike per step (l = 0 is the
    input); ``candidate_activity[l]``: fraction of the rest between theta2 and theta1.
    With the one-step delay layer l cannot fire before its input arrives: steps t < l - 1
    are silent. Lists truncate at K (lowest-index or random alike: only counts matter here).
    """

    mode = "rate"

    def __init__(self, program, sizes, capacities, activity, candidate_activity, *, seed=0,
                 random_policy=(False, False)):
        super().__init__(program, sizes, capacities)
        self.activity, self.candidate = list(activity), list(candidate_activity)
        self.rng = np.random.default_rng(seed)
        self.random_policy = random_policy
        T, B = self.T, self.B
        n0, K0 = self.sizes[0], self.capacities[0]
        s = self.rng.binomial(n0, self.activity[0], size=(T, B))
        kept = np.minimum(s, K0)
        self.stats.record(0, slice(None), kept, kept, s - kept, np.zeros_like(s))

    def forward(self, vs, t):
        if vs.geometry.get("dense"):
            l, n, B = vs.layer, self.sizes[vs.layer], self.B
            s = self.rng.binomial(n, self.activity[l], size=B) if not (self.delay == 1 and t < l - 1) \
                else np.zeros(B, dtype=np.int64)
            self.stats.record(l, t, s, np.full(B, n), np.zeros(B, dtype=np.int64), np.zeros(B, dtype=np.int64))
            return {}
        rows = self._input_list_len(vs.layer, t, 0)
        if self._a2a(vs.layer):
            rows = rows + self._own_list_len(vs.layer, t, 0)
        return {"in_spikes": rows}

    def _draw_list(self, l, t):
        """Spikes s and candidates c per sample of layer l at step t (silent before its input
        arrives with delay 1), recorded as a list truncated at K; returns ``(s, c)``."""
        n, K, B = self.sizes[l], self.capacities[l], self.B
        if self.delay == 1 and t < l - 1:
            s = c = np.zeros(B, dtype=np.int64)
        else:
            s = self.rng.binomial(n, self.activity[l], size=B)
            c = self.rng.binomial(n - s, self.candidate[l])
        kept, listed = np.minimum(s, K), np.minimum(s + c, K)
        self.stats.record(l, t, kept, listed, s - kept, c - (listed - kept))
        return s, c

    def spike_scan(self, vs, t):
        l, n = vs.layer, self.sizes[vs.layer]
        s, c = self._draw_list(l, t)
        chunks = vs.geometry["chunks"]
        widths = np.diff(np.minimum(np.arange(chunks + 1) * self.chunk, n))
        flagged = self.rng.multinomial(s + c, widths / n)
        return {"entries": np.minimum(flagged, vs.geometry["cap"])}

    def spike_combine(self, vs, t):
        return {"listed": self.stats.listed[vs.layer][t], "random": self.random_policy[1]}

    def published_scan(self, vs, t):
        """Spikes and candidates drawn per sample, spread uniformly over the workers' ranges."""
        l, g, n = vs.layer, vs.geometry, self.sizes[vs.layer]
        s, c = self._draw_list(l, t)
        widths = np.diff(g["bounds"])
        hits = np.stack([self.rng.multinomial(s, widths / n), self.rng.multinomial(c, widths / n)], axis=1)
        return scan_work(self, vs, hits)

    def published_surrogate(self, vs, t):
        """The op's surrogate vertex needs the list length only: no tile split is drawn."""
        return {"listed": self.stats.listed[vs.layer][t][..., vs.geometry["sample"]]}

    # ---- a whole loop at once: the draws of every iteration in one compiled call (in program
    # order, so the numbers are the per-iteration path's), then every vertex set's work counts
    # with a leading iteration axis
    _LOOP_ROLES = {"published_forward", "published_scan", "published_tile_combine", "published_combine",
                   "published_surrogate", "published_weight_grad", "published_input_grad", "published_reduce"}

    def loop_work(self, vertex_sets, ts) -> dict | None:
        """Work counts of ``vertex_sets`` (a loop body's, in program order) for all iterations
        ``ts`` (execution order): ``{id(vs): work with a leading iteration axis}`` for the vertex
        sets whose cost needs work, or None where some vertex set has no whole-loop path (the
        engine then asks iteration by iteration)."""
        if self.delay != 1:  # a layer reads its input's list of the same step: keep program order
            return None
        todo, scans = [], []
        for vs in vertex_sets:
            c = CODELETS[vs.codelet]
            role = vs.geometry.get("role")
            if c.static and (role is None or role == "published_reduce"):  # no work, no draws
                continue
            if role not in self._LOOP_ROLES or not c.batched or vs.geometry.get("dense"):
                return None
            (scans if role == "published_scan" else todo).append(vs)
        tt = np.asarray(ts, dtype=np.int64)
        works = {}
        if scans:
            from .rate_draws import scan_draws  # numba: loaded only where a loop draws
            layers = [vs.layer for vs in scans]
            drawn = scan_draws(self.rng, tt, [self.sizes[l] for l in layers], [self.activity[l] for l in layers],
                               [self.candidate[l] for l in layers],
                               [l - 1 if self.delay == 1 else 0 for l in layers],
                               [np.diff(vs.geometry["bounds"]) for vs in scans], self.B)
            for vs, (s, c, hits) in zip(scans, drawn):
                l, K = vs.layer, self.capacities[vs.layer]
                kept, listed = np.minimum(s, K), np.minimum(s + c, K)
                self.stats.record(l, tt, kept, listed, s - kept, c - (listed - kept))
                works[id(vs)] = scan_work(self, vs, hits)
        for vs in todo:
            works[id(vs)] = self.work(vs, tt)
        return works

    def count_spikes(self, vs, t):
        return {"spikes": self.stats.kept[vs.layer][t]}

    def scatter(self, vs, t, own=True):
        l = vs.layer
        if vs.geometry.get("dense"):
            return {}
        p = self.layout.layers[l - 1]
        listed = self.stats.listed[l][t]
        own = self.rng.multinomial(listed, p.n_local / p.neurons)  # [B, tiles]
        return {"listed": listed, "own_listed": own.T}

    def weight_grad(self, vs, t):
        if vs.geometry.get("source") == "own":
            return {"in_spikes": self._own_list_len(vs.layer, t, 0)}
        return {"in_spikes": self._input_list_len(vs.layer, t, 0)}

    def input_grad(self, vs, t):
        if vs.geometry.get("source") == "own":
            return {"in_listed": self._own_list_len(vs.layer, t, 1)}
        return {"in_listed": self._input_list_len(vs.layer, t, 1)}


def scan_work(source, vs, hits) -> dict:
    """Rate-driven work of the published scan vertices, one per (sample, threshold, worker) in
    that order, from drawn hits ``[B, 2, W]``: ``found`` = min(hits, cap); ``scanned`` = the
    range's width, or where the cap-th hit is expected (width * cap / hits) when the worker
    stops there."""
    g = vs.geometry
    bounds = np.asarray(g["bounds"])
    widths = np.diff(bounds)
    W = widths.size
    cap = np.asarray(g["cap"]).reshape(-1, 2, W)
    hits = np.asarray(hits)
    if numba_loaded() and hits.dtype == cap.dtype == widths.dtype == np.int64:  # one compiled pass, same integers
        row = np.ascontiguousarray(np.broadcast_to(cap, hits.shape[-3:])).reshape(-1)
        flat = np.ascontiguousarray(hits).reshape(-1, row.size)
        found, scanned = np.empty_like(flat), np.empty_like(flat)
        _scan_counts(flat, row, widths, found, scanned)
        found = found.reshape(hits.shape)
        source._found[vs.layer] = found
        lead = hits.shape[:-3] + (-1,)
        return {"found": found.reshape(lead), "scanned": scanned.reshape(lead)}
    stop = np.ceil(widths * cap / np.maximum(hits, 1)).astype(np.int64)
    scanned = np.where(hits >= cap, np.minimum(stop, widths), widths)
    found = np.minimum(hits, cap)
    source._found[vs.layer] = found
    lead = found.shape[:-3] + (-1,)  # per iteration: one row per (sample, threshold, worker)
    return {"found": found.reshape(lead), "scanned": np.broadcast_to(scanned, found.shape).reshape(lead)}


@njit(cache=True)
def _scan_counts(hits, cap, widths, found, scanned):
    """:func:`scan_work`'s counts per (row, vertex): ``cap`` and ``widths[vertex % W]`` per vertex,
    the expected stop as numpy forms it (``ceil(width * cap / max(hits, 1))``, an int64 product
    over an int64, both as float64)."""
    W = widths.shape[0]
    for r in range(hits.shape[0]):
        for c in range(hits.shape[1]):
            h, k, w = hits[r, c], cap[c], widths[c % W]
            found[r, c] = min(h, k)
            if h >= k:
                scanned[r, c] = min(np.int64(np.ceil(w * k / max(h, 1))), w)
            else:
                scanned[r, c] = w
