"""The configuration: every run setting once (its TOML key, command-line flag, type, default,
limits and help) and the reading of experiment files (TOML) into settings.

The command line (:mod:`mimdsim.cli`, which builds its parsers from :data:`SETTINGS`) and sweeps
(:mod:`mimdsim.sweep`) read settings through this module only, so a flag and its TOML key cannot
drift apart. Experiment files take the settings of ``simulate`` and ``compare`` (:data:`FILE_KEYS`);
those of ``train`` alone are flags only. A setting shared by several commands has one default and
one meaning; where ``train`` needs another default (``--timesteps`` 20, ``--batch`` 16, ...) it has
its own row. Errors in files name the file, the line and the key, and suggest the closest valid
name; relative output paths are taken relative to the experiment file.

The table is assembled (:data:`SETTINGS`): the core rows here (:data:`CORE`: the chip, the GPU,
the outputs, the workload's name, ``train``'s) and each registered workload's own rows, declared in
its folder (``mimdsim/workloads/<name>/workload.py``) and placed next to a core row, so that
docs/reference.md and ``--help`` list them where they always stood.

It sits low (it imports errors, validation, the rows (:mod:`mimdsim.setting`), the workload
declarations (:mod:`mimdsim.workloads.registry`, data only), and lazily the chip specs and named
assumptions), so anything above the model may read settings; it imports nothing of the front door.
"""
from __future__ import annotations

import os
import re
from typing import Any

from .errors import ConfigError, Param
from .setting import CHIP, DATA, NETWORK, TRAIN, TRAINING, Setting
from .checks import check_choice, check_input_file, did_you_mean, is_int, is_number
from .workloads.registry import DEFAULT as DEFAULT_WORKLOAD, WORKLOADS
from .workloads.snn.workload import DEFAULT_LAYERS, DEFAULT_MAX_ACTIVITY, DEFAULT_THETA2  # noqa: F401 (re-exported)

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib

GPU_STRATEGIES = ("per-step", "fused", "sparse", "eager", "compiled", "keras-rnn-xla")  # mimdsim.workloads.snn.baselines.gpu_kernels.STRATEGIES (a test keeps them equal)


def _workload_choice() -> Setting:
    """``--workload``: its choices and its help from the registry."""
    said = [w.description for w in WORKLOADS.values()]
    return Setting("workload.name", "--workload", "str", DEFAULT_WORKLOAD,
                   "what compare runs: " + (", ".join(said[:-1]) + " or " if len(said) > 1 else "") + said[-1],
                   choices=tuple(WORKLOADS), commands=("compare",))


