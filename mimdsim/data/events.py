"""User data: ``.npz`` files of input events, binned to T steps.

The file format (flat arrays; numpy cannot store ragged arrays without pickling, which
mimdsim refuses to load)::

    times     [E] float or int  event times, >= 0, in any unit
    ids       [E] int           input neuron of each event, in [0, n_inputs)
    sample    [E] int           sample index of each event, in [0, N)      } one of
    offsets   [N + 1] int       events of sample s are offsets[s]:offsets[s+1]  } these
    labels    [N] int           class of each sample, >= 0
    n_inputs  scalar, optional  number of inputs (default: largest id + 1)
    duration  scalar, optional  time span mapped onto the T steps (default: largest time)

:func:`save_events` writes one. Event e falls into step ``floor(times[e] / duration * T)``
(``times == duration`` into the last step; later events are dropped and counted).
Several events of one input in one step become one spike (counted as merged). The input
capacity rule of ``reference/algorithms.md`` §1 is applied when a batch runs: an input
list with more than K spikes is subsampled at random by the chip's input codelet and the
drops are counted in the report (layer 0 ``dropped_spikes``) and in the training history.
"""
from __future__ import annotations

import os
import zipfile

import numpy as np

from ..errors import ConfigError
from ..checks import check_input_file, check_int, check_number
from .base import Dataset, SpikeSet, split_indices

FORMAT = ("times [E], ids [E], sample [E] (or offsets [N+1]), labels [N]; optional n_inputs, duration; "
          "see mimdsim.data.events")


def save_events(path, *, times, ids, labels, sample=None, offsets=None, n_inputs=None, duration=None):
    """Write events in the format :func:`load_events` reads (give ``sample`` or ``offsets``)."""
    if (sample is None) == (offsets is None):
        raise ConfigError("give either sample= (one index per event) or offsets= (N + 1 indices)")
    arrays = dict(times=np.asarray(times), ids=np.asarray(ids), labels=np.asarray(labels))
    arrays["sample" if sample is not None else "offsets"] = np.asarray(sample if sample is not None else offsets)
    if n_inputs is not None:
        arrays["n_inputs"] = np.asarray(n_inputs)
    if duration is not None:
        arrays["duration"] = np.asarray(duration)
    np.savez(path, **arrays)


def _fail(path, what):
    raise ConfigError(f"event file {path}: {what}. Expected {FORMAT}")


def _read(path):
    check_input_file(path, "event file", "an .npz of spike events, docs/training.md")
    try:
        with np.load(path, allow_pickle=False) as f:
            return {k: f[k] for k in f.files}
    except ValueError as e:
        if "allow_pickle" in str(e) or "Object arrays" in str(e):
            _fail(path, "holds object (ragged) arrays, which are not loaded (they need pickle); store each "
                        "key as one flat array with a sample index per event")
        _fail(path, f"cannot be read as .npz ({e})")
    except (zipfile.BadZipFile, OSError, EOFError) as e:
        _fail(path, f"is not a readable .npz file ({type(e).__name__}: {e}); it may be truncated")


def _int_array(path, name, a, ndim=1):
    if a.ndim != ndim:
        _fail(path, f"'{name}' has shape {a.shape}; expected a {ndim}-D array")
    if a.dtype == object or not (np.issubdtype(a.dtype, np.integer) or
                                 (np.issubdtype(a.dtype, np.floating) and np.all(np.isfinite(a))
                                  and np.all(a == np.round(a)))):
        _fail(path, f"'{name}' has dtype {a.dtype} with non-integer values; expected integers")
    return a.astype(np.int64)


