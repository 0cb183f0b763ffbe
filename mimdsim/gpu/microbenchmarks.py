"""Microbenchmark checks of the GPU model's parts, one published figure at a time.

Each row of ``mimdsim/validation/data/gpu_microbenchmarks.json`` is one figure read in a public source
(a kernel's duration, a launch, a copy's bandwidth, an XLA loop's iteration), with its GPU, host,
software and where it was read. For a row whose part the model has, :data:`PREDICTORS` gives the model's
figure for it (one function per quantity, ``fn(row, spec) -> figure`` in the row's unit, so a new part
registers its own: ``PREDICTORS["xla_while_iteration_s"] = fn``); :func:`check` compares it with the
measurement under the quantity's :data:`TOLERANCE` and states the result:

- ``inside``: the model's figure at the named assumptions' values is within the tolerance of the
  measurement (of its printed range, where the source gives one);
- ``band``: it is not, but the band the named GPU assumptions span (``mimdsim.assumptions``, each moved
  over its range as ``mimdsim compare``'s band moves it) holds the measurement (meets its range);
- ``outside``: neither; the row's ``state_reason`` says why, and no constant was moved to hide it;
- ``unmatched``: the GPU is not a preset (or not named) and the model's figure differs between the presets
  it could be (``compare_on``), so there is nothing to compare;
- ``pending``: the model has no part for the quantity yet (:data:`PENDING` says which).

What each predictor charges is what the model charges a workload for the same work (``model.py``):
a GEMM or element-wise kernel is :func:`~mimdsim.gpu.model.kernel_seconds` alone, because the sources
time the kernel on the device (events or a profiler), without the host's launch, which
:func:`~mimdsim.gpu.model.workload_estimate` adds as ``launch_overhead_s`` per launch; a host-to-device
copy is its bytes over :func:`~mimdsim.gpu.model.host_link_bytes_per_second` plus one
``launch_overhead_s``, as ``workload_estimate`` charges its ``h2d``.

Imported by: validation (the ``gpu-microbenchmarks`` source of ``mimdsim validate``).
"""
from __future__ import annotations

import dataclasses
import json
import pathlib
from dataclasses import dataclass
from typing import Callable

from .. import assumptions as A
from ..arch.gpu import GpuSpec, gpu
from ..engine.band import band, drivers_of, gpu_spec_with
from ..kernels.assumed import NOTHING, Pinned
from .framework import framework
from .model import Kernel, gemm, host_link_bytes_per_second, kernel_seconds
from .xla import Loop, step_timeline

DATA = pathlib.Path(__file__).resolve().parents[1] / "validation" / "data" / "gpu_microbenchmarks.json"


@dataclass(frozen=True)
class Tolerance:
    factor: float  # the model's figure may differ from the measurement by this factor either way
    reasoning: str


# Every compared quantity is held to the factor docs/validation.md holds each stored end-to-end point to
# (x1.35): one standard for the whole tool, chosen before these rows were compared, not per row.
VALIDATION_FACTOR = 1.35
TOLERANCE = {
    "gemm_seconds": Tolerance(VALIDATION_FACTOR, "the tool's validation factor; a GEMM timed with CUDA events "
                              "(triton.testing.do_bench) or a profiler carries ~1 us of timer and gap, 5-10 % at "
                              "the 10-20 us these rows take, well inside it"),
    "elementwise_kernel_seconds": Tolerance(VALIDATION_FACTOR, "the tool's validation factor; profiler kernel "
                                            "durations resolve ~0.1 us"),
    "kernel_launch_enqueue_s": Tolerance(VALIDATION_FACTOR, "the tool's validation factor; the rows are medians "
                                         "of thousands of launches, their spread within 10 %"),
    "launch_plus_sync_s": Tolerance(VALIDATION_FACTOR, "the tool's validation factor"),
    "queued_kernel_gap_s": Tolerance(VALIDATION_FACTOR, "the tool's validation factor"),
    "graph_node_s": Tolerance(VALIDATION_FACTOR, "the tool's validation factor"),
    "graph_launch_s": Tolerance(VALIDATION_FACTOR, "the tool's validation factor"),
    "h2d_bytes_per_second": Tolerance(VALIDATION_FACTOR, "the tool's validation factor; bandwidthTest prints "
                                      "0.1 GB/s, under 1 % of these rows"),
}

