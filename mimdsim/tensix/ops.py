"""One ttnn operation on a Tensix chip: ``tensix_op(kind, chip, **shape)``, lowered to the one engine.

The lowering is the dataflow execution model as programs the engine already runs: the engine's tiles
are the compute grid's cores, each op a few barrier-free ("local") supersteps whose codelets are a
core's pipelined reader, compute and writer kernels (``kernels/ttnn/dataflow.py``): a core runs on
from where it finished, with no barrier between blocks, and the engine charges the slowest core. NoC
transfers and DRAM reads overlap compute inside a block's stage, as the circular buffers let them, so
the engine's exchange phase (a BSP exchange, after compute) is not used. The host's dispatch of the op
is a :class:`~mimdsim.program.Launch` charging a named host time (``tensix_dispatch_s``); with trace
replay (ttnn's ``begin_trace_capture`` / ``execute_trace``) the op costs ``tensix_trace_dispatch_s``
instead, reported beside it.

=========== =======================================================================================
matmul      m, k, n ([m,k] x [k,n]), precision bf16|bfp8_b|bfp4_b, fidelity lofi|hifi2|hifi3|hifi4;
            ttnn's default program config for DRAM-interleaved operands (:mod:`.matmul_config`)
elementwise elements, operand add|mul (binary, on the matrix engine) or unary (on the vector unit),
            precision, fidelity (mul only)
=========== =======================================================================================
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .. import assumptions as A
from ..arch.chip import ChipSpec, SystemSpec
from ..arch.execution import family_of
from ..arch.tensix import FIDELITY_PHASES, TILE_BYTES, TILE_ELEMENTS, TensixSpec, TENSIX_CHIPS
from ..checks import check_choice, check_int
from ..engine.run import run_program
from ..errors import ConfigError, DoesNotFit, Param
from ..program import Launch, Loop, Program, ProgramMeta, Superstep, TensorAlloc, VertexSet
from .matmul_config import MatmulConfig, matmul_config

PRECISIONS = ("bf16", "bfp8_b", "bfp4_b")  # the matrix engine's input formats ttnn's matmul takes here
FIDELITIES = tuple(FIDELITY_PHASES)
KINDS = {"matmul": {"m": None, "k": None, "n": None, "precision": "bf16", "fidelity": "hifi2"},
         "elementwise": {"elements": None, "operand": "add", "precision": "bf16", "fidelity": "hifi2"}}
ELTWISE_OPERANDS = ("add", "mul", "unary")
DISPATCH = "tensix_dispatch_s"  # host time per op, eager (a named assumption, kind "host")
TRACE_DISPATCH = "tensix_trace_dispatch_s"  # per op replayed from a captured trace
KINDS_OF_COST = ("compute", "host")
CHIP_ASSUMPTIONS = ("tensix_l1_reserved_bytes", "tensix_dram_efficiency", "tensix_dram_latency_cycles",
                    "tensix_sfpu_instructions_per_element")


@dataclass
class TensixOpReport:
    """One op's time on a Tensix chip: device cycles, host dispatch eager and traced, the program config."""

    kind: str
    chip: str
    shape: dict
    clock_hz: float
    device_cycles: float
    dispatch_s: float  # eager: ttnn's host work per op
    trace_dispatch_s: float  # per op replayed from a trace
    steps: dict
    config: dict | None = None
    band: dict | None = None  # seconds (eager) with every chip assumption at its fast and slow end
    notes: list = field(default_factory=list)

    @property
    def device_seconds(self) -> float:
        return self.device_cycles / self.clock_hz

    @property
    def seconds(self) -> float:
        """Eager, as a PyTorch user calling ttnn op by op gets it."""
        return self.device_seconds + self.dispatch_s

    @property
    def traced_seconds(self) -> float:
        return self.device_seconds + self.trace_dispatch_s

    def flops(self) -> float:
        s = self.shape
        return 2.0 * s["m"] * s["k"] * s["n"] if self.kind == "matmul" else 0.0

    def to_dict(self) -> dict:
        return {"kind": self.kind, "chip": self.chip, "shape": dict(self.shape), "seconds": self.seconds,
                "traced_seconds": self.traced_seconds, "device_seconds": self.device_seconds,
                "device_cycles": self.device_cycles, "clock_hz": self.clock_hz, "dispatch_s": self.dispatch_s,
                "trace_dispatch_s": self.trace_dispatch_s, "steps": {k: dict(v) for k, v in self.steps.items()},
                "config": self.config, "band": self.band, "notes": list(self.notes)}

    def summary(self) -> str:
        shape = ", ".join(f"{k}={v}" for k, v in self.shape.items())
        us = lambda s: f"{s * 1e6:,.3f} us"  # noqa: E731
        lines = [f"mimdsim op {self.kind} on {self.chip} (ttnn, DRAM-interleaved operands): {shape}",
                 f"  device           {us(self.device_seconds)}  ({self.device_cycles:,.0f} cycles at "
                 f"{self.clock_hz / 1e9:.3g} GHz)",
                 f"  eager            {us(self.seconds)}  (+ {us(self.dispatch_s)} host dispatch per op, {DISPATCH})",
                 f"  traced           {us(self.traced_seconds)}  (+ {us(self.trace_dispatch_s)} per op replayed, "
                 f"{TRACE_DISPATCH})"]
        if self.band:
            lo, hi = self.band["seconds"]
            lines.append(f"  band (eager)     {us(lo)} - {us(hi)} with the {self.band['assumptions']} named assumptions "
                         f"at their ends; largest: {self.band['largest']}")
        if self.kind == "matmul":
            lines.append(f"  throughput       {self.flops() / self.device_seconds / 1e12:,.1f} TFLOP/s on the device, "
                         f"{self.flops() / self.seconds / 1e12:,.1f} eager")
        if self.config:
            c = self.config
            lines.append(f"  program config   {c['config']} on a {c['grid']} grid: per_core_M {c['per_core_M']}, per_core_N "
                         f"{c['per_core_N']}, in0_block_w {c['in0_block_w']}, out_block {c['out_block']} (subblock "
                         f"{c['out_subblock']}); {c['k_blocks']} K blocks x {c['out_blocks']} output blocks per core, "
                         f"{c['cb_bytes_per_core']:,} B of circular buffers per core")
        lines += ["  stage                   count  cycles each (slowest core)"]
        lines += [f"  {name:<22}{s['count']:>7}{s['compute'] / max(s['count'], 1):>16,.0f}" for name, s in self.steps.items()]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


