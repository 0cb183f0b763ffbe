"""The execution-driven work source: the codelets' functional implementations on real data
(spike counts emerge from the dynamics; loss and gradients are exact), per vertex set and
timestep or, for the published program's leaky layers, a whole loop per layer (:mod:`mimdsim.workloads.snn.sources`)."""
from __future__ import annotations

import numpy as np

from ....kernels.mimdsim_snn import bptt, lif, loss as loss_k, reduce, spikes
from ....kernels.graphcore_snn.vertices import scan_hits, spike_generation
from ....kernels.tile import worker_of_sample

from .work import SourceBase, no_work, round16


class ExecutionSource(SourceBase):
    """Real numerics on real inputs, through the codelets' functional implementations.

    With ``precision="fp16"`` every value a codelet stores (weights, states, histories,
    adjoints, dI, partials) is rounded to float16; arithmetic inside a codelet is float32.
    Weight-gradient accumulators are rounded once, when the step's gradient is formed.
    """

    mode = "execution"

    def __init__(self, program, net, inputs, labels, *, seed=0, optimizer=None):
        super().__init__(program, net.sizes, net.capacities)
        T, B, L = self.T, self.B, self.L
        self.fp16 = program.meta.precision == "fp16"
        dt = np.float32 if self.fp16 else net.dtype
        self.dt = dt
        self.net = net
        self.specs = net.specs
        self.readout = net.readout
        self.random = [net.input_overflow == "random"] + [net.overflow == "random"] * L
        self.W = net.weights if not self.fp16 else [round16(w.astype(dt)) for w in net.weights]
        self.bias = [None if b is None else (b.astype(dt) if not self.fp16 else round16(b.astype(dt)))
                     for b in net.biases]
        self.rec = [None if r is None else (r.astype(dt) if not self.fp16 else round16(r.astype(dt)))
                    for r in net.recurrent]
        self.rec_b = [None if r is None else r.astype(dt) for r in net.recurrent_biases]
        self.labels = labels
        self.optimizer = optimizer
        self.seed = int(seed)
        # Input lists, all steps at once (made on the host; candidates impossible).
        n0, K0 = self.sizes[0], self.capacities[0]
        x = inputs.reshape(T * B, n0)
        x = x.view(np.uint8) if x.dtype == bool else x
        if x.dtype != np.uint8:  # 0/1 bytes are compared as they are (exactly as their float32 values)
            x = np.ascontiguousarray(x, dtype=dt)
        x = np.ascontiguousarray(x)
        half = np.full(n0, 0.5, dtype=dt)
        ids0 = np.empty((T * B, K0), dtype=np.int32)
        cnt0 = np.empty((T * B, 2), dtype=np.int64)
        drop0 = np.empty((T * B, 2), dtype=np.int64)
        flag0 = np.empty((T * B, 1), dtype=np.int64)
        spikes.spike_lists_per_neuron(x, half, half, K0, n0, n0, self.random[0], self.seed % 2 ** 32, ids0, cnt0, drop0, flag0)
        self.ids = [ids0.reshape(T, B, K0)]
        self.stats.record(0, slice(None), cnt0[:, 0].reshape(T, B), cnt0[:, 1].reshape(T, B),
                          drop0[:, 0].reshape(T, B), drop0[:, 1].reshape(T, B))
        self.ids += [np.full((T, B, K), -1, dtype=np.int32) for K in self.capacities[1:]]
        self.p = [None] + [self._params(l) for l in range(1, L + 1)]
        # state histories: u (before a same-step reset), m (after), syn / exc / inh
        z = lambda n: np.zeros((T, B, n), dtype=dt)  # noqa: E731
        self.U, self.M, self.Syn, self.Exc, self.Inh = [None], [None], [None], [None], [None]
        for spec, n in zip(self.specs, self.sizes[1:]):
            u = z(n)
            self.U.append(u)
            self.M.append(u if spec.reset_delay else z(n))
            self.Syn.append(z(n) if spec.model == "synaptic" else None)
            self.Exc.append(z(n) if spec.model == "alpha" else None)
            self.Inh.append(z(n) if spec.model == "alpha" else None)
        self.I = [None] + [np.zeros((B, n), dtype=dt) for n in self.sizes[1:]]
        # backward: adjoint carries, dI, pending list gradients, partials
        self.dm = [None] + [np.zeros((B, n), dtype=dt) for n in self.sizes[1:]]
        self.ds = [None] + [np.zeros((B, n), dtype=dt) if s.model in ("synaptic", "alpha") else None
                            for s, n in zip(self.specs, self.sizes[1:])]
        self.dh = [None] + [np.zeros((B, n), dtype=dt) if s.model == "alpha" else None
                            for s, n in zip(self.specs, self.sizes[1:])]
        self.dI = [None] + [np.zeros((B, n), dtype=dt) for n in self.sizes[1:]]
        self.work_du = [None] + [np.zeros((B, n), dtype=dt) for n in self.sizes[1:]]
        self.work_dmdS = [None] + [np.zeros((B, n), dtype=dt) for n in self.sizes[1:]]
        self.pending = [dict() for _ in range(L + 1)]  # l -> {t: dS[B, K] aligned with ids[l][t]}
        self.pending_dense = [dict() for _ in range(L + 1)]  # one-to-one recurrence: {t: dS[B, n]}
        workers = program.system.chip.workers
        self.worker = worker_of_sample(B, workers)
        self.dW_copies = [None] + [np.zeros((workers, a, b), dtype=dt) for a, b in zip(self.sizes[:-1], self.sizes[1:])]
        self.dV_copies = [None] + [np.zeros((workers,) + r.shape, dtype=dt) if r is not None and r.ndim == 2 else None
                                   for r in self.rec]
        self.g_extra = [None] + [dict() for _ in range(L)]  # float64 accumulators: bias, V, v_b, beta, theta
        self.counts = np.zeros((B, self.sizes[-1]), dtype=np.int64)
        self.P = [None] * (L + 1)
        self.P1 = [None] * (L + 1)
        self.dL = None  # the loss's gradient (dL/dC, dL/dS[t] or dL/dM[t])
        self.grads = [None] * L
        self._reduced = {}  # layer -> its weight gradient, where a whole backward loop formed it
        self.param_grads = [dict() for _ in range(L)]

    def _params(self, l):
        """Effective per-neuron parameter arrays of layer l (current learnable values, clamped)."""
        spec, n, dt = self.specs[l - 1], self.sizes[l], self.dt
        cur = self.net.neuron_params[l - 1]
        full = lambda v: np.ascontiguousarray(np.broadcast_to(np.asarray(v, dtype=dt), (n,)))  # noqa: E731
        raw_beta = cur.get("beta", spec.beta if spec.model != "lapicque" else None)
        p = {"theta": full(cur.get("threshold", spec.threshold)), "gain": full(spec.input_gain())}
        if spec.model == "lapicque":
            p["decay"] = full(spec.decay())
            p["beta_mask"] = np.zeros(n)
        else:
            rb = np.broadcast_to(np.asarray(raw_beta, dtype=np.float64), (n,))
            p["decay"] = full(np.clip(np.asarray(raw_beta, dtype=dt), 0, 1))
            p["beta_mask"] = ((rb >= 0) & (rb <= 1)).astype(np.float64)  # torch.clamp passes grads inside
        if spec.alpha is not None:
            p["alpha"] = full(np.clip(np.asarray(spec.alpha, dtype=dt), 0, 1))
        if spec.model == "alpha":
            a = p["alpha"].astype(np.float64 if dt == np.float64 else np.float32)
            b = p["decay"].astype(a.dtype)
            la, lb = np.log(a), np.log(b)
            p["tau"] = full(la / (lb - la) + 1)
            p["dtau_dbeta"] = full(-la / (lb - la) ** 2 / b)
        p["theta2"] = np.full(n, spec.theta2, dtype=dt)
        p["surrogate"] = spec.surrogate.code()
        return p

    # ---- lists ---------------------------------------------------------------------------
    def _in_list(self, l, t):
        ts = self._in_step(l, t)
        if ts is None:
            return np.zeros((self.B, self.capacities[l - 1]), dtype=np.int32)
        return self.ids[l - 1][ts]

    def _own_list(self, l, t):
        if t >= 1:
            return self.ids[l][t - 1]
        return np.zeros((self.B, self.capacities[l]), dtype=np.int32)

    def _spikes_prev(self, l, t):
        """Layer l's own spikes of step t - 1, dense ``[B, n]`` (one-to-one recurrence)."""
        if t < 1:
            return np.zeros((self.B, self.sizes[l]), dtype=self.dt)
        return (self.U[l][t - 1] > self.p[l]["theta"]).astype(self.dt)

    # ---- forward -------------------------------------------------------------------------
    def forward(self, vs, t):
        l = vs.layer
        spec, p = self.specs[l - 1], self.p[l]
        I = self.I[l]
        rows = self._input_current(l, t, I)
        if self.bias[l - 1] is not None:
            I += self.bias[l - 1]
        if spec.recurrence == "one-to-one":
            I += self.rec[l - 1] * self._spikes_prev(l, t)
        elif spec.recurrence == "all-to-all":
            own = self._own_list_len(l, t, 0)
            lif.gather_rows(self.rec[l - 1], self._own_list(l, t), own, I, True)
            I += self.rec_b[l - 1]
            rows = rows + own
        zero = np.zeros_like(I)
        m_prev = self.M[l][t - 1] if t > 0 else zero
        reset = lif.RESET_CODES[spec.reset]
        u, m = self.U[l][t], self.M[l][t]
        if spec.model in ("leaky", "lapicque"):
            lif.leaky_update(I, p["gain"], m_prev, p["decay"], p["theta"], reset, spec.zero_resets_everything,
                             spec.reset_delay, u, m)
        elif spec.model == "synaptic":
            s_prev = self.Syn[l][t - 1] if t > 0 else zero
            lif.synaptic_update(I, p["gain"], s_prev, m_prev, p["alpha"], p["decay"], p["theta"], reset,
                                spec.reset_delay, self.Syn[l][t], u, m)
            if self.fp16:
                round16(self.Syn[l][t])
        else:
            e_prev = self.Exc[l][t - 1] if t > 0 else zero
            h_prev = self.Inh[l][t - 1] if t > 0 else zero
            lif.alpha_update(I, p["gain"], e_prev, h_prev, m_prev, p["alpha"], p["decay"], p["tau"], p["theta"],
                             reset, self.Exc[l][t], self.Inh[l][t], u)
            if self.fp16:
                round16(self.Exc[l][t])
                round16(self.Inh[l][t])
        if self.fp16:
            round16(u)
            if m is not u:
                round16(m)
        if vs.geometry.get("dense"):  # no scan: every neuron is "listed" (the dense gradient)
            self._dense_list(l, t)
            return {}
        return {"in_spikes": rows}

    def _input_current(self, l, t, I):
        """``I = W^T x`` of the input list layer l reads at step t; returns the rows gathered."""
        n_spk = self._input_list_len(l, t, 0)
        lif.gather_rows(self.W[l - 1], self._in_list(l, t), n_spk, I, False)
        return n_spk

    def _dense_list(self, l, t):
        B, n = self.B, self.sizes[l]
        cnt = np.empty((B, 2), dtype=np.int64)
        drop = np.empty((B, 2), dtype=np.int64)
        flagged = np.empty((B, 1), dtype=np.int64)
        th2 = np.full(n, -np.inf, dtype=self.dt)
        spikes.spike_lists_per_neuron(self.U[l][t], self.p[l]["theta"], th2, n, n, n, False, 0, self.ids[l][t],
                                      cnt, drop, flagged)
        self.stats.record(l, t, cnt[:, 0], cnt[:, 1], drop[:, 0], drop[:, 1])
        if l == self.L and self.readout.loss in ("ce_count", "mse_count"):  # the output tiles count locally
            loss_k.accumulate_counts(self.counts, self.ids[l][t], cnt[:, 0])

    def spike_scan(self, vs, t):
        l = vs.layer
        B, K = self.B, self.capacities[l]
        cnt = np.empty((B, 2), dtype=np.int64)
        drop = np.empty((B, 2), dtype=np.int64)
        flagged = np.empty((B, vs.geometry["chunks"]), dtype=np.int64)
        seed = (self.seed * 1_000_003 + l * self.T + t) % (2 ** 32)
        p = self.p[l]
        spikes.spike_lists_per_neuron(self.U[l][t], p["theta"], p["theta2"], K, self.chunk, vs.geometry["cap"],
                                      self.random[l], seed, self.ids[l][t], cnt, drop, flagged)
        self.stats.record(l, t, cnt[:, 0], cnt[:, 1], drop[:, 0], drop[:, 1])
        return {"entries": np.minimum(flagged, vs.geometry["cap"])}

    def spike_combine(self, vs, t):
        return {"listed": self.stats.listed[vs.layer][t], "random": self.random[vs.layer]}

    def published_scan(self, vs, t):
        """The published lists as the op builds them (F4-F8: per-worker and per-tile caps, lowest
        ids, spikes then candidates; kernels.graphcore_snn.vertices.spike_generation) and its scan work."""
        l, g = vs.layer, vs.geometry
        p, U = self.p[l], self.U[l][t]
        K, n = self.capacities[l], self.sizes[l]
        if K > -(-n // g["spread"]):  # a spread tile's cap (Kc < K) can cut a list: the op's own algorithm
            gen = spike_generation(U, p["theta"], p["theta2"], K, g["spread"])
            num = gen["num"]
            self.ids[l][t] = gen["ids"]
            spk = np.count_nonzero(U > p["theta"], axis=1)
            cand = np.count_nonzero((U > p["theta2"]) & (U <= p["theta"]), axis=1)
            self.stats.record(l, t, num[:, 0], num[:, 1], spk - num[:, 0], cand - (num[:, 1] - num[:, 0]))
            self._found[l] = gen["found"]
            return {"found": gen["found"].ravel(), "scanned": gen["scanned"].ravel()}
        # no cap below K can bind (a worker finds at most its range, Kw = min(K, range); a tile's Kc = K):
        # the list is the lowest K spikes then candidates, as the numba list builder makes it
        B = self.B
        cnt, drop = np.empty((B, 2), dtype=np.int64), np.empty((B, 2), dtype=np.int64)
        flagged = np.empty((B, 1), dtype=np.int64)
        spikes.spike_lists_per_neuron(U, p["theta"], p["theta2"], K, n, n, False, 0, self.ids[l][t], cnt, drop,
                                      flagged)
        self.stats.record(l, t, cnt[:, 0], cnt[:, 1], drop[:, 0], drop[:, 1])
        bounds = np.asarray(vs.geometry["bounds"], dtype=np.int64)
        W = bounds.size - 1
        cap = np.asarray(vs.geometry["cap"], dtype=np.int64).reshape(-1, 2, W)
        if cap.min() >= 1:  # one compiled pass over U: the same counts as the flags below
            hits, scanned = np.empty((B, 2, W), dtype=np.int64), np.empty((B, 2, W), dtype=np.int64)
            scan_hits(U, p["theta"], p["theta2"], bounds, cap, hits, scanned)
            found = np.minimum(hits, cap)
            self._found[l] = found
            return {"found": found.ravel(), "scanned": scanned.ravel()}
        flags = np.stack([U > p["theta"], (U > p["theta2"]) & (U <= p["theta"])], axis=1)  # [B, 2, n]
        return scan_work_from_flags(self, vs, flags)

    def published_sparse2dense(self, vs, t):
        """The loss's dense outputs from every step's output list: the spike counts."""
        L = self.L
        if t is None and not getattr(self, "_counted", False):
            kept, ids = self.stats.kept[L], self.ids[L]
            tt, bb, kk = np.nonzero(np.arange(ids.shape[2])[None, None, :] < kept[..., None])
            np.add.at(self.counts, (bb, ids[tt, bb, kk]), 1)
            self._counted = True
        return super().published_sparse2dense(vs, t)

    def count_spikes(self, vs, t):
        L = vs.layer
        kept = self.stats.kept[L][t]
        loss_k.accumulate_counts(self.counts, self.ids[L][t], kept)
        return {"spikes": kept}

    def count_cross_entropy(self, vs, t):
        r, L, T = self.readout, self.L, self.T
        kw = dict(timesteps=T, classes=r.num_classes, correct_rate=r.correct_rate, incorrect_rate=r.incorrect_rate)
        if r.loss in ("ce_count", "mse_count"):
            self.loss, self.dL = loss_k.readout_loss(r.loss, self.labels, counts=self.counts, **kw)
        elif r.loss == "ce_rate":
            S = np.zeros((T, self.B, self.sizes[-1]))
            k = np.arange(self.capacities[-1])
            tt, bb, kk = np.nonzero(k[None, None, :] < self.stats.kept[L][..., None])
            S[tt, bb, self.ids[L][tt, bb, kk]] = 1.0
            self.loss, self.dL = loss_k.readout_loss("ce_rate", self.labels, spikes=S, **kw)
        else:
            self.loss, self.dL = loss_k.readout_loss(r.loss, self.labels, membrane=self.M[L], **kw)
        if r.activity_l1:  # every sent hidden spike costs lambda (the lists' kept counts)
            sent = sum(int(self.stats.kept[l].sum()) for l in range(1, L) if self.specs[l - 1].spiking)
            self.loss = float(self.loss) + r.activity_l1 * sent
        return {}

    readout_loss = count_cross_entropy

    # ---- backward ------------------------------------------------------------------------
    def _list_gradient(self, l, t):
        """dS aligned with layer l's list at step t: from the loss (output layer), the next
        layer's input gradient and the layer's own all-to-all recurrence."""
        ids, listed = self.ids[l][t], self.stats.listed[l][t]
        live = np.arange(ids.shape[1])[None, :] < listed[:, None]
        dS = self.pending[l].pop(t, None)
        if dS is None:
            dS = np.zeros(ids.shape, dtype=self.dt)
        if l == self.L and self.readout.loss in ("ce_count", "mse_count", "ce_rate") and self.specs[-1].spiking:
            g = self.dL if self.readout.loss != "ce_rate" else self.dL[t]
            dS = dS + np.where(live, g[np.arange(self.B)[:, None], np.maximum(ids, 0)], 0).astype(self.dt)
        elif l < self.L and self.readout.activity_l1:
            dS = dS + np.where(live, self.readout.activity_l1, 0).astype(self.dt)
        return dS, ids, listed, live

    def scatter(self, vs, t, own=True):
        """The surrogate-gradient scatter; ``own=False``: without the per-tile split of the list
        (the published vertex reads the list length only)."""
        l = vs.layer
        spec, p, dt, B = self.specs[l - 1], self.p[l], self.dt, self.B
        n = self.sizes[l]
        if spec.spiking:
            dS, ids, listed, live = self._list_gradient(l, t)
        else:
            ids = np.zeros((B, 1), dtype=np.int32)
            listed = np.zeros(B, dtype=np.int64)
            dS = np.zeros((B, 1), dtype=dt)
            live = np.zeros((B, 1), dtype=bool)
        dSd = self.pending_dense[l].pop(t, None)
        if dSd is None:
            dSd = np.zeros((B, n), dtype=dt)
        dm = self.dm[l]
        if l == self.L and self.readout.on_membrane:
            dm += self.dL[t].astype(dt)
        zero = np.zeros((B, n), dtype=dt)
        m_prev = self.M[l][t - 1] if t > 0 else zero
        reset = lif.RESET_CODES[spec.reset]
        kind, p1, p2 = p["surrogate"]
        dbeta, dtheta = np.zeros(n), np.zeros(n)
        du, dmdS, dI = self.work_du[l], self.work_dmdS[l], self.dI[l]
        ing = spec.reset_in_gradient
        if spec.model in ("leaky", "lapicque"):
            bptt.leaky_backward(dm, dS, ids, listed, dSd, self.U[l][t], m_prev, p["gain"], p["decay"], p["theta"],
                                reset, spec.zero_resets_everything, spec.reset_delay, ing, kind, p1, p2,
                                du, dmdS, dI, dbeta, dtheta)
        elif spec.model == "synaptic":
            bptt.synaptic_backward(dm, self.ds[l], dS, ids, listed, dSd, self.U[l][t], m_prev, p["gain"], p["alpha"],
                                   p["decay"], p["theta"], reset, spec.reset_delay, ing, kind, p1, p2, du, dmdS, dI,
                                   dbeta, dtheta)
        else:
            e_prev = self.Exc[l][t - 1] if t > 0 else zero
            h_prev = self.Inh[l][t - 1] if t > 0 else zero
            bptt.alpha_backward(dm, self.ds[l], self.dh[l], dS, ids, listed, dSd, self.U[l][t], m_prev, e_prev,
                                h_prev, p["gain"], p["alpha"], p["decay"], p["tau"], p["dtau_dbeta"], p["theta"],
                                reset, ing, spec.learn_beta, kind, p1, p2, du, dmdS, dI, dbeta, dtheta)
            dm[...] = 0  # m[t - 1] feeds step t only through the detached reset
        if self.fp16:
            for arr in (dm, self.ds[l], self.dh[l], dI):
                if arr is not None:
                    round16(arr)
        g = self.g_extra[l]
        if spec.learn_beta:
            g["beta"] = g.get("beta", 0) + dbeta * p["beta_mask"]
        if spec.learn_threshold:
            g["threshold"] = g.get("threshold", 0) + dtheta
        if self.bias[l - 1] is not None:
            g["bias"] = g.get("bias", 0) + dI.sum(axis=0, dtype=np.float64)
        if spec.recurrence == "one-to-one" and t >= 1:
            S_prev = self._spikes_prev(l, t)
            g["recurrent"] = g.get("recurrent", 0) + (S_prev * dI).sum(axis=0, dtype=np.float64)
            self.pending_dense[l][t - 1] = (self.rec[l - 1] * dI).astype(dt)
        if spec.recurrence == "all-to-all":
            g["recurrent_bias"] = g.get("recurrent_bias", 0) + dI.sum(axis=0, dtype=np.float64)
        self.P[l] = {}
        pl = self.layout.layers[l - 1]
        b = np.broadcast_to(np.arange(B)[:, None], ids.shape)
        if vs.geometry.get("dense"):
            return {}
        if not own:
            return {"listed": listed}
        own = np.zeros((pl.tiles, B), dtype=np.int64)
        np.add.at(own, (pl.local_tile(ids[live]), b[live]), 1)
        return {"listed": listed, "own_listed": own}

    def weight_grad(self, vs, t):
        l = vs.layer
        if vs.geometry.get("source") == "own":
            n_spk = self._own_list_len(l, t, 0)
            bptt.weight_grad(self.dV_copies[l], self.worker, self._own_list(l, t), n_spk, self.dI[l])
        else:
            n_spk = self._input_list_len(l, t, 0)
            bptt.weight_grad(self.dW_copies[l], self.worker, self._in_list(l, t), n_spk, self.dI[l])
        return {"in_spikes": n_spk}

    def input_grad(self, vs, t):
        l = vs.layer
        pl = self.layout.layers[l - 1]
        if vs.geometry.get("source") == "own":
            listed = self._own_list_len(l, t, 1)
            W, in_ids, K = self.rec[l - 1], self._own_list(l, t), self.capacities[l]
        else:
            listed = self._input_list_len(l, t, 1)
            W, in_ids, K = self.W[l - 1], self._in_list(l, t), self.capacities[l - 1]
        P = np.empty((self.B, K, pl.tiles), dtype=self.dt)  # the kernel zeroes every slot
        bptt.input_grad_partials(W, in_ids, listed, self.dI[l], pl.neuron_starts, P)
        if self.fp16:
            round16(P)
        self.P[l][vs.geometry.get("source", "input")] = P
        return {"in_listed": listed}

    def partial_reduce(self, vs, t):
        l = vs.layer
        if vs.geometry["stage"] == 1:
            parts = [self.P[l][k] for k in ("input", "own") if k in self.P[l]]
            P = parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)
            self.P1[l] = reduce.reduce_groups(P, vs.geometry["group_starts"])
            return {}
        dS = self.P1[l].sum(axis=-1)
        split = 0
        if "input" in self.P[l]:
            split = self.capacities[l - 1]
            ts = self._in_step(l, t)
            if ts is not None:
                self._add_pending(l - 1, ts, dS[:, :split])
        if "own" in self.P[l] and t >= 1:
            self._add_pending(l, t - 1, dS[:, split:])
        return {}

    def _add_pending(self, l, t, dS):
        cur = self.pending[l].get(t)
        dS = dS.astype(self.dt)
        if self.fp16:
            round16(dS)
        self.pending[l][t] = dS if cur is None else cur + dS

    # ---- update --------------------------------------------------------------------------
    def grad_copies_reduce(self, vs, t):
        l = vs.layer
        dt = self.net.dtype
        reduced = self._reduced.pop(l, None)  # the whole-loop path summed the copies' rows already
        self.grads[l - 1] = (reduce.reduce_copies(self.dW_copies[l]) if reduced is None else reduced).astype(dt, copy=False)
        if self.fp16:
            self.grads[l - 1] = round16(self.grads[l - 1].copy())
        spec = self.specs[l - 1]
        pg = {"weight": self.grads[l - 1]}
        g = self.g_extra[l]
        if "bias" in g:
            pg["bias"] = g["bias"].astype(dt)
        if spec.recurrence == "all-to-all":
            pg["recurrent"] = reduce.reduce_copies(self.dV_copies[l]).astype(dt, copy=False)
            pg["recurrent_bias"] = g["recurrent_bias"].astype(dt)
        if spec.recurrence == "one-to-one":
            gv = g.get("recurrent", np.zeros(self.sizes[l]))
            pg["recurrent"] = (gv.sum() if self.net.recurrent[l - 1].ndim == 0 else gv).astype(dt)
        for key in ("beta", "threshold"):
            if key in g:
                cur = self.net.neuron_params[l - 1][key]
                pg[key] = np.asarray(g[key].sum() if cur.ndim == 0 else g[key], dtype=dt)
        self.param_grads[l - 1] = pg
        return {}

    def sgd(self, vs, t):
        if self.optimizer is not None:
            i = vs.layer - 1
            self.optimizer.apply(i, self.net.weights[i], self.grads[i])
            spec, pg = self.specs[i], self.param_grads[i]
            targets = {"bias": self.net.biases[i], "beta": self.net.neuron_params[i].get("beta"),
                       "threshold": self.net.neuron_params[i].get("threshold")}
            if spec.learn_recurrent:
                targets["recurrent"] = self.net.recurrent[i]
                targets["recurrent_bias"] = self.net.recurrent_biases[i]
            for key, w in targets.items():
                if w is not None and key in pg:
                    self.optimizer.apply((i, key), w, pg[key])
        return {}

    adam = sgd

    # ---- a whole loop at once: each layer's numerics over all steps in one compiled call ------
    _FWD_ROLES = ("published_forward", "published_scan", "published_tile_combine", "published_combine")
    _BWD_ROLES = ("published_surrogate", "published_weight_grad", "published_input_grad", "published_reduce")

    def loop_work(self, vertex_sets, ts) -> dict | None:
        """Work counts of a loop body's ``vertex_sets`` for all iterations ``ts`` (leading axis),
        the numerics run layer by layer over all steps (``kernels.mimdsim_snn.layer_loops``); None where the
        loop is not the published forward or backward loop of feedforward leaky layers in float32
        (the engine then runs it iteration by iteration). Feedforward layers depend only on the
        layer below (forward) or above (backward), so every number is the per-step path's."""
        plan = self._loop_plan(vertex_sets, ts)
        if plan is None:
            return None
        backward, layers = plan
        tt = np.asarray(ts, dtype=np.int64)
        return self._loop_backward(layers, tt) if backward else self._loop_forward(layers, tt)

    def _loop_plan(self, vertex_sets, ts):
        """``(backward, {layer: [vertex sets]})`` of a loop the whole-loop path runs, else None."""
        if self.fp16 or self.delay not in (0, 1):
            return None
        roles, layers = set(), {}
        for vs in vertex_sets:
            role = vs.geometry.get("role")
            if role is None:
                if self._method(vs) is no_work:  # no numerics, no work counts
                    continue
                return None
            if vs.layer is None or vs.geometry.get("dense") or vs.geometry.get("source") == "own":
                return None
            roles.add(role)
            layers.setdefault(vs.layer, []).append(vs)
        backward = roles <= set(self._BWD_ROLES)
        if not roles or not (backward or roles <= set(self._FWD_ROLES)):
            return None
        T = self.T
        if list(ts) != (list(range(T - 1, -1, -1)) if backward else list(range(T))):
            return None
        r = self.readout
        for l in layers:
            spec = self.specs[l - 1]
            if (spec.model not in ("leaky", "lapicque") or spec.recurrence != "none" or not spec.spiking
                    or spec.learn_beta or spec.learn_threshold or self.bias[l - 1] is not None
                    or self.random[l]):
                return None
            if backward and (r.activity_l1 or (l == self.L and (r.on_membrane or r.loss not in
                                                                 ("ce_count", "mse_count", "ce_rate")))):
                return None
        if backward:
            if set(layers) != set(range(1, self.L + 1)):  # the layers hand each other their gradients
                return None
            if any(not {"published_surrogate", "published_weight_grad"} <= {vs.geometry["role"] for vs in sets}
                   for sets in layers.values()):
                return None
            from ....kernels.mimdsim_snn.layer_loops import reducible
            for l, sets in layers.items():
                tiles = self.layout.layers[l - 1].tiles
                if any(vs.geometry.get("stage") == 1 and not reducible(vs.geometry["group_starts"], tiles)
                       for vs in sets):
                    return None
        else:
            for l, sets in layers.items():
                for vs in sets:
                    g = vs.geometry
                    if g.get("role") != "published_scan":
                        continue
                    bounds = np.asarray(g["bounds"])
                    if (self.capacities[l] > -(-self.sizes[l] // g["spread"]) or np.min(g["cap"]) < 1
                            or bounds[0] != 0 or bounds[-1] != self.sizes[l] or np.any(np.diff(bounds) < 0)):
                        return None  # a cap below K can cut the list, or the workers' ranges miss neurons
        return backward, layers

    def _layer_delay(self, l):
        return 0 if l == 1 or self.delay == 0 else 1

    def _loop_forward(self, layers, tt):
        from ....kernels.mimdsim_snn.layer_loops import forward_leaky
        T, B = self.T, self.B
        works = {}
        for l in sorted(layers):
            spec, p = self.specs[l - 1], self.p[l]
            n, K = self.sizes[l], self.capacities[l]
            scan = [vs for vs in layers[l] if vs.geometry["role"] == "published_scan"]
            bounds = np.asarray(scan[0].geometry["bounds"], dtype=np.int64) if scan else np.array([0, n])
            W = bounds.size - 1
            cap = (np.asarray(scan[0].geometry["cap"], dtype=np.int64).reshape(-1, 2, W) if scan
                   else np.ones((1, 2, W), dtype=np.int64))
            cnt, drop = np.empty((T, B, 2), dtype=np.int64), np.empty((T, B, 2), dtype=np.int64)
            hits, scanned = np.empty((T, B, 2, W), dtype=np.int64), np.empty((T, B, 2, W), dtype=np.int64)
            forward_leaky(self.W[l - 1], self.ids[l - 1], self.stats.kept[l - 1], self._layer_delay(l), p["gain"],
                          p["decay"], p["theta"], p["theta2"], lif.RESET_CODES[spec.reset],
                          spec.zero_resets_everything, spec.reset_delay, K, self.U[l], self.M[l], self.I[l],
                          np.zeros((B, n), dtype=self.dt), self.ids[l], cnt, drop, bounds, cap, hits, scanned,
                          self.M[l] is self.U[l])
            self.stats.record(l, slice(None), cnt[..., 0], cnt[..., 1], drop[..., 0], drop[..., 1])
            found = np.minimum(hits, cap)[tt]
            in_spikes = self._input_list_len(l, tt, 0)
            for vs in layers[l]:
                role = vs.geometry["role"]
                if role == "published_forward":
                    works[id(vs)] = {"in_spikes": in_spikes if "grid" in vs.geometry
                                     else in_spikes[..., vs.geometry["sample"]]}
                elif role == "published_scan":
                    works[id(vs)] = {"found": found.reshape(tt.size, -1), "scanned": scanned[tt].reshape(tt.size, -1)}
                elif role == "published_tile_combine":
                    self._found[l] = found
                    works[id(vs)] = self.published_tile_combine(vs, tt)
                else:
                    works[id(vs)] = self.published_combine(vs, tt)
            self._found[l] = found[-1]
        return works

    def _loop_backward(self, layers, tt):
        from ....kernels.mimdsim_snn.layer_loops import backward_leaky, weight_grad_reduced
        T, B, L, dt = self.T, self.B, self.L, self.dt
        hist_buf = np.empty(T * B * max(self.sizes[1:]), dtype=dt)
        dS_next = None  # the list gradients the layer above sent, [T, B, K]
        works = {}
        for l in range(L, 0, -1):
            spec, p = self.specs[l - 1], self.p[l]
            n, K = self.sizes[l], self.capacities[l]
            ids, listed = self.ids[l], self.stats.listed[l]
            if l == L:
                live = np.arange(K)[None, None, :] < listed[..., None]
                safe = np.maximum(ids, 0)
                g = (self.dL[np.arange(B)[None, :, None], safe] if self.readout.loss != "ce_rate"
                     else self.dL[np.arange(T)[:, None, None], np.arange(B)[None, :, None], safe])
                dS_all = np.zeros(ids.shape, dtype=dt) + np.where(live, g, 0).astype(dt)
            else:
                dS_all = dS_next
            sets = {vs.geometry["role"]: vs for vs in layers[l] if vs.geometry["role"] != "published_reduce"}
            stage1 = [vs for vs in layers[l] if vs.geometry["role"] == "published_reduce"
                      and vs.geometry["stage"] == 1]
            has_input_grad = "published_input_grad" in sets
            if has_input_grad != bool(stage1):
                raise AssertionError("an input gradient without its reduction")  # the published program pairs them
            Kin = self.capacities[l - 1]
            pl = self.layout.layers[l - 1]
            starts = (np.asarray(stage1[0].geometry["group_starts"], dtype=np.int64) if stage1
                      else np.zeros(1, dtype=np.int64))
            dS_in = np.zeros((T, B, Kin), dtype=dt)
            kind, p1, p2 = p["surrogate"]
            zero = np.zeros((B, n), dtype=dt)
            hist = hist_buf[:T * B * n].reshape(T, B, n)  # dI of every step (one buffer for all layers)
            backward_leaky(self.dm[l], dS_all, ids, listed, zero, self.U[l], self.M[l], zero, p["gain"], p["decay"],
                           p["theta"], lif.RESET_CODES[spec.reset], spec.zero_resets_everything, spec.reset_delay,
                           spec.reset_in_gradient, kind, p1, p2, self.work_du[l], self.work_dmdS[l],
                           np.zeros(n), np.zeros(n), hist, self.ids[l - 1], self.stats.listed[l - 1],
                           self._layer_delay(l), self.W[l - 1], np.asarray(pl.neuron_starts, dtype=np.int64), starts,
                           np.empty(n, dtype=dt), np.empty(pl.tiles, dtype=dt), np.empty(starts.size, dtype=dt),
                           dS_in, has_input_grad)
            self.dI[l][...] = hist[0]  # as the per-step path leaves it
            dS_next = dS_in
            grad = np.empty((self.sizes[l - 1], n), dtype=dt)
            weight_grad_reduced(hist, self.worker, self.dW_copies[l].shape[0], self.ids[l - 1], self.stats.kept[l - 1],
                                self._layer_delay(l), grad)
            self._reduced[l] = grad  # the update reads it instead of summing the (unused) copies
            self.P[l] = {}
            in_spikes, in_listed = self._input_list_len(l, tt, 0), self._input_list_len(l, tt, 1)
            for vs in layers[l]:
                role, g = vs.geometry["role"], vs.geometry
                if role == "published_surrogate":
                    works[id(vs)] = {"listed": listed[tt][..., g["sample"]]}
                elif role == "published_weight_grad":
                    per_sample = np.concatenate([np.zeros(in_spikes.shape[:-1] + (1,), dtype=in_spikes.dtype),
                                                 np.cumsum(in_spikes, axis=-1)], axis=-1)
                    works[id(vs)] = {"in_spikes": per_sample[..., g["first_sample"] + g["samples"]]
                                     - per_sample[..., g["first_sample"]]}
                elif role == "published_input_grad":
                    works[id(vs)] = {"in_listed": in_listed if "grid" in g else in_listed[..., g["sample"]]}
                elif g["stage"] == 1:
                    works[id(vs)] = {"in_listed": in_listed}
        return works

    # ---- results -------------------------------------------------------------------------
    def traces(self):
        """Per neuron layer: ``mem`` (membrane after any reset, as snnTorch returns it),
        ``spk`` (spikes H(u - theta), before list truncation) and the synaptic states."""
        out = []
        for l in range(1, self.L + 1):
            spec = self.specs[l - 1]
            d = {"mem": self.M[l], "u": self.U[l]}
            if spec.spiking:
                d["spk"] = (self.U[l] > self.p[l]["theta"]).astype(self.dt)
            if spec.model == "synaptic":
                d["syn"] = self.Syn[l]
            if spec.model == "alpha":
                d["syn_exc"], d["syn_inh"] = self.Exc[l], self.Inh[l]
            out.append(d)
        return out


def scan_work_from_flags(source, vs, flags) -> dict:
    """Execution-driven work of the published scan vertices (as ``spike_generation`` counts it):
    ``found`` = min(hits in the worker's range, Kw); ``scanned`` = the range's width, or up to the
    Kw-th hit where the worker stops."""
    g = vs.geometry
    bounds = np.asarray(g["bounds"])
    widths = np.diff(bounds)
    cap = np.asarray(g["cap"]).reshape(-1, 2, widths.size)
    hits = np.add.reduceat(flags.view(np.uint8), bounds[:-1], axis=2, dtype=np.int64)  # [B, 2, W]
    scanned = np.broadcast_to(widths, hits.shape).copy()
    full = np.nonzero(hits >= cap)  # workers that stop at their cap-th hit (rare at low activity)
    if full[0].size:
        b, th, w = full
        c = np.cumsum(flags[b, th, :], axis=1)  # [F, n]
        start = bounds[w]
        before = np.where(start > 0, c[np.arange(b.size), np.maximum(start - 1, 0)], 0)
        scanned[full] = np.argmax(c >= (before + cap[full])[:, None], axis=1) - start + 1
    found = np.minimum(hits, cap)
    source._found[vs.layer] = found
    return {"found": found.ravel(), "scanned": scanned.ravel()}
