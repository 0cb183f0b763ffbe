"""mimdsim's hand-fused spike-list program (``schedule="fused"``): capacity-K lists between layers,
scanned and combined every step; gradients only through listed ids (module docstring of
:mod:`.lowering` lists its supersteps)."""
from __future__ import annotations

import numpy as np

from ....kernels.mimdsim_snn import bptt as _bptt
from ....kernels.mimdsim_snn import lif as _lif

from ....compiler.memory import id_bytes
from ....compiler.transfers import broadcast, point_to_point
from ....program import Loop, Superstep
from .lowering import (LayerContext, TensorList, add_two_stage_reduction, group_supersteps, io_superstep,
                    layer_codelet_args, layer_groups, loss_vertices, per_neuron_vectors, trainable_per_neuron,
                    update_supersteps, vertices)


def lower(low: LayerContext, scan_chunk: int):
    """``(tensors, schedule, loss tile)`` of the spike-list training step."""
    plans = low.aux_plans(scan_chunk)
    a2a = [s.recurrence == "all-to-all" for s in low.st.layers]
    caps = low.capacities
    # input-gradient partial length of layer l: its input list (l > 1) and, all-to-all, its own list
    part_len = [None] + [(caps[l - 1] if l > 1 else 0) + (caps[l] if a2a[l - 1] else 0)
                         for l in range(1, low.L + 1)]
    tensors, loss_tile = plan_memory(low, plans, a2a, part_len, scan_chunk)
    forward = Loop("forward", low.T, tuple(group_supersteps(
        "fwd", forward_table(low, plans, a2a, scan_chunk),
        (("neuron", "neuron", "lists"), ("scan", "scan", "flags"), ("combine", "combine", "parts")),
        layer_groups(low.L, low.st.delay), "forward", low.sync)))
    loss, loss_back = loss_supersteps(low, plans, loss_tile)
    backward = Loop("backward", low.T, tuple(group_supersteps(
        "bwd", backward_table(low, plans, a2a, part_len),
        (("neuron", "neuron", "grads"), ("reduce1", "red1", "p1"), ("reduce2", "red2", "p2")),
        layer_groups(low.L, low.st.delay, reverse=True), "backward", low.sync)), reverse=True)
    schedule = [io_superstep(low, loss_tile), forward, loss, loss_back, backward,
                *update_supersteps(low.sizes, low.layout, low.st, low.optimizer, low.workers, low.sync)]
    return tensors, schedule, loss_tile


