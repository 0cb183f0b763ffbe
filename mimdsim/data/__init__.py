"""Spike data for training, generated or read locally (nothing is downloaded at run time).

* :func:`randman` — random smooth manifolds (Zenke & Vogels 2021), generated from a seed;
* :func:`digits` — scikit-learn's bundled 8x8 digits, rate or latency coded (``mimdsim[data]``);
* :func:`events` — your own ``.npz`` event files, binned to T steps (:func:`save_events` writes one).

Each returns a :class:`Dataset` (train and test :class:`SpikeSet`) for :func:`mimdsim.train`.

Imported by: training, cli, mimdsim (the package exports the data sets).
"""
from .base import Dataset, MissingDependency, SpikeSet, split_indices
from .digits import digits
from .events import events, load_events, save_events
from .randman import randman

__all__ = ["Dataset", "SpikeSet", "MissingDependency", "split_indices", "digits", "events", "load_events",
           "save_events", "randman"]
