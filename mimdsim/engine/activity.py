"""Two sources of activity with one contract: ``work(vertex_set, t) -> work counts``.

* :class:`ExecutionSource` runs the codelets' functional implementations on real data
  (spike counts emerge from the dynamics; loss and gradients are exact);
* :class:`RateSource` runs no numerics and draws the same counts from given activities.

Both return the same dictionaries, which the engine hands to the same cost code.
"""
from __future__ import annotations

import numpy as np

from kernels import bptt, lif, loss as loss_k, optim, reduce, spikes
from kernels.tile import worker_of_sample

from ..program import Program, VertexSet


class _Stats:
    """Per-layer counters over [T, B]: spikes before truncation, kept, listed, drops."""

    def __init__(self, T, B, L):
        z = lambda: [np.zeros((T, B), dtype=np.int64) for _ in range(L + 1)]  # noqa: E731
        self.spikes, self.kept, self.listed, self.dropped_spikes, self.dropped_candidates = z(), z(), z(), z(), z()

    def record(self, l, t, kept, listed, dropped_spikes, dropped_candidates):
        self.kept[l][t] = kept
        self.listed[l][t] = listed
        self.dropped_spikes[l][t] = dropped_spikes
        self.dropped_candidates[l][t] = dropped_candidates
        self.spikes[l][t] = kept + dropped_spikes


class _Source:
    mode = ""

    def __init__(self, program: Program, sizes, capacities):
        self.program = program
        self.sizes, self.capacities = list(sizes), list(capacities)
        self.T, self.B = program.timesteps, program.batch_size
        self.L = len(sizes) - 1
        self.layout = program.layout
        self.chunk = program.meta["scan_chunk"]
        self.stats = _Stats(self.T, self.B, self.L)
        self.loss = None
        self.grads = None

    def work(self, vs: VertexSet, t):
        return getattr(self, vs.codelet)(vs, t)

    # Static codelets do no data-dependent work in the rate source.
    def count_cross_entropy(self, vs, t):
        return {}

    def partial_reduce(self, vs, t):
        return {}

    def grad_copies_reduce(self, vs, t):
        return {}

    def sgd(self, vs, t):
        return {}

    adam = sgd

    # Lists the layer reads.
    def _input_list_len(self, l, t, which):
        """Spikes (which=0) or listed ids (which=1) of the list layer l reads at step t."""
        arr = self.stats.kept if which == 0 else self.stats.listed
        if l == 1:
            return arr[0][t]
        return arr[l - 1][t - 1] if t >= 1 else np.zeros(self.B, dtype=np.int64)


