"""One Poplar-level operation on its own: ``mimdsim.op(kind, chip, **shape)``.

A quick what-if ("a 4096^3 fp16 matmul on a Bow") and what validation uses for microbenchmarks.
Every op is built as a one- to three-superstep :class:`~mimdsim.program.Program` from the same
pieces the workloads' programs are built from, and run by the same engine
(:func:`~mimdsim.engine.run.run_program`): compute through the codelet registry (poplibs'
estimators in ``kernels/popops/vertices.py``, poplin's AMP vertex in ``kernels/poplin/matmul.py``), exchange
and host streams through the fabric model (``mimdsim/engine/fabric.py``), the barrier through
its sync model. A matmul is planned by poplin's planner (``mimdsim/poplibs/matmul_plan.py``) and
lowered by ``MatmulLowering`` (``mimdsim/poplibs/matmul.py``), as in the PopTorch program. There is
no second cost formula here.

Kinds and their shape arguments (``tiles`` defaults to every tile of the chip):

=============== ========================================================================
matmul          m, k, n ([m,k] x [k,n], poplin semantics), precision fp32|fp16
elementwise     elements, operand scalar|vector (vector: pattern), regions, tiles
copy            elements, regions, dtype float|half, tiles (an on-tile Copy)
dynamic-slice   elements, slices, regions, dtype, update (dynamicUpdate), tiles
reduce          outputs, partials (inputs per output), regions, dtype, tiles
exchange        bytes (per message), tiles, pattern point-to-point|broadcast|all-to-all
sync            scope chip|global, chips
host            bytes_in, bytes_out (each way, spread over tiles), tiles
=============== ========================================================================
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..arch import as_system, system as make_system
from ..compiler.transfers import host_stream
from ..engine.band import chip_band
from ..engine.run import run_program
from ..errors import ConfigError, Param, join
from ..program import Program, ProgramMeta, Superstep, Transfer, VertexSet
from ..checks import check_choice, check_int
from ..kernels.poplin.matmul import BYTES
from .linear import spread
from .matmul import MatmulLowering
from .matmul_plan import plan_matmul

DTYPES = {"float": 4, "half": 2}
KINDS = {
    "matmul": {"m": None, "k": None, "n": None, "precision": "fp16"},
    "elementwise": {"elements": None, "operand": "scalar", "pattern": 1, "regions": 1, "tiles": None},
    "copy": {"elements": None, "regions": 1, "dtype": "float", "tiles": None},
    "dynamic-slice": {"elements": None, "slices": 1, "regions": 1, "dtype": "float", "update": False,
                      "tiles": None},
    "reduce": {"outputs": None, "partials": None, "regions": 1, "dtype": "float", "tiles": None},
    "exchange": {"bytes": None, "tiles": None, "pattern": "point-to-point"},
    "sync": {"scope": "chip", "chips": 1},
    "host": {"bytes_in": 0, "bytes_out": 0, "tiles": None},
}
PATTERNS = ("point-to-point", "broadcast", "all-to-all")
COST_KINDS = ("compute", "exchange", "sync", "host")


@dataclass
class OpReport:
    """One op's time: ``seconds``, ``cycles`` by kind, the supersteps it ran, the matmul plan."""

    kind: str
    chip: str
    shape: dict
    clock_hz: float
    cycles: dict
    steps: dict
    plan: dict | None = None
    notes: list = field(default_factory=list)
    uncertainty: dict | None = None  # seconds when the named assumptions move (mimdsim.engine.band)
    flops: float = 0.0  # a matmul's floating-point operations (2 m k n); 0 for the other kinds
    peak_flops: float = 0.0  # the chip's AMP peak at the matmul's precision, FLOP/s

    @property
    def flops_per_second(self) -> float:
        return self.flops / self.seconds if self.seconds else 0.0

    @property
    def total_cycles(self) -> float:
        return float(sum(self.cycles.values()))

    @property
    def seconds(self) -> float:
        return self.total_cycles / self.clock_hz

    def to_dict(self) -> dict:
        return {"kind": self.kind, "chip": self.chip, "shape": dict(self.shape), "seconds": self.seconds,
                "total_cycles": self.total_cycles, "clock_hz": self.clock_hz, "cycles": dict(self.cycles),
                "steps": {k: dict(v) for k, v in self.steps.items()}, "plan": self.plan, "notes": list(self.notes),
                **({"uncertainty": self.uncertainty} if self.uncertainty else {}),
                **({"flops": self.flops, "flops_per_second": self.flops_per_second, "peak_flops": self.peak_flops,
                    "peak_share": self.flops_per_second / self.peak_flops} if self.flops else {})}

    def summary(self) -> str:
        shape = ", ".join(f"{k}={v}" for k, v in self.shape.items())
        lines = [f"mimdsim op {self.kind} on {self.chip}: {shape}",
                 f"  time             {self.seconds * 1e6:,.3f} us  ({self.total_cycles:,.0f} cycles at "
                 f"{self.clock_hz / 1e9:.3g} GHz)"]
        u = self.uncertainty
        if u and u["seconds_per_step"][1] > u["seconds_per_step"][0]:
            top = u["drivers"][0]
            lines.append(f"  band             {u['seconds_per_step'][0] * 1e6:,.3f}-{u['seconds_per_step'][1] * 1e6:,.3f} us "
                         f"from {u['assumptions']} named assumptions; largest: {top['name']} "
                         f"{top['seconds_per_step'][0] * 1e6:,.3f}-{top['seconds_per_step'][1] * 1e6:,.3f}")
        if self.flops:
            lines.append(f"  achieved         {self.flops_per_second / 1e12:,.2f} TFLOP/s ({self.flops:,.0f} FLOPs), "
                         f"{100 * self.flops_per_second / self.peak_flops:.1f}% of the chip's "
                         f"{self.shape.get('precision', '')} peak {self.peak_flops / 1e12:,.1f} TFLOP/s")
        lines += [f"  {k:<16} {v:>12,.0f}" for k, v in self.cycles.items()]
        if self.plan:
            p = self.plan
            sK, sN = p["serial"]
            serial = (f", serial {'input' if sK > 1 else 'output'} channels x {max(sK, sN)}" if sK * sN > 1
                      else ", no serial split")
            order = ", operands swapped (the conv [n x k] . [k x m])" if p.get("swapped") else ""
            lines.append(f"  split            pM x pK x pN = {' x '.join(map(str, p['split']))} on {p['tiles']} "
                         f"tiles{serial}{order}, blocks {' x '.join(map(str, p['block']))}, temporary "
                         f"{p['temp_bytes']:,} B/tile")
        lines += ["  superstep        count      compute     exchange         sync         host"]
        lines += [f"  {name:<15}{s['count']:>6}" + "".join(f"{s[k]:>13,.0f}" for k in COST_KINDS)
                  for name, s in self.steps.items()]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


