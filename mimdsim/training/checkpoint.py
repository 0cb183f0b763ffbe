"""Training checkpoints: weights, optimizer state, epoch, step and RNG state in one ``.npz``.

Written atomically: the arrays go to a temporary file in the same folder, which is
flushed to disk and then renamed over the old checkpoint (``os.replace``), so a save that
fails half-way leaves the previous checkpoint as it was. A checkpoint that is truncated
or corrupt, or that belongs to another network, data set or optimizer, is refused with a
:class:`~mimdsim.errors.ConfigError` that names the file, what does not match and the fix.

Layout (``allow_pickle=False``): ``format`` (a version string), ``meta`` (a JSON string:
network signature, data fingerprint, optimizer, epoch, step, RNG state, history) and the
every trainable array (``w{l}`` weights, ``b{l}`` biases, ``rec{l}``/``recb{l}`` recurrent
weights, ``np{l}.{key}`` neuron parameters) and the Adam state ``adam_m__{key}``,
``adam_v__{key}``, ``adam_t__{key}`` per optimizer key (``0``, ``0.bias``, ...).
"""
from __future__ import annotations

import json
import os
import tempfile
import zipfile

import numpy as np

from ..errors import ConfigError, MimdsimError, Param

FORMAT = "mimdsim-checkpoint-1"

# what a refused checkpoint's message suggests (the command line names their flags)
CHECKPOINT = Param("checkpoint", key="train.checkpoint", action="set")
RESUME = Param("resume", key="train.resume", action="drop")
FRESH = ("Delete it (or pass another ", CHECKPOINT, " path) to start a fresh run")


def _strip_theta2(d):
    if isinstance(d, dict):
        return {k: _strip_theta2(v) for k, v in d.items() if k != "theta2"}
    if isinstance(d, list):
        return [_strip_theta2(v) for v in d]
    return d


def network_signature(net) -> dict:
    """What a checkpoint must match to be loaded into ``net``: sizes, capacities, neuron
    models, readout, dtype (theta2 excluded: the schedule moves it)."""
    return json.loads(json.dumps(_strip_theta2(net.to_dict())))


def parameters(net) -> dict:
    """Every trainable array of ``net`` by checkpoint name: ``w{l}`` weights, ``b{l}`` biases,
    ``rec{l}``/``recb{l}`` recurrent weights and biases, ``np{l}.{key}`` neuron parameters."""
    out = {f"w{l}": w for l, w in enumerate(net.weights)}
    for l in range(net.num_layers):
        for name, arr in (("b", net.biases[l]), ("rec", net.recurrent[l]), ("recb", net.recurrent_biases[l])):
            if arr is not None:
                out[f"{name}{l}"] = arr
        for key, arr in net.neuron_params[l].items():
            out[f"np{l}.{key}"] = arr
    return out


def _state_name(key) -> str:
    """Optimizer state key (layer index, or (layer index, parameter name)) as text."""
    return str(key) if isinstance(key, (int, np.integer)) else f"{key[0]}.{key[1]}"


def _state_key(name: str):
    if "." in name:
        l, key = name.split(".", 1)
        return int(l), key
    return int(name)


def optimizer_state(optimizer) -> dict:
    arrays = {}
    if optimizer.kind == "adam":
        for key, (m, v, t) in optimizer.state.items():
            name = _state_name(key)
            arrays[f"adam_m__{name}"], arrays[f"adam_v__{name}"] = m, v
            arrays[f"adam_t__{name}"] = np.asarray(t, dtype=np.int64)
    return arrays