def load_events(path, timesteps, *, n_inputs=None, n_classes=None, duration=None):
    """Read and check one event file; returns ``(SpikeSet, n_classes, info)``."""
    path = os.fspath(path)
    T = check_int("timesteps", timesteps, low=1)
    d = _read(path)
    for key in ("times", "ids", "labels"):
        if key not in d:
            _fail(path, f"'{key}' is missing (keys present: {', '.join(sorted(d)) or 'none'})")
    if "sample" not in d and "offsets" not in d:
        _fail(path, "neither 'sample' (sample index per event) nor 'offsets' is present")
    times = d["times"]
    if times.ndim != 1 or not np.issubdtype(times.dtype, np.number) or np.issubdtype(times.dtype, np.complexfloating):
        _fail(path, f"'times' has shape {times.shape} and dtype {times.dtype}; expected a 1-D array of numbers")
    times = times.astype(np.float64)
    ids = _int_array(path, "ids", d["ids"])
    labels = _int_array(path, "labels", d["labels"])
    N, E = labels.size, times.size
    if ids.size != E:
        _fail(path, f"ragged arrays: {E} times but {ids.size} ids; give one id per event")
    if "sample" in d:
        sample = _int_array(path, "sample", d["sample"])
        if sample.size != E:
            _fail(path, f"ragged arrays: {E} times but {sample.size} sample indices; give one per event")
        if E and (sample.min() < 0 or sample.max() >= N):
            _fail(path, f"sample indices span {sample.min()}..{sample.max()} but there are {N} labels; "
                        f"each sample needs a label (labels missing?)")
    else:
        offsets = _int_array(path, "offsets", d["offsets"])
        if offsets.size != N + 1 or offsets[0] != 0 or offsets[-1] != E or np.any(np.diff(offsets) < 0):
            _fail(path, f"'offsets' must hold {N + 1} non-decreasing indices from 0 to {E} (one more than the "
                        f"{N} labels); got {offsets.size} entries")
        sample = np.repeat(np.arange(N), np.diff(offsets))
    if N == 0:
        _fail(path, "'labels' is empty: no samples")
    bad = ~np.isfinite(times)
    if bad.any():
        _fail(path, f"{int(bad.sum())} event time(s) are NaN or infinite (first in sample {int(sample[bad][0])})")
    neg = times < 0
    if neg.any():
        _fail(path, f"{int(neg.sum())} event time(s) are negative, e.g. {times[neg][0]!r} in sample "
                    f"{int(sample[neg][0])}; times must be >= 0")
    if labels.min() < 0:
        _fail(path, f"labels must be >= 0; found {labels.min()}")
    if n_classes is None:
        n_classes = int(labels.max()) + 1
    elif labels.max() >= n_classes:
        _fail(path, f"labels span 0..{labels.max()} but n_classes={n_classes}")
    if n_inputs is None and "n_inputs" in d:
        n_inputs = int(d["n_inputs"])
    if n_inputs is None:
        n_inputs = int(ids.max()) + 1 if E else 1
    n_inputs = check_int("n_inputs", n_inputs, low=1)
    if E and (ids.min() < 0 or ids.max() >= n_inputs):
        out = (ids < 0) | (ids >= n_inputs)
        _fail(path, f"{int(out.sum())} event id(s) lie outside [0, {n_inputs}), e.g. {int(ids[out][0])} in sample "
                    f"{int(sample[out][0])}; fix the ids or pass n_inputs")
    if duration is None and "duration" in d:
        duration = float(d["duration"])
    if duration is None:
        duration = float(times.max()) if E else 1.0
    check_number("duration", duration, low=0, fix=f"the time span mapped onto the {T} steps")
    late = times > duration
    if duration == 0:
        t = np.zeros(E, dtype=np.int64)
    else:
        t = np.minimum(np.floor(times / duration * T).astype(np.int64), T - 1)
    keep = ~late
    spikes, merged = SpikeSet.from_events(sample[keep], t[keep], ids[keep], labels, T, n_inputs)
    info = dict(file=path, events=E, dropped_late_events=int(late.sum()), merged_events=merged, duration=duration)
    return spikes, n_classes, info


def events(path, timesteps, *, test=None, test_fraction=0.2, n_inputs=None, n_classes=None, duration=None,
           seed=0) -> Dataset:
    """A :class:`Dataset` from an event file (and a separate ``test`` file, or a seeded
    stratified ``test_fraction`` of the first). Both files are binned the same way."""
    first, C, info = load_events(path, timesteps, n_inputs=n_inputs, n_classes=n_classes, duration=duration)
    if test is not None:
        te, C2, tinfo = load_events(test, timesteps, n_inputs=first.n_inputs, duration=info["duration"],
                                    n_classes=n_classes)
        C = max(C, C2)
        info["test"] = tinfo
        tr = first
    else:
        rng = np.random.default_rng(seed)
        itr, ite = split_indices(len(first), test_fraction, rng, first.labels)
        tr, te = first.subset(itr), first.subset(ite)
        info["test_fraction"] = test_fraction
    name = os.path.splitext(os.path.basename(os.fspath(path)))[0]
    return Dataset(f"{name}-T{timesteps}", tr, te, C, info)
