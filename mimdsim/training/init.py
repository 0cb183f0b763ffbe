"""Data-dependent weight initialisation: scale each layer to a target spike activity.

Random weights with std ``scale / sqrt(fan_in)`` (the fan-in rule) assume that every input
may be active. A sparse network whose lists carry at most K of n spikes per step then
starves its deeper layers (a layer fed by 4 spikes per step barely moves its membranes),
and a dense one may fire far above the capacity K of a sparse twin. The default
initialisation (the activity rule, :func:`mimdsim.snn.network.activity_stds`) fixes the
scale from a model of the neuron driven by white noise; what it cannot know is the data's
temporal structure (a rate-coded pixel fires in step after step). Like LSUV (Mishkin & Matas
2016), which the public code of Finkbeiner et al. applies with a target activity,
:func:`calibrate_activity` fixes this from data: layer by layer, input first, it
multiplies the layer's weight matrix by the factor s that brings the layer's mean spike
activity on a calibration batch to the target (geometric bisection on s; activity grows
with s for zero-mean weights). The activity is measured by running the batch on the
chip (:func:`mimdsim.simulate`), so it is the chip's dynamics that are calibrated.

Calibrate once and copy the weights into every run of a comparison, so that dense and
sparse runs start from the same network.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ..checks import check_fractions, check_int
from ..workloads.snn.simulate import simulate


def calibrate_activity(net, chip, dataset, target=0.01, *, batch_size=32, seed=0, iterations=16, tolerance=0.1,
                       neurons_per_tile=None, reserve_tile0=True) -> list:
    """Scale ``net.weights`` in place so that each layer's activity on a training batch is
    ``target`` (a fraction per step; one number or one per neuron layer).

    Returns per layer ``(scale, activity reached)``. A layer whose input is silent cannot
    be calibrated and keeps the largest scale tried; raise the target of earlier layers.
    """
    L = net.num_layers
    targets = check_fractions("target", target, L, open_low=True, open_high=True,
                              fix="a spike fraction per step, e.g. 0.01")
    check_int("iterations", iterations, low=1, fix="scales tried per layer, e.g. 16")
    B = min(int(batch_size), len(dataset.train))
    rng = np.random.default_rng(seed)
    idx = np.sort(rng.choice(len(dataset.train), B, replace=False))
    x, y = dataset.train.spikes(idx), dataset.train.labels[idx]
    kw = dict(inputs=x, labels=y, seed=seed, neurons_per_tile=neurons_per_tile, reserve_tile0=reserve_tile0,
              training=False)
    result = []
    for l in range(1, L + 1):
        w0 = net.weights[l - 1].astype(np.float64)
        s, lo, hi = 1.0, None, None
        best = None  # (distance to target, scale, activity)
        t = targets[l - 1]
        for _ in range(iterations):
            net.weights[l - 1] = (w0 * s).astype(net.dtype)
            with warnings.catch_warnings():  # a silent trial scale is part of the search, not news
                warnings.simplefilter("ignore")
                a = simulate(net, chip, **kw).report.layers[l]["activity"]
            if best is None or abs(a - t) < best[0]:
                best = (abs(a - t), s, a)
            if abs(a - t) <= tolerance * t:
                break
            if a < t:
                lo = s
                s = s * 4 if hi is None else math.sqrt(lo * hi)
            else:
                hi = s
                s = s / 4 if lo is None else math.sqrt(lo * hi)
        _, s, a = best
        net.weights[l - 1] = (w0 * s).astype(net.dtype)
        result.append((float(s), float(a)))
    return result
