"""Where the ``eager`` strategy's op stream comes from: a trace of the real snnTorch step, or the census.

``source()`` is ``"trace"`` where torch and snnTorch import, else ``"census"`` (the hand census of
snnTorch 1.0, :mod:`.eager`, the named fallback). ``step_trace(net, T, B, optimizer)`` traces the
network's snnTorch training step (:func:`.snntorch_step.training_step`, on the ``meta`` device) with
:func:`mimdsim.trace_torch`, at T = 3-6 where the stream is verified periodic (then built for T by
:func:`mimdsim.gpu.trace_period.periodic_trace`; in full otherwise), and keeps it per shape: in this process, and on disk under
``$MIMDSIM_CACHE_DIR`` (default ``$XDG_CACHE_HOME/mimdsim`` or ``~/.cache/mimdsim``), ``traces/``, one
file per key. The key holds every shape and module choice (sizes, neuron specs, biases, readout, T, B,
optimizer), the torch and snnTorch versions, :data:`TRACE_FORMAT` and a digest of the code that builds
and records the step, so another version traces anew.
A cache that cannot be written is skipped.
"""
from __future__ import annotations

import hashlib
import os
import pickle

TRACE_FORMAT = 3  # bump when the trace or the step it records changes
SOURCES = ("trace", "census")
_MEMORY: dict = {}


def versions() -> dict | None:
    """{"torch": ..., "snntorch": ...} where both are installed, else None. Read from the installed
    packages' metadata: importing torch takes about 2 s, and a cached trace needs none of it. Read once per
    process (each read parses two metadata files, ~3 ms; a compare asks ~40 times, once per band re-cost)."""
    if not _VERSIONS:
        _VERSIONS.append(_installed_versions())
    found = _VERSIONS[0]
    return None if found is None else dict(found)


_VERSIONS: list = []


def _installed_versions() -> dict | None:
    from importlib import metadata, util

    try:
        if util.find_spec("torch") is None or util.find_spec("snntorch") is None:
            return None
        return {"torch": metadata.version("torch"), "snntorch": metadata.version("snntorch")}
    except (metadata.PackageNotFoundError, ValueError, ImportError):
        return None


def source(requested: str | None = None) -> str:
    """The eager op stream's source: ``requested`` ("trace" or "census"), or "trace" where it can run."""
    from ....checks import check_choice

    if requested is None:
        return "trace" if versions() is not None else "census"
    check_choice("eager_source", requested, SOURCES)
    if requested == "trace" and versions() is None:
        from ....errors import ConfigError
        raise ConfigError('the traced eager baseline needs PyTorch and snnTorch: pip install "mimdsim[torch]", '
                          'or eager_source="census" (the hand census of snnTorch 1.0)')
    return requested


def cache_dir() -> str:
    root = os.environ.get("MIMDSIM_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "mimdsim")
    return os.path.join(root, "traces")


def key(net, timesteps, batch_size, optimizer) -> str:
    biases = [b is not None for b in (getattr(net, "biases", None) or [None] * (len(net.sizes) - 1))]
    parts = (TRACE_FORMAT, _code_version(), tuple(net.sizes), tuple(repr(s) for s in net.specs), tuple(biases), repr(net.readout),
             int(timesteps), int(batch_size), optimizer, tuple(sorted((versions() or {}).items())))
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:24]


def _code_version() -> str:
    """A digest of the code that builds and records the step (``snntorch_step.py``, ``gpu/torch_trace.py``):
    an edited builder or tracer never reads a stale trace."""
    from ....gpu import torch_trace, trace_period
    from . import snntorch_step

    h = hashlib.sha256()
    for mod in (snntorch_step, torch_trace, trace_period):
        with open(mod.__file__, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]


def step_trace(net, timesteps: int, batch_size: int, optimizer: str = "adam"):
    """The :class:`~mimdsim.gpu.torch_trace.Trace` of ``net``'s snnTorch training step, cached per shape."""
    from ....gpu.trace_period import periodic_trace
    from ....snn.network import describe_sizes
    from .snntorch_step import training_step

    return cached(key(net, timesteps, batch_size, optimizer), lambda: periodic_trace(
        lambda t: training_step(net, t, batch_size, optimizer=optimizer), timesteps,
        batch_size=batch_size, model=describe_sizes(list(net.sizes)), libraries=("snntorch",)))


def cached(k: str, make):
    """The trace under key ``k`` (this process, the disk cache, then the shipped seed), else ``make()``'s,
    stored."""
    if k in _MEMORY:
        return _MEMORY[k]
    path = os.path.join(cache_dir(), k + ".pkl")
    trace = _load(path)
    if trace is None:
        trace = _load_seed(k)
        if trace is None:
            trace = make()
        _store(path, trace)
    _MEMORY[k] = trace
    return trace


# The seed: the cache entries a default `mimdsim compare` writes, shipped so that a fresh machine with the
# pinned versions needs no torch import for it. Each file is named by its key, so a seed of other versions
# or of edited tracing code is never read; tests/test_trace_period.py regenerates it and checks it is the
# trace of today's code (`python -m mimdsim.trace_seed` rewrites it).
SEED_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "trace_seed")


def _load_seed(k: str):
    import gzip

    if os.environ.get("MIMDSIM_TRACE_SEED", "1") == "0":
        return None
    try:
        with gzip.open(os.path.join(SEED_DIR, k + ".pkl.gz"), "rb") as f:
            return pickle.load(f)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
        return None


def digest(parts, files=()) -> str:
    """A cache key of ``parts``, the installed versions, the tracing code and the source ``files``."""
    h = hashlib.sha256(repr((TRACE_FORMAT, _code_version(), tuple(sorted((versions() or {}).items())),
                             tuple(parts))).encode())
    for path in files:
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:24]


def _load(path):
    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
        return None


def _store(path, trace) -> None:
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            pickle.dump(trace, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except OSError:
        pass
