"""Lowering: forward time loop, loss, BPTT loop and weight update as supersteps.

Per forward step t (all layers in the same supersteps, thanks to the one-step delay):

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

import math

import numpy as np

from kernels.codelet import CODELETS

from ..errors import ConfigError
from ..snn.network import describe_sizes
from ..program import Loop, Program, Superstep, TensorAlloc, Transfer, VertexSet
from .mapping import LayerPlacement, Layout, map_network
from .memory import check_fits, exchange_code, id_bytes

F32 = 4


def _rep(a, n):
    return np.repeat(np.asarray(a), n)


def broadcast(name, src_per_sample, dst_tiles, nbytes, group_base=0) -> Transfer:
    """Each sample's data from its source tile to every tile in ``dst_tiles`` (multicast)."""
    B, D = len(src_per_sample), len(dst_tiles)
    return Transfer(name, _rep(src_per_sample, D), np.tile(dst_tiles, B),
                    np.full(B * D, nbytes, dtype=np.int64), group_base + _rep(np.arange(B), D))


def point_to_point(name, src, dst, nbytes) -> Transfer:
    src, dst = np.asarray(src), np.asarray(dst)
    return Transfer(name, src, dst, np.broadcast_to(np.asarray(nbytes, dtype=np.int64), src.shape).copy(),
                    np.arange(src.size))


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


