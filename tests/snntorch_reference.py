"""snnTorch as the oracle: build the same network from snnTorch 1.0's own modules and run it.

Test-only helper; shares no code with mimdsim. ``run_snntorch(net, x, y)`` builds, per
layer, a weight matrix (and bias) as leaf tensors and the snnTorch neuron of the layer's
:class:`~mimdsim.NeuronSpec` (``Leaky``, ``RLeaky``, ``Synaptic``, ``RSynaptic``,
``Alpha``, ``Lapicque``), runs T steps with the network's inter-layer delay, applies the
``snntorch.functional`` loss and returns the loss, gradients (autograd) and traces.
"""
from __future__ import annotations

import numpy as np


def surrogate_fn(spec):
    from snntorch import surrogate

    s = spec.surrogate
    p = dict(s.params)
    if s.name == "atan":
        return surrogate.atan(alpha=p["alpha"])
    if s.name == "fast_sigmoid":
        return surrogate.fast_sigmoid(slope=p["slope"])
    if s.name == "superspike":
        return surrogate.fast_sigmoid(slope=p["beta"])
    if s.name == "sigmoid":
        return surrogate.sigmoid(slope=p["slope"])
    if s.name == "straight_through":
        return surrogate.straight_through_estimator()
    if s.name == "triangular":
        return surrogate.triangular(threshold=p["threshold"])
    if s.name == "spike_rate_escape":
        return surrogate.spike_rate_escape(beta=p["beta"], slope=p["slope"])
    raise KeyError(s.name)


def _t(v, dtype):
    import torch
    return torch.tensor(np.asarray(v, dtype=np.float64), dtype=dtype)


def build_neuron(spec, n, rec, rec_b, dtype, params=None):
    """The snnTorch module of one layer, with mimdsim's recurrent weights and current
    learnable parameter values (``params``) copied in."""
    import snntorch as snn
    import torch

    params = params or {}
    beta = _t(params.get("beta", spec.beta), dtype) if spec.beta is not None else None
    common = dict(threshold=_t(params.get("threshold", spec.threshold), dtype), spike_grad=surrogate_fn(spec),
                  learn_threshold=spec.learn_threshold, reset_mechanism=spec.reset)
    if spec.model == "leaky" and spec.recurrence == "none":
        mod = snn.Leaky(beta=beta, learn_beta=spec.learn_beta, reset_delay=spec.reset_delay, **common)
    elif spec.model == "leaky":
        kw = dict(all_to_all=spec.recurrence == "all-to-all", learn_recurrent=spec.learn_recurrent,
                  learn_beta=spec.learn_beta, reset_delay=spec.reset_delay)
        if spec.recurrence == "all-to-all":
            mod = snn.RLeaky(beta=beta, linear_features=n, **kw, **common)
        else:
            mod = snn.RLeaky(beta=beta, V=_t(rec, dtype), **kw, **common)
    elif spec.model == "synaptic" and spec.recurrence == "none":
        mod = snn.Synaptic(alpha=_t(spec.alpha, dtype), beta=beta, learn_beta=spec.learn_beta,
                           reset_delay=spec.reset_delay, **common)
    elif spec.model == "synaptic":
        kw = dict(all_to_all=spec.recurrence == "all-to-all", learn_recurrent=spec.learn_recurrent,
                  learn_beta=spec.learn_beta, reset_delay=spec.reset_delay)
        if spec.recurrence == "all-to-all":
            mod = snn.RSynaptic(alpha=_t(spec.alpha, dtype), beta=beta, linear_features=n, **kw, **common)
        else:
            mod = snn.RSynaptic(alpha=_t(spec.alpha, dtype), beta=beta, V=_t(rec, dtype), **kw, **common)
    elif spec.model == "alpha":
        mod = snn.Alpha(alpha=_t(spec.alpha, dtype), beta=beta, learn_beta=spec.learn_beta, **common)
    elif spec.model == "lapicque":
        mod = snn.Lapicque(beta=beta if spec.beta is not None else False, R=spec.R or False, C=spec.C or False,
                           time_step=spec.time_step, **common)
    else:
        raise KeyError(spec.model)
    if spec.recurrence == "all-to-all":
        with torch.no_grad():
            mod.recurrent.weight.copy_(_t(rec, dtype).T)
            mod.recurrent.bias.copy_(_t(rec_b, dtype))
    return mod.to(dtype)