class ExecutionSource(_Source):
    """Real numerics on real inputs, through the codelets' functional implementations."""

    mode = "execution"

    def __init__(self, program, net, inputs, labels, *, seed=0, optimizer=None):
        super().__init__(program, net.sizes, net.capacities)
        T, B, L = self.T, self.B, self.L
        dt = net.dtype
        self.dt = dt
        p = net.neuron
        self.alpha, self.c, self.theta1 = dt(p.alpha), dt(p.c), dt(p.theta1)
        self.theta2, self.beta = dt(p.theta2), dt(p.surrogate_beta)
        self.random = [net.input_overflow == "random"] + [net.overflow == "random"] * L
        self.W = net.weights
        self.labels = labels
        self.optimizer = optimizer
        self.seed = int(seed)
        # Input lists, all steps at once (made on the host; candidates impossible).
        n0, K0 = self.sizes[0], self.capacities[0]
        x = np.ascontiguousarray(inputs.reshape(T * B, n0), dtype=dt)
        ids0 = np.empty((T * B, K0), dtype=np.int32)
        cnt0 = np.empty((T * B, 2), dtype=np.int64)
        drop0 = np.empty((T * B, 2), dtype=np.int64)
        flag0 = np.empty((T * B, 1), dtype=np.int64)
        spikes.spike_lists(x, dt(0.5), dt(0.5), K0, n0, n0, self.random[0], self.seed, ids0, cnt0, drop0, flag0)
        self.ids = [ids0.reshape(T, B, K0)]
        self.stats.record(0, slice(None), cnt0[:, 0].reshape(T, B), cnt0[:, 1].reshape(T, B),
                          drop0[:, 0].reshape(T, B), drop0[:, 1].reshape(T, B))
        self.U = [None] + [np.zeros((T, B, n), dtype=dt) for n in self.sizes[1:]]
        self.ids += [np.full((T, B, K), -1, dtype=np.int32) for K in self.capacities[1:]]
        self.dU = [None] + [np.zeros((B, n), dtype=dt) for n in self.sizes[1:]]
        self.dI = [None] + [np.zeros((B, n), dtype=dt) for n in self.sizes[1:]]
        self.dS = [None] + [np.zeros((B, K), dtype=dt) for K in self.capacities[1:]]
        workers = program.system.chip.workers
        self.worker = worker_of_sample(B, workers)
        self.dW_copies = [None] + [np.zeros((workers, a, b), dtype=dt) for a, b in zip(self.sizes[:-1], self.sizes[1:])]
        self.counts = np.zeros((B, self.sizes[-1]), dtype=np.int64)
        self.P = [None] * (L + 1)
        self.P1 = [None] * (L + 1)
        self.dLdC = None
        self.grads = [None] * L

    def _in_list(self, l, t):
        if l == 1:
            return self.ids[0][t]
        if t >= 1:
            return self.ids[l - 1][t - 1]
        return np.zeros((self.B, self.capacities[l - 1]), dtype=np.int32)

    # forward
    def lif_forward(self, vs, t):
        l = vs.layer
        n_spk = self._input_list_len(l, t, 0)
        U_prev = self.U[l][t - 1] if t > 0 else np.zeros_like(self.U[l][0])
        lif.lif_forward(self.W[l - 1], U_prev, self._in_list(l, t), n_spk, self.alpha, self.c, self.theta1,
                        self.U[l][t])
        return {"in_spikes": n_spk}

    def spike_scan(self, vs, t):
        l = vs.layer
        B, K = self.B, self.capacities[l]
        cnt = np.empty((B, 2), dtype=np.int64)
        drop = np.empty((B, 2), dtype=np.int64)
        flagged = np.empty((B, vs.geometry["chunks"]), dtype=np.int64)
        seed = (self.seed * 1_000_003 + l * self.T + t) % (2 ** 32)
        spikes.spike_lists(self.U[l][t], self.theta1, self.theta2, K, self.chunk, vs.geometry["cap"],
                           self.random[l], seed, self.ids[l][t], cnt, drop, flagged)
        self.stats.record(l, t, cnt[:, 0], cnt[:, 1], drop[:, 0], drop[:, 1])
        return {"entries": np.minimum(flagged, vs.geometry["cap"])}

    def spike_combine(self, vs, t):
        return {"listed": self.stats.listed[vs.layer][t], "random": self.random[vs.layer]}

    def count_spikes(self, vs, t):
        L = vs.layer
        kept = self.stats.kept[L][t]
        loss_k.accumulate_counts(self.counts, self.ids[L][t], kept)
        return {"spikes": kept}

    def count_cross_entropy(self, vs, t):
        self.loss, self.dLdC = loss_k.count_cross_entropy(self.counts, self.labels)
        return {}

    # backward
    def surrogate_scatter(self, vs, t):
        l = vs.layer
        ids, listed = self.ids[l][t], self.stats.listed[l][t]
        live = np.arange(ids.shape[1])[None, :] < listed[:, None]
        if l == self.L:
            dS = np.where(live, self.dLdC[np.arange(self.B)[:, None], np.maximum(ids, 0)], 0).astype(self.dt)
        else:
            dS = self.dS[l] if t < self.T - 1 else np.zeros_like(self.dS[l])
        bptt.surrogate_scatter(self.dU[l], dS, ids, listed, self.U[l][t], self.alpha, self.c, self.theta1,
                               self.beta, self.dI[l])
        p = self.layout.layers[l - 1]
        b = np.broadcast_to(np.arange(self.B)[:, None], ids.shape)
        own = np.zeros((p.tiles, self.B), dtype=np.int64)
        np.add.at(own, (p.local_tile(ids[live]), b[live]), 1)
        return {"listed": listed, "own_listed": own}

    def weight_grad(self, vs, t):
        l = vs.layer
        n_spk = self._input_list_len(l, t, 0)
        bptt.weight_grad(self.dW_copies[l], self.worker, self._in_list(l, t), n_spk, self.dI[l])
        return {"in_spikes": n_spk}

    def input_grad(self, vs, t):
        l = vs.layer
        listed = self._input_list_len(l, t, 1)
        p = self.layout.layers[l - 1]
        P = np.zeros((self.B, self.capacities[l - 1], p.tiles), dtype=self.dt)
        bptt.input_grad_partials(self.W[l - 1], self._in_list(l, t), listed, self.dI[l], p.neuron_starts, P)
        self.P[l] = P
        return {"in_listed": listed}

    def partial_reduce(self, vs, t):
        l = vs.layer
        if vs.geometry["stage"] == 1:
            self.P1[l] = reduce.reduce_groups(self.P[l], vs.geometry["group_starts"])
        else:
            self.dS[l - 1] = self.P1[l].sum(axis=-1)  # dS of layer l-1's list at t-1
        return {}

    # update
    def grad_copies_reduce(self, vs, t):
        self.grads[vs.layer - 1] = reduce.reduce_copies(self.dW_copies[vs.layer])
        return {}

    def sgd(self, vs, t):
        if self.optimizer is not None:
            self.optimizer.apply(vs.layer - 1, self.W[vs.layer - 1], self.grads[vs.layer - 1])
        return {}

    adam = sgd