class _Grid:
    """The op's mapping: the compute grid is one group of cores (for traces)."""

    def tile_groups(self, n_tiles: int):
        return np.zeros(1, dtype=np.int64), ["grid"]


def engine_system(spec: TensixSpec) -> SystemSpec:
    """The spec as the engine runs it: a tile per core of the compute grid, the core's L1, the AI clock,
    and no barrier before a local superstep (cores stream; they never wait for the whole chip)."""
    return SystemSpec(chip=ChipSpec(name=spec.name, tiles=spec.cores, sram_per_tile=spec.l1_bytes,
                                    clock_hz=spec.clock_hz, local_sync_cycles=0,
                                    host_bytes_per_second=spec.host_bytes_per_second))


def tensix_chip(chip, assume=None) -> TensixSpec:
    """A Tensix preset (or spec) with its pinned chip assumptions applied."""
    family = family_of(chip)
    if family.specs is not TENSIX_CHIPS:
        raise ConfigError(f"chip {chip!r} is not a Tensix chip; Tensix presets are {', '.join(TENSIX_CHIPS.presets)}")
    spec = TENSIX_CHIPS.get(chip, {})
    fields = A.spec_overrides("chip", spec.name, A.check(assume)) if assume else {}
    fields = {k: int(v) if isinstance(getattr(spec, k), int) else v for k, v in fields.items()}
    return spec.replace(**fields) if fields else spec


