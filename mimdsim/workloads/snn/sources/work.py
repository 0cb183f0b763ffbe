"""What the SNN program's two work sources share: the engine's contract ``work(vertex_set, t)
-> work counts``, the dispatch of vertex sets by ``role`` (or codelet name), the list lengths
every source answers from, and the spike statistics both record (:mod:`mimdsim.workloads.snn.sources`)."""
from __future__ import annotations

import numpy as np

from ....kernels import CODELETS

from ....program import Program, VertexSet


class SpikeStats:
    """Per-layer counters over [T, B] (layer 0 is the input): spikes before truncation to the
    list capacity, kept (sent) spikes, listed ids (spikes and gradient candidates), dropped
    spikes and dropped candidates."""

    def __init__(self, T, B, L):
        z = lambda: [np.zeros((T, B), dtype=np.int64) for _ in range(L + 1)]  # noqa: E731
        self.spikes, self.kept, self.listed, self.dropped_spikes, self.dropped_candidates = z(), z(), z(), z(), z()

    def record(self, l, t, kept, listed, dropped_spikes, dropped_candidates):
        self.kept[l][t] = kept
        self.listed[l][t] = listed
        self.dropped_spikes[l][t] = dropped_spikes
        self.dropped_candidates[l][t] = dropped_candidates
        self.spikes[l][t] = kept + dropped_spikes