def run_snntorch(net, x, y, dtype=None):
    """Loss, gradients and traces of ``net`` (a mimdsim Network) computed by snnTorch."""
    import torch
    from snntorch import functional as SF

    dtype = dtype or (torch.float64 if np.dtype(net.dtype) == np.float64 else torch.float32)
    T, B, _ = x.shape
    L = len(net.sizes) - 1
    W = [_t(w, dtype).requires_grad_(True) for w in net.weights]
    bias = [None if b is None else _t(b, dtype).requires_grad_(True) for b in net.biases]
    mods = [build_neuron(spec, n, net.recurrent[l], net.recurrent_biases[l], dtype, net.neuron_params[l])
            for l, (spec, n) in enumerate(zip(net.specs, net.sizes[1:]))]
    xs = torch.tensor(np.asarray(x, dtype=np.float64), dtype=dtype)
    state = []
    for spec, n in zip(net.specs, net.sizes[1:]):
        z = lambda: torch.zeros(B, n, dtype=dtype)  # noqa: E731
        state.append({"mem": z(), "syn": z(), "exc": z(), "inh": z(), "spk": z()})
    spk_rec = [[] for _ in range(L)]
    mem_rec = [[] for _ in range(L)]
    syn_rec = [[] for _ in range(L)]
    for t in range(T):
        prev = [s["spk"] for s in state]
        for l in range(L):
            spec, mod, s = net.specs[l], mods[l], state[l]
            if l == 0:
                inp = xs[t]
            elif net.delay == 0:
                inp = state[l - 1]["spk"]
            else:
                inp = prev[l - 1] if t > 0 else torch.zeros(B, net.sizes[l], dtype=dtype)
            cur = inp.to(dtype) @ W[l]  # snnTorch's spikes are float32 whatever the state's dtype
            if bias[l] is not None:
                cur = cur + bias[l]
            if spec.model == "leaky" and spec.recurrence == "none":
                spk, mem = mod(cur, s["mem"])
            elif spec.model == "leaky":
                spk, mem = mod(cur, s["spk"], s["mem"])
            elif spec.model == "synaptic" and spec.recurrence == "none":
                spk, syn, mem = mod(cur, s["syn"], s["mem"])
                s["syn"] = syn
            elif spec.model == "synaptic":
                spk, syn, mem = mod(cur, s["spk"], s["syn"], s["mem"])
                s["syn"] = syn
            elif spec.model == "alpha":
                spk, exc, inh, mem = mod(cur, s["exc"], s["inh"], s["mem"])
                s["exc"], s["inh"] = exc, inh
            else:
                spk, mem = mod(cur, s["mem"])
            s["spk"], s["mem"] = spk, mem
            spk_rec[l].append(spk)
            mem_rec[l].append(mem)
            syn_rec[l].append(s["syn"])
    out_spk = torch.stack(spk_rec[-1]).to(dtype)
    out_mem = torch.stack(mem_rec[-1])
    r = net.readout
    yt = torch.tensor(np.asarray(y), dtype=torch.long)
    pop = dict(population_code=True, num_classes=r.num_classes) if r.num_classes else {}
    if r.loss == "ce_count":
        loss = SF.ce_count_loss(**pop)(out_spk, yt)
    elif r.loss == "ce_rate":
        loss = SF.ce_rate_loss()(out_spk, yt)
    elif r.loss == "mse_count":
        loss = SF.mse_count_loss(correct_rate=r.correct_rate, incorrect_rate=r.incorrect_rate, **pop)(out_spk, yt)
    else:
        loss = SF.ce_max_membrane_loss()(out_mem, yt)
    params = {}
    for l in range(L):
        params[(l, "weight")] = W[l]
        if bias[l] is not None:
            params[(l, "bias")] = bias[l]
        mod, spec = mods[l], net.specs[l]
        if spec.learn_beta:
            params[(l, "beta")] = mod.beta
        if spec.learn_threshold:
            params[(l, "threshold")] = mod.threshold
        if spec.recurrence == "all-to-all" and spec.learn_recurrent:
            params[(l, "recurrent")] = mod.recurrent.weight
            params[(l, "recurrent_bias")] = mod.recurrent.bias
        if spec.recurrence == "one-to-one" and spec.learn_recurrent:
            params[(l, "recurrent")] = mod.recurrent.V
    keys = list(params)
    grads = torch.autograd.grad(loss, [params[k] for k in keys], allow_unused=True)
    out = {}
    for k, g in zip(keys, grads):
        g = np.zeros(tuple(params[k].shape)) if g is None else g.detach().double().numpy()
        if k[1] == "recurrent" and g.ndim == 2:
            g = g.T
        out[k] = g
    stack = lambda seq: torch.stack(seq).detach().double().numpy()  # noqa: E731
    traces = [{"spk": stack(spk_rec[l]), "mem": stack(mem_rec[l])} for l in range(L)]
    return float(loss.detach()), out, traces


def tutorial_step(sizes, T, B, *, neuron=None, item=True, around_optimizer=None):
    """One eager snnTorch training step as its tutorials write it, as a zero-argument callable:
    ``nn.Linear`` + a neuron per layer (``neuron(n, surrogate)``, default ``Leaky(beta=0.9)``), the same
    input at every step, the spike and membrane records stacked, ``ce_count_loss``, Adam foreach and
    ``loss.item()`` (``item=False`` leaves it out). ``around_optimizer``: a context manager factory
    entered around ``opt.step()`` (a counter can tell the optimizer's ops apart)."""
    import contextlib

    import snntorch as snn
    import torch
    from snntorch.functional import loss as SF

    torch.manual_seed(0)
    sg = snn.surrogate.fast_sigmoid()
    fcs = [torch.nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:])]
    make = neuron or (lambda n, sg: snn.Leaky(beta=0.9, spike_grad=sg))
    lifs = [make(b, sg) for b in sizes[1:]]
    opt = torch.optim.Adam([p for m in fcs + lifs for p in m.parameters()], lr=1e-3, foreach=True)
    x, y, lossf = torch.rand(B, sizes[0]), torch.randint(0, sizes[-1], (B,)), SF.ce_count_loss()

    def step():
        opt.zero_grad()
        for lif in lifs:
            lif.reset_mem()
        spk, mem = [], []
        for _ in range(T):
            h = x
            for fc, lif in zip(fcs, lifs):
                out = lif(fc(h))
                h = out[0]
            spk.append(h)
            mem.append(out[-1])
        spk, mem = torch.stack(spk), torch.stack(mem)  # the records, as snnTorch's tutorials keep both
        loss = lossf(spk, y)
        loss.backward()
        with (around_optimizer or contextlib.nullcontext)():
            opt.step()
        if item:
            loss.item()

    return step
