"""scikit-learn's bundled 8x8 handwritten digits (1797 samples, 10 classes) as spike trains.

The images ship inside scikit-learn (``sklearn.datasets.load_digits``), so nothing is
downloaded. Pixel intensities v = pixel / 16 in [0, 1] on 64 inputs become spikes by

* **rate** coding: input i spikes at step t with probability ``max_rate * v_i``
  (independent Bernoulli draws, fixed by ``seed`` when the data set is made);
* **latency** coding: one spike per pixel with ``v_i > threshold``, at step
  ``round((1 - v_i) * span * (T - 1))`` (bright pixels first).

Install with ``pip install 'mimdsim[data]'`` (scikit-learn).
"""
from __future__ import annotations

import numpy as np

from ..checks import check_choice, check_int, check_number
from .base import Dataset, MissingDependency, SpikeSet, split_indices

ENCODINGS = ("rate", "latency")


def load_digit_images():
    """``(images [1797, 64] in [0, 1], labels [1797])`` from scikit-learn's bundled copy."""
    try:
        from sklearn.datasets import load_digits
    except ImportError as e:
        raise MissingDependency(
            "the digits data set needs scikit-learn (it ships the 8x8 digits, no download): "
            "pip install 'mimdsim[data]' or pip install scikit-learn") from e
    d = load_digits()
    return d.data.astype(np.float64) / 16.0, d.target.astype(np.int64)


def encode_rate(values, timesteps, max_rate, rng):
    """``[N, n]`` intensities in [0, 1] -> ``[N, T, n]`` 0/1 with P(spike) = max_rate * v per step."""
    p = np.asarray(values)[:, None, :] * max_rate
    return (rng.random((p.shape[0], timesteps, p.shape[2])) < p).astype(np.uint8)


def encode_latency(values, timesteps, threshold=0.2, span=1.0):
    """``[N, n]`` intensities -> ``(sample, time, id)`` of one spike per value above ``threshold``."""
    v = np.asarray(values)
    s, i = np.nonzero(v > threshold)
    t = np.rint((1.0 - v[s, i]) * span * (timesteps - 1)).astype(np.int64)
    return s, t, i


def digits(encoding="rate", timesteps=20, *, max_rate=0.5, threshold=0.2, span=1.0, test_fraction=0.2,
           seed=0, limit=None) -> Dataset:
    """The 8x8 digits as spikes. ``encoding``: ``"rate"`` or ``"latency"``; a stratified
    ``test_fraction`` is held out (seeded). ``limit`` keeps only the first ``limit`` images."""
    check_choice("encoding", encoding, ENCODINGS)
    T = check_int("timesteps", timesteps, low=1)
    max_rate = float(check_number("max_rate", max_rate, low=0, high=1, open_low=True,
                                  fix="the spike probability per step of a white pixel"))
    threshold = float(check_number("threshold", threshold, low=0, high=1, open_high=True,
                                   fix="the intensity below which a pixel never spikes"))
    span = float(check_number("span", span, low=0, high=1, fix="the fraction of the steps the spike times span"))
    X, y = load_digit_images()
    if limit is not None:
        limit = check_int("limit", limit, low=1, fix="the number of images to keep")
        X, y = X[:limit], y[:limit]
    rng = np.random.default_rng(seed)
    if encoding == "rate":
        full = SpikeSet.from_dense(encode_rate(X, T, max_rate, rng), y)
    else:
        s, t, i = encode_latency(X, T, threshold, span)
        full, _ = SpikeSet.from_events(s, t, i, y, T, X.shape[1])
    tr, te = split_indices(len(y), test_fraction, rng, y)
    info = dict(generator="digits", encoding=encoding, timesteps=T, seed=seed, test_fraction=test_fraction,
                **({"max_rate": max_rate} if encoding == "rate" else {"threshold": threshold, "span": span}))
    return Dataset(f"digits-{encoding}-T{T}", full.subset(tr), full.subset(te), 10, info)