def compile_program(sizes, capacities, system, *, timesteps: int, batch_size: int,
                    neurons_per_tile=None, reserve_tile0=True, optimizer="adam",
                    scan_chunk=64) -> Program:
    """Map, plan memory and lower one training step. ``sizes``/``capacities`` include the input."""
    for name, v in (("timesteps", timesteps), ("batch_size", batch_size)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ConfigError(f"{name}={v!r} must be a positive integer")
    if optimizer not in ("sgd", "adam"):
        raise ConfigError(f"optimizer={optimizer!r}; choose 'sgd' or 'adam'")
    chip = system.chip
    T, B, W = int(timesteps), int(batch_size), chip.workers
    layout = map_network(sizes[1:], chips=system.chips, tiles_per_chip=chip.tiles,
                         neurons_per_tile=neurons_per_tile, reserve_tile0=reserve_tile0)
    L = len(layout.layers)
    plans = [_Plan(p, B, W, scan_chunk) for p in layout.layers]
    sync = "global" if layout.chips_used > 1 else "chip"
    tensors: list[TensorAlloc] = []

    def alloc(name, category, tiles, nbytes, layer=None):
        tiles = np.asarray(tiles)
        tensors.append(TensorAlloc(name, category, tiles,
                                   np.broadcast_to(np.asarray(nbytes, dtype=np.int64), tiles.shape).copy(), layer))

    # ---- tensors on neuron tiles --------------------------------------------------------
    for l, (p, plan) in enumerate(zip(layout.layers, plans), start=1):
        n_in, K_in, K = sizes[l - 1], capacities[l - 1], capacities[l]
        ids_in, ids_out = id_bytes(n_in), id_bytes(p.neurons)
        tiles, nl = p.tile_ids, p.n_local
        alloc(f"L{l}.weights", "weights", tiles, n_in * nl * F32, l)
        alloc(f"L{l}.grad_copies", "gradients", tiles, W * n_in * nl * F32, l)
        if optimizer == "adam":
            alloc(f"L{l}.adam_moments", "optimizer", tiles, 2 * n_in * nl * F32, l)
        alloc(f"L{l}.membrane_history", "history", tiles, T * B * nl * F32, l)
        alloc(f"L{l}.input_list_history", "lists", tiles, T * B * (K_in + 2) * ids_in, l)
        alloc(f"L{l}.dU_dI", "state", tiles, 2 * B * nl * F32, l)
        alloc(f"L{l}.flags", "buffers", tiles, B * nl, l)
        alloc(f"L{l}.grad_in", "buffers", tiles, B * K * (F32 + ids_out), l)
        if l > 1:
            alloc(f"L{l}.partials", "buffers", tiles, B * K_in * F32, l)
        # auxiliary roles
        part_entries = min(scan_chunk, K) + 2
        alloc(f"L{l}.scan_buffers", "buffers", plan.scan_tiles, plan.block + W * part_entries * ids_out, l)
        alloc(f"L{l}.combine_buffers", "buffers", plan.combine_tiles,
              plan.chunks * part_entries * ids_out + (K + 2) * ids_out, l)
        if l > 1:
            alloc(f"L{l}.reduce_buffers", "buffers", plan.stage1_tiles,
                  (plan.group_sizes[plan.stage1_job[1]] + 1) * K_in * F32, l)
            alloc(f"L{l}.reduce_buffers", "buffers", p.sample_tile(B),
                  (len(plan.group_starts) + 1) * K_in * F32, l)
    out, out_plan = layout.layers[-1], plans[-1]
    loss_tile = out.first_tile
    K_out = capacities[-1]
    alloc(f"L{L}.output_list_history", "lists", out_plan.combine_tiles, T * (K_out + 2) * id_bytes(out.neurons), L)
    alloc("loss.counts", "state", out_plan.combine_tiles, out.neurons * F32 * 2, L)
    alloc("loss.buffers", "buffers", [loss_tile], B * out.neurons * F32 * 2 + B * F32, L)

    # ---- schedule ------------------------------------------------------------------------
    def vs(codelet, l, tiles, **geometry):
        return VertexSet(codelet, l, np.asarray(tiles), geometry)

    first = layout.layers[0]
    io = Superstep("io.inputs", "io", exchange=(
        broadcast("inputs", np.array([-1]), first.tile_ids,
                  T * B * (capacities[0] + 2) * id_bytes(sizes[0])),
        point_to_point("labels", [-1], [loss_tile], B * F32)), sync=sync)

    fwd_lists, fwd_flags, fwd_parts = [], [], []
    fwd_neuron, fwd_scan, fwd_combine = [], [], []
    for l, (p, plan) in enumerate(zip(layout.layers, plans), start=1):
        K = capacities[l]
        ids_out = id_bytes(p.neurons)
        if l < L:
            fwd_lists.append(broadcast(f"L{l}.list", plan.combine_tiles, layout.layers[l].tile_ids,
                                       (K + 2) * ids_out, group_base=l * B))
        # flags: tile t's neurons for sample b go to the scan tile of (b, block(t))
        tile_block = (p.neuron_starts[:-1] // plan.block)
        job = np.arange(B)[:, None] * plan.blocks + tile_block[None, :]
        fwd_flags.append(point_to_point(f"L{l}.flags", np.tile(p.tile_ids, B),
                                        plan.scan_tiles[job.ravel()], np.tile(p.n_local, B)))
        fwd_parts.append(point_to_point(f"L{l}.partial_lists", plan.scan_tiles,
                                        np.repeat(plan.combine_tiles, plan.blocks),
                                        W * (min(scan_chunk, K) + 2) * ids_out))
        fwd_neuron.append(vs("lif_forward", l, p.tile_ids, n_local=p.n_local))
        # one scan job per (sample, chunk), on the tile of its (sample, block)
        chunk_block = np.arange(plan.chunks) // W
        scan_jobs = plan.scan_tiles[(np.arange(B)[:, None] * plan.blocks + chunk_block[None, :]).ravel()]
        widths = np.diff(np.minimum(np.arange(plan.chunks + 1) * scan_chunk, p.neurons))
        fwd_scan.append(vs("spike_scan", l, scan_jobs, chunks=plan.chunks, widths=np.tile(widths, B),
                           cap=min(scan_chunk, K)))
        fwd_combine.append(vs("spike_combine", l, plan.combine_tiles, partials=plan.chunks))
    fwd_combine.append(vs("count_spikes", L, out_plan.combine_tiles))
    forward = Loop("forward", T, (
        Superstep("fwd.neuron", "forward", tuple(fwd_neuron), tuple(fwd_lists), sync),
        Superstep("fwd.scan", "forward", tuple(fwd_scan), tuple(fwd_flags), sync),
        Superstep("fwd.combine", "forward", tuple(fwd_combine), tuple(fwd_parts), sync),
    ))
    loss = Superstep("loss", "forward", (vs("count_cross_entropy", L, [loss_tile], batch=B, classes=out.neurons),),
                     (point_to_point("counts", out_plan.combine_tiles, np.full(B, loss_tile), out.neurons * F32),),
                     sync)
    loss_back = Superstep("loss.grad", "backward", (), (
        point_to_point("dL_dcounts", np.full(B, loss_tile), out_plan.combine_tiles, out.neurons * F32),), sync)

    bwd_grads, bwd_p1, bwd_p2 = [], [], []
    bwd_neuron, bwd_red1, bwd_red2 = [], [], []
    for l, (p, plan) in enumerate(zip(layout.layers, plans), start=1):
        K, K_in = capacities[l], capacities[l - 1]
        src = plan.combine_tiles if l == L else layout.layers[l].sample_tile(B)
        bwd_grads.append(broadcast(f"L{l}.dS", src, p.tile_ids, K * (F32 + id_bytes(p.neurons)),
                                   group_base=l * B))
        bwd_neuron += [vs("surrogate_scatter", l, p.tile_ids, n_local=p.n_local),
                       vs("weight_grad", l, p.tile_ids, n_local=p.n_local)]
        if l > 1:
            bwd_neuron.append(vs("input_grad", l, p.tile_ids, n_local=p.n_local))
            grp = np.searchsorted(plan.group_starts, np.arange(p.tiles), side="right") - 1
            s1_index = np.arange(B)[:, None] * len(plan.group_starts) + grp[None, :]
            bwd_p1.append(point_to_point(f"L{l}.partials", np.tile(p.tile_ids, B),
                                         plan.stage1_tiles[s1_index.ravel()], K_in * F32))
            bwd_p2.append(point_to_point(f"L{l}.group_sums", plan.stage1_tiles,
                                         p.sample_tile(B)[plan.stage1_job[0]], K_in * F32))
            bwd_red1.append(vs("partial_reduce", l, plan.stage1_tiles, inputs=plan.group_sizes[plan.stage1_job[1]],
                               length=K_in, stage=1, group_starts=plan.group_starts))
            bwd_red2.append(vs("partial_reduce", l, p.sample_tile(B), inputs=np.full(B, len(plan.group_starts)),
                               length=K_in, stage=2))
    body = [Superstep("bwd.neuron", "backward", tuple(bwd_neuron), tuple(bwd_grads), sync)]
    if bwd_red1:
        body += [Superstep("bwd.reduce1", "backward", tuple(bwd_red1), tuple(bwd_p1), sync),
                 Superstep("bwd.reduce2", "backward", tuple(bwd_red2), tuple(bwd_p2), sync)]
    backward = Loop("backward", T, tuple(body), reverse=True)

    upd_copies = tuple(vs("grad_copies_reduce", l, p.tile_ids, elements=sizes[l - 1] * p.n_local, copies=W)
                       for l, p in enumerate(layout.layers, start=1))
    upd_opt = tuple(vs(optimizer, l, p.tile_ids, elements=sizes[l - 1] * p.n_local, copies=W)
                    for l, p in enumerate(layout.layers, start=1))
    schedule = [io, forward, loss, loss_back, backward,
                Superstep("update.copies", "update", upd_copies, (), sync),
                Superstep("update.optimizer", "update", upd_opt, (), sync)]

    program = Program(system, layout, T, B, tensors, schedule, optimizer,
                      meta={"sizes": list(sizes), "capacities": list(capacities), "scan_chunk": scan_chunk,
                            "loss_tile": loss_tile, "model": describe_sizes(sizes)})
    # code and vertex state, per codelet per tile
    vertex_counts: dict[str, np.ndarray] = {}
    for step in program.supersteps():
        for v in step.compute:
            arr = vertex_counts.setdefault(v.codelet, np.zeros(system.tiles, dtype=np.int64))
            np.add.at(arr, v.tiles, 1)
    for name, counts in vertex_counts.items():
        fp = CODELETS[name].footprint(counts)
        hit = np.flatnonzero(fp)
        tensors.append(TensorAlloc(f"code.{name}", "code", hit, fp[hit]))
    tensors.append(exchange_code(program))
    return program


__all__ = ["compile_program", "check_fits", "Layout"]
