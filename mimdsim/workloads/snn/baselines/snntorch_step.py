"""A :class:`~mimdsim.Network` as the real snnTorch training step, for a trace (``eager_trace.py``).

``training_step(net, T, B)`` builds, per layer, ``nn.Linear`` (bias as the network has one) and the
snnTorch module of the layer's :class:`~mimdsim.NeuronSpec` (``Leaky``, ``RLeaky``, ``Synaptic``,
``RSynaptic``, ``Alpha``, ``Lapicque``) on the installed snnTorch, and returns a zero-argument callable:
one training step as snnTorch's tutorials write it (``zero_grad``, reset the states, the Python loop over
time layer by layer, the output's spike and membrane records stacked, the network's
``snntorch.functional`` loss, ``backward``, ``torch.optim`` Adam or SGD with ``foreach=True``, and
``loss.item()``).

Values do not matter to the op stream, only shapes and modules, so the step is built on PyTorch's
``meta`` device by default: every op dispatches with its shapes and nothing is computed (the default
model's step traces in about a second instead of minutes). The step reads no tensor value on the host
but ``loss.item()``, which a trace on ``meta`` records as a sync and answers with 0.

What the snnTorch module cannot say: the published LIF's input gain (``gain``) is folded into the
weights (snnTorch has none: same ops), and its ``reset_in_gradient=False`` is snnTorch's own
detached reset (``mem_reset`` detaches). torch and snnTorch are imported when called, never at import.
"""
from __future__ import annotations

import numpy as np


def _torch():
    try:
        import snntorch  # noqa: F401
        import torch
    except ImportError:
        from ....errors import ConfigError
        raise ConfigError('tracing the eager baseline needs PyTorch and snnTorch: pip install "mimdsim[torch]"') \
            from None
    return torch


def surrogate(spec):
    """snnTorch's surrogate of ``spec.surrogate`` (SuperSpike is snnTorch's fast sigmoid, slope beta)."""
    from snntorch import surrogate as sg

    p = dict(spec.surrogate.params)
    return {
        "atan": lambda: sg.atan(alpha=p["alpha"]),
        "fast_sigmoid": lambda: sg.fast_sigmoid(slope=p["slope"]),
        "superspike": lambda: sg.fast_sigmoid(slope=p["beta"]),
        "sigmoid": lambda: sg.sigmoid(slope=p["slope"]),
        "straight_through": lambda: sg.straight_through_estimator(),
        "triangular": lambda: sg.triangular(threshold=p["threshold"]),
        "spike_rate_escape": lambda: sg.spike_rate_escape(beta=p["beta"], slope=p["slope"]),
    }[spec.surrogate.name]()


def _value(torch, v):
    """A spec value as snnTorch takes it: a Python float, or a tensor where it is per neuron."""
    a = np.asarray(v, dtype=np.float64)
    return float(a) if a.ndim == 0 else torch.tensor(a, dtype=torch.float32)


def neuron_module(spec, n):
    """The snnTorch module of one layer of ``n`` neurons (its shapes and defaults; weights random)."""
    import snntorch as snn
    import torch

    beta = _value(torch, spec.beta) if spec.beta is not None else None
    common = dict(threshold=_value(torch, spec.threshold), spike_grad=surrogate(spec),
                  learn_threshold=spec.learn_threshold, reset_mechanism=spec.reset)
    rec = dict(all_to_all=spec.recurrence == "all-to-all", learn_recurrent=spec.learn_recurrent,
               learn_beta=spec.learn_beta, reset_delay=spec.reset_delay)
    if spec.recurrence == "all-to-all":
        rec["linear_features"] = n
    elif spec.recurrence == "one-to-one":
        rec["V"] = torch.ones(n)
    if spec.model == "leaky":
        if spec.recurrence == "none":
            return snn.Leaky(beta=beta, learn_beta=spec.learn_beta, reset_delay=spec.reset_delay, **common)
        return snn.RLeaky(beta=beta, **rec, **common)
    if spec.model == "synaptic":
        alpha = _value(torch, spec.alpha)
        if spec.recurrence == "none":
            return snn.Synaptic(alpha=alpha, beta=beta, learn_beta=spec.learn_beta, reset_delay=spec.reset_delay,
                                **common)
        return snn.RSynaptic(alpha=alpha, beta=beta, **rec, **common)
    if spec.model == "alpha":
        return snn.Alpha(alpha=_value(torch, spec.alpha), beta=beta, learn_beta=spec.learn_beta, **common)
    return snn.Lapicque(beta=beta if spec.beta is not None else False, R=spec.R or False, C=spec.C or False,
                        time_step=spec.time_step, **common)


