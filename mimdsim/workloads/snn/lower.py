"""Lowering: forward time loop, loss, BPTT loop and weight update as supersteps.

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

from kernels import bptt as _bptt
from kernels import lif as _lif

from ...compiler.memory import add_code, check_fits, id_bytes
from ...compiler.transfers import broadcast, point_to_point
from ...errors import ConfigError
from ...program import Loop, Program, ProgramMeta, Superstep, TensorAlloc, Transfer, VertexSet
from ...snn.network import LIFParams, Structure, describe_sizes
from ...snn.readout import Readout
from .mapping import LayerPlacement, Layout, map_network

F32 = 4
PRECISIONS = {"fp32": 4, "fp16": 2}


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

    @property
    def delay(self) -> int:
        return self.structure.delay


class _Plan:
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


def _per_neuron_vectors(spec) -> int:
    """Per-neuron parameter vectors a tile loads in the update (tuples or learnable)."""
    n = sum(isinstance(getattr(spec, k), tuple) or (k == "beta" and spec.learn_beta)
            or (k == "threshold" and spec.learn_threshold) for k in ("beta", "alpha", "threshold"))
    return n + (1 if spec.model == "lapicque" and not np.isscalar(spec.input_gain()) else 0)


def layer_codelet_args(spec, bias: bool, membrane_max: bool, activity_l1: bool = False) -> dict:
    """Static per-vertex instruction counts of a layer's forward and backward codelets
    (``activity_l1``: a hidden layer under the L1 activity penalty)."""
    pv = _per_neuron_vectors(spec)
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


def add_two_stage_reduction(bwd, l, p, plan, B, length, e) -> None:
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


def compile_program(sizes, capacities, system, *, timesteps: int, batch_size: int,
                    neurons_per_tile=None, reserve_tile0=True, optimizer="adam",
                    scan_chunk=64, structure: Structure | None = None, precision: str = "fp32",
                    training: bool = True) -> Program:
    """Map, plan memory and lower one training step. ``sizes``/``capacities`` include the input.

    ``structure`` (``Network.structure``) gives each layer's neuron model, bias, the
    inter-layer delay and the loss; None means the published sparse LIF (delay 1,
    ce_count). ``precision`` ("fp32" or "fp16") sets the bytes of every value.
    ``training=False`` lowers inference instead: the same forward pass and loss, no
    backward pass or update, and only what the forward pass keeps (:func:`forward_only`).
    """
    for name, v in (("timesteps", timesteps), ("batch_size", batch_size)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ConfigError(f"{name}={v!r} must be a positive integer")
    if optimizer not in ("sgd", "adam"):
        raise ConfigError(f"optimizer={optimizer!r}; choose 'sgd' or 'adam'")
    if precision not in PRECISIONS:
        raise ConfigError(f"precision={precision!r}; choose one of {', '.join(PRECISIONS)}")
    e = PRECISIONS[precision]
    chip = system.chip
    T, B, W = int(timesteps), int(batch_size), chip.workers
    layout = map_network(sizes[1:], chips=system.chips, tiles_per_chip=chip.tiles,
                         neurons_per_tile=neurons_per_tile, reserve_tile0=reserve_tile0)
    L = len(layout.layers)
    st = structure if structure is not None else default_structure(L)
    if len(st.layers) != L:
        raise ConfigError(f"structure describes {len(st.layers)} layers; the sizes give {L}")
    specs, readout, delay = st.layers, st.readout, st.delay
    if any(st.dense):
        return _compile_dense(sizes, capacities, system, layout, st, T, B, optimizer, precision, training)
    plans = [_Plan(p, B, W, scan_chunk) for p in layout.layers]
    sync = "global" if layout.chips_used > 1 else "chip"
    tensors: list[TensorAlloc] = []
    a2a = [s.recurrence == "all-to-all" for s in specs]
    spiking = [s.spiking for s in specs]
    out_spec = specs[-1]
    membrane_loss = readout.on_membrane
    # input-gradient partial length of layer l: its input list (l > 1) and, all-to-all, its own list
    part_len = [None] + [(capacities[l - 1] if l > 1 else 0) + (capacities[l] if a2a[l - 1] else 0)
                         for l in range(1, L + 1)]

    def alloc(name, category, tiles, nbytes, layer=None):
        tiles = np.asarray(tiles)
        tensors.append(TensorAlloc(name, category, tiles,
                                   np.broadcast_to(np.asarray(nbytes, dtype=np.int64), tiles.shape).copy(), layer))

    # ---- tensors on neuron tiles --------------------------------------------------------
    for l, (p, plan) in enumerate(zip(layout.layers, plans), start=1):
        spec = specs[l - 1]
        n_in, K_in, K = sizes[l - 1], capacities[l - 1], capacities[l]
        ids_in, ids_out = id_bytes(n_in), id_bytes(p.neurons)
        tiles, nl = p.tile_ids, p.n_local
        alloc(f"L{l}.weights", "weights", tiles, n_in * nl * e, l)
        alloc(f"L{l}.grad_copies", "gradients", tiles, W * n_in * nl * e, l)
        if optimizer == "adam":
            alloc(f"L{l}.adam_moments", "optimizer", tiles, 2 * n_in * nl * e, l)
        extra = trainable_per_neuron(spec, st.bias[l - 1], n_in, p.neurons) - n_in
        if extra:
            alloc(f"L{l}.extra_params", "weights", tiles, extra * nl * e, l)
            alloc(f"L{l}.extra_grad_copies", "gradients", tiles, W * extra * nl * e, l)
            if optimizer == "adam":
                alloc(f"L{l}.extra_adam_moments", "optimizer", tiles, 2 * extra * nl * e, l)
        fixed_vectors = _per_neuron_vectors(spec) - int(spec.learn_beta) - int(spec.learn_threshold)
        if fixed_vectors:
            alloc(f"L{l}.neuron_params", "state", tiles, fixed_vectors * nl * e, l)
        alloc(f"L{l}.membrane_history", "history", tiles, T * B * nl * e, l)
        for h in spec.histories[1:]:
            alloc(f"L{l}.{h}_history", "history", tiles, T * B * nl * e, l)
        if len(spec.state_variables) > 1:
            alloc(f"L{l}.state", "state", tiles, (len(spec.state_variables) - 1) * B * nl * e, l)
        alloc(f"L{l}.input_list_history", "lists", tiles, T * B * (K_in + 2) * ids_in, l)
        if a2a[l - 1]:
            alloc(f"L{l}.own_list_history", "lists", tiles, T * B * (K + 2) * ids_out, l)
        if spec.recurrence == "one-to-one":
            alloc(f"L{l}.recurrent_dS", "buffers", tiles, B * nl * e, l)
        alloc(f"L{l}.dU_dI", "state", tiles, (spec.carries + 1) * B * nl * e, l)
        if spiking[l - 1]:
            alloc(f"L{l}.flags", "buffers", tiles, B * nl, l)
            alloc(f"L{l}.grad_in", "buffers", tiles, B * K * (e + ids_out) * (2 if a2a[l - 1] else 1), l)
        if part_len[l]:
            alloc(f"L{l}.partials", "buffers", tiles, B * part_len[l] * e, l)
        # auxiliary roles
        if spiking[l - 1]:
            part_entries = min(scan_chunk, K) + 2
            alloc(f"L{l}.scan_buffers", "buffers", plan.scan_tiles, plan.block + W * part_entries * ids_out, l)
            alloc(f"L{l}.combine_buffers", "buffers", plan.combine_tiles,
                  plan.chunks * part_entries * ids_out + (K + 2) * ids_out, l)
        if part_len[l]:
            alloc(f"L{l}.reduce_buffers", "buffers", plan.stage1_tiles,
                  (plan.group_sizes[plan.stage1_job[1]] + 1) * part_len[l] * e, l)
            alloc(f"L{l}.reduce_buffers", "buffers", p.sample_tile(B),
                  (len(plan.group_starts) + 1) * part_len[l] * e, l)
    out, out_plan = layout.layers[-1], plans[-1]
    loss_tile = out.first_tile
    K_out = capacities[-1]
    n_out = out.neurons
    if membrane_loss:
        alloc(f"L{L}.membrane_max", "state", out.tile_ids, B * out.n_local * (e + 2), L)
    if out_spec.spiking:
        alloc(f"L{L}.output_list_history", "lists", out_plan.combine_tiles, T * (K_out + 2) * id_bytes(n_out), L)
        if not membrane_loss:
            alloc("loss.counts", "state", out_plan.combine_tiles, n_out * e * 2, L)
    grad_values = T * n_out if readout.loss == "ce_rate" else n_out
    alloc("loss.buffers", "buffers", [loss_tile], B * (n_out + grad_values) * e + B * e, L)

    # ---- schedule ------------------------------------------------------------------------
    def vs(codelet, l, tiles, **geometry):
        return VertexSet(codelet, l, np.asarray(tiles), geometry)

    first = layout.layers[0]
    io = Superstep("io.inputs", "io", exchange=(
        broadcast("inputs", np.array([-1]), first.tile_ids,
                  T * B * (capacities[0] + 2) * id_bytes(sizes[0])),
        point_to_point("labels", [-1], [loss_tile], B * F32)), sync=sync)

    fwd = {k: [[] for _ in range(L + 1)] for k in ("lists", "flags", "parts", "neuron", "scan", "combine")}
    for l, (p, plan) in enumerate(zip(layout.layers, plans), start=1):
        spec = specs[l - 1]
        K = capacities[l]
        ids_out = id_bytes(p.neurons)
        is_out = l == L
        args = layer_codelet_args(spec, st.bias[l - 1], is_out and membrane_loss)
        if l < L:  # this layer's list to every tile of the next layer
            fwd["lists"][l + 1].append(broadcast(f"L{l}.list", plan.combine_tiles, layout.layers[l].tile_ids,
                                                 (K + 2) * ids_out, group_base=l * B))
        if a2a[l - 1]:  # and, all-to-all, to every tile of its own layer for the next step
            fwd["lists"][l].append(broadcast(f"L{l}.own_list", plan.combine_tiles, p.tile_ids, (K + 2) * ids_out,
                                             group_base=(L + 1 + l) * B))
        fwd["neuron"][l].append(vs(_lif.FORWARD_CODELETS[spec.model], l, p.tile_ids, n_local=p.n_local,
                                   update=args["update"], role="forward"))
        if not spec.spiking:
            continue
        # flags: tile t's neurons for sample b go to the scan tile of (b, block(t))
        tile_block = (p.neuron_starts[:-1] // plan.block)
        job = np.arange(B)[:, None] * plan.blocks + tile_block[None, :]
        fwd["flags"][l].append(point_to_point(f"L{l}.flags", np.tile(p.tile_ids, B),
                                              plan.scan_tiles[job.ravel()], np.tile(p.n_local, B)))
        fwd["parts"][l].append(point_to_point(f"L{l}.partial_lists", plan.scan_tiles,
                                              np.repeat(plan.combine_tiles, plan.blocks),
                                              W * (min(scan_chunk, K) + 2) * ids_out))
        # one scan job per (sample, chunk), on the tile of its (sample, block)
        chunk_block = np.arange(plan.chunks) // W
        scan_jobs = plan.scan_tiles[(np.arange(B)[:, None] * plan.blocks + chunk_block[None, :]).ravel()]
        widths = np.diff(np.minimum(np.arange(plan.chunks + 1) * scan_chunk, p.neurons))
        fwd["scan"][l].append(vs("spike_scan", l, scan_jobs, chunks=plan.chunks, widths=np.tile(widths, B),
                                 cap=min(scan_chunk, K)))
        fwd["combine"][l].append(vs("spike_combine", l, plan.combine_tiles, partials=plan.chunks))
        if is_out and readout.loss in ("ce_count", "mse_count"):
            fwd["combine"][l].append(vs("count_spikes", L, out_plan.combine_tiles))

    def steps(prefix, kinds, layer_groups, phase):
        out_steps = []
        for group in layer_groups:
            suffix = "" if len(layer_groups) == 1 else f".L{group[0]}"
            for kind, key, xkey in kinds:
                comp = tuple(v for l in group for v in fwd_or_bwd[key][l])
                exch = tuple(x for l in group for x in fwd_or_bwd[xkey][l]) if xkey else ()
                if not comp and not exch:
                    continue
                out_steps.append(Superstep(f"{prefix}.{kind}{suffix}", phase, comp, exch, sync))
        return out_steps

    layer_order = [list(range(1, L + 1))] if delay == 1 else [[l] for l in range(1, L + 1)]
    fwd_or_bwd = fwd
    forward = Loop("forward", T, tuple(steps("fwd", (("neuron", "neuron", "lists"), ("scan", "scan", "flags"),
                                                     ("combine", "combine", "parts")), layer_order, "forward")))
    classes = readout.classes(n_out)
    loss_kind = readout.loss
    loss_codelet = "count_cross_entropy" if loss_kind == "ce_count" else "readout_loss"
    loss_vs = vs(loss_codelet, L, [loss_tile], batch=B, classes=classes, kind=loss_kind, outputs=n_out,
                 timesteps=T, listed=K_out)
    if membrane_loss:
        to_loss = point_to_point("membrane_max", out.tile_ids, np.full(out.tiles, loss_tile), B * out.n_local * e)
        from_loss = point_to_point("dL_dmembrane", np.full(out.tiles, loss_tile), out.tile_ids, B * out.n_local * e)
    elif loss_kind == "ce_rate":
        to_loss = point_to_point("output_lists", out_plan.combine_tiles, np.full(B, loss_tile),
                                 T * (K_out + 2) * id_bytes(n_out))
        from_loss = point_to_point("dL_dspikes", np.full(B, loss_tile), out_plan.combine_tiles, T * n_out * e)
    else:
        to_loss = point_to_point("counts", out_plan.combine_tiles, np.full(B, loss_tile), n_out * e)
        from_loss = point_to_point("dL_dcounts", np.full(B, loss_tile), out_plan.combine_tiles, n_out * e)
    loss = Superstep("loss", "forward", (loss_vs,), (to_loss,), sync)
    loss_back = Superstep("loss.grad", "backward", (), (from_loss,), sync)

    bwd = {k: [[] for _ in range(L + 1)] for k in ("grads", "p1", "p2", "neuron", "red1", "red2")}
    for l, (p, plan) in enumerate(zip(layout.layers, plans), start=1):
        spec = specs[l - 1]
        K, K_in = capacities[l], capacities[l - 1]
        is_out = l == L
        args = layer_codelet_args(spec, st.bias[l - 1], is_out and membrane_loss,
                                  bool(readout.activity_l1) and not is_out)
        if spec.spiking and not (is_out and membrane_loss):  # the list's dS: from the loss or the next layer
            src = plan.combine_tiles if is_out else layout.layers[l].sample_tile(B)
            bwd["grads"][l].append(broadcast(f"L{l}.dS", src, p.tile_ids, K * (e + id_bytes(p.neurons)),
                                             group_base=l * B))
        if a2a[l - 1]:
            bwd["grads"][l].append(broadcast(f"L{l}.dS_own", p.sample_tile(B), p.tile_ids,
                                             K * (e + id_bytes(p.neurons)), group_base=(L + 1 + l) * B))
        bwd["neuron"][l] += [vs(_bptt.BACKWARD_CODELETS[spec.model], l, p.tile_ids, n_local=p.n_local,
                                carry=args["carry"], own=args["own"], role="scatter"),
                             vs("weight_grad", l, p.tile_ids, n_local=p.n_local, source="input")]
        if l > 1:
            bwd["neuron"][l].append(vs("input_grad", l, p.tile_ids, n_local=p.n_local, source="input"))
        if a2a[l - 1]:
            bwd["neuron"][l] += [vs("weight_grad", l, p.tile_ids, n_local=p.n_local, source="own"),
                                 vs("input_grad", l, p.tile_ids, n_local=p.n_local, source="own")]
        if part_len[l]:
            length = part_len[l]
            add_two_stage_reduction(bwd, l, p, plan, B, length, e)
    fwd_or_bwd = bwd
    bwd_order = [list(range(1, L + 1))] if delay == 1 else [[l] for l in range(L, 0, -1)]
    backward = Loop("backward", T, tuple(steps("bwd", (("neuron", "neuron", "grads"), ("reduce1", "red1", "p1"),
                                                       ("reduce2", "red2", "p2")), bwd_order, "backward")),
                    reverse=True)

    elements = [trainable_per_neuron(s, b, n_in, p.neurons) * p.n_local
                for s, b, n_in, p in zip(specs, st.bias, sizes[:-1], layout.layers)]
    upd_copies = tuple(vs("grad_copies_reduce", l, p.tile_ids, elements=elements[l - 1], copies=W)
                       for l, p in enumerate(layout.layers, start=1))
    upd_opt = tuple(vs(optimizer, l, p.tile_ids, elements=elements[l - 1], copies=W)
                    for l, p in enumerate(layout.layers, start=1))
    schedule = [io, forward, loss, loss_back, backward,
                Superstep("update.copies", "update", upd_copies, (), sync),
                Superstep("update.optimizer", "update", upd_opt, (), sync)]

    program = Program(system, layout, T, B, tensors, schedule, ProgramMeta(describe_sizes(sizes), "snn", precision),
                      SnnPlan(tuple(sizes), tuple(capacities), st, optimizer, scan_chunk, loss_tile))
    if not training:
        forward_only(program)
    add_code(program)
    return program


# What inference leaves out of a training program's memory plan: everything of the
# backward pass and the update, and the per-step histories that only BPTT reads back.
TRAINING_ONLY_CATEGORIES = ("gradients", "optimizer")
TRAINING_ONLY_SUFFIXES = (".dU_dI", ".grad_in", ".partials", ".reduce_buffers", ".recurrent_dS")


def forward_only(program: Program) -> None:
    """Turn a lowered training step into inference, in place: keep the io, forward and loss
    supersteps (the forward pass is the training one, so its cost is too); drop gradients,
    optimizer state and backward buffers; keep one step of every history (the state and the
    lists the next step reads) except the first layer's inputs, which the host streams in
    for all T steps at once."""
    T, L = program.timesteps, len(program.mapping.layers)
    # a per-step loss (ce_rate) or the membrane maximum reads the output layer's whole record
    whole_output = program.plan.structure.readout.loss in ("ce_rate", "ce_max_membrane")
    program.schedule = [s for s in program.schedule
                        if all(b.phase in ("io", "forward") for b in (s.body if isinstance(s, Loop) else (s,)))]
    kept = []
    for a in program.tensors:
        if a.category in TRAINING_ONLY_CATEGORIES or a.name.endswith(TRAINING_ONLY_SUFFIXES):
            continue
        streamed = a.layer == 1 and a.name.endswith(("input_list_history", "input_history"))
        one_step = a.category == "history" or a.name.endswith("list_history")
        if one_step and not streamed and not (whole_output and a.layer == L):
            a = TensorAlloc(a.name, a.category, a.tiles, a.nbytes // T, a.layer)
        kept.append(a)
    program.tensors = kept
    program.meta = dataclasses.replace(program.meta, training=False)


def _compile_dense(sizes, capacities, system, layout, st, T, B, optimizer, precision, training=True) -> Program:
    """Dense activations: per step a matmul per layer (AMP in fp16, SIMD in fp32), no lists.

    Supersteps per step as for the lists (``fwd.neuron``; ``bwd.neuron``, ``bwd.reduce1``,
    ``bwd.reduce2``), but nothing is scanned or combined: each tile multicasts its slice of
    the spikes (B x n_local bits) to every tile of the next layer, which keeps them (1 bit
    per spike) for the weight gradient, and the input-gradient partials are full vectors
    (length n_in). Neurons are partitioned over tiles as for the lists; the [B, n_in]
    partials per tile then bound the batch (a matmul planner that also splits the batch and
    the input dimension is not modelled).
    """
    chip = system.chip
    W, e = chip.workers, PRECISIONS[precision]
    L = len(layout.layers)
    specs, readout, delay = st.layers, st.readout, st.delay
    if any(s.recurrence == "all-to-all" for s in specs):
        raise ConfigError("dense activations support no all-to-all recurrence yet; use spike lists for that layer")
    plans = [_Plan(p, B, W, 64) for p in layout.layers]
    sync = "global" if layout.chips_used > 1 else "chip"
    tensors: list[TensorAlloc] = []
    membrane_loss = readout.on_membrane

    def alloc(name, category, tiles, nbytes, layer=None):
        tiles = np.asarray(tiles)
        tensors.append(TensorAlloc(name, category, tiles,
                                   np.broadcast_to(np.asarray(nbytes, dtype=np.int64), tiles.shape).copy(), layer))

    def vs(codelet, l, tiles, **geometry):
        return VertexSet(codelet, l, np.asarray(tiles), geometry)

    fwd = {k: [[] for _ in range(L + 1)] for k in ("neuron", "x")}
    bwd = {k: [[] for _ in range(L + 1)] for k in ("neuron", "grads", "red1", "p1", "red2", "p2")}
    for l, (p, plan) in enumerate(zip(layout.layers, plans), start=1):
        spec = specs[l - 1]
        n_in = sizes[l - 1]
        tiles, nl = p.tile_ids, p.n_local
        extra = trainable_per_neuron(spec, st.bias[l - 1], n_in, p.neurons)
        alloc(f"L{l}.weights", "weights", tiles, extra * nl * e, l)
        alloc(f"L{l}.grad_copies", "gradients", tiles, W * extra * nl * e, l)
        if optimizer == "adam":
            alloc(f"L{l}.adam_moments", "optimizer", tiles, 2 * extra * nl * e, l)
        alloc(f"L{l}.membrane_history", "history", tiles, T * B * nl * e, l)
        for h in spec.histories[1:]:
            alloc(f"L{l}.{h}_history", "history", tiles, T * B * nl * e, l)
        if len(spec.state_variables) > 1:
            alloc(f"L{l}.state", "state", tiles, (len(spec.state_variables) - 1) * B * nl * e, l)
        alloc(f"L{l}.input_history", "history", tiles, T * B * -(-n_in // 8), l)  # X (1 bit per spike) for dW
        alloc(f"L{l}.dU_dI", "state", tiles, (spec.carries + 1) * B * nl * e, l)
        if l > 1:
            alloc(f"L{l}.partials", "buffers", tiles, B * n_in * e, l)
            alloc(f"L{l}.reduce_buffers", "buffers", plan.stage1_tiles,
                  (plan.group_sizes[plan.stage1_job[1]] + 1) * n_in * e, l)
            alloc(f"L{l}.reduce_buffers", "buffers", p.sample_tile(B), (len(plan.group_starts) + 1) * n_in * e, l)
        args = layer_codelet_args(spec, st.bias[l - 1], l == L and membrane_loss, bool(readout.activity_l1) and l < L)
        fwd["neuron"][l].append(vs("dense_forward", l, tiles, n_local=nl, n_in=n_in, batch=B, update=args["update"],
                                   precision=precision, role="forward", dense=True))
        if l < L:  # each tile's spikes (1 bit each) to every tile of the next layer, one multicast per tile
            nxt = layout.layers[l].tile_ids
            fwd["x"][l + 1].append(Transfer(f"L{l}.spikes", np.repeat(tiles, nxt.size), np.tile(nxt, tiles.size),
                                            np.repeat(B * (-(-nl // 8)), nxt.size).astype(np.int64),
                                            10 * (L + 1) * B + np.repeat(tiles, nxt.size)))
        bwd["neuron"][l] += [vs("dense_scatter", l, tiles, n_local=nl, batch=B, carry=args["carry"],
                                own=args["own"], role="scatter", dense=True),
                             vs("dense_weight_grad", l, tiles, n_local=nl, n_in=n_in, batch=B, precision=precision,
                                role="weight_grad", source="input")]
        if l < L:  # dS slices from the next layer's stage-2 tiles: n_local values per (sample, tile)
            src = layout.layers[l].sample_tile(B)
            bwd["grads"][l].append(point_to_point(f"L{l}.dS", np.repeat(src, p.tiles), np.tile(tiles, B),
                                                  np.tile(nl * e, B)))
        if l > 1:
            bwd["neuron"][l].append(vs("dense_input_grad", l, tiles, n_local=nl, n_in=n_in, batch=B,
                                       precision=precision, role="input_grad", source="input"))
            add_two_stage_reduction(bwd, l, p, plan, B, n_in, e)
    out = layout.layers[-1]
    loss_tile = out.first_tile
    n_out = out.neurons
    alloc("loss.buffers", "buffers", [loss_tile], B * n_out * e * (2 + (T if readout.loss == "ce_rate" else 0)), L)
    first = layout.layers[0]
    io = Superstep("io.inputs", "io", exchange=(
        broadcast("inputs", np.array([-1]), first.tile_ids, T * B * (capacities[0] + 2) * id_bytes(sizes[0])),
        point_to_point("labels", [-1], [loss_tile], B * F32)), sync=sync)
    per_sample = T * out.n_local if readout.loss in ("ce_rate", "ce_max_membrane") else out.n_local
    loss_codelet = "count_cross_entropy" if readout.loss == "ce_count" else "readout_loss"
    loss = Superstep("loss", "forward", (vs(loss_codelet, L, [loss_tile], batch=B, classes=readout.classes(n_out),
                                            kind=readout.loss, outputs=n_out, timesteps=T, listed=n_out),),
                     (point_to_point("outputs", out.tile_ids, np.full(out.tiles, loss_tile), B * per_sample * e),), sync)
    loss_back = Superstep("loss.grad", "backward", (), (
        point_to_point("dL_doutputs", np.full(out.tiles, loss_tile), out.tile_ids, B * per_sample * e),), sync)
    order = [list(range(1, L + 1))] if delay == 1 else [[l] for l in range(1, L + 1)]
    border = [list(range(1, L + 1))] if delay == 1 else [[l] for l in range(L, 0, -1)]

    def steps(prefix, table, kinds, groups, phase):
        out_steps = []
        for group in groups:
            suffix = "" if len(groups) == 1 else f".L{group[0]}"
            for kind, key, xkey in kinds:
                comp = tuple(v for l in group for v in table[key][l])
                exch = tuple(x for l in group for x in table[xkey][l])
                if comp or exch:
                    out_steps.append(Superstep(f"{prefix}.{kind}{suffix}", phase, comp, exch, sync))
        return out_steps

    forward = Loop("forward", T, tuple(steps("fwd", fwd, (("neuron", "neuron", "x"),), order, "forward")))
    backward = Loop("backward", T, tuple(steps("bwd", bwd, (("neuron", "neuron", "grads"), ("reduce1", "red1", "p1"),
                                                            ("reduce2", "red2", "p2")), border, "backward")),
                    reverse=True)
    elements = [trainable_per_neuron(s, b, n_in, p.neurons) * p.n_local
                for s, b, n_in, p in zip(specs, st.bias, sizes[:-1], layout.layers)]
    schedule = [io, forward, loss, loss_back, backward,
                Superstep("update.copies", "update", tuple(
                    vs("grad_copies_reduce", l, p.tile_ids, elements=elements[l - 1], copies=W)
                    for l, p in enumerate(layout.layers, start=1)), (), sync),
                Superstep("update.optimizer", "update", tuple(
                    vs(optimizer, l, p.tile_ids, elements=elements[l - 1], copies=W)
                    for l, p in enumerate(layout.layers, start=1)), (), sync)]
    program = Program(system, layout, T, B, tensors, schedule, ProgramMeta(describe_sizes(sizes), "snn", precision),
                      SnnPlan(tuple(sizes), tuple(capacities), st, optimizer, 64, loss_tile, dense=True))
    if not training:
        forward_only(program)
    add_code(program)
    return program


__all__ = ["compile_program", "check_fits", "Layout"]
