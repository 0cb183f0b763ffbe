"""Dense networks (MLP inference) on a MIMD chip's AMP units.

Default size, flavour-tagging sized (docs/workloads.md): an event of 100 tracks x 18 features
(the IPU4HEP tagging benchmark's defaults) flattened to 1800 inputs, two ReLU hidden layers of
128, one sigmoid output (the tag probability): ``(1800, 128, 128, 1)``.

Mapping, per layer (``[B, n_in] x [n_in, n_out]``): the batch is split into ``row_groups`` and
the outputs into ``col_groups``; tile ``r * col_groups + c`` holds ``W[:, cols(c)]`` (weights
stay resident, replicated per row group) and computes ``Y[rows(r), cols(c)]`` with the
``amp_layer`` codelet (its product costed by poplin's estimator of the AMP vertex, the
simulator's one AMP model: ``kernels/poplin/amp_layer.py``). The planner tries every ``col_groups`` (with
``row_groups = min(B, tiles // col_groups)``) and keeps the one with the fewest AMP +
input-receive cycles whose blocks fit a 1/L share of tile SRAM. Before layer l, every tile
receives ``X[rows(r), :]`` from the tiles that computed it (a multicast to the row group). One run::

    launch; repeat batches: io.inputs (host -> layer-1 tiles), L1 .. LL, io.outputs (-> host)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...kernels.poplin import amp_layer as amp
from ...kernels.tile import Tile

from ...arch import as_system
from ...engine import run_program
from ...errors import ConfigError, OutOfTileMemory
from ...program import HOST, Launch, Loop, Program, ProgramMeta, Superstep, TensorAlloc, Transfer, VertexSet
from ...report import Report
from ...report.bottleneck import bottleneck_notes
from ...checks import check_choice, check_int

DEFAULT_SIZES = (1800, 128, 128, 1)
BYTES = {"fp32": 4, "fp16": 2}


@dataclass(frozen=True)
class LayerPlan:
    layer: int
    n_in: int
    n_out: int
    row_groups: int
    col_groups: int
    batch: int

    def row_bounds(self):
        r = np.arange(self.row_groups + 1)
        return r * self.batch // self.row_groups

    def col_bounds(self):
        c = np.arange(self.col_groups + 1)
        return c * self.n_out // self.col_groups

    @property
    def tiles(self) -> int:
        return self.row_groups * self.col_groups

    def blocks(self):
        """(tile, rows, cols) of every tile of the layer."""
        rows = np.diff(self.row_bounds())
        cols = np.diff(self.col_bounds())
        return (np.arange(self.tiles), np.repeat(rows, self.col_groups), np.tile(cols, self.row_groups))


@dataclass(frozen=True)
class LayerMapping:
    """Each layer's blocks over tiles 0.. (row groups of the batch x column groups of the outputs)."""

    plans: tuple

    def tile_groups(self, n_tiles: int) -> tuple[np.ndarray, list[str]]:
        used = max(p.tiles for p in self.plans)
        if used < n_tiles:
            return np.array([0, used]), [f"layer blocks (tiles 0-{used - 1})", "idle tiles"]
        return np.array([0]), ["layer blocks"]


@dataclass
class MlpRun:
    report: Report
    outputs: np.ndarray | None = None
    weights: list | None = None
    plans: list | None = None
    inputs: np.ndarray | None = None

    @property
    def samples_per_second(self) -> float:
        return self.report.samples_per_second