def save(path, *, net, optimizer, meta: dict) -> None:
    """Write a checkpoint atomically (temporary file + rename); the old one survives a failure."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    arrays = {"format": np.asarray(FORMAT), "meta": np.asarray(json.dumps(meta))}
    arrays.update(parameters(net))
    arrays.update(optimizer_state(optimizer))
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp", dir=folder)
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        tmp = None
    except OSError as e:
        raise MimdsimError(f"could not write checkpoint {path} ({type(e).__name__}: {e}); the previous "
                           f"checkpoint, if any, is unchanged. Free disk space or choose another ", CHECKPOINT,
                           " path") from e
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _refuse(path, what, fix):
    raise ConfigError(f"checkpoint {path}: {what}. ", fix)


def load(path) -> tuple[dict, dict]:
    """``(meta, arrays)`` of a checkpoint; a truncated, corrupt or foreign file is refused."""
    path = os.fspath(path)
    if not os.path.exists(path):
        _refuse(path, "does not exist, so there is nothing to resume", ("Run without ", RESUME, " to start training"))
    try:
        with np.load(path, allow_pickle=False) as f:
            arrays = {k: f[k] for k in f.files}  # reading every member checks its CRC
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, KeyError, zipfile.LargeZipFile) as e:
        _refuse(path, f"is truncated or corrupt and cannot be read ({type(e).__name__}: {e})", FRESH)
    if "format" not in arrays or "meta" not in arrays:
        _refuse(path, "is not a mimdsim training checkpoint (no 'format'/'meta' entries)", FRESH)
    fmt = str(arrays.pop("format"))
    if fmt != FORMAT:
        _refuse(path, f"has format {fmt!r}; this mimdsim reads {FORMAT!r}", FRESH)
    try:
        meta = json.loads(str(arrays.pop("meta")))
    except json.JSONDecodeError as e:
        _refuse(path, f"has unreadable metadata ({e})", FRESH)
    for key in ("network", "epoch", "step", "rng", "optimizer", "history", "data"):
        if key not in meta:
            _refuse(path, f"lacks '{key}' in its metadata", FRESH)
    return meta, arrays


def _describe_net(sig) -> str:
    return "-".join(str(n) for n in sig["sizes"]) + f" (capacities {','.join(str(k) for k in sig['capacities'])})"


def check_compatible(path, meta, arrays, *, net, optimizer, data_fingerprint, data_name) -> None:
    """Refuse a checkpoint made for another network, data set or optimizer."""
    have, want = meta["network"], network_signature(net)
    fix = ("Resume with the network it was saved from, or start a fresh run (without ", RESUME, ", or with another ",
           CHECKPOINT, " path)")
    if have != want:
        diffs = [k for k in sorted(set(want) | set(have)) if have.get(k) != want.get(k)]
        details = "; ".join(f"{k}: checkpoint {have.get(k)!r}, this run {want.get(k)!r}" for k in diffs)
        _refuse(path, f"was saved from network {_describe_net(have)}, not this run's {_describe_net(want)} "
                      f"({details})", fix)
    for name, arr in parameters(net).items():
        got = arrays.get(name)
        if got is None or got.shape != arr.shape:
            _refuse(path, f"parameter {name} is {'missing' if got is None else f'shaped {got.shape}'}; "
                          f"expected {arr.shape}", FRESH)
    if meta["optimizer"]["kind"] != optimizer.kind:
        _refuse(path, f"holds {meta['optimizer']['kind']} state but this run uses {optimizer.kind}",
                ("Resume with ", Param("optimizer", meta["optimizer"]["kind"], key="train.optimizer"),
                 ", or start a fresh run"))
    if meta["data"]["fingerprint"] != data_fingerprint:
        _refuse(path, f"was trained on data {meta['data']['name']!r} (fingerprint {meta['data']['fingerprint']}), "
                      f"not this run's {data_name!r} ({data_fingerprint})",
                "Resume with the same data set, encoding, timesteps and seed, or start a fresh run")


def restore(meta, arrays, *, net, optimizer) -> None:
    """Put the checkpoint's parameters and optimizer state into ``net`` and ``optimizer``."""
    net.weights = [np.array(arrays[f"w{l}"], dtype=net.dtype) for l in range(net.num_layers)]
    for l in range(net.num_layers):
        for name, attr in (("b", net.biases), ("rec", net.recurrent), ("recb", net.recurrent_biases)):
            if attr[l] is not None:
                attr[l] = np.array(arrays[f"{name}{l}"], dtype=attr[l].dtype)
        for key, arr in list(net.neuron_params[l].items()):
            net.neuron_params[l][key] = np.array(arrays[f"np{l}.{key}"], dtype=arr.dtype)
    if optimizer.kind == "adam":
        optimizer.state.clear()
        for name in arrays:
            if name.startswith("adam_m__"):
                key = name[len("adam_m__"):]
                optimizer.state[_state_key(key)] = (np.array(arrays[name]), np.array(arrays[f"adam_v__{key}"]),
                                                    int(arrays[f"adam_t__{key}"]))