class _OneGroup:
    """The op's mapping: the whole chip is one tile group (for traces)."""

    def tile_groups(self, n_tiles: int):
        return np.zeros(1, dtype=np.int64), ["op"]


def _shape(kind: str, given: dict) -> dict:
    allowed = KINDS[kind]
    unknown = sorted(set(given) - set(allowed))
    if unknown:
        raise ConfigError(f"op {kind!r} takes ", *join(*map(Param, allowed), sep=", "), "; ",
                          Param(unknown[0], given[unknown[0]]), " is not one of them (drop it, or pick the kind that "
                          "takes it)")
    shape = {k: given.get(k, v) for k, v in allowed.items()}
    missing = [k for k, v in shape.items() if v is None and k != "tiles"]
    if missing:
        raise ConfigError(f"op {kind!r} needs ", *join(*map(Param, missing), sep=", "), "; give e.g. ",
                          Param(missing[0], 1024))
    return shape


def _tiles(shape, sys) -> np.ndarray:
    t = sys.check_tiles(shape.get("tiles"))
    shape["tiles"] = t
    return np.arange(t)


def _dtype(shape) -> int:
    return DTYPES[check_choice("dtype", shape["dtype"], DTYPES, fix="use float or half")]


def _compute(kind: str, shape: dict, sys) -> list[Superstep]:
    tiles = _tiles(shape, sys)
    regions = check_int("regions", shape["regions"], low=1, fix="one contiguous region per tile is 1")
    if kind == "reduce":
        outputs = check_int("outputs", shape["outputs"], low=1, fix="the reduction's output elements")
        partials = check_int("partials", shape["partials"], low=1, fix="the inputs summed into each output")
        geometry = dict(outputs=spread(outputs, tiles.size), inputs_per_output=partials, regions=regions,
                        dtype_bytes=_dtype(shape))
        codelet = "popops.reduce"
    else:
        elements = check_int("elements", shape["elements"], low=1, fix="the tensor's elements")
        per = spread(elements, tiles.size)
        if kind == "elementwise":
            operand = check_choice("operand", shape["operand"], ("scalar", "vector"),
                                   fix="scalar: multiply by one value; vector: by a per-element pattern")
            geometry = dict(elements=per, form=operand, regions=regions,
                            pattern=check_int("pattern", shape["pattern"], low=1, fix="the vector's length"))
            codelet = "popops.mul_in_place"
        elif kind == "copy":
            geometry = dict(elements=per, regions=regions, dtype_bytes=_dtype(shape))
            codelet = "popops.copy"
        else:
            geometry = dict(elements=per, regions=regions, dtype_bytes=_dtype(shape),
                            slices=check_int("slices", shape["slices"], low=1, fix="how many slices are taken"))
            codelet = "popops.dynamic_update" if shape["update"] else "popops.dynamic_slice"
    used = geometry.get("elements", geometry.get("outputs")) > 0
    geometry = {k: (v[used] if isinstance(v, np.ndarray) else v) for k, v in geometry.items()}
    return [Superstep(kind, "forward", (VertexSet(codelet, None, tiles[used], geometry),))]


