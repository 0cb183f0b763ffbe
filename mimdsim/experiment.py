"""Experiments as files: a TOML file holds the settings of one run (every CLI flag has its key).

    [model]  layers = [2312, 978, 978, 976, 10]   timesteps = 100   batch = 48 ...
    [run]    activity = 0.005   seed = 0 ...
    [chip]   preset = "ipu-mk2"   chips = 1   [chip.set] sram_per_tile = 1248000
    [gpu]    preset = "a100-40gb"  (present: the run is a comparison)
    [output] json = "report.json"  csv = "..."  plot = "figures/"  trace = "trace.json"

Errors name the file, the line and the key, and suggest the closest valid name.
Relative output paths are taken relative to the experiment file.
"""
from __future__ import annotations

import os
import re

import numpy as np

from .errors import ConfigError, MimdsimError
from .settings import DEFAULT_LAYERS, DEFAULT_MAX_ACTIVITY, DEFAULT_THETA2, FILE_KEYS, check_value
from .validate import check_host_bytes, check_input_file, did_you_mean

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib

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
        values[key] = check_value(FILE_KEYS[key], value, where=f"{where(key)}: ")
    from .arch.chip import CHIPS
    for field in values["chip.set"] or {}:  # named with its file and line before anything runs
        CHIPS.check_fields([field], where=f"{where('chip.set.' + field)}: ")
    from .assumptions import check as check_assumptions
    for name, value in (values.get("assume") or {}).items():  # [assume] NAME = VALUE
        try:
            check_assumptions({name: value})
        except ConfigError as e:
            raise ConfigError(f"{where('assume.' + name)}: [assume] {e}") from None
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
    if values["chip.tiles"] is not None:
        overrides["tiles"] = values["chip.tiles"]
    return system(values["chip.preset"], chips=values["chip.chips"], **overrides)


def check_sizes_fit(values: dict) -> None:
    """Refuse, from the layer sizes alone, a network that cannot fit a chip's SRAM or this
    machine's memory, before its weights (or any per-tile array) are allocated."""
    from .workloads.snn.mapping import check_layers_fit, weight_bytes_lower_bound

    sizes = values["model.layers"]
    if not all(isinstance(n, int) and n >= 1 for n in sizes):
        return  # Network.feedforward names the bad size
    check_host_bytes(f"the weights of {'-'.join(map(str, sizes))} (float32, initialised in float64)",
                     3 * sum(weight_bytes_lower_bound(sizes, training=False)),
                     fix="make the layers narrower (--layers)")
    check_layers_fit(sizes, build_system(values), training=not values.get("run.inference"),
                     optimizer=values.get("run.optimizer", "adam"), reserve_tile0=values["run.reserve_tile0"])


def check_steps_fit(T: int, B: int, input_capacity: int, system, *, training: bool, schedule=None) -> None:
    """Refuse, before compiling, timesteps x batch beyond this machine's memory (the program keeps
    a few numbers per (timestep, sample)) or, when training, beyond a tile's SRAM: the list
    programs' BPTT keeps the input spike list of every (timestep, sample), at least
    ``T x B x K_in x 2 B`` on a layer-1 tile. PopTorch's dense program spreads its input history
    over the whole chip; its planner checks what it keeps."""
    check_host_bytes(f"the per-(timestep, sample) arrays of T={T:,} x B={B:,}", 64.0 * T * B,
                     fix="lower --timesteps or --batch")
    need, limit = int(2 * T * B * input_capacity), system.chip.sram_per_tile
    if training and need > limit and schedule != "poptorch":
        from .errors import OutOfTileMemory
        raise OutOfTileMemory(1, need, limit, {"L1.input_list_history (at least)": need},
                              f"BPTT keeps the input spike list of every (timestep, sample) on each layer-1 tile: "
                              f"T={T:,} x B={B:,} x input capacity {input_capacity} x 2 B; lower --timesteps or "
                              f"--batch (or --input-capacity), or simulate --inference")