def plan_memory(low: LayerContext, plans, a2a, part_len, scan_chunk):
    """Every tensor on every tile: neuron tiles' weights, gradients, optimizer state, state and list
    histories and buffers; scan, combine and reduction buffers; the loss tile's buffers."""
    sizes, caps, st, T, B, W, e, L = low.sizes, low.capacities, low.st, low.T, low.B, low.workers, low.e, low.L
    specs, readout = st.layers, st.readout
    tensors = TensorList()
    alloc = tensors.alloc
    for l, (p, plan) in enumerate(zip(low.layout.layers, plans), start=1):
        spec = specs[l - 1]
        n_in, K_in, K = sizes[l - 1], caps[l - 1], caps[l]
        ids_in, ids_out = id_bytes(n_in), id_bytes(p.neurons)
        tiles, nl = p.tile_ids, p.n_local
        alloc(f"L{l}.weights", "weights", tiles, n_in * nl * e, l)
        alloc(f"L{l}.grad_copies", "gradients", tiles, W * n_in * nl * e, l)
        if low.optimizer == "adam":
            alloc(f"L{l}.adam_moments", "optimizer", tiles, 2 * n_in * nl * e, l)
        extra = trainable_per_neuron(spec, st.bias[l - 1], n_in, p.neurons) - n_in
        if extra:
            alloc(f"L{l}.extra_params", "weights", tiles, extra * nl * e, l)
            alloc(f"L{l}.extra_grad_copies", "gradients", tiles, W * extra * nl * e, l)
            if low.optimizer == "adam":
                alloc(f"L{l}.extra_adam_moments", "optimizer", tiles, 2 * extra * nl * e, l)
        fixed_vectors = per_neuron_vectors(spec) - int(spec.learn_beta) - int(spec.learn_threshold)
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
        if spec.spiking:
            alloc(f"L{l}.flags", "buffers", tiles, B * nl, l)
            alloc(f"L{l}.grad_in", "buffers", tiles, B * K * (e + ids_out) * (2 if a2a[l - 1] else 1), l)
        if part_len[l]:
            alloc(f"L{l}.partials", "buffers", tiles, B * part_len[l] * e, l)
        # auxiliary roles
        if spec.spiking:
            part_entries = min(scan_chunk, K) + 2
            alloc(f"L{l}.scan_buffers", "buffers", plan.scan_tiles, plan.block + W * part_entries * ids_out, l)
            alloc(f"L{l}.combine_buffers", "buffers", plan.combine_tiles,
                  plan.chunks * part_entries * ids_out + (K + 2) * ids_out, l)
        if part_len[l]:
            alloc(f"L{l}.reduce_buffers", "buffers", plan.stage1_tiles,
                  (plan.group_sizes[plan.stage1_job[1]] + 1) * part_len[l] * e, l)
            alloc(f"L{l}.reduce_buffers", "buffers", p.sample_tile(B),
                  (len(plan.group_starts) + 1) * part_len[l] * e, l)
    out, out_plan = low.layout.layers[-1], plans[-1]
    loss_tile = out.first_tile
    K_out, n_out = caps[-1], out.neurons
    if readout.on_membrane:
        alloc(f"L{L}.membrane_max", "state", out.tile_ids, B * out.n_local * (e + 2), L)
    if specs[-1].spiking:
        alloc(f"L{L}.output_list_history", "lists", out_plan.combine_tiles, T * (K_out + 2) * id_bytes(n_out), L)
        if not readout.on_membrane:
            alloc("loss.counts", "state", out_plan.combine_tiles, n_out * e * 2, L)
    grad_values = T * n_out if readout.loss == "ce_rate" else n_out
    alloc("loss.buffers", "buffers", [loss_tile], B * (n_out + grad_values) * e + B * e, L)
    return tensors, loss_tile


