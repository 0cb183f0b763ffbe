"""What every SNN chip program shares: the static plan (:class:`SnnPlan`), the context every
lowering step reads (:class:`LayerContext`), the per-layer auxiliary placement, the io and
update supersteps, the grouping of layers into supersteps and the memory plan being built.
The programs (:mod:`.published`, :mod:`.fused`, :mod:`.dense`, :mod:`.poptorch`) import these;
:mod:`.compile` chooses which program runs and is imported by none of them.

The hand-fused spike-list program (:mod:`.fused`): forward time loop, loss, BPTT loop and weight update as supersteps.

With the one-step inter-layer delay (``delay=1``, pipelined) all layers of a step share
the supersteps below. With ``delay=0`` (snnTorch: layer l sees layer l-1's spikes of the
same step) they cannot: each layer gets its own ``fwd.neuron.L{l}``, ``fwd.scan.L{l}``,
``fwd.combine.L{l}`` in layer order, and its own ``bwd.neuron.L{l}``, ``bwd.reduce1.L{l}``,
``bwd.reduce2.L{l}`` in reverse layer order, so a step costs 3L supersteps each way
instead of 3. The neuron codelets are those of each layer's model (``lif_forward``,
``synaptic_forward``, ... and their ``*_scatter`` backward codelets). An all-to-all
recurrent layer also reads its own list of the previous step (a second gather, weight
gradient and input-gradient partials); a non-spiking output layer (leaky integrator)
has no scan or combine, and a membrane loss reads it directly.

Per forward step t (delay 1):

* ``fwd.neuron``  exchange: layer l's list of step t-1 -> every tile of layer l+1;
                  compute: ``lif_forward`` on every neuron tile.
* ``fwd.scan``    exchange: threshold flags -> scan tiles; compute: ``spike_scan``.
* ``fwd.combine`` exchange: partial lists -> one combine tile per (layer, sample);
                  compute: ``spike_combine`` (+ ``count_spikes`` for the output layer).

Then ``loss`` (counts -> loss tile -> dL/dC back). Per backward step t (reverse):

* ``bwd.neuron``  exchange: dS and ids of layer l's list -> every tile of layer l;
                  compute: ``surrogate_scatter``, ``weight_grad``, ``input_grad``.
* ``bwd.reduce1`` exchange: partials -> group reducers; compute: ``partial_reduce``.
* ``bwd.reduce2`` exchange: group sums -> one tile per sample; compute: ``partial_reduce``.

Then ``update.copies`` (sum per-worker gradient copies) and ``update.optimizer``.
``io.inputs`` streams the input spike lists and labels from the host first.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from ....kernels.mimdsim_snn import bptt as _bptt
from ....kernels.mimdsim_snn import lif as _lif

from ....compiler.memory import id_bytes
from ....compiler.transfers import broadcast, point_to_point
from ....program import Superstep, TensorAlloc, VertexSet
from ....snn.network import LIFParams, Structure
from ....snn.readout import Readout
from ..mapping import LayerPlacement, Layout
from ..step import PRECISIONS

F32 = 4


@dataclass(frozen=True)
class SnnPlan:
    """The SNN lowering's static choices, which its work sources and report read."""

    sizes: tuple
    capacities: tuple
    structure: Structure
    optimizer: str  # "sgd" or "adam"
    scan_chunk: int  # neurons one worker scans for a list
    loss_tile: int
    dense: bool = False  # dense activations (a matmul per step) instead of spike lists
    schedule: str = "fused"  # "published" (the study's op as built) or "fused" (hand-fused supersteps)
    weight_grad_copies: int | None = None  # published: per-worker gradient copies per tile (1: single-thread)
    matmuls: tuple = ()  # poptorch: every matmul's poplin plan (mimdsim.poplibs.matmul_plan.MatmulPlan)
    schedule_reason: str | None = None  # why this program ran: the model's default, asked for, or forced (a Message)

    @property
    def delay(self) -> int:
        return self.structure.delay