def plan_layer(layer, n_in, n_out, batch, tiles, tile: Tile, precision, recv_bytes_per_cycle,
               sram_share) -> LayerPlan:
    e = BYTES[precision]
    gc = np.arange(1, min(n_out, tiles) + 1)
    gb = np.minimum(batch, tiles // gc)
    rows, cols = -(-batch // gb), -(-n_out // gc)
    cycles = amp.amp_layer_cycles(rows, cols, n_in, tile, "relu", precision) \
        + rows * n_in * e / recv_bytes_per_cycle
    mem = e * (n_in * cols + rows * n_in + rows * cols + cols)
    ok = mem <= sram_share
    if not ok.any():
        i = int(np.argmin(mem))
        raise OutOfTileMemory(0, int(mem[i]), int(sram_share),
                              {f"L{layer}.weights": int(e * n_in * cols[i]), f"L{layer}.inputs": int(e * rows[i] * n_in),
                               f"L{layer}.outputs": int(e * rows[i] * cols[i])},
                              f"Layer {layer} ({n_in} x {n_out}) does not fit its 1/L share of tile SRAM even on "
                              f"{tiles} tiles; use fp16, fewer/smaller layers or more tiles.")
    i = int(np.argmin(np.where(ok, cycles, np.inf)))
    return LayerPlan(layer, n_in, n_out, int(gb[i]), int(gc[i]), batch)


def layer_input_transfer(prev: LayerPlan, cur: LayerPlan, e: int) -> Transfer:
    """X[rows(r), :] of ``cur`` from the tiles of ``prev`` that computed it (multicast per row group)."""
    rp, rc = prev.row_bounds(), cur.row_bounds()
    lo = np.maximum(rp[:-1, None], rc[None, :-1])
    hi = np.minimum(rp[1:, None], rc[None, 1:])
    overlap = np.maximum(hi - lo, 0)
    pr, cr = np.nonzero(overlap)
    ov = overlap[pr, cr]
    pcols = np.diff(prev.col_bounds())
    P, J, C = pr.size, prev.col_groups, cur.col_groups
    pair = np.repeat(np.arange(P), J * C)
    j = np.tile(np.repeat(np.arange(J), C), P)
    c = np.tile(np.arange(C), P * J)
    src = pr[pair] * J + j
    dst = cr[pair] * C + c
    nbytes = ov[pair] * pcols[j] * e
    group = pair * J + j
    keep = nbytes > 0
    return Transfer(f"L{cur.layer}.inputs", src[keep], dst[keep], nbytes[keep].astype(np.float64), group[keep])


def _check_sizes(sizes):
    if isinstance(sizes, (str, bytes)) or not hasattr(sizes, "__len__") or len(sizes) < 2:
        raise ConfigError(f"sizes={sizes!r}: give at least an input and an output size, e.g. {list(DEFAULT_SIZES)}")
    return [check_int(f"sizes[{i}]", n, low=1, fix=f"every layer needs at least one neuron (sizes={list(sizes)})")
            for i, n in enumerate(sizes)]


def mlp(batch=48, sizes=DEFAULT_SIZES, chip="ipu-mk2", *, tiles=None, precision="fp32", stream=True, batches=1,
        inputs=None, weights=None, execute=False, seed=0) -> MlpRun:
    """MLP inference of ``batch`` samples on ``chip`` (AMP units, ``precision`` fp32 or fp16).

    ``stream`` inputs in
    and outputs out over the host link; ``batches`` batches per run. With ``inputs [batch,
    sizes[0]]`` (or ``execute=True``: random inputs) the network runs numerically (He-initialised
    weights unless ``weights``, a list of ``(W, b)``, is given)."""
    system = as_system(chip)
    sizes = _check_sizes(sizes)
    batch = check_int("batch", batch, low=1, fix="pass batch >= 1")
    batches = check_int("batches", batches, low=1, fix="pass batches >= 1")
    check_choice("precision", precision, amp.PRECISIONS)
    n_tiles = system.check_tiles(tiles)
    tile = Tile.of(system.chip, precision)
    L = len(sizes) - 1
    share = system.chip.sram_per_tile / L
    n_micro, plans = 1, None
    while plans is None:  # split the batch into micro-batches until every layer's blocks fit
        micro = -(-batch // n_micro)
        try:
            plans = [plan_layer(l, sizes[l - 1], sizes[l], micro, n_tiles, tile, precision,
                                system.chip.exchange_recv_bytes_per_cycle, share) for l in range(1, L + 1)]
        except OutOfTileMemory:
            if micro == 1:
                raise
            n_micro *= 2
    # numerics
    outputs = x = None
    if inputs is not None or execute:
        rng = np.random.default_rng(seed)
        if inputs is None:
            inputs = rng.normal(0.0, 1.0, (batch, sizes[0]))
        x = np.asarray(inputs, dtype=np.float64) if np.asarray(inputs).dtype != object else None
        if x is None or x.shape != (batch, sizes[0]):
            raise ConfigError(f"inputs have shape {np.shape(inputs)}; expected [batch, {sizes[0]}] = ({batch}, {sizes[0]})")
        if not np.isfinite(x).all():
            raise ConfigError(f"inputs contain {int((~np.isfinite(x)).sum())} non-finite value(s); give finite inputs")
        if weights is None:
            weights = [(rng.normal(0.0, np.sqrt(2.0 / a), (a, b)), np.zeros(b)) for a, b in zip(sizes[:-1], sizes[1:])]
        if len(weights) != L or any(np.shape(W) != (a, b) or np.shape(bb) != (b,)
                                    for (W, bb), a, b in zip(weights, sizes[:-1], sizes[1:])):
            raise ConfigError(f"weights must be {L} (W, b) pairs shaped ([n_in, n_out], [n_out]) for sizes {sizes}")
        y = x
        for l, (W, bb) in enumerate(weights, start=1):
            y = amp.amp_layer(y, W, bb, "sigmoid" if l == L else "relu", precision)
        outputs = y

    program = lower(system, plans, sizes, precision=precision, stream=stream, repeats=batches * n_micro,
                    batch_size=batch * batches)
    used = program.tile_bytes()
    fullest = int(np.argmax(used))
    if used[fullest] > system.chip.sram_per_tile:
        raise OutOfTileMemory(fullest, int(used[fullest]), int(system.chip.sram_per_tile),
                              {k: int(v[fullest]) for k, v in program.tile_memory().items()},
                              "Use fp16, a smaller batch, or more tiles.")
    report = run_program(program)  # every cost is static: no work source
    supersteps = program.schedule[-1].count * len(program.schedule[-1].body)
    bound, notes = bottleneck_notes(report.cycles, report.steps, system.chip.clock_hz, supersteps)
    notes.append("AMP products costed by poplin's estimator of its AMP vertex; layers on " + ", ".join(
        f"L{p.layer} {p.row_groups}x{p.col_groups}" for p in plans) + " (row x column groups)")
    report.mode = "execution" if outputs is not None else "analytical"
    report.placement = {"tiles": int(max(p.tiles for p in plans)), "precision": precision, "micro_batches": n_micro, "micro_batch": plans[0].batch,
                        "layers": [{"layer": p.layer, "row_groups": p.row_groups, "col_groups": p.col_groups}
                                   for p in plans], "batches": batches, "stream": bool(stream), "bound": bound}
    report.notes = notes
    return MlpRun(report=report, outputs=outputs, weights=weights, plans=plans,
                  inputs=None if outputs is None else x)


def lower(system, plans, sizes, *, precision, stream, repeats, batch_size) -> Program:
    """The run as a program: the launch, then ``repeats`` times (batches x micro-batches) inputs in,
    one superstep per layer (its blocks' ``amp_layer`` vertices, its inputs exchanged from the
    previous layer's tiles), outputs out."""
    e = BYTES[precision]
    L = len(plans)
    sync = "global" if system.chips > 1 else "chip"
    body = []
    weights = np.zeros(system.tiles, np.int64)
    activations = np.zeros(system.tiles, np.int64)
    vertices = np.zeros(system.tiles, np.int64)  # amp_layer vertices per tile (one per layer it holds)
    for p in plans:
        t, rows, cols = p.blocks()
        vs = VertexSet("amp_layer", p.layer, t, {"rows": rows, "cols": cols, "depth": p.n_in,
                                                 "act": "sigmoid" if p.layer == L else "relu",
                                                 "precision": precision})
        if p.layer == 1:
            if stream:
                tr = Transfer("inputs", np.full(t.shape, HOST), t, (rows * p.n_in * e).astype(np.float64),
                              t // p.col_groups)
                body.append(Superstep("io.inputs", "io", (), (tr,), sync))
            transfers = ()
        else:
            transfers = (layer_input_transfer(plans[p.layer - 2], p, e),)
        body.append(Superstep(f"L{p.layer}", "forward", (vs,), transfers, sync))
        np.add.at(weights, t, e * (p.n_in * cols + cols))
        np.add.at(activations, t, e * (rows * p.n_in + rows * cols))
        vertices[t] += 1
    if stream:
        t, rows, cols = plans[-1].blocks()
        body.append(Superstep("io.outputs", "io", (), (
            Transfer("outputs", t, np.full(t.shape, HOST), (rows * cols * e).astype(np.float64), t),), sync))
    code = amp.AMP_LAYER.footprint(vertices).astype(np.int64)  # code once per tile + vertex states
    tensors = [TensorAlloc(k, k, np.flatnonzero(v), v[v != 0])
               for k, v in (("weights", weights), ("activations", activations), ("code", code))]
    return Program(system, LayerMapping(tuple(plans)), 1, batch_size, tensors,
                   [Launch(), Loop("repeats", repeats, tuple(body))],
                   ProgramMeta("mlp " + "-".join(map(str, sizes)), "mlp", precision))