# The settings every workload shares (the chip, the GPU, the outputs, the workload's name) and those of
# `mimdsim train`; each workload's own rows (mimdsim/workloads/<name>/workload.py) join them in SETTINGS.
CORE: tuple[Setting, ...] = (
    Setting("chip.preset", "--chip", "str", "ipu-mk2", "chip preset (see `mimdsim chips`)",
            commands=("simulate", "compare", "train"), group=CHIP),
    Setting("chip.tiles", "--tiles", "int", None, "override tiles per chip",
            commands=("simulate", "compare", "train"), group=CHIP),
    Setting("chip.chips", "--chips", "int", 1, "chips in the system (whole layers per chip)",
            commands=("simulate", "compare", "train"), group=CHIP),
    Setting("chip.set", "--set", "table", None, "override any chip field, e.g. --set sram_per_tile=1248000",
            commands=("simulate", "compare", "train"), group=CHIP),
    Setting("assume", "--assume", "table", None,
            "pin a named assumption (docs/cost-model.md, 'Named assumptions'), e.g. --assume "
            "surrogate_arithmetic_instructions=4; the band moves every other one over its range",
            commands=("simulate", "compare"), group=CHIP, metavar="NAME=VALUE"),
    Setting("gpu.preset", "--gpu", "str", "a100-40gb", "GPU preset (see `mimdsim gpus`)", commands=("compare", "train"), group=CHIP),
    Setting("gpu.host", "--host", "str", None, "host CPU that drives the GPU (default: the GPU preset's own; "
            "presets in `mimdsim gpus`)", commands=("compare", "train"), group=CHIP, metavar="PRESET"),
    Setting("gpu.strategies", "--strategy", "str_list", None,
            "GPU execution strategies (default: compiled, eager, fused, and first keras-rnn-xla, the sparse-BPTT "
            "study's own GPU program, for a network its Keras cell can be)", choices=GPU_STRATEGIES,
            commands=("compare",)),
    Setting("gpu.precision", "--precision", "str", None,
            "GPU precision (default: the strategy's framework: tf32 for compiled on Ampere+, else fp32)",
            choices=("fp32", "tf32", "fp16", "bf16"), commands=("compare", "train"), group=CHIP),
    Setting("gpu.trace", "--gpu-trace", "str", None,
            "also trace the PyTorch training step of FILE.py (it defines step() or make_step(); "
            "docs/gpu-model.md) and cost it on --gpu, as column 'trace'", commands=("compare",)),
    Setting("gpu.trace_mode", "--gpu-trace-mode", "str", "eager",
            "how the --gpu-trace step runs: eager (each op a kernel, dispatched from Python) or reduce-overhead "
            "(as torch.compile(mode='reduce-overhead'): element-wise runs fused, one CUDA graph launch per graph; "
            "docs/gpu-model.md)", choices=("eager", "reduce-overhead"), commands=("compare",)),
    Setting("gpu.trace_timeout", "--gpu-trace-timeout", "float", 600.0,
            "seconds the --gpu-trace file may take to run and trace its step (in a child process); a step "
            "still running then is stopped", commands=("compare",), metavar="SECONDS"),
    Setting("gpu.systolic", "--systolic", "str", None,
            "also estimate a systolic array preset (tpu-v1, scalesim-google, scalesim-32x32)", commands=("compare",)),
    Setting("output.json", "--json", "str", None, "write the full report as JSON", metavar="FILE"),
    Setting("output.csv", "--csv", "str", None, "write one row per superstep (kernel) kind and phase", metavar="FILE"),
    Setting("output.plot", "--plot", "str", None, "write figures (PNG and SVG) into this folder", metavar="DIR"),
    Setting("output.trace", "--trace", "str", None, "write a Chrome/Perfetto trace-event JSON file", metavar="FILE"),
    Setting("output.quiet", "--quiet", "bool", False, "no progress bar"),
    Setting("output.full", "--full", "bool", False, "print every superstep, layer and note (the default is a "
            "summary: the slowest supersteps, the first and last layers, repeated notes once)",
            commands=("simulate",)),
    Setting("output.assumptions", "--assumptions", "bool", False,
            "print every named assumption's own swing of the time (the tornado), largest first"),
    # The workload compare runs (mimdsim/workloads/registry.py, docs/workloads.md) and what runs beyond the SNN step
    # share; each workload's own rows stand next to these (its Rows' after/before).
    _workload_choice(),
    Setting("workload.resident", "--resident", "bool", False,
            "kalman, mlp: data stay in tile (device) memory; no host I/O is timed", commands=("compare",)),
    Setting("workload.batches", "--batches", "int", 1, "kalman, mlp: batches per run (one launch per run)",
            commands=("compare",)),
    # `mimdsim train` (mimdsim/cli/train.py, docs/training.md): flags only, no file keys.
    Setting("data.name", "--data", "str", "digits",
            "data set: scikit-learn's 8x8 digits, a generated Randman task or an event file",
            choices=("digits", "randman", "events"), commands=TRAIN, group=DATA),
    Setting("data.timesteps", "--timesteps", "int", 20, "T: steps per sample", commands=TRAIN, group=DATA),
    Setting("data.encoding", "--encoding", "str", "rate", "digits: spike code", choices=("rate", "latency"),
            commands=TRAIN, group=DATA),
    Setting("data.max_rate", "--max-rate", "float", 0.5, "digits rate code: spike probability of a white pixel",
            commands=TRAIN, group=DATA),
    Setting("data.classes", "--classes", "int", 10, "randman: classes", commands=TRAIN, group=DATA),
    Setting("data.inputs", "--inputs", "int", 100, "randman: input neurons", commands=TRAIN, group=DATA),
    Setting("data.samples_per_class", "--samples-per-class", "int", 200, "randman: samples per class",
            commands=TRAIN, group=DATA),
    Setting("data.manifold_dim", "--manifold-dim", "int", 1, "randman: manifold dimension", commands=TRAIN,
            group=DATA),
    Setting("data.events", "--events", "str", None, "events: .npz of times, ids, sample (or offsets), labels",
            commands=TRAIN, group=DATA, metavar="FILE"),
    Setting("data.test_events", "--test-events", "str", None, "events: a separate test file (default: 20%% held out)",
            commands=TRAIN, group=DATA, metavar="FILE"),
    Setting("data.duration", "--duration", "float", None, "events: time span mapped onto T steps", commands=TRAIN,
            group=DATA),
    Setting("data.seed", "--data-seed", "int", None, "seed of generation and split (default: --seed)",
            commands=TRAIN, group=DATA),
    Setting("network.hidden", "--hidden", "size_list", [512, 512], "hidden-layer sizes", commands=TRAIN,
            group=NETWORK),
    Setting("network.max_activity", "--max-activity", "float", 0.05,
            "sets each hidden list's capacity K = even floor(a*n) (training's default: 5%%, docs/training.md)",
            commands=TRAIN, group=NETWORK),
    Setting("network.dense", "--dense", "bool", False, "dense gradients: K = layer size, theta2 = -inf",
            commands=TRAIN, group=NETWORK),
    Setting("network.dense_output", "--dense-output", "bool", True,
            "keep the readout layer dense (K = its size, theta2 = -inf); hidden layers stay sparse",
            commands=TRAIN, group=NETWORK),
    Setting("network.activity_l1", "--activity-l1", "float", 0.0,
            "L1 penalty on hidden spikes: loss += LAMBDA * sent hidden spikes (snnTorch l1_rate_sparsity)",
            commands=TRAIN, group=NETWORK, metavar="LAMBDA"),
    Setting("network.input_capacity", "--input-capacity", "int", None,
            "K of the input list; more input spikes are subsampled at random and counted "
            "(default: the largest per-step count in the training data)", commands=TRAIN, group=NETWORK),
    Setting("network.overflow", "--overflow", "str", "random", "which spikes a full hidden list keeps",
            choices=("lowest-index", "random"), commands=TRAIN, group=NETWORK),
    Setting("network.init_activity", "--init-activity", "fraction_list", None,
            "scale the initial weights to this activity per layer on a training batch (default: half the max "
            "activity in every layer; 0: keep the activity rule's weights uncalibrated)", commands=TRAIN,
            group=NETWORK, metavar="A[,A...]"),
    Setting("network.theta2_start", "--theta2-start", "float", -100.0,
            "theta2 at step 0; halfway to --theta2 (the schedule's target) per step", commands=TRAIN, group=NETWORK),
    Setting("network.no_theta2_schedule", "--no-theta2-schedule", "bool", False, "keep theta2 fixed at --theta2",
            commands=TRAIN, group=NETWORK),
    Setting("train.epochs", "--epochs", "int", 10, "training epochs", commands=TRAIN, group=TRAINING),
    Setting("train.batch", "--batch", "int", 16, "batch size B", commands=TRAIN, group=TRAINING, api="batch_size"),
    Setting("train.optimizer", "--optimizer", "str", "adam", "its update runs on the chip",
            choices=("adam", "sgd"), commands=TRAIN, group=TRAINING),
    Setting("train.lr", "--lr", "float", 2e-3, "learning rate", commands=TRAIN, group=TRAINING),
    Setting("train.lr_schedule", "--lr-schedule", "str", "none",
            "per epoch: constant, cosine to 1%%, or step (lr/10 for the last quarter)",
            choices=("none", "cosine", "step"), commands=TRAIN, group=TRAINING),
    Setting("train.layerwise_lr", "--layerwise-lr", "bool", False,
            "scale each layer's lr by the RMS of its initial weights (lr becomes a relative step)",
            commands=TRAIN, group=TRAINING),
    Setting("train.checkpoint", "--checkpoint", "str", None, "write weights, optimizer and RNG state every epoch",
            commands=TRAIN, group=TRAINING, metavar="FILE.npz"),
    Setting("train.checkpoint_every", "--checkpoint-every", "int", 1, "epochs between checkpoints",
            commands=TRAIN, group=TRAINING),
    Setting("train.resume", "--resume", "bool", False,
            "continue from --checkpoint (same network, data, optimizer)", commands=TRAIN, group=TRAINING),
    Setting("train.gpu_strategy", "--gpu-strategy", "str", "fused", "GPU execution strategy timed",
            choices=GPU_STRATEGIES, commands=TRAIN, group=CHIP),
    Setting("train.no_gpu", "--no-gpu", "bool", False, "skip the GPU model", commands=TRAIN, group=CHIP),
    Setting("train.json", "--json", "str", None, "write the configuration and per-epoch history as JSON",
            commands=TRAIN, metavar="FILE"),
    Setting("train.quiet", "--quiet", "bool", False, "no progress bar and no per-epoch lines", commands=TRAIN),
)

