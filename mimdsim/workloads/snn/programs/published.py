"""The published sparse-BPTT program as it was built (``schedule="published"``).

Lowered from the op the study ran — github jrfinkbeiner/graphcore_snn,
``custom_lif_multi_layer/custom_lif_layer_vectorize_transpose/`` — as counted in
``docs/as-built/graphcore_snn.md`` (section numbers F1–F9, B1–B10 below are that page's).
What differs from the hand-fused ``"fused"`` schedule (:mod:`.fused`):

* every Poplar program is its own superstep (sync, exchange, compute): per forward step the
  input slice (F1), the layer-to-layer copies (F2), five custom compute sets (state update F3,
  threshold flags F4, per-worker scans F6, per-tile combines F7, per-sample combines F8), the
  unused ``poprand`` offsets (F5) and the history updates (F9); per backward step the index
  arithmetic (B1), the history slices (B2), the decay multiplications (B3, B5), the surrogate
  vertices on a few tiles with their state rows copied in and out (B4), the re-broadcast of
  the input lists (B6), weight gradients into six per-worker copies (B7), input-spike
  gradients (B8) and the two reduction stages (B9, B10);
* vertices as the source creates them: one state-update vertex per (tile, sample), one flag
  vertex per (neuron, sample), ... each launched by the supervisor;
* spike ids are uint32 and the list histories ``[T, B, K]`` are sliceable tensors spread over
  the chip (with their float32 copies), not kept on every consumer tile.

Neuron placement is mimdsim's (``mapping.py``: constant neurons per tile, whole layers per
chip, tile 0 of the first chip free), which is the op's ``tile_mapping_const_number_states_per_tile``.
The op runs float32 sparse LIF layers with the one-step delay only.
"""
from __future__ import annotations

import numpy as np

from ....compiler.transfers import host_stream, point_to_point
from ....errors import ConfigError, Param, UnsupportedModel
from ....program import HOST, Loop, Superstep, Transfer
from .lowering import LayerContext, TensorList, barrier_free, loss_vertices, vertices

U32 = F32 = 4
WORKERS_PER_TILE = 6  # the op's num_threads (weight-gradient copies, spike-generation workers per tile)
SCAN_WORKER_SIZE = 64  # desired_per_worker_size of determine_layerwise_tile_spread_factor
MAX_PIECES = 64  # a spread tensor's pieces modelled per broadcast (see _pieces)


# ---------------------------------------------------------------- placement (as the op computes it)

