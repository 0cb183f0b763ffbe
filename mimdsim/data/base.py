"""Spike datasets: samples stored as binned events, turned into ``[T, B, n]`` spike arrays per batch.

A :class:`SpikeSet` holds N samples in a compressed layout (the events of sample s are
``offsets[s]:offsets[s + 1]``; each event a time bin in ``[0, T)`` and an input id in
``[0, n_inputs)``), so data sets much larger than their dense ``[N, T, n]`` form fit in
memory. Several events of one input in one bin are one spike (the input is binary);
those merges are counted when a data set is built. A :class:`Dataset` is a named pair of
train and test sets with the number of classes and how it was made.

Everything here is vectorised numpy: no Python loop runs over samples, neurons or events.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from ..errors import ConfigError, MimdsimError
from ..checks import check_number


class MissingDependency(MimdsimError, ImportError):
    """An optional dependency (an extra of the mimdsim package) is not installed."""


@dataclass
class SpikeSet:
    """N samples of binary input spikes over ``timesteps`` steps, stored as events.

    ``times[e]``, ``ids[e]``: time bin and input id of event e; the events of sample s are
    ``offsets[s]:offsets[s + 1]``, sorted and without duplicates; ``labels[s]`` its class.
    """

    times: np.ndarray
    ids: np.ndarray
    offsets: np.ndarray
    labels: np.ndarray
    timesteps: int
    n_inputs: int

    def __post_init__(self):
        self.times = np.ascontiguousarray(self.times, dtype=np.int32)
        self.ids = np.ascontiguousarray(self.ids, dtype=np.int32)
        self.offsets = np.ascontiguousarray(self.offsets, dtype=np.int64)
        self.labels = np.ascontiguousarray(self.labels, dtype=np.int64)
        N = self.labels.shape[0]
        if self.offsets.shape != (N + 1,) or self.offsets[0] != 0 or self.offsets[-1] != self.times.size \
                or np.any(np.diff(self.offsets) < 0):
            raise ConfigError(f"offsets must be {N + 1} non-decreasing indices from 0 to {self.times.size}")
        if self.times.shape != self.ids.shape:
            raise ConfigError(f"times ({self.times.shape}) and ids ({self.ids.shape}) must have one entry per event")

    # construction
    @classmethod
    def from_events(cls, sample, times, ids, labels, timesteps, n_inputs):
        """From flat event arrays (``sample[e]`` the sample index of event e, time bins, ids).

        Sorts by (sample, time, id) and merges repeated (sample, time, id) events into one
        spike. Returns ``(spike_set, merged)`` with the number of merged events.
        """
        labels = np.asarray(labels)
        N = labels.shape[0]
        sample = np.asarray(sample, dtype=np.int64)
        times = np.asarray(times, dtype=np.int64)
        ids = np.asarray(ids, dtype=np.int64)
        key = (sample * timesteps + times) * n_inputs + ids
        key, first = np.unique(key, return_index=True)
        merged = int(sample.size - key.size)
        s = sample[first]
        offsets = np.zeros(N + 1, dtype=np.int64)
        offsets[1:] = np.cumsum(np.bincount(s, minlength=N))
        return cls(times[first], ids[first], offsets, labels, timesteps, n_inputs), merged

    @classmethod
    def from_dense(cls, spikes, labels):
        """From a 0/1 array ``[N, T, n_inputs]``."""
        spikes = np.asarray(spikes)
        N, T, n = spikes.shape
        s, t, i = np.nonzero(spikes)  # C order: already sorted by (sample, time, id)
        offsets = np.zeros(N + 1, dtype=np.int64)
        offsets[1:] = np.cumsum(np.bincount(s, minlength=N))
        return cls(t, i, offsets, labels, T, n)

    # access
    def __len__(self) -> int:
        return int(self.labels.shape[0])

    @property
    def num_events(self) -> int:
        return int(self.times.size)

    def _event_index(self, index):
        """(batch position, event index) of every event of the samples ``index``."""
        index = np.asarray(index, dtype=np.int64).reshape(-1)
        starts, lens = self.offsets[index], self.offsets[index + 1] - self.offsets[index]
        b = np.repeat(np.arange(index.size), lens)
        first = np.cumsum(lens) - lens  # position of each sample's first event in the output
        ev = np.arange(int(lens.sum())) - np.repeat(first - starts, lens)
        return b, ev

    def spikes(self, index) -> np.ndarray:
        """The samples ``index`` as a 0/1 ``uint8`` array ``[T, len(index), n_inputs]``."""
        index = np.asarray(index, dtype=np.int64).reshape(-1)
        if index.size and (index.min() < 0 or index.max() >= len(self)):
            raise ConfigError(f"sample index out of range [0, {len(self)})")
        out = np.zeros((self.timesteps, index.size, self.n_inputs), dtype=np.uint8)
        b, ev = self._event_index(index)
        out[self.times[ev], b, self.ids[ev]] = 1
        return out

    def subset(self, index) -> "SpikeSet":
        index = np.asarray(index, dtype=np.int64).reshape(-1)
        b, ev = self._event_index(index)
        offsets = np.zeros(index.size + 1, dtype=np.int64)
        offsets[1:] = np.cumsum(self.offsets[index + 1] - self.offsets[index])
        return SpikeSet(self.times[ev], self.ids[ev], offsets, self.labels[index], self.timesteps, self.n_inputs)

    def events_per_step(self) -> np.ndarray:
        """Spikes per (sample, step), ``[N, T]``: what the input list of capacity K must hold."""
        s = np.repeat(np.arange(len(self)), np.diff(self.offsets))
        return np.bincount(s * self.timesteps + self.times, minlength=len(self) * self.timesteps
                           ).reshape(len(self), self.timesteps)

    def activity(self) -> float:
        """Mean fraction of inputs that spike per step."""
        return self.num_events / max(1, len(self) * self.timesteps * self.n_inputs)

    def digest(self, h) -> None:
        for a in (self.times, self.ids, self.offsets, self.labels):
            h.update(np.ascontiguousarray(a).tobytes())
        h.update(f"{self.timesteps},{self.n_inputs}".encode())


def split_indices(n, test_fraction, rng, labels=None):
    """A random (stratified when ``labels`` is given) train/test split of ``range(n)``."""
    test_fraction = float(check_number("test_fraction", test_fraction, low=0, high=1, open_high=True,
                                       fix="the share of samples held out for testing, e.g. 0.2"))
    perm = rng.permutation(n)
    if labels is None:
        n_test = int(round(test_fraction * n))
        return np.sort(perm[n_test:]), np.sort(perm[:n_test])
    lab = np.asarray(labels)[perm]
    order = perm[np.argsort(lab, kind="stable")]  # grouped by class, random within a class
    counts = np.bincount(lab)
    starts = np.cumsum(counts) - counts
    rank = np.arange(n) - np.repeat(starts, counts)  # position within its class
    is_test = rank < np.repeat(np.round(test_fraction * counts).astype(np.int64), counts)
    return np.sort(order[~is_test]), np.sort(order[is_test])


@dataclass
class Dataset:
    """A named train/test pair of :class:`SpikeSet` with ``n_classes`` labels."""

    name: str
    train: SpikeSet
    test: SpikeSet
    n_classes: int
    info: dict = field(default_factory=dict)

    def __post_init__(self):
        for part in ("train", "test"):
            s = getattr(self, part)
            if not isinstance(s, SpikeSet):
                raise ConfigError(f"Dataset.{part} must be a SpikeSet, got {type(s).__name__}")
        if (self.train.timesteps, self.train.n_inputs) != (self.test.timesteps, self.test.n_inputs):
            raise ConfigError(f"train has T={self.train.timesteps}, {self.train.n_inputs} inputs but test has "
                              f"T={self.test.timesteps}, {self.test.n_inputs}; bin both the same way")
        for part in ("train", "test"):
            lab = getattr(self, part).labels
            if lab.size and (lab.min() < 0 or lab.max() >= self.n_classes):
                raise ConfigError(f"{part} labels span {lab.min()}..{lab.max()}; expected [0, {self.n_classes})")

    @property
    def timesteps(self) -> int:
        return self.train.timesteps

    @property
    def n_inputs(self) -> int:
        return self.train.n_inputs

    def fingerprint(self) -> str:
        """A short hash of the data (events and labels of both sets)."""
        h = hashlib.sha256()
        self.train.digest(h)
        self.test.digest(h)
        h.update(f"{self.n_classes}".encode())
        return h.hexdigest()[:16]

    def input_capacity(self, quantile=1.0) -> int:
        """The smallest even K that holds the ``quantile`` of training (sample, step) input lists."""
        q = int(np.ceil(np.quantile(self.train.events_per_step(), quantile)))
        q += q % 2
        return int(min(max(2, q), self.n_inputs))

    def describe(self) -> str:
        return (f"{self.name}: {len(self.train)} train / {len(self.test)} test samples, {self.n_inputs} inputs, "
                f"T={self.timesteps}, {self.n_classes} classes, input activity "
                f"{100 * self.train.activity():.2f}%")