# Quantities the model has no part for yet: what is missing (the lead registers a predictor for each).
PENDING = {
    "host_synchronize_s": "a stream or context synchronisation on the host alone (BlockHostUntilDone): the model "
                          "has it only inside a WhileThunk's predicate round trip (xla_loop_sync_s), not as a part",
}
# The XLA:GPU runtime whose named assumptions (kind "framework") the XLA rows' predictions and bands read
XLA_FRAMEWORK = "tensorflow-keras-xla"
TOLERANCE["xla_while_iteration_s"] = Tolerance(VALIDATION_FACTOR, "the tool's validation factor")
TOLERANCE["d2h_small_roundtrip_s"] = Tolerance(VALIDATION_FACTOR, "the tool's validation factor; the rows print "
                                               "their spread (minimum to maximum), held as the range")


def _gemm_seconds(row: dict, spec: GpuSpec) -> float:
    precision = row["precision"]
    return kernel_seconds(gemm(row["id"], "forward", row["m"], row["n"], row["k"],
                               GpuSpec.bytes_per_element(precision), 1), spec, precision)


def _elementwise_seconds(row: dict, spec: GpuSpec) -> float:
    n = row["elements"]
    kernel = Kernel(row["id"], "forward", "vector", n * row["flops_per_element"],
                    n * row["bytes_per_element"] * row["operands"], 1)
    return kernel_seconds(kernel, spec, row["precision"])


def _smallest_kernel_seconds(spec: GpuSpec) -> float:
    """The model's time for a kernel with no work: the element-wise floor."""
    return kernel_seconds(Kernel("empty", "forward", "vector", 0.0, 0.0, 1), spec, "fp32")


def _h2d_bytes_per_second(row: dict, spec: GpuSpec) -> float:
    nbytes = row["bytes"]
    return nbytes / (nbytes / host_link_bytes_per_second(spec) + spec.launch_overhead_s)


def _xla_loop_iteration_seconds(row: dict, spec: GpuSpec, pinned: Pinned = NOTHING) -> float:
    """A loop with a static trip count and a one-kernel body of no work, as XLA:GPU runs it (a ForThunk; a
    WhileThunk given its trip count does the same): per iteration, the host's issue of the body's kernel or
    the kernel's floor and gap on the device, whichever is slower. The sources do not say how many kernels
    the loop's body compiles to (the recurrence's fusion, its counter's increment, an output's update-slice:
    1-3); one is the fewest."""
    trips = 1000
    body = (Kernel("body", "forward", "vector", 0.0, 0.0, 1),)
    runtime = dataclasses.replace(framework(XLA_FRAMEWORK, pinned), step_call_s=0.0)  # the loop alone
    tl = step_timeline([Loop("loop", "forward", trips, body, "for")], spec, "fp32", runtime)
    return tl.seconds / trips


def _d2h_roundtrip_seconds(row: dict, spec: GpuSpec, pinned: Pinned = NOTHING) -> float:
    """A small device-to-host copy the host waits for: the model's WhileThunk predicate round trip."""
    return framework(XLA_FRAMEWORK, pinned).loop_sync_s


# fn(row, spec) -> the model's figure; a quantity in FRAMEWORK_QUANTITIES also takes the pinned framework values
PREDICTORS: dict[str, Callable[..., float]] = {
    "gemm_seconds": _gemm_seconds,
    "elementwise_kernel_seconds": _elementwise_seconds,
    # the model charges launch_overhead_s per launch and splits no enqueue from a wait: it is the model's
    # host cost of a launch, and its cost per kernel in a stream beyond the kernel's own time
    "kernel_launch_enqueue_s": lambda row, spec: spec.launch_overhead_s,
    "queued_kernel_gap_s": lambda row, spec: spec.launch_overhead_s,
    # one small kernel launched and waited for, as the model charges it: the launch and the kernel's floor
    "launch_plus_sync_s": lambda row, spec: spec.launch_overhead_s + _smallest_kernel_seconds(spec),
    "graph_node_s": lambda row, spec: spec.graph_node_overhead_s,
    "graph_launch_s": lambda row, spec: spec.graph_launch_s,
    "h2d_bytes_per_second": _h2d_bytes_per_second,
    "xla_while_iteration_s": _xla_loop_iteration_seconds,
    "d2h_small_roundtrip_s": _d2h_roundtrip_seconds,
}
FRAMEWORK_QUANTITIES = {"xla_while_iteration_s", "d2h_small_roundtrip_s"}