def spread_factor(n: int) -> int:
    """Tiles a layer's spike generation spreads over (``determine_layerwise_tile_spread_factor``):
    w = floor(n/64) + [n mod 64 > 32] workers, spread = max(floor(w/6) + [w mod 6 >= 2], 1)."""
    w = n // SCAN_WORKER_SIZE + int(n % SCAN_WORKER_SIZE > SCAN_WORKER_SIZE // 2)
    return max(w // WORKERS_PER_TILE + int(w % WORKERS_PER_TILE >= 2), 1)


def holders(chip: int, tiles_per_chip: int) -> np.ndarray:
    """Tiles a sliceable history of a layer on ``chip`` is spread over (tile 0 of chip 0 excluded)."""
    first = chip * tiles_per_chip + (1 if chip == 0 else 0)
    return np.arange(first, (chip + 1) * tiles_per_chip)


def sliceable(elements: int, tiles: np.ndarray):
    """``popops::createSliceableTensor`` (minGrainSize 0) of a tensor sliced in its first dimension, on
    a graph of ``tiles``: its ``elements`` unsliced elements in pieces of ceil(elements / tiles), one
    piece per tile from the graph's first tile, so every such tensor of a chip starts on the same tile
    (poplibs ``lib/popops/DynamicSlice.cpp`` ``createSliceableTensorGivenOrder``, sdk/poplar/2.5.1):
    (tiles used, elements on each)."""
    per = -(-elements // tiles.size)
    used = -(-elements // per)
    each = np.full(used, per, dtype=np.int64)
    each[-1] = elements - per * (used - 1)
    return tiles[:used], each


def merged(*maps):
    """Several (tiles, elements) mappings as one: the tiles of any, with their elements summed."""
    t = np.concatenate([m[0] for m in maps])
    u, inv = np.unique(t, return_inverse=True)
    return u, np.bincount(inv, weights=np.concatenate([m[1] for m in maps])).astype(np.int64)


def spread(elements: int, tiles: np.ndarray):
    """``elements`` spread linearly over ``tiles``: (tiles used, elements on each)."""
    used = min(elements, tiles.size)
    per = np.full(used, elements // used)
    per[: elements % used] += 1
    return tiles[:used], per


def _pieces(tiles: np.ndarray, per: np.ndarray):
    """At most MAX_PIECES pieces of a spread tensor, each sent by its first tile.

    A broadcast of a spread tensor costs each receiver the whole tensor (exact); grouping the
    senders into pieces understates only the many tiny sends and their exchange code."""
    if tiles.size <= MAX_PIECES:
        return tiles, per
    cut = np.linspace(0, tiles.size, MAX_PIECES + 1).astype(int)
    return tiles[cut[:-1]], np.add.reduceat(per, cut[:-1])


def broadcast_spread(name, src_tiles, src_bytes, dst_tiles, group_base) -> Transfer:
    """Every piece of a spread tensor to every tile of ``dst_tiles`` (one multicast per piece)."""
    s, b = _pieces(np.asarray(src_tiles), np.asarray(src_bytes))
    D = len(dst_tiles)
    return Transfer(name, np.repeat(s, D), np.tile(dst_tiles, s.size), np.repeat(b, D).astype(np.int64),
                    group_base + np.repeat(np.arange(s.size), D))


class LayerGen:
    """Spike generation of one layer: workers, spread tiles, their placement, capacities."""

    def __init__(self, n: int, K: int):
        self.n, self.K = n, K
        self.spread = spread_factor(n)
        self.workers = W = min(WORKERS_PER_TILE * self.spread, n)
        # worker w scans n // W + (n % W > w) neurons from bounds[w]; each keeps at most Kw, a tile Kc
        # (dense_to_sparse_spikes_multi_tile_spread_with_combine; kernels.graphcore_snn.vertices.spike_generation)
        self.widths = n // W + (np.arange(W) < n % W)
        self.bounds = np.concatenate([[0], np.cumsum(self.widths)])
        self.cap_worker = np.full(W, min(K, -(-n // W)))  # Kw
        self.cap_tile = min(K, -(-n // self.spread))  # Kc
        # workers of spread tile s: w // 6
        self.worker_tile = np.arange(self.workers) // WORKERS_PER_TILE


def generation_tiles(gens: list[LayerGen], B: int, chip_first: int, tiles_per_chip: int) -> list[np.ndarray]:
    """``determine_tile_mapping``: the groups (layer, sample, threshold, spread tile) of the layers
    on one chip spread evenly over its tiles: group g on tile floor(g * tiles / groups)."""
    counts = [B * 2 * g.spread for g in gens]
    total = sum(counts)
    f = tiles_per_chip / total
    out, g0 = [], 0
    for c in counts:
        out.append(chip_first + np.floor((g0 + np.arange(c)) * f).astype(np.int64))  # [B, 2, spread] order
        g0 += c
    return out


def stage1_groups(tiles: int, B: int) -> np.ndarray:
    """Exchange groups of the stage-1 reduction: EG = min(B/2, tiles) tiles, the last group
    absorbs the remainder (``customReduceSparseInpSpikesGrad_stage1``). Returns group starts."""
    eg = max(min(B // 2, tiles), 1)
    groups = max(tiles // eg, 1)
    return np.arange(groups) * eg


# ---------------------------------------------------------------- the program

def is_published_neuron(spec) -> bool:
    """The op's neuron: leaky, scalar decay and threshold, reset to zero (state based, left out of
    the gradient), SuperSpike surrogate, nothing learnable, no recurrence."""
    return (spec.model == "leaky" and spec.reset == "zero" and not spec.reset_in_gradient and spec.reset_delay
            and spec.surrogate.name == "superspike" and spec.recurrence == "none" and spec.spiking
            and not spec.learn_beta and not spec.learn_threshold
            and not isinstance(spec.beta, tuple) and not isinstance(spec.threshold, tuple))


def runs_published(st) -> bool:
    """Whether a network structure is the published op's: its neuron in every layer, the one-step
    delay, no bias, spike lists, the spike-count cross entropy."""
    r = st.readout
    return (st.delay == 1 and all(is_published_neuron(s) for s in st.layers) and not any(st.bias)
            and not any(st.dense) and r.loss == "ce_count" and not r.num_classes and not r.activity_l1)


def lower(low: LayerContext, copies: int | None = None):
    """``(tensors, schedule, loss tile, weight-gradient copies)`` of the published training step;
    ``copies`` (6 or 1) overrides the weight-gradient scheme :meth:`_Published.weight_grad_copies` picks."""
    st = low.st
    if low.precision != "fp32":
        raise ConfigError(Param("schedule", "published"), " runs the op as built, in float32; ",
                          Param("precision", low.precision), " is not available there (use ", Param("schedule", "fused"),
                          " for fp16)")
    if not runs_published(st):
        raise UnsupportedModel(Param("schedule", "published"), " is the published sparse LIF (leaky layers, one-step "
                               "delay, no bias, no recurrence, spike lists); use ", Param("schedule", "fused"),
                               " for other models")
    return _Published(low, copies).build()


class _Published:
    def __init__(self, low: LayerContext, copies: int | None = None):
        self.low = low
        L, B = low.L, low.B
        self.layers = low.layout.layers
        self.tpc = low.system.chip.tiles
        self.gens = [LayerGen(p.neurons, low.capacities[l]) for l, p in enumerate(self.layers, start=1)]
        chips = sorted({p.chip for p in self.layers})
        self.gen_tiles = [None] * L
        for c in chips:
            idx = [i for i, p in enumerate(self.layers) if p.chip == c]
            for i, tiles in zip(idx, generation_tiles([self.gens[i] for i in idx], B, c * self.tpc, self.tpc)):
                self.gen_tiles[i] = tiles.reshape(B, 2, self.gens[i].spread)
        # the layer's history holders and the per-sample combine tile (first tile of the sample's groups)
        self.hold = [holders(p.chip, self.tpc) for p in self.layers]
        # each history is its own sliceable tensor on its chip's virtual graph (tile 0 of chip 0 left
        # out): the input ids [T, B, K0] and counts [T, B, 1] (Build_allocator cases 2, 3), and per layer
        # the ids [T, B, K] and counts [T, B, 2] (Build, out_spike_ids / num_out_spikes); all start on
        # the chip's first tile, so the low tiles hold a piece of every one
        hold0 = holders(self.layers[0].chip, self.tpc)
        caps = low.capacities
        self.ids_map = [sliceable(B * caps[0], hold0)] + [sliceable(B * caps[l], self.hold[l - 1])
                                                          for l in range(1, L + 1)]
        self.counts_map = [sliceable(B, hold0)] + [sliceable(2 * B, self.hold[l - 1]) for l in range(1, L + 1)]
        self.combine_tile = [g[:, 0, 0] for g in self.gen_tiles]
        # surrogate vertices: tile chip*tpc + 1 + B*(layer index on its chip) + b
        self.grad_tile = []
        for l, p in enumerate(self.layers):
            on_chip = sum(1 for q in self.layers[:l] if q.chip == p.chip)
            tiles = p.chip * self.tpc + 1 + B * on_chip + np.arange(B)
            if tiles.max() >= (p.chip + 1) * self.tpc:
                raise ConfigError(f"layer {l + 1}: the op places its surrogate vertices on tiles 1 + B*layer + b, "
                                  f"which passes the chip's {self.tpc} tiles with {on_chip + 1} layers of B={B} "
                                  f"on one chip; use fewer layers per chip or a smaller batch")
            self.grad_tile.append(tiles)
        self.tensors = TensorList()
        self.group = 0
        self.copies = self.weight_grad_copies() if copies is None else copies

    def weight_grad_copies(self) -> int:
        """Weight-gradient copies per tile: the stored build calls ``calcLIFWeightGrad`` (one vertex
        and one private copy per worker, summed after the loop); the same file defines
        ``calcLIFWeightGrad_singleThread`` (one vertex per tile over the whole batch, one gradient).
        The study ran configurations whose six copies cannot fit a tile (16-32 neurons per tile):
        those runs must have used the single-thread scheme, so it is taken where the copies do not
        fit (docs/as-built/graphcore_snn.md §4, B7). This first test counts the weight-sized tensors
        only; :func:`compile_program` also falls back to one copy when the whole six-copy program
        does not fit a tile."""
        limit = self.low.system.chip.sram_per_tile
        per_weight = 2 + (2 if self.low.optimizer == "adam" else 0)  # weights, final gradient (+ Adam's moments)
        worst = max((WORKERS_PER_TILE + per_weight) * self.low.sizes[l - 1] * int(p.n_local.max()) * F32
                    for l, p in enumerate(self.layers, start=1))
        return WORKERS_PER_TILE if worst <= limit else 1

    def next_group(self, n=1) -> int:
        g = self.group
        self.group += n
        return g

    # ------------------------------------------------------------ memory
    def plan_memory(self):
        low, B, T = self.low, self.low.B, self.low.T
        alloc = self.tensors.alloc
        sizes, caps = low.sizes, low.capacities
        # layer 0's input history [T, B, K0] (float32 op input, then uint32 after the cast)
        h0, e0 = merged(self.ids_map[0], self.counts_map[0])
        alloc("L0.input_history", "lists", h0, T * e0 * (F32 + U32), 0)
        for l, (p, gen) in enumerate(zip(self.layers, self.gens), start=1):
            n_in, K, K_in = sizes[l - 1], caps[l], caps[l - 1]
            tiles, nl = p.tile_ids, p.n_local
            alloc(f"L{l}.weights", "weights", tiles, n_in * nl * F32, l)
            if self.copies > 1:
                alloc(f"L{l}.grad_copies", "gradients", tiles, self.copies * n_in * nl * F32, l)  # [6, N_in, N]
            alloc(f"L{l}.grad", "gradients", tiles, n_in * nl * F32, l)  # dLdweights_final (single-thread: dLdweights)
            if low.optimizer == "adam":
                alloc(f"L{l}.adam_moments", "optimizer", tiles, 2 * n_in * nl * F32, l)
            alloc(f"L{l}.neuron_params", "state", tiles, 4 * nl * F32, l)  # decay, (1-alpha)c, thresholds [2, N]
            alloc(f"L{l}.state", "state", tiles, B * nl * F32, l)
            alloc(f"L{l}.membrane_history", "history", tiles, T * B * nl * F32, l)  # stateSeqOutput
            alloc(f"L{l}.dense_spikes", "buffers", tiles, 2 * B * nl * U32, l)  # denseSpikes [N, B, 2]
            alloc(f"L{l}.dU_dI", "state", tiles, 2 * B * nl * F32, l)  # dLdstate, intermediate dL/dI
            c = 1 if l == 1 else 2
            alloc(f"L{l}.input_lists", "lists", tiles, B * (K_in + c) * U32, l)  # replicated fwdInpSpikes
            if l > 1:
                alloc(f"L{l}.partials", "buffers", tiles, B * K_in * F32, l)  # dLdx [tiles, B, K_in]
            # the list history [T, B, K] and counts [T, B, 2], uint32, its float32 output copy and the
            # backward's uint32 re-cast: two sliceable tensors on the layer's chip
            ht, he = merged(self.ids_map[l], self.counts_map[l])
            alloc(f"L{l}.list_history", "lists", ht, T * he * (U32 + F32 + U32), l)
            # spike generation scratch on the generation tiles: per (sample, threshold) the workers'
            # lists [W, Kw] + counts, the tile lists [spread, Kc] + counts, the unused offsets
            gt = self.gen_tiles[l - 1].ravel()
            per_group = (WORKERS_PER_TILE * (int(gen.cap_worker.max()) + 1) + gen.cap_tile + 1
                         + WORKERS_PER_TILE) * U32
            alloc(f"L{l}.spike_generation", "buffers", gt, np.full(gt.size, per_group), l)
            # the sliced input list of layers > 1 (alloc_linearly over the chip) and dL/dS slices
            if l > 1:
                lt, le = spread(B * (K_in + 1), np.arange(p.chip * self.tpc, (p.chip + 1) * self.tpc))
                alloc(f"L{l}.sliced_input", "buffers", lt, le * U32, l)
                dt_, de = spread(B * K_in, holders(self.layers[l - 2].chip, self.tpc))
                alloc(f"L{l - 1}.sliced_dS", "buffers", dt_, de * F32, l - 1)
                # stage-1 outputs [groups, B, K_in] on the stage-1 tiles
                s1 = self.stage1_tiles(l)
                groups = len(stage1_groups(p.tiles, B))
                alloc(f"L{l}.reduce_buffers", "buffers", s1, np.full(s1.size, -(-groups * B * K_in // s1.size)) * F32, l)
            # the surrogate vertices' copies of a state row, thresholds and dL/dU (per sample)
            alloc(f"L{l}.surrogate_rows", "buffers", self.grad_tile[l - 1], 3 * p.neurons * F32 + K * (F32 + U32), l)
        out = self.layers[-1]
        n_out = out.neurons
        alloc("loss.buffers", "buffers", [out.first_tile], B * (2 * n_out + 1) * F32, len(self.layers))
        return self.tensors

    def stage1_tiles(self, l: int) -> np.ndarray:
        """Layer l's stage-1 reduction tiles: its share of its chip's tiles (tile >= 1), in
        proportion to occ^0.8 K B of the layers with an input gradient on that chip."""
        p = self.layers[l - 1]
        on_chip = [i for i in range(2, len(self.layers) + 1) if self.layers[i - 1].chip == p.chip]
        w = np.array([self.layers[i - 1].tiles ** 0.8 * self.low.capacities[i - 1] for i in on_chip])
        usable = self.tpc - 1
        shares = np.maximum(np.floor(usable * w / w.sum()).astype(int), 1)
        k = on_chip.index(l)
        start = p.chip * self.tpc + 1 + int(shares[:k].sum())
        return np.arange(start, start + int(shares[k]))

    # ------------------------------------------------------------ supersteps
    def build(self):
        low = self.low
        tensors = self.plan_memory()
        sync = low.sync
        fwd = self.forward_steps(sync)
        bwd = self.backward_steps(sync)
        loss, loss_back = self.loss_steps(sync)
        schedule = [*map(barrier_free, self.io_steps(sync)), Loop("forward", low.T, tuple(map(barrier_free, fwd))),
                    *map(barrier_free, self.after_forward(sync)), loss, loss_back,
                    *map(barrier_free, self.before_backward(sync)),
                    Loop("backward", low.T, tuple(map(barrier_free, bwd)), reverse=True),
                    *map(barrier_free, self.update_steps(sync))]
        return tensors, schedule, self.layers[-1].first_tile, self.copies

    def io_steps(self, sync):
        """Infeed of one batch: the input ids [B, T, K0] (float32), counts [B, T] and labels."""
        low = self.low
        h0, e0 = merged(self.ids_map[0], self.counts_map[0])
        return [Superstep("io.inputs", "io", (), (
            host_stream("inputs", h0, low.T * e0 * F32),
            point_to_point("labels", [HOST], [self.layers[-1].first_tile], low.B * F32)), sync),
            Superstep("io.cast_inputs", "io", (vertices("popops.cast", 0, h0, elements=low.T * e0),), (), sync)]

    def forward_steps(self, sync):
        low, B = self.low, self.low.B
        caps, L = low.capacities, low.L
        steps = []
        # F1: slice layer 0's ids and counts at t: two popops::dynamicSlice calls, each its own
        # compute set on the tiles of its sliceable tensor
        for what, (tiles, el) in (("ids", self.ids_map[0]), ("counts", self.counts_map[0])):
            steps.append(Superstep(f"fwd.slice_input_{what}", "forward",
                                   (vertices("popops.dynamic_slice", 0, tiles, elements=el),), (), sync))
        # F2: the one-step delay: layer l-1's sliced list (t-1) -> the linear input buffer of layer l
        for l in range(2, L + 1):
            src, se = spread(B * (caps[l - 1] + 1), self.hold[l - 2])
            p = self.layers[l - 1]
            dst, de = spread(B * (caps[l - 1] + 1), np.arange(p.chip * self.tpc, (p.chip + 1) * self.tpc))
            steps.append(Superstep(f"fwd.copy_list.L{l - 1}", "forward", (), (
                _redistribute(f"L{l - 1}.list_copy", src, se * U32, dst, de * U32, self.next_group(src.size)),),
                sync))
        # F3: the state update, one vertex per (tile, sample); every tile receives its input list
        comp, exch = [], []
        for l, p in enumerate(self.layers, start=1):
            b = np.repeat(np.arange(B), p.tiles)
            comp.append(vertices("gsnn.state_update", l, np.tile(p.tile_ids, B), n=np.tile(p.n_local, B), sample=b,
                                 grid=p.tile_ids, role="published_forward"))
            src, se = self.input_list_source(l)
            exch.append(broadcast_spread(f"L{l}.input_list", src, se * U32, p.tile_ids, self.next_group(MAX_PIECES)))
        steps.append(Superstep("fwd.state_update", "forward", tuple(comp), tuple(exch), sync))
        # F4: threshold flags, one vertex per (neuron, sample), on the neuron tiles
        comp = [vertices("gsnn.dense_spikes", l, np.repeat(p.tile_ids, p.n_local * B))
                for l, p in enumerate(self.layers, start=1)]
        steps.append(Superstep("fwd.flags", "forward", tuple(comp), (), sync))
        # F5: poprand::uniform offsets [B, 2, W] per layer (generated, never read)
        for l, gen in enumerate(self.gens, start=1):
            gt = self.gen_tiles[l - 1].ravel()
            steps.append(Superstep(f"fwd.random_offsets.L{l}", "forward", (
                vertices("poprand.uniform", l, np.unique(gt), elements=_per_tile(gt, WORKERS_PER_TILE)),), (), sync))
        # F6: per-worker scans of the flags (exchanged from the neuron tiles), one per (sample, threshold, worker)
        comp, exch = [], []
        for l, (p, gen) in enumerate(zip(self.layers, self.gens), start=1):
            gt = self.gen_tiles[l - 1]  # [B, 2, spread]
            vt = gt[:, :, gen.worker_tile]  # [B, 2, W]
            comp.append(vertices("gsnn.dense_to_sparse", l, vt.ravel(), width=np.tile(gen.widths, 2 * B),
                                 cap=np.tile(gen.cap_worker, 2 * B), bounds=gen.bounds, spread=gen.spread, role="published_scan"))
            exch.append(self.flag_exchange(l, p, gen, vt))
        steps.append(Superstep("fwd.scan", "forward", tuple(comp), tuple(exch), sync))
        # F7: per (sample, threshold, spread tile): merge its workers' lists (local)
        comp = []
        for l, gen in enumerate(self.gens, start=1):
            lists = np.bincount(gen.worker_tile, minlength=gen.spread)
            comp.append(vertices("gsnn.combine_worker_lists", l, self.gen_tiles[l - 1].ravel(),
                                 lists=np.tile(lists, 2 * B), spread=gen.spread, worker_tile=gen.worker_tile,
                                 cap_tile=gen.cap_tile, role="published_tile_combine"))
        steps.append(Superstep("fwd.combine_tiles", "forward", tuple(comp), (), sync))
        # F8: per sample: both thresholds' tile lists -> the list, written into the sliced history buffer
        comp, exch = [], []
        for l, gen in enumerate(self.gens, start=1):
            ct = self.combine_tile[l - 1]
            comp.append(vertices("gsnn.combine_lists", l, ct, lists=np.full(B, gen.spread), sample=np.arange(B),
                                 role="published_combine"))
            gt = self.gen_tiles[l - 1]
            src = gt.reshape(B, -1)
            exch.append(Transfer(f"L{l}.tile_lists", src.ravel(), np.repeat(ct, src.shape[1]),
                                 np.full(src.size, (gen.cap_tile + 1) * U32, dtype=np.int64),
                                 self.next_group(src.size) + np.arange(src.size)))
            ht, he = spread(B * (gen.K + 2), self.hold[l - 1])
            exch.append(_rows_to_spread(f"L{l}.list", ct, (gen.K + 2), ht, he, U32, self.next_group(B)))
        steps.append(Superstep("fwd.combine", "forward", tuple(comp), tuple(exch), sync))
        # F9: dynamicUpdate of the state history (local) and of the two list histories (on their tiles),
        # one popops::dynamicUpdate per (layer, tensor)
        for l, p in enumerate(self.layers, start=1):
            steps.append(Superstep(f"fwd.update_state.L{l}", "forward", (
                vertices("popops.dynamic_update", l, p.tile_ids, elements=B * p.n_local),), (), sync))
            for what, (tiles, el) in (("ids", self.ids_map[l]), ("counts", self.counts_map[l])):
                steps.append(Superstep(f"fwd.update_{what}.L{l}", "forward", (
                    vertices("popops.dynamic_update", l, tiles, elements=el),), (), sync))
        # popops::countedLoop's induction variable += 1 at the end of the body (tile 0; Loop.cpp)
        steps.append(Superstep("fwd.itime", "forward", (vertices("popops.scalar_op", None, [0]),), (), sync))
        return steps

    def input_list_source(self, l):
        """Where layer l's current input list lives: layer 0's slice on its holders, else the
        linear buffer the F2 copy filled."""
        low, B = self.low, self.low.B
        if l == 1:
            return spread(B * (low.capacities[0] + 1), self.hold[0])
        p = self.layers[l - 1]
        return spread(B * (low.capacities[l - 1] + 1), np.arange(p.chip * self.tpc, (p.chip + 1) * self.tpc))

    def flag_exchange(self, l, p, gen, vt):
        """Each neuron tile's flags of sample b and threshold th go to the workers scanning them."""
        B = self.low.B
        first_neuron = p.neuron_starts[:-1]
        worker_of_tile = np.searchsorted(gen.bounds, first_neuron, side="right") - 1  # [tiles]
        b = np.repeat(np.arange(B), 2 * p.tiles)
        th = np.tile(np.repeat([0, 1], p.tiles), B)
        tile_idx = np.tile(np.arange(p.tiles), 2 * B)
        dst = vt[b, th, worker_of_tile[tile_idx]]
        src = p.tile_ids[tile_idx]
        return Transfer(f"L{l}.flags", src, dst, (p.n_local[tile_idx] * U32).astype(np.int64),
                        self.next_group(src.size) + np.arange(src.size))

    def loss_steps(self, sync):
        """The Keras side: sparse2dense of the output lists (one vertex per (t, b)), the sum over
        T and the cross-entropy on the loss tile, and the gradient back (one vertex per (t, b))."""
        low, B, T, L = self.low, self.low.B, self.low.T, self.low.L
        out, gen = self.layers[-1], self.gens[-1]
        chip_tiles = np.arange(out.chip * self.tpc, (out.chip + 1) * self.tpc)
        tb = chip_tiles[np.arange(T * B) % chip_tiles.size]
        loss_tile = out.first_tile
        s2d = vertices("gsnn.sparse2dense", L, tb, sample=np.tile(np.arange(B), T), step=np.repeat(np.arange(T), B),
                       role="published_sparse2dense")
        loss_vs = loss_vertices(low.st.readout, L, loss_tile, B, out.neurons, T, gen.K)
        to_loss = point_to_point("dense_outputs", tb, np.full(tb.size, loss_tile), out.neurons * F32)
        loss = Superstep("loss", "forward", (s2d, loss_vs), (to_loss,), sync)
        grad = vertices("gsnn.sparse2dense_grad", L, tb, k=np.full(tb.size, gen.K))
        back = Superstep("loss.grad", "backward", (grad,), (
            point_to_point("dL_doutputs", np.full(tb.size, loss_tile), tb, out.neurons * F32),), sync)
        return loss, back

    def after_forward(self, sync):
        """The op's float32 output copies of the list histories (``popops::cast`` after the loop)."""
        steps = []
        for l, gen in enumerate(self.gens, start=1):
            ht, he = merged(self.ids_map[l], self.counts_map[l])
            steps.append(Superstep(f"fwd.cast_lists.L{l}", "forward", (
                vertices("popops.cast", l, ht, elements=self.low.T * he),), (), sync))
        return steps

    def before_backward(self, sync):
        """The gradient op's setup: re-casts of the histories to uint32, zeroed gradient buffers."""
        steps = []
        for l, (p, gen) in enumerate(zip(self.layers, self.gens), start=1):
            ht, he = merged(self.ids_map[l], self.counts_map[l])
            steps.append(Superstep(f"bwd.cast_lists.L{l}", "backward", (
                vertices("popops.cast", l, ht, elements=self.low.T * he),), (), sync))
        zero = [vertices("popops.zero", l, p.tile_ids,
                         elements=(self.copies * self.low.sizes[l - 1] + 2 * self.low.B) * p.n_local)
                for l, p in enumerate(self.layers, start=1)]
        steps.append(Superstep("bwd.zero", "backward", tuple(zero), (), sync))
        return steps

    def backward_steps(self, sync):
        low, B = self.low, self.low.B
        caps, L = low.capacities, low.L
        steps = []
        # B1: itime -= 1, itime - 1 (tile 0)
        for name in ("bwd.itime", "bwd.itime_minus_one"):
            steps.append(Superstep(name, "backward", (vertices("popops.scalar_op", None, [0]),), (), sync))
        # B2: 5L + 1 dynamic slices of the histories (on their holders; the state slice on the neuron tiles)
        # (each popops::dynamicSlice call its own compute set, on the tiles of its sliceable tensor)
        for what, (tiles, el) in (("ids", self.ids_map[0]), ("counts", self.counts_map[0])):
            steps.append(Superstep(f"bwd.slice_input_{what}", "backward",
                                   (vertices("popops.dynamic_slice", 0, tiles, elements=el),), (), sync))
        for l in range(1, L + 1):
            ids, counts = self.ids_map[l], self.counts_map[l]
            p = self.layers[l - 1]
            slices = [("ids", *ids), ("counts", *counts), ("state", p.tile_ids, B * p.n_local)]
            if l < L:  # the next layer's input list at t - 1
                slices += [("ids_prev", *ids), ("counts_prev", *counts)]
            else:  # dL/dS of the output list at t: the gradient of the float ids output, laid out as the ids
                slices += [("dL_dS", *ids)]
            for what, tiles, el in slices:
                steps.append(Superstep(f"bwd.slice_{what}.L{l}", "backward", (
                    vertices("popops.dynamic_slice", l, tiles, elements=el),), (), sync))
        # B3: dL/dU *= alpha, per layer (local; calcLIFStateGrad at 9e30597, as at HEAD's _stateWise).
        # dLdstate is a GATHER_AND_PRESERVE_TILE_ORDER_AND_ALIASES clone of init_state (poplar_functions.cpp
        # clone_tensor_vector), so a tile's [B, n] block is one contiguous region; the operand
        # decay.expand({0}).upsample(B) has aliases, so popops' binaryOp takes constructBroadcastBinaryOp,
        # whose per-tile pattern (n decays repeated B times: innerFactor 1, outerFactor B) gives one
        # BroadcastVectorInner1DInPlace MultiVertex per tile (ElementWise.cpp binaryOpBroadcastInnerVector)
        for l, p in enumerate(self.layers, start=1):
            steps.append(Superstep(f"bwd.decay.L{l}", "backward", (
                vertices("popops.mul_in_place", l, p.tile_ids, elements=B * p.n_local, form="vector_inner",
                         pattern=p.n_local, regions=np.ones(p.tiles, dtype=np.int64)),), (), sync))
        # B4: the surrogate, one vertex per (layer, sample) on a few tiles; rows copied in and dL/dU back
        comp, exch, back = [], [], []
        for l, (p, gen) in enumerate(zip(self.layers, self.gens), start=1):
            gt = self.grad_tile[l - 1]
            comp.append(vertices("gsnn.state_out_grad", l, gt, n=np.full(B, p.neurons), sample=np.arange(B),
                                 role="published_surrogate"))
            rows = np.repeat(p.tile_ids, B)
            dst = np.tile(gt, p.tiles)
            exch.append(Transfer(f"L{l}.rows", rows, dst, np.repeat(3 * p.n_local * F32, B).astype(np.int64),
                                 self.next_group(rows.size) + np.arange(rows.size)))
            src, se = self.dS_source(l)
            exch.append(_spread_to_rows(f"L{l}.dS_ids", src, se, gt, gen.K * (F32 + U32) + 2 * U32,
                                        self.next_group(src.size)))
            back.append(Transfer(f"L{l}.dL_dU", dst, rows, np.repeat(p.n_local * F32, B).astype(np.int64),
                                 self.next_group(rows.size) + np.arange(rows.size)))
        steps.append(Superstep("bwd.surrogate", "backward", tuple(comp), tuple(exch), sync))
        steps.append(Superstep("bwd.surrogate_writeback", "backward", (), tuple(back), sync))
        # B5: dL/dI = (1 - alpha) c dL/dU: a copy and a multiplication per layer (local); intermediate_dLdState
        # is a GATHER clone of dLdState (performSharedUpdate), so both are one region per tile, as in B3
        one = np.ones(max(p.tiles for p in self.layers), dtype=np.int64)
        for l, p in enumerate(self.layers, start=1):
            steps.append(Superstep(f"bwd.copy_dU.L{l}", "backward", (
                vertices("popops.copy", l, p.tile_ids, elements=B * p.n_local, regions=one[:p.tiles]),), (),
                sync))
            steps.append(Superstep(f"bwd.scale_dI.L{l}", "backward", (
                vertices("popops.mul_in_place", l, p.tile_ids, elements=B * p.n_local, form="vector_inner",
                         pattern=p.n_local, regions=one[:p.tiles]),), (), sync))
        # B6: re-broadcast of each layer's input ids and counts to all its tiles (two Copy programs)
        for l, p in enumerate(self.layers, start=1):
            src_hold = self.hold[0] if l == 1 else self.hold[l - 2]
            K_in = caps[l - 1]
            for what, per in (("ids", K_in), ("counts", 1 if l == 1 else 2)):
                src, se = spread(B * per, src_hold)
                steps.append(Superstep(f"bwd.replicate_{what}.L{l}", "backward", (), (
                    broadcast_spread(f"L{l}.replicate_{what}", src, se * U32, p.tile_ids,
                                     self.next_group(MAX_PIECES)),), sync))
        # B7: weight gradients, 6 vertices per tile (one per worker, B/6 samples each) into 6 copies
        comp = []
        for l, p in enumerate(self.layers, start=1):
            c = self.copies
            bounds = (np.arange(c + 1) * B) // c
            first = np.tile(bounds[:-1], p.tiles)
            comp.append(vertices("gsnn.weights_grad", l, np.repeat(p.tile_ids, c), n=np.repeat(p.n_local, c),
                                 samples=np.tile(np.diff(bounds), p.tiles), first_sample=first,
                                 role="published_weight_grad"))
        steps.append(Superstep("bwd.weight_grad", "backward", tuple(comp), (), sync))
        # B8: input-spike gradients, one vertex per (tile, sample), layers > 1
        comp = []
        for l, p in enumerate(self.layers[1:], start=2):
            comp.append(vertices("gsnn.inp_spikes_grad", l, np.tile(p.tile_ids, B), n=np.tile(p.n_local, B),
                                 sample=np.repeat(np.arange(B), p.tiles), grid=p.tile_ids, role="published_input_grad"))
        if comp:
            steps.append(Superstep("bwd.input_grad", "backward", tuple(comp), (), sync))
            steps += self.reduction_steps(sync)
        return steps

    def dS_source(self, l):
        """Where the rows the surrogate vertex reads for layer l come from: the layer's list slice
        (ids and counts, and for the output dL/dS) on the holders of its history; a hidden layer's
        dL/dS slice is the stage-2 reduction's output, spread over the same chip's holders."""
        B = self.low.B
        return spread(B * (self.gens[l - 1].K + 2), self.hold[l - 1])

    def reduction_steps(self, sync):
        """B9: stage 1 over exchange groups of EG tiles; B10: popops reduceMany into dL/dS."""
        low, B = self.low, self.low.B
        comp1, exch1, comp2, exch2 = [], [], [], []
        for l, p in enumerate(self.layers[1:], start=2):
            K_in = low.capacities[l - 1]
            starts = stage1_groups(p.tiles, B)
            groups = len(starts)
            sizes = np.diff(np.append(starts, p.tiles))
            s1 = self.stage1_tiles(l)
            # vertex (group, b, slot) on stage-1 tile ((group * B + b) mod share)
            g = np.repeat(np.arange(groups), B * K_in)
            b = np.tile(np.repeat(np.arange(B), K_in), groups)
            slot = np.tile(np.arange(K_in), groups * B)
            vt = s1[(g * B + b) % s1.size]
            comp1.append(vertices("gsnn.reduce_stage1", l, vt, inputs=sizes[g], sample=b, slot=slot, stage=1,
                                  group_starts=starts, role="published_reduce"))
            # each layer tile sends its [K_in] partials of sample b to the tile of (its group, b)
            tile_group = np.searchsorted(starts, np.arange(p.tiles), side="right") - 1
            src = np.repeat(p.tile_ids, B)
            bb = np.tile(np.arange(B), p.tiles)
            dst = s1[(np.repeat(tile_group, B) * B + bb) % s1.size]
            exch1.append(Transfer(f"L{l}.partials", src, dst, np.full(src.size, K_in * F32, dtype=np.int64),
                                  self.next_group(src.size) + np.arange(src.size)))
            # stage 2: [groups, B, K_in] -> [B, K_in] on layer l-1's dL/dS buffer
            out_t, out_e = spread(B * K_in, holders(self.layers[l - 2].chip, self.tpc))
            comp2.append(vertices("popops.reduce", l, out_t, outputs=out_e, inputs_per_output=np.full(out_t.size, groups),
                                  stage=2, role="published_reduce"))
            src2 = np.unique(vt)
            exch2.append(_spread_to_spread(f"L{l}.group_sums", src2, groups * B * K_in * F32, out_t,
                                           self.next_group(src2.size)))
        return [Superstep("bwd.reduce1", "backward", tuple(comp1), tuple(exch1), sync),
                Superstep("bwd.reduce2", "backward", tuple(comp2), tuple(exch2), sync)]

    def update_steps(self, sync):
        """After the loop: reduceMany of the six gradient copies (local), then the optimizer. The
        single-thread scheme has one gradient: nothing to sum (the numerics still read it out)."""
        low = self.low
        single = self.copies == 1
        opt = [vertices(low.optimizer, l, p.tile_ids, elements=low.sizes[l - 1] * p.n_local, copies=1,
                        **({"role": "published_update"} if single else {}))
               for l, p in enumerate(self.layers, start=1)]
        update = Superstep("update.optimizer", "update", tuple(opt), (), sync)
        if single:
            return [update]
        red = [vertices("popops.reduce", l, p.tile_ids, outputs=low.sizes[l - 1] * p.n_local,
                        inputs_per_output=np.full(p.tiles, self.copies), role="published_grad_copies")
               for l, p in enumerate(self.layers, start=1)]
        return [Superstep("update.copies", "update", tuple(red), (), sync), update]


# ---------------------------------------------------------------- transfer shapes

def _per_tile(tiles, per_vertex):
    """Elements per unique tile when each occurrence of a tile holds ``per_vertex`` elements."""
    _, counts = np.unique(tiles, return_counts=True)
    return counts * per_vertex


def _redistribute(name, src, src_bytes, dst, dst_bytes, group_base) -> Transfer:
    """A tensor spread over ``src`` copied to a layout over ``dst`` (pieces matched in order)."""
    s, sb = _pieces(np.asarray(src), np.asarray(src_bytes))
    d, db = _pieces(np.asarray(dst), np.asarray(dst_bytes))
    # each source piece to the destination piece at the same position (linear layouts)
    k = min(s.size, d.size)
    idx_s = (np.arange(k) * s.size) // k
    idx_d = (np.arange(k) * d.size) // k
    return Transfer(name, s[idx_s], d[idx_d], np.maximum(db[idx_d], 1).astype(np.int64),
                    group_base + np.arange(k))


def _rows_to_spread(name, row_tiles, row_elements, hold_tiles, hold_elements, e, group_base) -> Transfer:
    """Sample b's row (on ``row_tiles[b]``) into the holders of its elements in a spread tensor."""
    B = len(row_tiles)
    start = np.concatenate([[0], np.cumsum(hold_elements)])  # holder h holds elements [start[h], start[h+1])
    rows = np.arange(B) * row_elements
    first = np.searchsorted(start, rows, side="right") - 1
    last = np.searchsorted(start, rows + row_elements - 1, side="right") - 1
    counts = last - first + 1
    b = np.repeat(np.arange(B), counts)
    h = np.concatenate([np.arange(f, g + 1) for f, g in zip(first, last)]) if B else np.zeros(0, int)
    lo = np.maximum(start[h], rows[b])
    hi = np.minimum(start[h + 1], rows[b] + row_elements)
    return Transfer(name, np.asarray(row_tiles)[b], hold_tiles[h], ((hi - lo) * e).astype(np.int64),
                    group_base + np.arange(b.size))


def _spread_to_rows(name, src, src_elements, row_tiles, row_bytes, group_base) -> Transfer:
    """Each of B rows (on ``row_tiles``) gathered from a spread tensor: modelled as one message
    of ``row_bytes`` per row from the holder of its first element."""
    B = len(row_tiles)
    start = np.concatenate([[0], np.cumsum(src_elements)])
    total = start[-1]
    h = np.searchsorted(start, (np.arange(B) * total) // max(B, 1), side="right") - 1
    return Transfer(name, np.asarray(src)[h], np.asarray(row_tiles), np.full(B, row_bytes, dtype=np.int64),
                    group_base + np.arange(B))


def _spread_to_spread(name, src, total_bytes, dst, group_base) -> Transfer:
    """A tensor of ``total_bytes`` on ``src`` reduced into a layout on ``dst``: each source tile
    sends its share to the destination at the same relative position."""
    src, dst = np.asarray(src), np.asarray(dst)
    k = max(src.size, 1)
    per = -(-total_bytes // k)
    d = dst[(np.arange(src.size) * dst.size) // k]
    return Transfer(name, src, d, np.full(src.size, per, dtype=np.int64), group_base + np.arange(src.size))