def forward_table(low: LayerContext, plans, a2a, scan_chunk) -> dict:
    """Per layer, the forward step's transfers (lists, flags, partial lists) and vertex sets
    (neuron, scan, combine)."""
    caps, specs, B, W, L = low.capacities, low.st.layers, low.B, low.workers, low.L
    layers = low.layout.layers
    membrane_loss = low.st.readout.on_membrane
    fwd = {k: [[] for _ in range(L + 1)] for k in ("lists", "flags", "parts", "neuron", "scan", "combine")}
    for l, (p, plan) in enumerate(zip(layers, plans), start=1):
        spec = specs[l - 1]
        K = caps[l]
        ids_out = id_bytes(p.neurons)
        args = layer_codelet_args(spec, low.st.bias[l - 1], l == L and membrane_loss)
        if l < L:  # this layer's list to every tile of the next layer
            fwd["lists"][l + 1].append(broadcast(f"L{l}.list", plan.combine_tiles, layers[l].tile_ids,
                                                 (K + 2) * ids_out, group_base=l * B))
        if a2a[l - 1]:  # and, all-to-all, to every tile of its own layer for the next step
            fwd["lists"][l].append(broadcast(f"L{l}.own_list", plan.combine_tiles, p.tile_ids, (K + 2) * ids_out,
                                             group_base=(L + 1 + l) * B))
        fwd["neuron"][l].append(vertices(_lif.FORWARD_CODELETS[spec.model], l, p.tile_ids, n_local=p.n_local,
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
        fwd["scan"][l].append(vertices("spike_scan", l, scan_jobs, chunks=plan.chunks, widths=np.tile(widths, B),
                                       cap=min(scan_chunk, K)))
        fwd["combine"][l].append(vertices("spike_combine", l, plan.combine_tiles, partials=plan.chunks))
        if l == L and low.st.readout.loss in ("ce_count", "mse_count"):
            fwd["combine"][l].append(vertices("count_spikes", L, plans[-1].combine_tiles))
    return fwd


def loss_supersteps(low: LayerContext, plans, loss_tile) -> tuple[Superstep, Superstep]:
    """The loss (outputs -> loss tile) and its gradient back to the output layer."""
    readout, T, B, e, L = low.st.readout, low.T, low.B, low.e, low.L
    out, out_plan = low.layout.layers[-1], plans[-1]
    n_out, K_out = out.neurons, low.capacities[-1]
    if readout.on_membrane:
        to_loss = point_to_point("membrane_max", out.tile_ids, np.full(out.tiles, loss_tile), B * out.n_local * e)
        from_loss = point_to_point("dL_dmembrane", np.full(out.tiles, loss_tile), out.tile_ids, B * out.n_local * e)
    elif readout.loss == "ce_rate":
        to_loss = point_to_point("output_lists", out_plan.combine_tiles, np.full(B, loss_tile),
                                 T * (K_out + 2) * id_bytes(n_out))
        from_loss = point_to_point("dL_dspikes", np.full(B, loss_tile), out_plan.combine_tiles, T * n_out * e)
    else:
        to_loss = point_to_point("counts", out_plan.combine_tiles, np.full(B, loss_tile), n_out * e)
        from_loss = point_to_point("dL_dcounts", np.full(B, loss_tile), out_plan.combine_tiles, n_out * e)
    loss_vs = loss_vertices(readout, L, loss_tile, B, n_out, T, K_out)
    return (Superstep("loss", "forward", (loss_vs,), (to_loss,), low.sync),
            Superstep("loss.grad", "backward", (), (from_loss,), low.sync))


def backward_table(low: LayerContext, plans, a2a, part_len) -> dict:
    """Per layer, the backward step's transfers (dS, partials, group sums) and vertex sets
    (surrogate scatter, weight and input gradients, the two reduction stages)."""
    caps, specs, B, e, L = low.capacities, low.st.layers, low.B, low.e, low.L
    layers, readout = low.layout.layers, low.st.readout
    bwd = {k: [[] for _ in range(L + 1)] for k in ("grads", "p1", "p2", "neuron", "red1", "red2")}
    for l, (p, plan) in enumerate(zip(layers, plans), start=1):
        spec = specs[l - 1]
        K = caps[l]
        is_out = l == L
        args = layer_codelet_args(spec, low.st.bias[l - 1], is_out and readout.on_membrane,
                                  bool(readout.activity_l1) and not is_out)
        if spec.spiking and not (is_out and readout.on_membrane):  # the list's dS: from the loss or the next layer
            src = plan.combine_tiles if is_out else layers[l].sample_tile(B)
            bwd["grads"][l].append(broadcast(f"L{l}.dS", src, p.tile_ids, K * (e + id_bytes(p.neurons)),
                                             group_base=l * B))
        if a2a[l - 1]:
            bwd["grads"][l].append(broadcast(f"L{l}.dS_own", p.sample_tile(B), p.tile_ids,
                                             K * (e + id_bytes(p.neurons)), group_base=(L + 1 + l) * B))
        bwd["neuron"][l] += [vertices(_bptt.BACKWARD_CODELETS[spec.model], l, p.tile_ids, n_local=p.n_local,
                                      carry=args["carry"], own=args["own"], role="scatter"),
                             vertices("weight_grad", l, p.tile_ids, n_local=p.n_local, source="input")]
        if l > 1:
            bwd["neuron"][l].append(vertices("input_grad", l, p.tile_ids, n_local=p.n_local, source="input"))
        if a2a[l - 1]:
            bwd["neuron"][l] += [vertices("weight_grad", l, p.tile_ids, n_local=p.n_local, source="own"),
                                 vertices("input_grad", l, p.tile_ids, n_local=p.n_local, source="own")]
        if part_len[l]:
            add_two_stage_reduction(bwd, l, p, plan, B, part_len[l], e)
    return bwd