def _rates(spec: TensixSpec) -> dict:
    """The core's rates every ttnn codelet reads from its geometry."""
    return {"noc_bytes_per_cycle": spec.noc_bytes_per_cycle, "dram_bytes_per_cycle": spec.dram_bytes_per_cycle,
            "dram_latency": spec.dram_latency_cycles, "hop_cycles": spec.noc_hop_cycles,
            "niu_cycles": spec.noc_niu_cycles}


def check_format(precision, fidelity) -> None:
    check_choice("precision", precision, PRECISIONS,
                 fix=("the matrix engine's formats here are bf16, bfp8_b and bfp4_b: pass e.g. ",
                      Param("precision", "bf16")))
    check_choice("fidelity", fidelity, FIDELITIES,
                 fix=("pass one of lofi, hifi2, hifi3, hifi4, e.g. ", Param("fidelity", "hifi2")))


def matmul_plan(spec: TensixSpec, m: int, k: int, n: int, precision: str = "bf16") -> MatmulConfig:
    """ttnn's program config for the shape on ``spec``, refused in one line if it fits neither DRAM nor L1."""
    for name, v in (("m", m), ("k", k), ("n", n)):
        check_int(name, v, low=1)
    tile = TILE_BYTES[precision]
    Mt, Kt, Nt = (math.ceil(d / 32) for d in (m, k, n))
    need = (Mt * Kt + Kt * Nt + Mt * Nt) * tile
    if need > spec.dram_bytes:
        raise DoesNotFit(f"matmul [{m} x {k}] . [{k} x {n}] ({precision}): its operands and result take {need:,} B, "
                         f"more than {spec.name}'s {spec.dram_bytes:,} B of DRAM; lower ", Param("m"), ", ",
                         Param("k"), " or ", Param("n"), ", or use a block-float ", Param("precision", "bfp8_b"))
    config = matmul_config(m, k, n, spec.grid_x, spec.grid_y, (tile, tile, tile), spec.l1_usable_bytes)
    if config is None:
        raise DoesNotFit(f"matmul [{m} x {k}] . [{k} x {n}] ({precision}): not even one-tile blocks fit the "
                         f"{spec.l1_usable_bytes:,} B of free L1 per core on {spec.name}; lower the reserved L1 (",
                         Param("tensix_l1_reserved_bytes", key="assume.tensix_l1_reserved_bytes"), ") or ",
                         Param("k"))
    return config


def matmul_geometry(spec: TensixSpec, c: MatmulConfig, precision: str, fidelity: str) -> dict:
    """Per-block bytes, hops and tile products of one core's kernels, from the config (:mod:`.matmul_config`):
    2D: in0 read by each row's first core and multicast along its row, in1 by each column's first core
    down its column; 1D in0: one core reads in0 and multicasts it to every core, each reads its own in1;
    1D in1: the transpose."""
    tile = TILE_BYTES[precision]
    in0 = c.out_block_h * c.in0_block_w * tile
    in1 = c.in0_block_w * c.out_block_w * tile
    span = (c.grid_x - 1) + (c.grid_y - 1)  # a multicast to every core of the grid
    if c.kind == "2d-mcast":
        hops0, hops1, chip_read = c.grid_x - 1, c.grid_y - 1, c.grid_y * in0 + c.grid_x * in1
    elif c.kind == "1d-mcast-in0":
        hops0, hops1, chip_read = span, 0, in0 + c.cores * in1
    else:
        hops0, hops1, chip_read = 0, span, c.cores * in0 + in1
    out = c.out_block_h * c.out_block_w * tile
    return {**_rates(spec), "in0_bytes": in0, "in1_bytes": in1, "in0_hops": hops0, "in1_hops": hops1,
            "chip_read_bytes": chip_read, "tile_products": c.out_block_h * c.out_block_w * c.in0_block_w,
            "cycles_per_tile_product": spec.cycles_per_tile_matmul(fidelity), "out_bytes": out,
            "chip_out_bytes": c.cores * out}


