"""Sweep files: a base experiment plus axes over any experiment key.

    [model] ... [chip] ... [gpu] ...        the base experiment (as in `mimdsim run`)
    [sweep]
    mode = "grid"                           grid (crossed), zip, or random
    samples = 50                            random mode: number of points
    seed = 0                                random mode: seed of the draws
    results = "results.jsonl"               one line per finished point (relative to the file)
    execute = false                         rate-driven by default
    [sweep.axes]
    "run.activity" = [0.001, 0.005, 0.01]               a list
    "chip.tiles" = {range = [256, 1472, 128]}           start, stop (inclusive), step
    "chip.set.exchange_phase_overhead_cycles" = {logrange = [100, 1000, 5]}   start, stop, count
    "model.batch" = {choice = [24, 48]}                 random mode
    "run.activity" = {uniform = [0.001, 0.05]}          random mode ({loguniform = [a, b]} too)

Every point is built and checked before any point runs, so a malformed sweep fails at once,
naming the key.
"""
from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import os

import numpy as np

from ..arch.execution import check_chip_fields
from ..errors import ConfigError, DoesNotFit, MimdsimError, OutOfTileMemory
from ..config import FILE_KEYS, check_value, key_lines, load_experiment, tomllib
from ..checks import check_choice, check_int, did_you_mean

MODES = ("grid", "zip", "random")
MAX_POINTS = 1_000_000  # every point is checked, kept as a record and written as a line
SWEEP_KEYS = ("mode", "samples", "seed", "results", "execute", "axes")


@dataclasses.dataclass
class Sweep:
    path: str
    base: dict  # experiment settings
    command: str  # simulate or compare
    axes: dict  # key -> list of values (grid/zip) or a distribution (random)
    mode: str
    points: list  # list of {key: value}
    results: str
    execute: bool


def point_id(params: dict) -> str:
    """A stable id of a point's parameters (what re-runs use to skip finished points)."""
    text = json.dumps(params, sort_keys=True, default=float)
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def _expand(key, spec, mode, where):
    if isinstance(spec, list):
        if not spec:
            raise ConfigError(f"{where}: axis {key!r} is empty; give at least one value")
        return spec
    if isinstance(spec, dict) and len(spec) == 1:
        (kind, args), = spec.items()
        try:
            if kind == "range":
                start, stop, step = args
                if step == 0:
                    raise ConfigError(f"{where}: axis {key!r} = {spec!r}: the step is 0; give a non-zero step, "
                                      f"e.g. {{range = [{start}, {stop}, 1]}}")
                if (stop - start) / step < 0:
                    raise ConfigError(f"{where}: axis {key!r} = {spec!r} runs from {start} to {stop} with step {step}, "
                                      f"which never gets there: no values; swap start and stop, or give step "
                                      f"{-step} (a range is [start, stop, step], stop inclusive)")
                count = int((stop - start) / step) + 1
                if count > MAX_POINTS:
                    raise ConfigError(f"{where}: axis {key!r} = {spec!r} has {count:,} values; the limit of a sweep is "
                                      f"{MAX_POINTS:,} points; use a larger step, or mode = 'random' with samples = N")
                vals = list(np.arange(start, stop + step / 2 if step > 0 else stop + step / 2, step))
                vals = [int(v) if all(isinstance(a, int) for a in args) else float(v) for v in vals]
            elif kind == "logrange":
                start, stop, num = args
                if start <= 0 or stop <= 0:
                    raise ConfigError(f"{where}: axis {key!r} = {spec!r}: a log range needs start > 0 and stop > 0 "
                                      f"(its values are spaced evenly in log); e.g. {{logrange = "
                                      f"[{stop / 100 if stop > 0 else 0.001:g}, {stop if stop > 0 else 1}, {num}]}}, or a "
                                      f"linear {{range = [start, stop, step]}} to include 0")
                if int(num) != num or num < 1:
                    raise ConfigError(f"{where}: axis {key!r} = {spec!r}: the count {num!r} must be an integer >= 1 "
                                      f"(a log range is [start, stop, count])")
                if num > MAX_POINTS:
                    raise ConfigError(f"{where}: axis {key!r} = {spec!r} asks for {num:,} values; the limit of a sweep is "
                                      f"{MAX_POINTS:,} points; ask for fewer")
                vals = [float(v) for v in np.geomspace(start, stop, int(num))]
            elif kind in ("uniform", "loguniform", "choice") and mode == "random":
                if kind != "choice" and len(args) == 2 and all(isinstance(a, (int, float)) for a in args) \
                        and args[0] > args[1]:
                    raise ConfigError(f"{where}: axis {key!r} = {spec!r}: the low end {args[0]} is above the high end "
                                      f"{args[1]}; swap them ({{{kind} = [{args[1]}, {args[0]}]}})")
                if kind == "loguniform" and len(args) == 2 and all(isinstance(a, (int, float)) for a in args) \
                        and args[0] <= 0:
                    raise ConfigError(f"{where}: axis {key!r} = {spec!r}: a log-uniform draw needs a low end > 0 "
                                      f"(it draws evenly in log); e.g. {{loguniform = [{args[1] / 100 if args[1] > 0 else 0.001:g}, "
                                      f"{args[1]}]}}, or {{uniform = [{args[0]}, {args[1]}]}} to include {args[0]}")
                if kind != "choice" and (len(args) != 2 or args[0] > args[1]):
                    raise ValueError
                if kind == "choice" and not args:
                    raise ValueError
                return spec
            else:
                raise ValueError
        except ConfigError:
            raise
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: axis {key!r} = {spec!r} is not a valid "
                              f"{kind if kind in ('range', 'logrange', 'uniform', 'loguniform', 'choice') else 'axis'}; "
                              "use a list, {range = [start, stop, step]}, {logrange = [start, stop, count]} or, in "
                              "random mode, {uniform = [a, b]}, {loguniform = [a, b]}, {choice = [...]}")
        if not vals:
            raise ConfigError(f"{where}: axis {key!r} = {spec!r} is empty")
        return vals
    raise ConfigError(f"{where}: axis {key!r} must be a list of values or a one-key table like {{range = [a, b, step]}}")