def _predict(row: dict, spec: GpuSpec, values: dict | None = None) -> float:
    """The model's figure for ``row`` on ``spec`` with ``values`` (named assumptions) set."""
    values = values or {}
    fn = PREDICTORS[row["quantity"]]
    if row["quantity"] in FRAMEWORK_QUANTITIES:
        return fn(row, gpu_spec_with(spec, values), A.of_kind(Pinned.of(values), "framework"))
    return fn(row, gpu_spec_with(spec, values))


STATES = ("inside", "band", "outside", "unmatched", "pending")
AGREE = 1.005  # presets whose figures differ by less than this factor give the model one figure


@dataclass(frozen=True)
class Check:
    row: dict
    state: str
    model: float | None = None  # the model's figure in the row's unit (None: pending or unmatched)
    band: tuple | None = None  # the named GPU assumptions' band of it, (low, high)

    @property
    def ratio(self) -> float | None:
        """Model ÷ measured as times: above 1 the model is slower (a bandwidth ratio is inverted)."""
        if self.model is None:
            return None
        return self.row["value"] / self.model if self.row["unit"] == "B/s" else self.model / self.row["value"]


def load() -> dict:
    with open(DATA) as f:
        return json.load(f)


def rows() -> list[dict]:
    return load()["points"]


def _band(row: dict, spec: GpuSpec) -> tuple:
    drivers = drivers_of("gpu", spec, {})
    if row["quantity"] in FRAMEWORK_QUANTITIES:
        drivers += A.for_preset("framework", XLA_FRAMEWORK)
    out = band(lambda values: _predict(row, spec, values), drivers, 1, _predict(row, spec))
    return tuple(out["seconds_per_step"])  # the band's low and high, whatever the unit


def check(row: dict) -> Check:
    """The row against the model: its state, the model's figure and its band (see the module's text)."""
    if row["quantity"] not in PREDICTORS:
        return Check(row, "pending")
    specs = [gpu(p) for p in row["compare_on"]]
    figures = [_predict(row, s) for s in specs]
    if max(figures) > AGREE * min(figures):
        return Check(row, "unmatched")
    bands = [_band(row, s) for s in specs]
    low, high = min(b[0] for b in bands), max(b[1] for b in bands)
    model = figures[0]
    factor = TOLERANCE[row["quantity"]].factor
    lo, hi = row["range"] or (row["value"], row["value"])
    if lo / factor <= model <= hi * factor:
        state = "inside"
    elif low <= hi and lo <= high:  # the measurement (its range) meets the band, as `mimdsim validate` reads "in band"
        state = "band"
    else:
        state = "outside"
    return Check(row, state, model, (low, high))


def checks(points: list[dict] | None = None) -> list[Check]:
    return [check(r) for r in (rows() if points is None else points)]


def _figure(x: float, unit: str) -> str:
    if unit == "B/s":
        return f"{x / 1e9:.3g} GB/s"
    return f"{x * 1e6:.3g} µs"


def _shape(row: dict) -> str:
    if row["quantity"] == "gemm_seconds":
        return f"{row['m']}×{row['n']}×{row['k']} {row['precision']}"
    if row["quantity"] == "elementwise_kernel_seconds":
        return f"{row['elements']} elements, {row['operands']} operands"
    if "bytes" in row:
        return f"{row['bytes']:,} B" + (f" {row['memory']}" if row.get("memory") else "")
    if "iterations" in row:
        return f"{row['iterations']:,} iterations"
    return "–"


def markdown_table(points: list[dict] | None = None) -> str:
    """docs/gpu-model.md's table of the rows ("Microbenchmark checks"; a test keeps the page equal to it)."""
    lines = ["| id | quantity | shape | measured | GPU | source | model | band | model ÷ measured | state |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for c in checks(points):
        r = c.row
        measured = _figure(r["value"], r["unit"]) + (
            f" ({_figure(r['range'][0], r['unit'])}–{_figure(r['range'][1], r['unit'])})" if r["range"] else "")
        model = _figure(c.model, r["unit"]) if c.model is not None else "–"
        band_text = (f"{_figure(c.band[0], r['unit'])}–{_figure(c.band[1], r['unit'])}" if c.band else "–")
        ratio = f"{c.ratio:.2f}" if c.ratio is not None else "–"
        src = r["source"]
        where = f"{src['kind']} #{src['number']}" if src.get("number") else src["where"]
        lines.append(f"| `{r['id']}` | `{r['quantity']}` | {_shape(r)} | {measured} | {r['gpu_name']} | "
                     f"{src['repository']} {where} | {model} | {band_text} | {ratio} | {c.state} |")
    return "\n".join(lines)