def _exchange(shape: dict, sys) -> list[Superstep]:
    tiles = _tiles(shape, sys)
    nbytes = check_int("bytes", shape["bytes"], low=1, fix="bytes of each message")
    pattern = check_choice("pattern", shape["pattern"], PATTERNS)
    t = tiles.size
    if t < 2:
        raise ConfigError("an exchange needs tiles >= 2, got ", Param("tiles", t, key="op.tiles"), "; use more tiles")
    if pattern == "point-to-point":  # every tile sends to the tile half the range away: no supertile pairing
        src, dst = tiles, (tiles + t // 2) % t
        group = np.arange(t)
    elif pattern == "broadcast":  # tile 0 to every other tile, one multicast
        src, dst = np.zeros(t - 1, dtype=np.int64), tiles[1:]
        group = np.zeros(t - 1, dtype=np.int64)
    else:  # every tile to every other tile, its own data to each
        src, dst = np.repeat(tiles, t), np.tile(tiles, t)
        keep = src != dst
        src, dst = src[keep], dst[keep]
        group = np.arange(src.size)
    tr = Transfer(f"exchange.{pattern}", src.astype(np.int64), dst.astype(np.int64),
                  np.full(src.size, nbytes, dtype=np.int64), group.astype(np.int64))
    return [Superstep("exchange", "forward", (), (tr,))]


def _host(shape: dict, sys) -> list[Superstep]:
    tiles = _tiles(shape, sys)
    b_in = check_int("bytes_in", shape["bytes_in"], low=0, fix="bytes from the host to the tiles")
    b_out = check_int("bytes_out", shape["bytes_out"], low=0, fix="bytes from the tiles to the host")
    if not b_in and not b_out:
        raise ConfigError("op 'host' needs ", Param("bytes_in"), " or ", Param("bytes_out"), " above 0; give e.g. ",
                          Param("bytes_in", 1048576))
    streams = []
    for name, b, back in (("host.in", b_in, False), ("host.out", b_out, True)):
        if b:
            per = spread(b, tiles.size)
            streams.append(host_stream(name, tiles[per > 0], per[per > 0], to_host=back))
    return [Superstep("host", "io", (), tuple(streams))]


def _matmul(shape: dict, sys, split=None):
    prec = check_choice("precision", shape["precision"], ("fp32", "fp16"), fix="use fp32 or fp16")
    m, k, n = (check_int(d, shape[d], low=1, fix=f"the matmul's {d.upper()} dimension") for d in ("m", "k", "n"))
    chip = sys.chip
    if split is None:
        plan = plan_matmul("op", m, k, n, chip, prec, tiles=chip.tiles)
    else:  # a split poplin's estimate did not choose: (pM, pK, pN, sK, sN) of the conv, and its operand order
        *force, swapped = split
        plan = plan_matmul("op", m, k, n, chip, prec, tiles=chip.tiles, force=tuple(force), swap=bool(swapped))
    e = BYTES[prec]
    live = -(-((m * k + k * n + m * n) * e) // chip.tiles)  # the operands and the result, spread over the tiles
    if live + plan.temp_bytes > chip.sram_per_tile:
        raise ConfigError(f"matmul [{m} x {k}] . [{k} x {n}] ({prec}) does not fit {chip.name}: its operands and "
                          f"result take {live:,} B per tile and poplin's plan {plan.temp_bytes:,} B of temporaries, "
                          f"more than a tile's {chip.sram_per_tile:,} B; lower ", Param("m", action="lower"), ", ",
                          Param("k", action="lower"), " or ", Param("n", action="lower"))
    low = MatmulLowering(plan, 0, chip.tiles)
    red_x, red_v = low.reduction("op", None)
    lhs, rhs = low.operands("op", rhs_resident=False)
    before = []
    if plan.broadcast_before_loop:  # poplin's broadcastInputBeforeLoop: the lhs blocks once, before the loop
        before.append(Superstep("inputs", "forward", (), (lhs,)))
    iteration = [Superstep("operands", "forward", (), (rhs,) if plan.broadcast_before_loop else (lhs, rhs)),
                 Superstep("matmul", "forward", (low.matmul(None),), tuple(red_x))]
    if plan.serial > 1:
        iteration.insert(0, Superstep("slice", "forward", tuple(low.serial_slices(None))))
    if red_v:
        iteration.append(Superstep("reduce", "forward", tuple(red_v)))
    if low.serial_tail(None):
        iteration.append(Superstep("update" if plan.sN > 1 else "add", "forward", tuple(low.serial_tail(None))))
    steps = before + iteration * plan.serial  # the same supersteps, once per serial iteration
    described = {**plan.describe(), "temp_bytes": plan.temp_bytes, "planner_cycles": plan.cycles,
                 "transform_cycles": plan.transform_cycles, "broadcast_before_loop": plan.broadcast_before_loop}
    return steps, described


def op(kind: str, chip="ipu-mk2", *, split=None, **shape) -> OpReport:
    """Cost one operation on ``chip`` (a preset name, ChipSpec or SystemSpec): e.g.
    ``op("matmul", "bow", m=4096, k=4096, n=4096, precision="fp16").seconds``. ``split`` (a matmul only):
    ``(pM, pK, pN, sK, sN, swapped)``, as a report's plan gives it (``split + serial + [swapped]``), costs that
    plan instead of the one poplin's estimate picks (what a plan it passed over would cost when run)."""
    check_choice("kind", kind, KINDS)
    if split is not None and kind != "matmul":
        raise ConfigError("split= chooses a matmul's plan; drop it for op ", Param("kind", kind))
    shape = _shape(kind, shape)
    if kind == "sync":
        chips = check_int("chips", shape["chips"], low=1, fix="chips joined by the barrier")
        sync_kind = check_choice("scope", shape["scope"], ("chip", "global"),
                                 fix="chip: on one chip; global: across chips")
        sys = as_system(chip) if chips == 1 else make_system(as_system(chip).chip, chips=chips)
        steps = [Superstep("sync", "forward", (), (), sync_kind)]
    else:
        sys = as_system(chip)
    plan = None
    if kind == "matmul":
        steps, plan = _matmul(shape, sys, split)
    elif kind in ("elementwise", "copy", "dynamic-slice", "reduce"):
        steps = _compute(kind, shape, sys)
    elif kind == "exchange":
        steps = _exchange(shape, sys)
    elif kind == "host":
        steps = _host(shape, sys)
    program = Program(system=sys, mapping=_OneGroup(), timesteps=1, batch_size=1, tensors=[], schedule=steps,
                      meta=ProgramMeta(model=f"op {kind}", workload="op"))
    recorded = []
    report = run_program(program, record=recorded)
    u = chip_band(program, report, recorded, {})
    u.pop("samples_per_second")  # an op has no samples: its band is in seconds
    cycles = {k: float(sum(p.get(k, 0.0) for p in report.cycles.values())) for k in COST_KINDS}
    steps_out = {name: {"count": int(s["count"]), **{k: float(s.get(k, 0.0)) for k in COST_KINDS}}
                 for name, s in report.steps.items()}
    flops = peak = 0.0
    if kind == "matmul":  # 1 multiply-accumulate = 2 FLOPs; the peak: the AMP units of every tile at the clock
        flops = 2.0 * shape["m"] * shape["k"] * shape["n"]
        peak = sys.chip.peak_fp16_flops if shape["precision"] == "fp16" else sys.chip.peak_fp32_flops
    return OpReport(kind, sys.name, shape, sys.chip.clock_hz, cycles, steps_out, plan, uncertainty=u, flops=flops,
                    peak_flops=peak)