def load_sweep(path) -> Sweep:
    path = os.fspath(path)
    base, command = load_experiment(path, sweep=True)  # also rejects unknown keys outside [sweep]
    with open(path, "rb") as f:
        text = f.read().decode("utf-8", errors="replace")
    data = tomllib.loads(text)
    lines = key_lines(text)
    sw = data.get("sweep")
    if not isinstance(sw, dict) or "axes" not in sw:
        raise ConfigError(f"{path}: a sweep file needs a [sweep.axes] table with at least one axis")
    for k in sw:
        if k not in SWEEP_KEYS:
            raise ConfigError(f"{path}:{lines.get('sweep.' + k, '?')}: unknown key 'sweep.{k}'; valid keys: "
                              f"{', '.join(SWEEP_KEYS)}." + did_you_mean(f"sweep.{k}", [f"sweep.{s}" for s in SWEEP_KEYS]))
    mode = check_choice("sweep.mode", sw.get("mode", "grid"), MODES, where=f"{path}:{lines.get('sweep.mode', '?')}: ")
    axes = {}
    for key, spec in sw["axes"].items():
        where = f"{path}:{lines.get('sweep.axes.' + key, lines.get('sweep.axes', '?'))}"
        if key not in FILE_KEYS and not key.startswith(("chip.set.", "assume.")):
            raise ConfigError(f"{where}: unknown axis key {key!r}; axes take experiment keys (docs/reference.md), "
                              f"chip.set.FIELD or assume.NAME." + did_you_mean(key, FILE_KEYS))
        if key.startswith("assume."):  # a named assumption (mimdsim/assumptions.py)
            from ..assumptions import get
            try:
                get(key.split(".", 1)[1])
            except ConfigError as e:
                raise e.prefixed(f"{where}: axis {key!r}: ") from None
        if key.startswith("chip.set.") and "chip.preset" not in sw["axes"]:  # else each point's chip checks it
            check_chip_fields(base["chip.preset"], [key.split(".", 2)[2]], where=f"{where}: axis {key!r}: ")
        axes[key] = _expand(key, spec, mode, where)
    if not axes:
        raise ConfigError(f"{path}: [sweep.axes] is empty; give at least one axis")
    if mode != "random":  # counted before any point is made: a 10^10-point grid is refused at once
        count = int(np.prod([float(len(v)) for v in axes.values()])) if mode == "grid" else \
            max(len(v) for v in axes.values())
        if count > MAX_POINTS:
            sizes = " x ".join(f"{len(v):,}" for v in axes.values())
            raise ConfigError(f"{path}: the {mode} of {sizes} axis values is {count:,} points; the limit of a sweep is "
                              f"{MAX_POINTS:,}; use fewer values per axis, or mode = 'random' with samples = N")
    if mode == "zip":
        lengths = {k: len(v) for k, v in axes.items()}
        if len(set(lengths.values())) != 1:
            raise ConfigError(f"{path}: zipped axes must have equal lengths, got {lengths}")
        points = [dict(zip(axes, vals)) for vals in zip(*axes.values())]
    elif mode == "grid":
        points = [dict(zip(axes, vals)) for vals in itertools.product(*axes.values())]
    else:
        n = check_int("sweep.samples", sw.get("samples"), low=1, high=MAX_POINTS,
                      where=f"{path}:{lines.get('sweep.samples', '?')}: ", fix="a random sweep draws that many points")
        rng = np.random.default_rng(sw.get("seed", 0))
        cols = {}
        for key, spec in axes.items():
            if isinstance(spec, list):
                cols[key] = [spec[i] for i in rng.integers(0, len(spec), n)]
            else:
                (kind, args), = spec.items()
                if kind == "choice":
                    cols[key] = [args[i] for i in rng.integers(0, len(args), n)]
                elif kind == "uniform":
                    cols[key] = [float(v) for v in rng.uniform(args[0], args[1], n)]
                else:
                    cols[key] = [float(v) for v in np.exp(rng.uniform(np.log(args[0]), np.log(args[1]), n))]
        points = [{k: cols[k][i] for k in axes} for i in range(n)]
    execute = sw.get("execute", False)
    if not isinstance(execute, bool):
        raise ConfigError(f"{path}:{lines.get('sweep.execute', '?')}: sweep.execute must be true or false")
    results = sw.get("results", os.path.splitext(os.path.basename(path))[0] + ".results.jsonl")
    if not os.path.isabs(results):
        results = os.path.join(os.path.dirname(os.path.abspath(path)), results)
    sweep = Sweep(path, base, command, axes, mode, points, results, execute)
    check_points(sweep, lines)
    return sweep