class AuxPlan:
    """Static placement of one layer's auxiliary vertices (scan, combine, reductions)."""

    def __init__(self, p: LayerPlacement, batch: int, workers: int, chunk: int):
        self.p, self.B = p, batch
        self.block = chunk * workers  # neurons scanned by one scan vertex
        self.chunks = -(-p.neurons // chunk)
        self.blocks = -(-p.neurons // self.block)
        jobs = np.arange(batch * self.blocks)  # job = (sample, block)
        self.scan_tiles = p.first_tile + jobs % p.tiles
        self.combine_tiles = p.sample_tile(batch)
        # Two-stage reduction of input-gradient partials: groups of ~sqrt(tiles) tiles.
        self.group = math.isqrt(p.tiles - 1) + 1  # ceil(sqrt(tiles))
        self.group_starts = np.arange(0, p.tiles, self.group)
        sizes = np.diff(np.append(self.group_starts, p.tiles))
        b = np.repeat(np.arange(batch), len(self.group_starts))
        q = np.tile(np.arange(len(self.group_starts)), batch)
        self.stage1_tiles = p.first_tile + self.group_starts[q] + b % sizes[q]
        self.stage1_job = (b, q)
        self.group_sizes = sizes


def default_structure(layers: int) -> Structure:
    """The published sparse LIF in every layer, delay 1, ce_count, no bias."""
    spec = LIFParams().to_spec()
    return Structure((spec,) * layers, (False,) * layers, 1, Readout(), (False,) * layers)


def per_neuron_vectors(spec) -> int:
    """Per-neuron parameter vectors a tile loads in the update (tuples or learnable)."""
    n = sum(isinstance(getattr(spec, k), tuple) or (k == "beta" and spec.learn_beta)
            or (k == "threshold" and spec.learn_threshold) for k in ("beta", "alpha", "threshold"))
    return n + (1 if spec.model == "lapicque" and not np.isscalar(spec.input_gain()) else 0)


def layer_codelet_args(spec, bias: bool, membrane_max: bool, activity_l1: bool = False) -> dict:
    """Static per-vertex instruction counts of a layer's forward and backward codelets
    (``activity_l1``: a hidden layer under the L1 activity penalty)."""
    pv = per_neuron_vectors(spec)
    update = _lif.forward_update_instructions(
        model=spec.model, reset=spec.reset, reset_delay=spec.reset_delay, bias=bias,
        one_to_one=spec.recurrence == "one-to-one", per_neuron_params=pv, membrane_max=membrane_max,
        alpha_histories=spec.model == "alpha" and spec.learn_beta)
    carry, own = _bptt.backward_instructions(
        model=spec.model, reset=spec.reset, reset_delay=spec.reset_delay, reset_in_gradient=spec.reset_in_gradient,
        whole=spec.zero_resets_everything, surrogate=spec.surrogate.name, learn_beta=spec.learn_beta,
        learn_threshold=spec.learn_threshold, bias=bias, one_to_one=spec.recurrence == "one-to-one",
        per_neuron_params=pv)
    if membrane_max:
        carry += _bptt.MEMBRANE_INJECT_EXTRA
    if activity_l1:
        own += _bptt.ACTIVITY_L1_OWN
    return {"update": update, "carry": carry, "own": own}


def trainable_per_neuron(spec, bias: bool, n_in: int, n: int) -> int:
    """Trainable values per neuron of a layer (one column of everything)."""
    per = n_in + (1 if bias else 0)
    if spec.recurrence == "all-to-all" and spec.learn_recurrent:
        per += n + 1
    if spec.recurrence == "one-to-one" and spec.learn_recurrent:
        per += 1
    per += int(spec.learn_beta) + int(spec.learn_threshold)
    return per


def add_two_stage_reduction(bwd, l, p, plan: AuxPlan, B, length, e) -> None:
    """Lower the cross-tile reduction of layer l's per-tile partials (``length`` values of ``e``
    bytes per sample): partials -> group reducers (stage 1) -> one tile per sample (stage 2)."""
    grp = np.searchsorted(plan.group_starts, np.arange(p.tiles), side="right") - 1
    s1_index = np.arange(B)[:, None] * len(plan.group_starts) + grp[None, :]
    bwd["p1"][l].append(point_to_point(f"L{l}.partials", np.tile(p.tile_ids, B),
                                       plan.stage1_tiles[s1_index.ravel()], length * e))
    bwd["p2"][l].append(point_to_point(f"L{l}.group_sums", plan.stage1_tiles,
                                       p.sample_tile(B)[plan.stage1_job[0]], length * e))
    bwd["red1"][l].append(VertexSet("partial_reduce", l, np.asarray(plan.stage1_tiles),
                                    dict(inputs=plan.group_sizes[plan.stage1_job[1]], length=length, stage=1,
                                         group_starts=plan.group_starts)))
    bwd["red2"][l].append(VertexSet("partial_reduce", l, np.asarray(p.sample_tile(B)),
                                    dict(inputs=np.full(B, len(plan.group_starts)), length=length, stage=2)))


class TensorList(list):
    """The memory plan being built: ``alloc`` appends a tensor of ``nbytes`` on each of ``tiles``."""

    def alloc(self, name, category, tiles, nbytes, layer=None) -> None:
        tiles = np.asarray(tiles)
        self.append(TensorAlloc(name, category, tiles,
                                np.broadcast_to(np.asarray(nbytes, dtype=np.int64), tiles.shape).copy(), layer))


def vertices(codelet, l, tiles, **geometry) -> VertexSet:
    return VertexSet(codelet, l, np.asarray(tiles), geometry)


def layer_groups(L: int, delay: int, reverse: bool = False) -> list[list[int]]:
    """Layers that share supersteps: all of them with the pipelined delay 1; with delay 0 one
    layer at a time, in layer order (reverse order for the backward pass)."""
    if delay == 1:
        return [list(range(1, L + 1))]
    order = range(L, 0, -1) if reverse else range(1, L + 1)
    return [[l] for l in order]


def group_supersteps(prefix, table, kinds, groups, phase, sync) -> list[Superstep]:
    """One superstep per (layer group, kind): ``kinds`` are ``(name, compute key, exchange key)``
    into ``table[key][layer]`` lists of vertex sets and transfers; empty ones are left out."""
    out = []
    for group in groups:
        suffix = "" if len(groups) == 1 else f".L{group[0]}"
        for kind, key, xkey in kinds:
            comp = tuple(v for l in group for v in table[key][l])
            exch = tuple(x for l in group for x in table[xkey][l]) if xkey else ()
            if comp or exch:
                out.append(Superstep(f"{prefix}.{kind}{suffix}", phase, comp, exch, sync))
    return out


def update_supersteps(sizes, layout, st, optimizer, workers, sync) -> list[Superstep]:
    """Sum the per-worker gradient copies, then the optimizer, on every neuron tile."""
    elements = [trainable_per_neuron(s, b, n_in, p.neurons) * p.n_local
                for s, b, n_in, p in zip(st.layers, st.bias, sizes[:-1], layout.layers)]
    copies = tuple(vertices("grad_copies_reduce", l, p.tile_ids, elements=elements[l - 1], copies=workers)
                   for l, p in enumerate(layout.layers, start=1))
    update = tuple(vertices(optimizer, l, p.tile_ids, elements=elements[l - 1], copies=workers)
                   for l, p in enumerate(layout.layers, start=1))
    return [Superstep("update.copies", "update", copies, (), sync),
            Superstep("update.optimizer", "update", update, (), sync)]


def io_superstep(low: "LayerContext", loss_tile: int) -> Superstep:
    """The host streams every step's input spike lists to the first layer's tiles, and the labels."""
    first = low.layout.layers[0]
    return Superstep("io.inputs", "io", exchange=(
        broadcast("inputs", np.array([-1]), first.tile_ids,
                  low.T * low.B * (low.capacities[0] + 2) * id_bytes(low.sizes[0])),
        point_to_point("labels", [-1], [loss_tile], low.B * F32)), sync=low.sync)


def loss_vertices(readout, L, loss_tile, B, n_out, T, listed) -> VertexSet:
    codelet = "count_cross_entropy" if readout.loss == "ce_count" else "readout_loss"
    return vertices(codelet, L, [loss_tile], batch=B, classes=readout.classes(n_out), kind=readout.loss,
                    outputs=n_out, timesteps=T, listed=listed)


@dataclass(frozen=True)
class LayerContext:
    """What every lowering step reads: the shapes, the mapping, the structure, the run."""

    sizes: tuple
    capacities: tuple
    system: object
    layout: Layout
    st: Structure
    T: int
    B: int
    optimizer: str
    precision: str

    @property
    def L(self) -> int:
        return len(self.layout.layers)

    @property
    def workers(self) -> int:
        return self.system.chip.workers

    @property
    def e(self) -> int:
        return PRECISIONS[self.precision]

    @property
    def sync(self) -> str:
        return "global" if self.layout.chips_used > 1 else "chip"

    def aux_plans(self, chunk: int) -> list[AuxPlan]:
        return [AuxPlan(p, self.B, self.workers, chunk) for p in self.layout.layers]


def barrier_free(step: Superstep) -> Superstep:
    """A program with nothing to exchange (a local compute set, an on-tile copy) gets no sync: Poplar's
    sync analysis puts a barrier only where an exchange needs one, so each tile runs on from the previous
    program (sync "local"; the barrier is the named assumption local_sync_cycles, 0-126, docs/cost-model.md
    §1.4). The dynamic slices' offset needs no exchange either: poplibs replicates the scalar over the tiles
    ("small graph replication", popops DynamicSlice.cpp generateVertices, sdk-release-2.6)."""
    return step if step.exchange else dataclasses.replace(step, sync="local")