def build_run(values: dict):
    """The network, the system and the keyword arguments of :func:`~mimdsim.simulate` that the
    settings ``values`` (SNN workload) describe."""
    from .snn import Network

    v = values
    if v.get("workload.name", "snn") != "snn":  # sweeps build the SNN step only; never run it silently instead
        raise ConfigError(f"workload.name = {v['workload.name']!r} runs through `mimdsim compare --workload` or "
                          f"`mimdsim run`; sweep files sweep the SNN step (set workload.name = 'snn')")
    if not v["run.execute"]:  # rate-driven: no numerics, so nothing reads the weights or the dynamics' threshold
        for key, flag, what in (("model.weight_scale", "--weight-scale", "the initial weights"),
                                ("model.theta2", "--theta2", "the gradient-candidate threshold of the dynamics")):
            if v.get(key) is not None and not (key == "model.weight_scale" and v.get("model.nir")):  # (refused there)
                raise ConfigError(f"{flag} (TOML: {key}) sets {what}, which a rate-driven run does not read (it draws "
                                  f"spikes at --activity and candidates at --candidate-activity): add --execute, or "
                                  f"drop {flag}")
    if v.get("run.schedule") == "poptorch" and v.get("run.neurons_per_tile") is not None:
        raise ConfigError("--neurons-per-tile places the spike-list programs' neurons; --schedule poptorch's planner "
                          "splits every matmul over the chip's tiles itself: drop --neurons-per-tile")
    if v.get("model.nir"):  # a NIR graph replaces the layer flags (mimdsim.from_nir)
        net = _nir_network(v)
        v = dict(v, **{"model.layers": list(net.sizes)})
    else:
        if v.get("model.nir_reset"):
            raise ConfigError(f"--nir-reset {v['model.nir_reset']} (TOML: model.nir_reset) applies to a --model "
                              f"graph; drop it or give --model FILE.nir")
        if v.get("run.schedule") == "poptorch":  # the dense program lists every neuron of an snnTorch model
            if v.get("model.neuron", "published") == "published":
                raise ConfigError("--schedule poptorch runs the dense program PopTorch builds from snnTorch: pick a "
                                  "model with --neuron (leaky, synaptic, ...); the published sparse LIF runs "
                                  "--schedule published or fused")
            if v["model.max_activity"] is not None:
                raise ConfigError(f"--max-activity {v['model.max_activity']:g} with --schedule poptorch: the dense "
                                  f"program lists every neuron (K = n); drop --max-activity")
        # the flags left unset (None: so that a --model run can tell them from a default) take their defaults
        v = dict(v, **{"model.layers": DEFAULT_LAYERS if v["model.layers"] is None else v["model.layers"],
                       "model.max_activity": _max_activity(v),
                       "model.theta2": DEFAULT_THETA2 if v["model.theta2"] is None else v["model.theta2"]})
        net = _layer_network(v)
    sys_spec = build_system(v)
    kw = dict(**({"assume": dict(v["assume"])} if v.get("assume") else {}),
              neurons_per_tile=v["run.neurons_per_tile"], reserve_tile0=v["run.reserve_tile0"], seed=v["run.seed"])
    if v.get("run.chips_used") is not None:
        kw["chips_used"] = v["run.chips_used"]
    if v.get("run.schedule") == "per-op":
        raise ConfigError("--schedule per-op is the Kalman fit's; the SNN step runs 'published' (the study's op), "
                          "'fused' or 'poptorch'")
    if v.get("run.schedule"):
        kw["schedule"] = v["run.schedule"]
    if v.get("run.static_input"):
        kw["static_input"] = True
    if v.get("run.precision"):
        kw["precision"] = v["run.precision"]
    if v.get("run.optimizer", "adam") != "adam":  # its kind shapes the program; one step's update is applied
        from .optim import SGD
        kw["optimizer"] = SGD()
    if v.get("run.inference"):
        kw["training"] = False
    T, B, n_in, n_out = v["model.timesteps"], v["model.batch"], v["model.layers"][0], v["model.layers"][-1]
    check_steps_fit(T, B, net.capacities[0], sys_spec, training=not v.get("run.inference"), schedule=v.get("run.schedule"))
    if v["run.execute"]:
        for key, flag in (("run.activity", "--activity"), ("run.candidate_activity", "--candidate-activity")):
            if v.get(key) is not None:  # the dynamics set the rates: refused, not ignored
                raise ConfigError(f"{flag} (TOML: {key}) sets the firing rates a rate-driven run assumes; with "
                                  f"--execute the rates come from the dynamics: drop {flag}, or drop --execute "
                                  f"(--input-activity sets the input rate of an execution-driven run)")
        check_host_bytes(f"the random input spikes ([{T:,} timesteps, {B:,} samples, {n_in:,} inputs])",
                         8.0 * T * B * n_in, fix="lower --timesteps or --batch, or run rate-driven (no --execute)")
        rng = np.random.default_rng(v["run.seed"])
        rate = _input_rate(v)
        steps = 1 if v.get("run.static_input") else T  # --static-input: one input, the same at every step
        x = (rng.random((steps, B, n_in)) < rate).astype(np.uint8)
        kw["inputs"] = np.repeat(x, T, axis=0) if steps == 1 else x
        kw["labels"] = rng.integers(0, n_out, B)
    else:
        kw.update(timesteps=T, batch_size=B,
                  activity=v["run.activity"] if v["run.activity"] is not None else
                  _max_activity(v) / 2,
                  candidate_activity=v["run.candidate_activity"], input_activity=v["run.input_activity"])
    return net, sys_spec, kw