STATES = {"leaky": ("mem",), "lapicque": ("mem",), "synaptic": ("syn", "mem"), "alpha": ("exc", "inh", "mem")}


def _loss(readout):
    from snntorch import functional as SF

    pop = dict(population_code=True, num_classes=readout.num_classes) if readout.num_classes else {}
    if readout.loss == "ce_count":
        return SF.ce_count_loss(**pop), "spk"
    if readout.loss == "ce_rate":
        return SF.ce_rate_loss(), "spk"
    if readout.loss == "mse_count":
        return SF.mse_count_loss(correct_rate=readout.correct_rate, incorrect_rate=readout.incorrect_rate,
                                 **pop), "spk"
    return SF.ce_max_membrane_loss(), "mem"


def training_step(net, timesteps: int, batch_size: int, *, optimizer: str = "adam", device: str = "meta"):
    """One snnTorch training step of ``net`` as a zero-argument callable (see the module docstring)."""
    torch = _torch()
    T, B = int(timesteps), int(batch_size)
    sizes = list(net.sizes)
    specs = list(net.specs)
    biases = list(getattr(net, "biases", None) or [None] * len(specs))
    torch.manual_seed(0)
    with torch.device(device):
        fcs = [torch.nn.Linear(a, b, bias=bias is not None) for a, b, bias in zip(sizes[:-1], sizes[1:], biases)]
    lifs = [neuron_module(spec, n).to(device) for spec, n in zip(specs, sizes[1:])]
    params = [p for m in fcs + lifs for p in m.parameters()]
    opt = (torch.optim.Adam(params, lr=1e-3, foreach=True) if optimizer == "adam"
           else torch.optim.SGD(params, lr=1e-3, foreach=True))
    x = torch.rand(T, B, sizes[0], device=device)
    y = torch.randint(0, net.readout.classes(sizes[-1]), (B,), device=device)
    lossf, record = _loss(net.readout)
    kinds = [(s.model, s.recurrence != "none") for s in specs]

    def step():
        opt.zero_grad()
        state = []  # each state variable zeroed, as snnTorch's reset_mem / init_* do
        for (model, recurrent), n in zip(kinds, sizes[1:]):
            names = STATES[model] + (("spk",) if recurrent else ())
            state.append({v: torch.zeros(B, n, device=device) for v in names})
        spk_rec, mem_rec = [], []
        for t in range(T):
            h = x[t]
            for (model, recurrent), fc, lif, s in zip(kinds, fcs, lifs, state):
                cur = fc(h)
                if model == "leaky" and not recurrent:
                    s["spk"], s["mem"] = lif(cur, s["mem"])
                elif model == "leaky":
                    s["spk"], s["mem"] = lif(cur, s["spk"], s["mem"])
                elif model == "synaptic" and not recurrent:
                    s["spk"], s["syn"], s["mem"] = lif(cur, s["syn"], s["mem"])
                elif model == "synaptic":
                    s["spk"], s["syn"], s["mem"] = lif(cur, s["spk"], s["syn"], s["mem"])
                elif model == "alpha":
                    s["spk"], s["exc"], s["inh"], s["mem"] = lif(cur, s["exc"], s["inh"], s["mem"])
                else:
                    s["spk"], s["mem"] = lif(cur, s["mem"])
                h = s["spk"]
            spk_rec.append(state[-1]["spk"])
            mem_rec.append(state[-1]["mem"])
        spk, mem = torch.stack(spk_rec), torch.stack(mem_rec)
        loss = lossf(spk if record == "spk" else mem, y)
        loss.backward()
        opt.step()
        loss.item()

    return step
