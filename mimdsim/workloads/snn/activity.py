"""Rate-driven activities from an executed run: the per-layer spike and candidate rates whose draws, truncated
at each list's capacity K, give the mean kept (num[0]) and listed (num[1]) counts an execution measured.

A rate-driven run draws a layer's spikes from Binomial(n, a) and its candidates from Binomial(n - s, a_c), and
keeps min(s, K) and min(s + c, K) of them (:mod:`.sources.rate`). :func:`rates_for_fills` solves a and a_c for
given mean fills; :func:`activity_from_execution` measures the fills with one execution-driven step of the
network on given input (``--activity-from execute``); ``mimdsim/validation/study_activity.py`` uses the same
solution for the study's stored execution.
"""
from __future__ import annotations

import math

import numpy as np


def rate_for_fill(n, K, target) -> float:
    """The binomial rate p with E[min(Binomial(n, p), K)] = ``target`` (0 for an empty list, 1 where the fill is
    K: a list always full, as an output list with theta2 -100)."""
    if target <= 0:
        return 0.0
    if target >= K * (1 - 1e-9):
        return 1.0
    k = np.arange(K)

    def fill(p):
        log_pmf = np.cumsum(np.concatenate([[n * math.log1p(-p)], np.log((n - k[:-1]) / (k[:-1] + 1) * p / (1 - p))]))
        pmf = np.exp(log_pmf)  # P(N = k), k < K
        return float((k * pmf).sum() + K * (1 - pmf.sum()))

    lo, hi = 0.0, 1.0 - 1e-12
    for _ in range(80):  # the truncated mean rises with p: bisection to float precision
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if fill(mid) < target else (lo, mid)
    return (lo + hi) / 2


def rates_for_fills(sizes, capacities, kept, listed) -> dict:
    """Rate-driven ``activity``, ``candidate_activity`` (per neuron layer) and ``input_activity`` whose draws give
    the mean ``kept`` and ``listed`` counts (per layer, input first); the fills are returned with them."""
    act = [rate_for_fill(n, K, k) for n, K, k in zip(sizes, capacities, kept)]
    total = [rate_for_fill(n, K, v) for n, K, v in zip(sizes, capacities, listed)]
    # s + c ~ Binomial(n, a + (1 - a) a_c): the candidates' rate of the rest from the listed total
    cand = [0.0 if a >= 1 else min(1.0, max(0.0, (t - a) / (1 - a))) for a, t in zip(act, total)]
    return {"input_activity": act[0], "activity": act[1:], "candidate_activity": cand[1:],
            "kept": [round(float(v), 4) for v in kept], "listed": [round(float(v), 4) for v in listed]}


def mean_fills(stats, layers) -> tuple[list, list]:
    """Per layer (input first) the batch-and-time mean kept and listed counts of a run's ``stats``."""
    return ([float(stats.kept[l].mean()) for l in range(layers + 1)],
            [float(stats.listed[l].mean()) for l in range(layers + 1)])


def activity_from_execution(net, chip, inputs, labels, *, described="the given input", **simulate_kw) -> dict:
    """One execution-driven step of ``net`` on ``inputs``/``labels`` (no update applied), its mean list fills and
    the rates that reproduce them (:func:`rates_for_fills`), with ``source``: a line saying so (``described``
    names the input)."""
    from .simulate import simulate

    kw = {k: v for k, v in simulate_kw.items() if k != "optimizer"}  # measured, never trained
    run = simulate(net, chip, inputs=inputs, labels=labels, band=False, **kw)
    kept, listed = mean_fills(run.stats, net.num_layers)
    rates = rates_for_fills(net.sizes, net.capacities, kept, listed)
    T, B = np.shape(inputs)[:2]
    fills = ", ".join(f"{k:.3g}/{v:.3g}" for k, v in zip(kept[1:], listed[1:]))
    rates["source"] = (f"one execution-driven step of this network on {described} (T = {T}, B = {B}; mean kept/"
                       f"listed ids per layer {fills}; input {kept[0]:.3g})")
    return rates