def _layer_network(v):
    """The network of ``--layers`` (defaults resolved): the published sparse LIF, or an
    snnTorch model of the zoo (``--neuron``)."""
    from .snn import Network

    if v.get("model.neuron", "published") != "published":  # an snnTorch model (snn/zoo.py)
        from .snn.zoo import ZOO
        dense = v.get("run.schedule") == "poptorch"  # dense matmuls carry every neuron
        return Network.build(v["model.layers"], ZOO[v["model.neuron"]], bias=True, loss="ce_count",
                             max_activity=None if dense else v["model.max_activity"], seed=v["run.seed"],
                             weight_scale=v["model.weight_scale"])
    check_sizes_fit(v)  # from shapes alone, before the weights are allocated
    init = {}
    if v["model.weight_scale"] is None and v["run.execute"]:  # the activity rule, at the input rate the run draws
        init["input_activity"] = _input_rate(v)
    return Network.feedforward(v["model.layers"], max_activity=v["model.max_activity"],
                               input_capacity=v["model.input_capacity"], theta2=v["model.theta2"],
                               overflow=v["model.overflow"], seed=v["run.seed"],
                               weight_scale=v["model.weight_scale"], **init)


def _max_activity(v) -> float:
    return DEFAULT_MAX_ACTIVITY if v["model.max_activity"] is None else v["model.max_activity"]


def _input_rate(v) -> float:
    """The input spike fraction of an execution-driven run: --input-activity, else half the max activity."""
    if v["run.input_activity"] is not None:
        return v["run.input_activity"]
    return _max_activity(v) / 2


def _nir_network(v):
    """The network of ``--model FILE.nir`` with every model flag applied, or refused when the
    graph fixes what the flag would set."""
    from .snn.nir_io import from_nir
    from .validate import check_number

    given = lambda key: v.get(key) is not None  # noqa: E731
    for key, flag, why in (("model.layers", "--layers", "the graph gives the layer sizes"),
                           ("model.weight_scale", "--weight-scale", "the graph brings its trained weights")):
        if given(key):
            raise ConfigError(f"{flag} {v[key]} with --model {v['model.nir']}: {why}; drop {flag} "
                              f"(TOML: {key}) or --model")
    net = from_nir(v["model.nir"], max_activity=v["model.max_activity"], reset=v.get("model.nir_reset"),
                   input_capacity=v["model.input_capacity"])
    net.overflow = v["model.overflow"]
    if given("model.theta2"):
        spec_th = min(float(np.min(s.threshold)) for s in net.specs)
        check_number("--theta2", v["model.theta2"], high=spec_th, finite=False,
                     fix=f"candidates lie below the graph's lowest spike threshold {spec_th:g}")
        net.layers = tuple(s.replace(theta2=v["model.theta2"]) for s in net.specs)
    return net