def matmul_program(spec: TensixSpec, c: MatmulConfig, precision: str, fidelity: str) -> Program:
    """The matmul as the engine runs it: per output block, the first K block's read, the steady blocks,
    the last block's compute and the output's write, every core barrier-free; the host's dispatch first."""
    cores = np.arange(c.cores)
    g = matmul_geometry(spec, c, precision, fidelity)
    vs = lambda name: (VertexSet(name, None, cores, g),)  # noqa: E731
    fill = Superstep("first block read", "forward", vs("ttnn.matmul_fill"), sync="local")
    block = Superstep("k block", "forward", vs("ttnn.matmul_block"), sync="local")
    drain = Superstep("last block, write", "forward", vs("ttnn.matmul_drain"), sync="local")
    schedule = [Launch("dispatch", host_call=DISPATCH), Loop("first block read", c.out_blocks, (fill,))]
    if c.k_blocks > 1:
        schedule.append(Loop("k block", c.out_blocks * (c.k_blocks - 1), (block,)))
    schedule.append(Loop("last block, write", c.out_blocks, (drain,)))
    cbs = TensorAlloc("circular buffers", "buffers", cores, np.full(c.cores, c.cb_bytes, dtype=np.int64))
    return Program(system=engine_system(spec), mapping=_Grid(), timesteps=1, batch_size=1, tensors=[cbs],
                   schedule=schedule, meta=ProgramMeta(model="ttnn matmul", workload="op", precision=precision,
                                                       training=False))


def eltwise_geometry(spec: TensixSpec, elements: int, operand: str, precision: str, fidelity: str,
                     inputs: int | None = None) -> tuple:
    """``(cores used, geometry)`` of an element-wise op over ``elements``: tiles split evenly over the grid;
    binary ops (two input tiles per output tile unless ``inputs`` says otherwise) on the matrix engine (8 x 16
    per cycle; a multiply once per fidelity pass), a unary op (one input) through the vector unit (32 lanes)."""
    tiles = math.ceil(elements / TILE_ELEMENTS)
    used = min(spec.cores, tiles)
    tile = TILE_BYTES[precision]
    if operand == "unary":
        compute = TILE_ELEMENTS / spec.sfpu_lanes * spec.sfpu_instructions_per_element
    else:
        compute = TILE_ELEMENTS / spec.fpu_eltwise_per_cycle * (FIDELITY_PHASES[fidelity] if operand == "mul" else 1)
    inputs = (1 if operand == "unary" else 2) if inputs is None else inputs
    return used, {**_rates(spec), "tiles_per_core": math.ceil(tiles / used), "in_bytes_per_tile": inputs * tile,
                  "out_bytes_per_tile": tile, "active_cores": used, "compute_cycles_per_tile": compute}


def eltwise_program(spec: TensixSpec, elements: int, operand: str, precision: str, fidelity: str,
                    inputs: int | None = None) -> Program:
    used, g = eltwise_geometry(spec, elements, operand, precision, fidelity, inputs)
    stream = Superstep("stream tiles", "forward", (VertexSet("ttnn.eltwise", None, np.arange(used), g),), sync="local")
    return Program(system=engine_system(spec), mapping=_Grid(), timesteps=1, batch_size=1, tensors=[],
                   schedule=[Launch("dispatch", host_call=DISPATCH), stream],
                   meta=ProgramMeta(model="ttnn elementwise", workload="op", precision=precision, training=False))


def device_seconds(program: Program) -> float:
    """The device time of one op's program (its host dispatch left out)."""
    return _device_cycles(program)[0] / program.system.chip.clock_hz


def _device_cycles(program: Program) -> tuple[float, float, dict]:
    report = run_program(program)
    compute = float(sum(p.get("compute", 0.0) for p in report.cycles.values()))
    host = float(sum(p.get("host", 0.0) for p in report.cycles.values()))
    steps = {name: {"count": int(s["count"]), "compute": float(s.get("compute", 0.0)), "host": float(s.get("host", 0.0))}
             for name, s in report.steps.items()}
    return compute, host, steps