# Limits of numeric settings: key -> (low, high, low excluded, why). Checked where a value enters
# (the flag's parser, the experiment file, a sweep's axis), so a bad value is refused before a run
# with the flag's or key's name, the limit and the reason.
CORE_BOUNDS: dict[str, tuple] = {
    "chip.tiles": (1, 2**20, False, "every tile is simulated; a GC200 has 1472"),
    "chip.chips": (1, None, False, "a system has at least one chip"),
    "workload.batches": (1, None, False, "a run has at least one batch"),
    "data.timesteps": (1, None, False, "a sample has at least one step"),
    "data.max_rate": (0, 1, False, "a spike probability"),
    "data.classes": (2, None, False, "a classifier needs at least two classes (one class is 100% accurate by "
                                     "construction)"),
    "data.inputs": (1, None, False, "the task needs at least one input neuron"),
    "data.samples_per_class": (1, None, False, "each class needs at least one sample"),
    "data.manifold_dim": (1, None, False, "a manifold has at least one dimension"),
    "data.duration": (0, None, True, "a time span"),
    "data.seed": (0, None, False, "numpy seeds are non-negative"),
    "network.activity_l1": (0, None, False, "a penalty weight"),
    "network.init_activity": (0, 1, True, "a fraction of each layer's neurons"),
    "train.epochs": (1, None, False, "training runs at least one epoch"),
    "train.batch": (1, None, False, "a step trains at least one sample"),
    "train.lr": (0, None, True, "a learning rate"),
    "train.checkpoint_every": (1, None, False, "a number of epochs"),
}