def _locate(values, error: MimdsimError) -> MimdsimError:
    """Prefix an error about a preset with the file and line that chose it."""
    where = values.get("_where")
    if not where:
        return error
    msg = str(error)
    for key, token in (("chip.preset", "chip"), ("gpu.preset", "GPU"), ("gpu.systolic", "systolic"),
                       ("chip.set", "chip field")):
        if key in where and f"unknown {token}" in msg:
            return type(error)(f"{where[key]}: {msg}") if not hasattr(error, "tile") else error
    return error


def execute(values: dict, command: str, *, out=print):
    """Run the settings (``simulate`` or ``compare``): check every output path first, run, write
    the outputs, then print the table (a reader that closes the pipe early loses no file)."""
    from .report.outputs import check_output_paths

    check_output_paths(values)  # before the run: a bad path costs nothing
    from .workloads.cli import check_unused
    check_unused(values)  # a flag the workload would ignore is refused
    if values.get("workload.name", "snn") != "snn":  # Kalman track fitting or MLP inference
        from .workloads.cli import execute_workload
        return execute_workload(values, build_system(values), out=out)
    from .report.outputs import write_outputs
    from .report.progress import Progress

    # the engine counts every iteration of the program's loops: T forward steps, then T backward
    progress = Progress(f"{'simulating' if command == 'simulate' else 'comparing'} (timesteps of the forward, then "
                        f"backward loop)", "timestep", enabled=not values["output.quiet"])
    try:
        net, sys_spec, kw = build_run(values)
        timeline = [] if values["output.trace"] else None
        if command == "compare":
            from .compare import compare
            kw = dict(kw)
            chip_precision = kw.pop("precision", None)  # the chip's (--chip-precision); precision= is the GPU's
            result = compare(net, sys_spec, values["gpu.preset"], strategies=values["gpu.strategies"],
                             precision=values["gpu.precision"], systolic=values["gpu.systolic"],
                             gpu_trace=values.get("gpu.trace"), gpu_trace_mode=values.get("gpu.trace_mode", "eager"),
                             chip_precision=chip_precision, timeline=timeline, progress=progress, **kw)
            run, gpu_reports = result.run, [*result.gpu.values(), *([result.systolic] if result.systolic else [])]
            text = result.format()
        else:
            from .workloads.snn.simulate import simulate
            run = simulate(net, sys_spec, timeline=timeline, progress=progress, **kw)
            result, gpu_reports, text = run, [], run.report.format(full=bool(values.get("output.full")))
    except MimdsimError as e:
        raise _locate(values, e)
    finally:
        progress.close()
    if values.get("output.assumptions"):  # the tornado of each column, top drivers first
        from .report.report import tornado_lines
        for name, r in [("MIMD " + run.report.architecture, run.report)] + \
                [(f"{r.architecture} {k}", r) for k, r in (getattr(result, "others", {}) or {}).items()]:
            if r.uncertainty:
                text += f"\n\n  {name}, named assumptions:" + "\n".join(tornado_lines(r.uncertainty))
    if run.loss is not None:
        norms = "" if run.grads is None else "; gradient norms " + ", ".join(f"{np.linalg.norm(g):.3g}" for g in run.grads)
        text += f"\n\n  loss {run.loss:.6f}" + norms
    written = write_outputs(values, run, result, gpu_reports, timeline)  # before anything is printed
    out(text)
    for line in written:
        out(line)
    return result
