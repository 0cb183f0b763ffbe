"""``mimdsim compare --workload kalman|mlp`` (and ``[workload] name = ...`` in experiment files).

The ``workload.*`` settings live in :mod:`mimdsim.config` with every other flag;
:mod:`mimdsim.cli.execute` builds the system and calls :func:`execute_workload`. The chip
settings (``--chip``, ``--tiles``, ``--chips``, ``--set``), ``--gpu``, ``--precision``, ``--batch``
(the MLP batch) and ``--json`` keep their meaning. The Kalman comparison always reports both GPU
strategies (fused, per-op); ``--strategy`` and ``--systolic`` are for the SNN step only.
"""
from __future__ import annotations

from ..config import SETTINGS
from ..errors import ConfigError
from ..checks import check_host_bytes
from ..workloads.compare import compare_kalman, compare_mlp


def kalman_schedule(schedule):
    """The Kalman program from ``--schedule``: TRACKR's as built ('published', the default), the
    register-resident codelet ('fused') or one superstep per operation ('per-op')."""
    return schedule or "published"


# The settings each workload reads besides the chip's (chip.*), --gpu, --json, --quiet and its own
# workload.* flags; any other setting given a value other than its default is refused, not ignored.
USES = {"kalman": {"run.schedule", "workload.tracks_per_tile", "workload.planes", "workload.variant",
                   "workload.covariance", "workload.cpu", "workload.cpu_cores"},
        "mlp": {"model.batch", "gpu.precision", "workload.mlp_layers"}}
COMMON = {"workload.name", "workload.resident", "workload.batches", "gpu.preset", "output.json", "output.quiet"}


def check_unused(values: dict) -> None:
    """Refuse a setting the workload would ignore (the SNN step's, or another workload's), naming
    its flag: ``--workload mlp --chip-precision fp16`` ran in fp32 without a word, and ``compare
    --planes 3`` ran the SNN step."""
    name = values.get("workload.name", "snn")
    for s in SETTINGS:
        if s.key not in values or s.key.startswith(("chip.", "output.")) or s.key in COMMON \
                or s.key in USES.get(name, ()):  # output.*: execute_workload names --json instead
            continue
        if name == "snn" and not s.key.startswith("workload."):  # the SNN step reads the rest
            continue
        if values[s.key] not in (None, s.default):
            hint = ("; the MLP runs the chip and the GPU in --precision's format" if s.key == "run.precision"
                    and name == "mlp" else "")
            raise ConfigError(f"--workload {name} does not use {s.flag} (TOML: {s.key}){hint}: drop it, or run "
                              f"the workload that takes it")


def execute_workload(values: dict, system, *, out=print):
    """Run a workload comparison from the settings on ``system`` (the chips the settings describe,
    built by the caller), print its table and write ``output.json``."""
    v = values
    for key in ("output.csv", "output.plot", "output.trace"):
        if v.get(key):
            raise ConfigError(f"{key} is written for the SNN step only; for --workload {v['workload.name']} use "
                              f"--json (output.json)")
    check_unused(v)
    sys_ = system
    # the workload spreads over every tile of the system: refuse a system whose per-tile arrays
    # (a dozen int64/float64 per tile) would not fit this machine, before allocating them
    check_host_bytes(f"the per-tile arrays of {sys_.chips:,} chip(s) x {sys_.chip.tiles:,} tiles", sys_.tiles * 8 * 16,
                     fix="use fewer chips (--chips) or tiles (--tiles)")
    stream = not v["workload.resident"]
    if v["workload.name"] == "kalman":
        cpu = None if str(v["workload.cpu"]).lower() == "none" else v["workload.cpu"]
        result = compare_kalman(v["workload.tracks_per_tile"], v["workload.planes"], sys_, v["gpu.preset"], cpu,
                                cpu_cores=v["workload.cpu_cores"], variant=v["workload.variant"],
                                covariance=v["workload.covariance"], schedule=kalman_schedule(v["run.schedule"]), stream=stream,
                                batches=v["workload.batches"])
    elif v["workload.name"] == "mlp":
        result = compare_mlp(v["model.batch"], v["workload.mlp_layers"], sys_, v["gpu.preset"],
                             precision=v["gpu.precision"] or "fp32", stream=stream,
                             batches=v["workload.batches"])
    else:
        raise ConfigError(f"workload.name={v['workload.name']!r}: choose snn, kalman or mlp")
    if v.get("output.json"):  # written before the table is printed: a closed pipe loses no file
        try:
            result.to_json(v["output.json"])
        except OSError as e:
            raise ConfigError(f"could not write {v['output.json']!r}: {e.strerror or e}; the run itself finished "
                              f"(re-run with another path)") from None
    out(result.format())
    if v.get("output.json"):
        out(f"\n  wrote {v['output.json']}")
    return result