def assemble(core: tuple[Setting, ...], groups) -> tuple[Setting, ...]:
    """The table: the ``core`` rows with each group of ``Rows`` at its place (before or after the
    core row it names, at the top where it names none), groups at the same place in their order."""
    keys = {s.key for s in core}
    for g in groups:
        if (g.after or g.before) and (g.after or g.before) not in keys:
            raise ValueError(f"a group of {', '.join(s.key for s in g.rows)} is placed at {g.after or g.before!r}, "
                             "which is no row of the core table")
    rows = [s for g in groups if not (g.after or g.before) for s in g.rows]
    for c in core:
        rows += [s for g in groups if g.before == c.key for s in g.rows]
        rows.append(c)
        rows += [s for g in groups if g.after == c.key for s in g.rows]
    return tuple(rows)


SETTINGS: tuple[Setting, ...] = assemble(CORE, [g for w in WORKLOADS.values() for g in w.settings])
BOUNDS = {**CORE_BOUNDS, **{k: v for w in WORKLOADS.values() for k, v in w.bounds.items()}}

BY_KEY = {s.key: s for s in SETTINGS}
FILE_KEYS = {s.key: s for s in SETTINGS if s.in_files}  # what experiment files take
TYPE_NAMES = {"int": "an integer", "float": "a number", "str": "a string", "bool": "true or false",
              "int_list": "a list of integers", "size_list": "a list of positive integers",
              "fraction_list": "a number or a list of numbers", "str_list": "a list of strings",
              "table": "a table of field = value"}

# The ceiling of every integer setting that names no lower one: the product of two such sizes
# (timesteps x batch, neurons x neurons) still fits a 64-bit integer, so an absurd size is refused
# as it is parsed, with its flag, never overflows a C long or sizes an array first.
INT_LIMIT = 2**31 - 1
INT_LIMIT_WHY = "the largest integer a setting takes, so that the product of two sizes fits a 64-bit integer"
INT_KINDS = ("int", "int_list", "size_list")


def bounds(s: Setting) -> tuple | None:
    """The setting's (low, high, low excluded, why): its :data:`BOUNDS` entry, an integer setting's
    ceiling :data:`INT_LIMIT` where the entry names none; None when it has no limits."""
    entry = BOUNDS.get(s.key)
    if s.kind not in INT_KINDS:
        return entry
    low, high, open_low, why = entry or (None, None, False, "")
    return (low, INT_LIMIT if high is None else high, open_low, why)