class SourceBase:
    mode = ""

    def __init__(self, program: Program, sizes, capacities):
        self.program = program
        self.sizes, self.capacities = list(sizes), list(capacities)
        self.T, self.B = program.timesteps, program.batch_size
        self.L = len(sizes) - 1
        self.layout = program.mapping
        plan = program.plan  # SnnPlan
        self.chunk = plan.scan_chunk
        self.delay = plan.delay
        self.specs = plan.structure.layers
        self.stats = SpikeStats(self.T, self.B, self.L)
        self._found = {}  # published schedule: ids each scan worker found, per layer [B, 2, W]
        self._methods = {}  # id(vertex set) -> the method that answers it
        self._grouped = {}  # id(vertex set) -> (tiles, first worker) of a tile combine
        self.loss = None
        self.grads = None

    def work(self, vs: VertexSet, t):
        method = self._methods.get(id(vs))
        if method is None:
            method = self._methods[id(vs)] = self._method(vs)
        return method(vs, t)

    def _method(self, vs: VertexSet):
        """The method that answers ``vs`` (looked up once per vertex set)."""
        role = vs.geometry.get("role")
        if role is not None:
            return getattr(self, role)
        method = getattr(self, vs.codelet, None)
        if method is None and CODELETS[vs.codelet].static:  # no numerics and no work counts
            return no_work
        return method

    # ---- the published schedule's vertex sets: the same numerics, work counts per vertex
    # (``t`` may also be an array of iterations: the rate source's whole-loop path, leading axis)
    def published_forward(self, vs, t):
        x = np.asarray(self.forward(vs, t)["in_spikes"])  # per sample: a (sample, tile) grid takes it so
        return {"in_spikes": x if "grid" in vs.geometry else x[..., vs.geometry["sample"]]}

    def published_tile_combine(self, vs, t):
        """Ids a spread tile's combine copies: its workers' found ids, at most Kc."""
        g = vs.geometry
        found = self._found[vs.layer]  # [B, 2, W] (or [I, B, 2, W])
        per_tile = np.zeros(found.shape[:-1] + (g["spread"],), dtype=np.int64)
        wt = np.asarray(g["worker_tile"])
        grouped = self._grouped.get(id(vs))
        if grouped is None:  # workers grouped by tile (as the op deals them): their tiles and first workers
            grouped = self._grouped[id(vs)] = (np.unique(wt, return_index=True)
                                               if wt.size and np.all(wt[1:] >= wt[:-1]) else ())
        if grouped:
            tiles, start = grouped
            per_tile[..., tiles] = np.add.reduceat(found, start, axis=-1)
        else:
            np.add.at(per_tile, (Ellipsis, wt), found)
        copied = np.minimum(per_tile, g["cap_tile"])
        return {"copied": copied.reshape(found.shape[:-3] + (-1,))}

    def published_combine(self, vs, t):
        l = vs.layer
        kept, listed = self.stats.kept[l][t], self.stats.listed[l][t]
        return {"copied": listed, "second_pass": (kept < self.capacities[l]).astype(np.int64)}

    def published_surrogate(self, vs, t):
        return {"listed": np.asarray(self.scatter(vs, t, own=False)["listed"])[..., vs.geometry["sample"]]}

    def published_weight_grad(self, vs, t):
        g = vs.geometry
        x = np.asarray(self.weight_grad(vs, t)["in_spikes"])
        per_sample = np.concatenate([np.zeros(x.shape[:-1] + (1,), dtype=x.dtype), np.cumsum(x, axis=-1)], axis=-1)
        return {"in_spikes": per_sample[..., g["first_sample"] + g["samples"]] - per_sample[..., g["first_sample"]]}

    def published_input_grad(self, vs, t):
        x = np.asarray(self.input_grad(vs, t)["in_listed"])
        return {"in_listed": x if "grid" in vs.geometry else x[..., vs.geometry["sample"]]}

    def published_reduce(self, vs, t):
        self.partial_reduce(vs, t)  # numerics (execution-driven)
        g = vs.geometry
        if g["stage"] != 1:
            return {}
        in_listed = self._input_list_len(vs.layer, t, 1)
        return {"in_listed": in_listed}  # per sample: the cost route gates each (sample, slot) vertex

    def published_grad_copies(self, vs, t):
        return self.grad_copies_reduce(vs, t)

    def published_update(self, vs, t):
        """Single-thread weight gradients: the gradient is read out and the optimizer applied."""
        self.grad_copies_reduce(vs, t)
        return getattr(self, vs.codelet)(vs, t)

    def published_sparse2dense(self, vs, t):
        g = vs.geometry
        return {"spikes": self.stats.kept[self.L][g["step"], g["sample"]]}

    # Static codelets do no data-dependent work in the rate source.
    def count_cross_entropy(self, vs, t):
        return {}

    readout_loss = count_cross_entropy

    def partial_reduce(self, vs, t):
        return {}

    def grad_copies_reduce(self, vs, t):
        return {}

    def sgd(self, vs, t):
        return {}

    adam = sgd

    # Lists a layer reads.
    def _in_step(self, l, t):
        """The step of layer l-1's list that layer l reads at step t (None: nothing yet)."""
        if l == 1 or self.delay == 0:
            return t
        return t - 1 if t >= 1 else None

    def _input_list_len(self, l, t, which):
        """Spikes (which=0) or listed ids (which=1) of the list layer l reads at step t (``t`` an
        int, or an array of iterations: a leading axis)."""
        arr = self.stats.kept if which == 0 else self.stats.listed
        if not np.isscalar(t):
            return arr[l - 1][t] if l == 1 or self.delay == 0 else _previous(arr[l - 1], t)
        ts = self._in_step(l, t)
        return arr[l - 1][ts] if ts is not None else np.zeros(self.B, dtype=np.int64)

    def _own_list_len(self, l, t, which):
        """Spikes or listed ids of layer l's own list of step t - 1 (all-to-all recurrence)."""
        arr = self.stats.kept if which == 0 else self.stats.listed
        if not np.isscalar(t):
            return _previous(arr[l], t)
        return arr[l][t - 1] if t >= 1 else np.zeros(self.B, dtype=np.int64)

    def _a2a(self, l):
        return self.specs is not None and self.specs[l - 1].recurrence == "all-to-all"


def no_work(vs, t):
    return {}


def _previous(arr, ts):
    """``arr[t - 1]`` for every iteration in ``ts`` (zeros at t = 0)."""
    return np.where((ts >= 1)[:, None], arr[np.maximum(ts - 1, 0)], 0)


def round16(x):
    """Round in place to the nearest float16 value (a store to fp16 SRAM)."""
    x[...] = x.astype(np.float16)
    return x