def _shape(kind: str, given: dict) -> dict:
    if kind not in KINDS:
        raise ConfigError(f"op {kind!r} has no Tensix lowering; Tensix ops are {', '.join(KINDS)}")
    allowed = KINDS[kind]
    unknown = sorted(set(given) - set(allowed))
    if unknown:
        raise ConfigError(f"op {kind!r} on a Tensix chip takes {', '.join(allowed)}; ", Param(unknown[0]),
                          " is not one of them: drop it")
    shape = {k: given.get(k) if given.get(k) is not None else v for k, v in allowed.items()}
    missing = [k for k, v in shape.items() if v is None]
    if missing:
        raise ConfigError(f"op {kind!r} needs ", Param(missing[0]), ", e.g. ", Param(missing[0], 1024))
    return shape


def _program(kind: str, spec: TensixSpec, shape: dict):
    check_format(shape["precision"], shape["fidelity"])
    if kind == "matmul":
        c = matmul_plan(spec, shape["m"], shape["k"], shape["n"], shape["precision"])
        return matmul_program(spec, c, shape["precision"], shape["fidelity"]), c.describe()
    check_int("elements", shape["elements"], low=1)
    check_choice("operand", shape["operand"], ELTWISE_OPERANDS)
    need = 3 * math.ceil(shape["elements"] / TILE_ELEMENTS) * TILE_BYTES[shape["precision"]]
    if need > spec.dram_bytes:
        raise DoesNotFit(f"elementwise over {shape['elements']:,} elements: its tensors take {need:,} B, more than "
                         f"{spec.name}'s {spec.dram_bytes:,} B of DRAM; lower ", Param("elements"))
    return eltwise_program(spec, shape["elements"], shape["operand"], shape["precision"], shape["fidelity"]), None


def tensix_op(kind: str, chip: str | TensixSpec = "wormhole-n150", *, assume=None, band: bool = True,
              **given) -> TensixOpReport:
    """Cost one ttnn op on a Tensix chip: ``tensix_op("matmul", "wormhole-n150", m=4096, k=4096, n=4096)``."""
    shape = _shape(kind, given)
    pinned = A.check(assume)
    spec = tensix_chip(chip, pinned)
    program, config = _program(kind, spec, shape)
    device, _, steps = _device_cycles(program)
    steps.pop("dispatch", None)
    report = TensixOpReport(kind, spec.name, shape, spec.clock_hz, device, A.value(DISPATCH, pinned),
                            A.value(TRACE_DISPATCH, pinned), steps, config)
    if band:
        report.band = _band(kind, spec.name, shape, pinned, report.seconds)
    return report


def op_band(kind: str, chip: str, shape: dict, traced: bool = False, assume=None) -> dict:
    """The band of one op's eager or trace-replayed seconds over the named assumptions it reads
    (``{"seconds": (low, high), "assumptions", "largest"}``)."""
    pinned = A.check(assume)
    r = tensix_op(kind, chip, assume=assume, band=False, **shape)
    return _band(kind, r.chip, shape, pinned, r.traced_seconds if traced else r.seconds, traced)


def _band(kind: str, chip: str, shape: dict, pinned, point: float, traced: bool = False) -> dict:
    """Eager (or, ``traced``, trace-replayed) seconds with each named assumption of the op at its low and high
    end (the others as used): the band is the spread of the two sums of the moves (every assumption at its fast
    or slow end)."""
    dispatch = TRACE_DISPATCH if traced else DISPATCH
    names = [n for n in CHIP_ASSUMPTIONS + (dispatch,) if n not in pinned and A.REGISTRY[n].applies(chip)]
    down = up = 0.0
    largest, spread = "", -1.0
    for name in names:
        a = A.REGISTRY[name]
        moved = [tensix_op(kind, chip, assume={**dict(pinned), name: v}, band=False, **shape) for v in (a.low, a.high)]
        t = [r.traced_seconds if traced else r.seconds for r in moved]
        down += min(min(t) - point, 0.0)
        up += max(max(t) - point, 0.0)
        if max(t) - min(t) > spread:
            largest, spread = f"{name} {min(t) * 1e6:,.3f}-{max(t) * 1e6:,.3f} us", max(t) - min(t)
    return {"seconds": (point + down, point + up), "assumptions": len(names), "largest": largest}