def bound_error(s: Setting, value) -> str | None:
    """Why ``value`` breaks the setting's limits (:func:`bounds`; every entry of a list), or None."""
    limits = bounds(s)
    if limits is None or value is None:
        return None
    low, high, open_low, why = limits
    ceiling = s.kind in INT_KINDS and (BOUNDS.get(s.key) or (None, None))[1] is None  # INT_LIMIT, not its own
    for v in value if isinstance(value, list) else [value]:
        if not is_number(v) or v != v:
            return None  # the type check names it
        if ceiling and v > high:
            return f"{v!r} must be an integer <= {high:,} ({INT_LIMIT_WHY}); give a smaller value"
        if (low is not None and (v <= low if open_low else v < low)) or (not ceiling and high is not None and v > high):
            noun = "an integer" if s.kind == "int" else "a number"
            if high is not None and not ceiling:
                rule = f"{noun} in {'(' if open_low else '['}{low:g}, {high:g}]" if s.kind != "int" \
                    else f"{noun} between {low} and {high}"
            else:
                rule = f"{noun} {'>' if open_low else '>='} {low:g}"
            return f"{v!r} must be {rule} ({why})"
    return None


def check_value(s: Setting, value, where: str = "") -> Any:
    """Return the value if it has the setting's type and is one of its choices, else raise
    ConfigError naming what it should be (``where`` prefixes the message: "file:line: ")."""
    ok = {
        "int": is_int, "float": is_number, "str": lambda v: isinstance(v, str), "bool": lambda v: isinstance(v, bool),
        "int_list": lambda v: isinstance(v, list) and len(v) >= 2 and all(is_int(x) for x in v),
        "size_list": lambda v: isinstance(v, list) and v and all(is_int(x) and x >= 1 for x in v),
        "fraction_list": lambda v: is_number(v) or (isinstance(v, list) and v and all(is_number(x) for x in v)),
        "str_list": lambda v: isinstance(v, list) and v and all(isinstance(x, str) for x in v),
        "table": lambda v: isinstance(v, dict) and all(is_number(x) for x in v.values()),
    }[s.kind]
    if value is None and s.default is None:
        return value
    if not ok(value):
        raise ConfigError(f"{where}{s.key} must be {TYPE_NAMES[s.kind]}, got {value!r}")
    bad = bound_error(s, value)
    if bad:
        raise ConfigError(f"{where}{s.key} = {bad}")
    if s.choices:
        for v in value if isinstance(value, list) else [value]:
            check_choice(s.key, v, s.choices, where=where)
    return float(value) if s.kind == "float" else value


def bound_text(s: Setting) -> str:
    """The setting's limits in words (" >= 1", " in (0, 1]"), or "" if it has none."""
    limits = bounds(s)
    if limits is None:
        return ""
    low, high, open_low, _ = limits
    number = (lambda v: f"{v:,}") if s.kind in INT_KINDS else (lambda v: f"{v:g}")
    if low is None:
        return f" <= {number(high)}"
    if high is None:
        return f" {'>' if open_low else '>='} {number(low)}"
    return f" in {'(' if open_low else '['}{number(low)}, {number(high)}]"


def reference_markdown() -> str:
    """The CLI/TOML reference table (docs/reference.md is generated from it); flags only
    ``train`` takes have no TOML key (—)."""
    lines = ["| TOML key | flag | type | default | commands | meaning |", "|---|---|---|---|---|---|"]
    for s in SETTINGS:
        choices = f" ({', '.join(s.choices)})" if s.choices else ""
        default = "—" if s.default is None else f"`{s.default}`"
        key = f"`{s.key}`" if s.in_files else "—"
        lines.append(f"| {key} | `{s.flag}` | {TYPE_NAMES[s.kind]}{bound_text(s)} | {default} | {', '.join(s.commands)} | "
                     f"{s.help.replace('%%', '%')}{choices} |")
    return "\n".join(lines)


def write_reference(path="docs/reference.md") -> None:
    """Replace the settings table in ``path`` (the first table headed "| TOML key | flag |")."""
    from pathlib import Path

    lines = Path(path).read_text().split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("| TOML key | flag |"))
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    lines[start:end] = reference_markdown().split("\n")
    Path(path).write_text("\n".join(lines))

# Experiment files: TOML, each key a setting's (FILE_KEYS), named with its line in errors.
_HEADER = re.compile(r"^\s*\[\s*([A-Za-z0-9_.\-\s\"]+?)\s*\]\s*(#.*)?$")
_KEY = re.compile(r"^\s*([A-Za-z0-9_\-.\s\"]+?)\s*=")


def key_lines(text: str) -> dict[str, int]:
    """Line number (1-based) of every key and table header, by full dotted path."""
    lines, table = {}, ""
    for i, line in enumerate(text.splitlines(), start=1):
        m = _HEADER.match(line)
        if m:
            table = ".".join(p.strip().strip('"') for p in m.group(1).split("."))
            lines.setdefault(table, i)
            continue
        m = _KEY.match(line)
        if m and not line.lstrip().startswith("#"):
            key = ".".join(p.strip().strip('"') for p in m.group(1).split("."))
            lines.setdefault(f"{table}.{key}" if table else key, i)
    return lines


