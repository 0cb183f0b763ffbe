"""Randman: spike-timing data from random smooth manifolds (Zenke & Vogels 2021).

Zenke, F. and Vogels, T. P., "The remarkable robustness of surrogate gradient learning for
instilling complex function in spiking neural networks", Neural Computation 33(4), 2021.

Each class c owns a random smooth D-dimensional manifold embedded in the n-dimensional
input space. Coordinate i of the embedding is a product over the manifold dimensions d of
random 1-D Fourier series with a power-law spectrum::

    f_{c,i}(x) = prod_d  sum_{k=0}^{F-1}  a_{c,i,d,k} / (k + 1)^alpha
                               * sin(2 pi (k * x_d * b_{c,i,d,k} + p_{c,i,d,k}))

with a, b, p uniform in [0, 1) (a_{.,.,.,0} = 0: no offset), ``alpha`` the smoothness
(larger: smoother) and F = min(ceil(prec^(-1/alpha)), 1000) frequencies. A sample of class
c draws x uniformly from [0, 1)^D; input i then spikes once, at time

    t_i = min-max-normalised f_{c,i}(x) (over the class's samples) * T * step_frac

binned to T steps. ``spikes_per_input`` > 1 stacks independent manifolds, one spike each.
The classes differ only in *when* each input spikes, never in how often, so the task
needs spike timing. Everything is generated locally from ``seed``.
"""
from __future__ import annotations

import numpy as np

from ..checks import check_host_bytes, check_int, check_number
from ..errors import Param
from .base import Dataset, SpikeSet, split_indices


def fourier_manifold(params, x, alpha):
    """Evaluate random manifolds at points ``x``.

    ``params``: ``[M, n, D, 3, F]`` (amplitude, frequency scale, phase) for M manifolds of
    n embedding coordinates; ``x``: ``[M, S, D]`` points on each manifold. Returns ``[M, S, n]``.
    """
    M, n, D, _, F = params.shape
    spectrum = 1.0 / (np.arange(F) + 1.0) ** alpha  # [F]
    k = np.arange(F, dtype=np.float64)
    out = np.ones((M, x.shape[1], n))
    for d in range(D):  # D is the manifold dimension (1-3), not a neuron or sample count
        a, b, p = (params[:, :, d, j, :] for j in range(3))  # [M, n, F]
        # phase[m, s, i, f] = 2 pi (k_f * x[m, s, d] * b[m, i, f] + p[m, i, f])
        phase = 2 * np.pi * (x[:, :, d, None, None] * (k * b)[:, None] + p[:, None])
        out *= np.einsum("msif,mif->msi", np.sin(phase), a * spectrum)
    return out


def randman(n_classes=10, n_inputs=100, timesteps=50, samples_per_class=200, *, manifold_dim=1, alpha=2.0,
            spikes_per_input=1, step_frac=1.0, prec=1e-3, test_fraction=0.2, seed=0, max_frequencies=1000,
            chunk=256) -> Dataset:
    """A Randman classification data set, generated from ``seed`` (nothing downloaded).

    ``n_classes`` manifolds (times ``spikes_per_input``) of dimension ``manifold_dim`` in
    ``n_inputs`` dimensions; ``samples_per_class`` samples each; spike times spread over
    ``step_frac * timesteps`` steps. A stratified ``test_fraction`` is held out.
    """
    C, n, T, S, D, P = (check_int(name, v, low=1) for name, v in (
        ("n_classes", n_classes), ("n_inputs", n_inputs), ("timesteps", timesteps),
        ("samples_per_class", samples_per_class), ("manifold_dim", manifold_dim), ("spikes_per_input", spikes_per_input)))
    step_frac = float(check_number("step_frac", step_frac, low=0, high=1, open_low=True,
                                   fix="the fraction of the steps the spikes span"))
    check_number("alpha", alpha, low=0, open_low=True, fix="the spectrum's fall-off; 2 is the paper's")
    check_number("prec", prec, low=0, high=1, open_low=True, open_high=True,
                 fix="the smallest spectral amplitude kept, e.g. 1e-3")
    F = int(min(np.ceil(prec ** (-1.0 / alpha)), max_frequencies))
    # from the shapes, before any array: the manifolds' Fourier parameters, a few float64 and int64
    # arrays of [manifolds, samples, inputs] (values, their scaling, spike times, events), and the
    # data set's count per (sample, step)
    check_host_bytes(f"the Randman data set of {C:,} classes x {S:,} samples x {n:,} inputs x {T:,} steps "
                     f"(manifold dimension {D})", 8.0 * (C * P * n * D * 3 * F + 6 * C * P * S * n + C * S * T),
                     fix=("lower ", Param("n_classes", key="data.classes"), ", ",
                          Param("samples_per_class", key="data.samples_per_class"), ", ",
                          Param("n_inputs", key="data.inputs"), ", ", Param("manifold_dim", key="data.manifold_dim"),
                          " or ", Param("timesteps", key="data.timesteps")))
    rng = np.random.default_rng(seed)
    params = rng.random((C * P, n, D, 3, F))
    params[:, :, :, 0, 0] = 0.0
    x = rng.random((C, S, D))
    xs = np.repeat(x, P, axis=0)  # each class's P manifolds see the same points
    # Evaluate in chunks of manifolds to bound the [M, S, n, F] temporary.
    per = max(1, int(chunk * 2 ** 20 // max(1, S * n * F * 8)))
    vals = np.concatenate([fourier_manifold(params[i:i + per], xs[i:i + per], alpha)
                           for i in range(0, C * P, per)])  # [C*P, S, n]
    lo, hi = vals.min(axis=1, keepdims=True), vals.max(axis=1, keepdims=True)
    unit = (vals - lo) / (hi - lo + 1e-7)  # min-max per manifold and coordinate, over the class's samples
    times = np.minimum((unit * T * step_frac).astype(np.int64), T - 1)  # [C*P, S, n]
    times = times.reshape(C, P, S, n).transpose(0, 2, 1, 3).reshape(C * S, P * n)
    ids = np.broadcast_to(np.tile(np.arange(n), P), times.shape)
    sample = np.broadcast_to(np.arange(C * S)[:, None], times.shape)
    labels = np.repeat(np.arange(C), S)
    full, merged = SpikeSet.from_events(sample.ravel(), times.ravel(), ids.ravel(), labels, T, n)
    tr, te = split_indices(C * S, test_fraction, rng, labels)
    info = dict(generator="randman", seed=seed, n_classes=C, n_inputs=n, timesteps=T, samples_per_class=S,
                manifold_dim=D, alpha=float(alpha), spikes_per_input=P, step_frac=step_frac, frequencies=F,
                test_fraction=test_fraction, merged_events=merged)
    return Dataset(f"randman-{C}c-{n}in-T{T}", full.subset(tr), full.subset(te), C, info)