class RateSource(_Source):
    """No numerics: per-(t, sample, layer) counts drawn from given activities.

    ``activity[l]``: fraction of layer l's neurons that spike per step (l = 0 is the
    input); ``candidate_activity[l]``: fraction of the rest between theta2 and theta1.
    Layer l cannot fire before its input arrives (one-step delay): steps t < l - 1 are
    silent. Lists truncate at K (lowest-index or random alike: only counts matter here).
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

    def lif_forward(self, vs, t):
        return {"in_spikes": self._input_list_len(vs.layer, t, 0)}

    def spike_scan(self, vs, t):
        l = vs.layer
        n, K, B = self.sizes[l], self.capacities[l], self.B
        if t < l - 1:
            s = c = np.zeros(B, dtype=np.int64)
        else:
            s = self.rng.binomial(n, self.activity[l], size=B)
            c = self.rng.binomial(n - s, self.candidate[l])
        chunks = vs.geometry["chunks"]
        widths = np.diff(np.minimum(np.arange(chunks + 1) * self.chunk, n))
        flagged = self.rng.multinomial(s + c, widths / n)
        kept = np.minimum(s, K)
        listed = np.minimum(s + c, K)
        self.stats.record(l, t, kept, listed, s - kept, c - (listed - kept))
        return {"entries": np.minimum(flagged, vs.geometry["cap"])}

    def spike_combine(self, vs, t):
        return {"listed": self.stats.listed[vs.layer][t], "random": self.random_policy[1]}

    def count_spikes(self, vs, t):
        return {"spikes": self.stats.kept[vs.layer][t]}

    def surrogate_scatter(self, vs, t):
        l = vs.layer
        p = self.layout.layers[l - 1]
        listed = self.stats.listed[l][t]
        own = self.rng.multinomial(listed, p.n_local / p.neurons)  # [B, tiles]
        return {"listed": listed, "own_listed": own.T}

    def weight_grad(self, vs, t):
        return {"in_spikes": self._input_list_len(vs.layer, t, 0)}

    def input_grad(self, vs, t):
        return {"in_listed": self._input_list_len(vs.layer, t, 1)}