def _flatten(d: dict, prefix="") -> dict:
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and key not in FILE_KEYS:
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def check_assumption_entry(name: str, value, said: str, suggestion) -> None:
    """A named assumption's value from a file (an ``[assume]`` entry, a sweep axis), checked as
    ``--assume`` is and refused in the file's terms: ``said`` (the file, line and entry as written)
    in place of the flag, each suggested value as ``suggestion(param)`` spells it."""
    from .assumptions import check

    try:
        check({name: value})
    except ConfigError as e:
        parts = e.parts[1:] if e.parts and isinstance(e.parts[0], Param) else e.parts
        raise ConfigError(said, *[suggestion(p) if isinstance(p, Param) and p.key.startswith("assume.") else p
                                  for p in parts], param=e.param, limit=e.limit) from None


def load_experiment(path, *, sweep: bool = False) -> tuple[dict, str]:
    """Settings ``{key: value}`` (defaults filled in) and the command ('simulate' or 'compare').

    ``sweep=True`` accepts (and leaves to :mod:`mimdsim.sweep`) a ``[sweep]`` table.
    """
    path = check_input_file(path, "experiment file", "a TOML file such as examples/finkbeiner2024_nmnist.toml")
    with open(path, "rb") as f:
        raw = f.read()
    text = raw.decode("utf-8", errors="replace")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {e}")
    lines = key_lines(text)

    def where(key):
        line = lines.get(key) or min((n for k, n in lines.items() if k.startswith(key + ".")), default=None) \
            or lines.get(key.rsplit(".", 1)[0], "?")
        return f"{path}:{line}"
    if "sweep" in data and not sweep:
        raise ConfigError(f"{path}:{lines.get('sweep', '?')}: this file has a [sweep] table: run it with "
                          f"`mimdsim sweep {path}`")
    data.pop("sweep", None)
    flat = _flatten(data)
    values = {key: s.default for key, s in FILE_KEYS.items()}
    for key, value in flat.items():
        if key not in FILE_KEYS:
            raise ConfigError(f"{where(key)}: unknown key {key!r}."
                              + (did_you_mean(key, FILE_KEYS) or f" Valid keys: {', '.join(FILE_KEYS)}."))
        if key == "assume" and isinstance(value, dict):  # each entry checked below, with its own line
            values[key] = value
            continue
        values[key] = check_value(FILE_KEYS[key], value, where=f"{where(key)}: ")
    from .arch.execution import check_chip_fields
    for field in values["chip.set"] or {}:  # named with its file and line before anything runs, by the chip's family
        check_chip_fields(values["chip.preset"], [field], where=f"{where('chip.set.' + field)}: ")
    for name, value in (values.get("assume") or {}).items():  # [assume] NAME = VALUE
        check_assumption_entry(name, value, f"{where('assume.' + name)}: [assume] {name} = {value!r}",
                               lambda p: f"{p.key[7:]} = {p.shown or repr(p.value)}")
    base = os.path.dirname(os.path.abspath(path))
    for key in ("output.json", "output.csv", "output.plot", "output.trace"):
        if values[key] and not os.path.isabs(values[key]):
            values[key] = os.path.join(base, values[key])
    values["_where"] = {key: where(key) for key in flat}
    command = "compare" if any(k.startswith("gpu.") for k in flat) else "simulate"
    return values, command


def build_system(values: dict):
    """The system the ``chip.*`` settings ``values`` describe (preset, chips, tiles and --set fields)."""
    from .arch import system

    overrides = dict(values["chip.set"] or {})
    from .arch.chip import refuse_unread_fields
    from .arch.execution import check_chip_fields
    check_chip_fields(values["chip.preset"], overrides)  # a field of another chip family is named with it
    refuse_unread_fields(overrides)  # a field no cost reads: the what-if would change nothing
    if values["chip.tiles"] is not None:
        check_chip_fields(values["chip.preset"], ["tiles"], where="chip.tiles (--tiles): ")
        overrides["tiles"] = values["chip.tiles"]
    return system(values["chip.preset"], chips=values["chip.chips"], **overrides)


if __name__ == "__main__":  # python -m mimdsim.config [--write]: the table of docs/reference.md
    import sys

    if "--write" in sys.argv:
        write_reference()
    else:
        print(reference_markdown())
