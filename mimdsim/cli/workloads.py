"""``mimdsim compare --workload kalman|mlp`` (and ``[workload] name = ...`` in experiment files):
what the front door does with the chosen workload's declaration (:mod:`mimdsim.workloads.registry`).

Every workload's settings are rows of :mod:`mimdsim.config`'s table; :func:`check_unused` refuses
one the chosen workload does not read, and :func:`execute_workload` runs a workload that prints a
table (and writes ``--json``): its ``build`` from settings, then its ``compare``. The chip settings
(``--chip``, ``--tiles``, ``--chips``, ``--set``), ``--gpu``, ``--precision``, ``--batch`` (the MLP
batch) and ``--json`` keep their meaning. The Kalman comparison always reports both GPU strategies
(fused, per-op); ``--strategy`` and ``--systolic`` are for the SNN step only.
"""
from __future__ import annotations

from ..config import SETTINGS
from ..errors import ConfigError
from ..checks import check_host_bytes
from ..workloads.registry import WORKLOADS, workload_of

# The settings every workload may be given besides the chip's (chip.*), the outputs (output.*: a workload
# that does not write one names --json instead) and what it reads; any other setting given a value other
# than its default is refused, not ignored.
COMMON = {"workload.name", "workload.resident", "workload.batches", "gpu.preset"}


def check_unused(values: dict) -> None:
    """Refuse a setting the workload would ignore (the SNN step's, or another workload's), naming
    its flag: ``--workload mlp --chip-precision fp16`` ran in fp32 without a word, and ``compare
    --planes 3`` ran the SNN step."""
    workload = workload_of(values)
    for s in SETTINGS:
        if s.key not in values or s.key.startswith(("chip.", "output.")) or s.key in COMMON \
                or workload.reads_setting(s.key):
            continue
        if values[s.key] not in (None, s.default):
            hint = f"; {workload.hints[s.key]}" if s.key in workload.hints else ""
            raise ConfigError(f"--workload {workload.name} does not use {s.flag} (TOML: {s.key}){hint}: drop it, or "
                              f"run the workload that takes it")


def execute_workload(values: dict, *, out=print):
    """Run the workload comparison the settings choose (built from them: the system included),
    print its table and write ``output.json``."""
    v, workload = values, workload_of(values)
    kw = workload.entry("build")(v)
    for key in ("output.csv", "output.plot", "output.trace"):
        if v.get(key) and key not in workload.outputs:
            writers = " or ".join(w.description.removeprefix("the ") for w in WORKLOADS.values() if key in w.outputs)
            raise ConfigError(f"{key} is written for the {writers} only; for --workload {workload.name} use "
                              f"--json (output.json)")
    check_unused(v)
    sys_ = kw["chip"]
    # the workload spreads over every tile of the system: refuse a system whose per-tile arrays
    # (a dozen int64/float64 per tile) would not fit this machine, before allocating them
    check_host_bytes(f"the per-tile arrays of {sys_.chips:,} chip(s) x {sys_.chip.tiles:,} tiles", sys_.tiles * 8 * 16,
                     fix="use fewer chips (--chips) or tiles (--tiles)")
    result = workload.entry("compare")(**kw)
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
