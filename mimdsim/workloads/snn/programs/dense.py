"""The dense-activation program: per step a matmul per layer (AMP in fp16, SIMD in fp32), no lists.

Supersteps per step as for the lists (``fwd.neuron``; ``bwd.neuron``, ``bwd.reduce1``,
``bwd.reduce2``), but nothing is scanned or combined: each tile multicasts its slice of
the spikes (B x n_local bits) to every tile of the next layer, which keeps them (1 bit
per spike) for the weight gradient, and the input-gradient partials are full vectors
(length n_in). Neurons are partitioned over tiles as for the lists; the [B, n_in]
partials per tile then bound the batch (a matmul planner that also splits the batch and
the input dimension is not modelled).
"""
from __future__ import annotations

import numpy as np

from ....compiler.transfers import point_to_point
from ....errors import ConfigError
from ....program import Loop, Superstep, Transfer
from .lowering import (LayerContext, TensorList, add_two_stage_reduction, group_supersteps, io_superstep,
                    layer_codelet_args, layer_groups, loss_vertices, trainable_per_neuron, update_supersteps,
                    vertices)


def lower(low: LayerContext):
    """``(tensors, schedule, loss tile)`` of the dense-activation training step."""
    sizes, st, T, B, W, e, L = low.sizes, low.st, low.T, low.B, low.workers, low.e, low.L
    specs, readout, layers = st.layers, st.readout, low.layout.layers
    if any(s.recurrence == "all-to-all" for s in specs):
        raise ConfigError("dense activations support no all-to-all recurrence yet; use spike lists for that layer")
    plans = low.aux_plans(64)
    tensors = TensorList()
    alloc = tensors.alloc
    fwd = {k: [[] for _ in range(L + 1)] for k in ("neuron", "x")}
    bwd = {k: [[] for _ in range(L + 1)] for k in ("neuron", "grads", "red1", "p1", "red2", "p2")}
    for l, (p, plan) in enumerate(zip(layers, plans), start=1):
        spec = specs[l - 1]
        n_in = sizes[l - 1]
        tiles, nl = p.tile_ids, p.n_local
        extra = trainable_per_neuron(spec, st.bias[l - 1], n_in, p.neurons)
        alloc(f"L{l}.weights", "weights", tiles, extra * nl * e, l)
        alloc(f"L{l}.grad_copies", "gradients", tiles, W * extra * nl * e, l)
        if low.optimizer == "adam":
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
        args = layer_codelet_args(spec, st.bias[l - 1], l == L and readout.on_membrane,
                                  bool(readout.activity_l1) and l < L)
        fwd["neuron"][l].append(vertices("dense_forward", l, tiles, n_local=nl, n_in=n_in, batch=B,
                                         update=args["update"], precision=low.precision, role="forward", dense=True))
        if l < L:  # each tile's spikes (1 bit each) to every tile of the next layer, one multicast per tile
            nxt = layers[l].tile_ids
            fwd["x"][l + 1].append(Transfer(f"L{l}.spikes", np.repeat(tiles, nxt.size), np.tile(nxt, tiles.size),
                                            np.repeat(B * (-(-nl // 8)), nxt.size).astype(np.int64),
                                            10 * (L + 1) * B + np.repeat(tiles, nxt.size)))
        bwd["neuron"][l] += [vertices("dense_scatter", l, tiles, n_local=nl, batch=B, carry=args["carry"],
                                      own=args["own"], role="scatter", dense=True),
                             vertices("dense_weight_grad", l, tiles, n_local=nl, n_in=n_in, batch=B,
                                      precision=low.precision, role="weight_grad", source="input")]
        if l < L:  # dS slices from the next layer's stage-2 tiles: n_local values per (sample, tile)
            src = layers[l].sample_tile(B)
            bwd["grads"][l].append(point_to_point(f"L{l}.dS", np.repeat(src, p.tiles), np.tile(tiles, B),
                                                  np.tile(nl * e, B)))
        if l > 1:
            bwd["neuron"][l].append(vertices("dense_input_grad", l, tiles, n_local=nl, n_in=n_in, batch=B,
                                             precision=low.precision, role="input_grad", source="input"))
            add_two_stage_reduction(bwd, l, p, plan, B, n_in, e)
    out = layers[-1]
    loss_tile = out.first_tile
    n_out = out.neurons
    alloc("loss.buffers", "buffers", [loss_tile], B * n_out * e * (2 + (T if readout.loss == "ce_rate" else 0)), L)
    per_sample = T * out.n_local if readout.loss in ("ce_rate", "ce_max_membrane") else out.n_local
    loss = Superstep("loss", "forward", (loss_vertices(readout, L, loss_tile, B, n_out, T, n_out),),
                     (point_to_point("outputs", out.tile_ids, np.full(out.tiles, loss_tile), B * per_sample * e),),
                     low.sync)
    loss_back = Superstep("loss.grad", "backward", (), (
        point_to_point("dL_doutputs", np.full(out.tiles, loss_tile), out.tile_ids, B * per_sample * e),), low.sync)
    forward = Loop("forward", T, tuple(group_supersteps("fwd", fwd, (("neuron", "neuron", "x"),),
                                                        layer_groups(L, st.delay), "forward", low.sync)))
    backward = Loop("backward", T, tuple(group_supersteps(
        "bwd", bwd, (("neuron", "neuron", "grads"), ("reduce1", "red1", "p1"), ("reduce2", "red2", "p2")),
        layer_groups(L, st.delay, reverse=True), "backward", low.sync)), reverse=True)
    schedule = [io_superstep(low, loss_tile), forward, loss, loss_back, backward,
                *update_supersteps(sizes, low.layout, st, low.optimizer, W, low.sync)]
    return tensors, schedule, loss_tile