def point_values(sweep: Sweep, params: dict) -> dict:
    """The full settings of one point: the base experiment with the point's values."""
    v = dict(sweep.base)
    v["chip.set"] = dict(v.get("chip.set") or {})
    v["assume"] = dict(v.get("assume") or {})
    for key, value in params.items():
        if key.startswith("chip.set."):
            v["chip.set"][key.split(".", 2)[2]] = value
        elif key.startswith("assume."):
            v["assume"][key.split(".", 1)[1]] = value
        else:
            v[key] = value
    v["run.execute"] = sweep.execute or v["run.execute"]
    for key in ("output.json", "output.csv", "output.plot", "output.trace"):
        v[key] = None  # a sweep writes its results file, not per-point outputs
    v["output.quiet"] = True
    v.pop("_where", None)
    return v


def check_points(sweep: Sweep, lines) -> None:
    """Type-check every axis value and build every point's network and chip before any runs."""
    from ..workloads.snn.from_settings import build_run

    seen = set()
    for params in sweep.points:
        for key, value in params.items():
            where = f"{sweep.path}:{lines.get('sweep.axes.' + key, '?')}"
            if key.startswith("assume."):  # in the file's terms, not --assume's
                from ..config import check_assumption_entry
                check_assumption_entry(key.split(".", 1)[1], value, f"{where}: axis {key!r}: value {value!r}",
                                       lambda p: p.shown or repr(p.value))
            elif not key.startswith("chip.set."):
                check_value(FILE_KEYS[key], value, where=f"{where}: axis {key!r}: ")
        values = point_values(sweep, params)
        shape = json.dumps({k: values[k] for k in sorted(values) if k.startswith(("model.", "chip."))}, default=str)
        if shape in seen:
            continue
        seen.add(shape)
        try:
            build_run(values)
        except (DoesNotFit, OutOfTileMemory):  # a point too large for the chip is a result of the sweep: recorded when it runs
            continue
        except MimdsimError as e:
            key = next((k for k in params if k.split(".")[-1] in str(e) or k.split(".")[0] in str(e)),
                       next(iter(params)))
            raise ConfigError(f"{sweep.path}:{lines.get('sweep.axes.' + key, '?')}: point {params} is rejected "
                              f"(axis {key!r}): ", e)
