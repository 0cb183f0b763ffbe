"""The SNN training step as PopTorch compiles snnTorch (Sun et al., vinniesun/snntorch-ipu
``train_fcn.py``; ``docs/as-built/poptorch.md``): dense ``nn.Linear`` matmuls planned by poplin
over the whole chip, element-wise neuron updates spread over every tile, BPTT through the
unrolled graph, one step per host call.

Per forward step, per layer (in layer order with delay 0, all layers together with delay 1):

* ``fwd.call_copies``  PopART's outlined call of the step: its inputs (weights, the layer's input, the
                  bias) copied in and its output copied out by value, on their tiles (``popops.copy``).
* ``fwd.matmul``  exchange: the input's operand blocks (and the weight blocks a batch split
                  copies) to the plan's tiles; compute: ``poplin.matmul`` (the AMP vertex).
* ``fwd.reduce``  when the plan splits the fan-in: partial sums to their reducing tiles;
                  compute: ``popops.reduce``.
* ``fwd.rmatmul``, ``fwd.rreduce``  all-to-all recurrence: ``S[t-1] V`` (RLeaky's and
                  RSynaptic's ``recurrent`` Linear), planned the same way.
* ``fwd.neuron``  exchange: the current to the neuron state's linear mapping over all tiles;
                  compute: ``popops.neuron_map`` with the model's update instructions.

Then ``loss`` and ``loss.grad``; per backward step, per layer in reverse:

* ``bwd.neuron``  the surrogate and adjoint carries element-wise on every tile (dL/dI);
* ``bwd.wgrad`` (+ ``bwd.wreduce``)  dW += X^T dI: ``[n_in x B] . [B x n]``, accumulating;
* ``bwd.rwgrad`` (+ ``bwd.rwreduce``)  dV += S[t-1]^T dI (all-to-all);
* ``bwd.igrad`` (+ ``bwd.ireduce``)  dS_in = dI W^T: ``[B x n] . [n x n_in]`` (layers > 1);
* ``bwd.rigrad`` (+ ``bwd.rireduce``)  dS[t-1] += dI V^T (all-to-all);
* ``bwd.call_copies``  the outlined call's copies: the input and dL/dI (and the weights) in, the weight
                  and bias gradients' partials and the input gradient out.

Then ``update.optimizer`` (the gradient to the weights' tiles, the optimizer there) and
``io.outputs`` (the output record and the loss to the host). ``io.inputs`` first streams
every step's inputs and the labels from the host, after the ``Launch`` of the call: PopTorch's
default options run one training step per host call (``deviceIterations`` 1), and the
study's throughput is batch / wall time of that call. Three ``io.host_wait.*`` launches charge the
chip's waits for the host at the stream copies nothing buffered ahead (the data, the labels, the
outputs; the named assumption ``host_wait_s``).

Every matmul is planned by :func:`~.matmul_plan.plan_matmul` on the tiles of one chip (the
study ran one IPU; further chips are not used). The numerics are the zoo's, exactly: the
work source runs the same neuron codelets with every neuron listed.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ....kernels.poplin import BYTES

from ....compiler.transfers import host_stream, point_to_point
from ....errors import ConfigError, Param
from ....program import Launch, Loop, Superstep, Transfer, VertexSet
from .lowering import (F32, LayerContext, TensorList, barrier_free, group_supersteps, layer_codelet_args, layer_groups,
                       loss_vertices)
from .matmul_plan import MatmulPlan, block_sizes, plan_matmul

FWD_KINDS = (("matmul", "mm", "x_mm"), ("reduce", "red", "x_red"), ("rmatmul", "rmm", "x_rmm"),
             ("rreduce", "rred", "x_rred"), ("neuron", "neuron", "x_neuron"))
# snnTorch's Leaky as PopART builds it: one popops call (one compute set) per element-wise op
# (popart willow/src/popx/op/elementwisex.cpp: ElementWiseBinary[In|Out]placeOpx::grow calls
# popops::add / sub / mul once; the study's FastSigmoid custom op, vinniesun/snntorch-ipu
# custom_ops/fast_sigmoid.cpp, one popops::mapInPlace / map expression each). Forward, per layer
# and step (snntorch leaky.py / neurons.py): mem - threshold, FastSigmoid (the reset),
# reset * threshold, beta * mem, + input_, - reset * threshold, mem - threshold, FastSigmoid (the spike)
LEAKY_FORWARD_OPS = (("scalar", 0), ("map", 2), ("scalar", 0), ("scalar", 0), ("tensor", 0), ("tensor", 0),
                     ("scalar", 0), ("map", 2))
# backward (PopART autodiff; the reset is detached): FastSigmoidGrad's map (Divide, Pow, Add, Abs),
# the sum of the spike's and the next step's membrane gradients, beta * dL/dmem
LEAKY_BACKWARD_OPS = (("map", 4), ("tensor", 0), ("scalar", 0))
# nn.Linear's bias: PopTorch lowers aten::linear to transpose, matmul and a separate add (graphcore/poptorch
# sdk/poptorch/2.5.1 poptorch/source/popart_canonicalization/TensorOps.cpp linearHandler), one popops::add
# (compute set) after the matmul; its gradient, PopART's AddArg1GradOp (a ReduceSumOp over the batch,
# popart sdk/poplar/2.5.1 willow/include/popart/op/add.hpp), one popops::reduce in two stages (bias_reduction)
FWD_KINDS = FWD_KINDS[:-1] + (("bias", "bias", "x_bias"), ) + FWD_KINDS[-1:]
FWD_KINDS = FWD_KINDS + tuple((f"neuron.op{i}", f"neuron{i}", None) for i in range(1, len(LEAKY_FORWARD_OPS)))
# PopART outlines each timestep's ops into subgraphs called once per step (enableOutlining, on by default; a
# matmul is worth 1,000 and an element-wise op 0.1 against a threshold of 1.0, popart sdk/poplar/2.5.1
# willow/include/popart/op.hpp, willow/src/subgraph/subgraphutil.cpp, so every kept subgraph holds one), and with
# aliasZeroCopy off a call copies its inputs in and its outputs out by value (willow/src/popx/op/callx.cpp
# copyInput, copyOutput) into clones of the caller's tensors (inittensor.cpp InitTensorCloning): on each tile.
# Counted (call_copies): what the subgraphs' boundaries carried in every variant of the outliner run on this
# graph (docs/cost-model.md §7.4)
FWD_KINDS = (("call_copies", "callcp", None), ) + FWD_KINDS
BWD_KINDS = (("neuron", "neuron", "x_neuron"), ) + tuple((f"neuron.op{i}", f"neuron{i}", None)
                                                        for i in range(1, len(LEAKY_BACKWARD_OPS))) + (
             ("bgrad", "bg", "x_bg"), ("bgreduce", "bgred", "x_bgred"),
             ("wgrad", "wg", "x_wg"), ("wreduce", "wred", "x_wred"),
             ("rwgrad", "rwg", "x_rwg"), ("rwreduce", "rwred", "x_rwred"), ("igrad", "ig", "x_ig"),
             ("ireduce", "ired", "x_ired"), ("rigrad", "rig", "x_rig"), ("rireduce", "rired", "x_rired"),
             ("call_copies", "callcp", None))


def check_dense(sizes, capacities) -> None:
    """The program carries every neuron: list capacities must equal the layer sizes."""
    bad = [(l, n, k) for l, (n, k) in enumerate(zip(sizes, capacities)) if k != n]
    if bad:
        l, n, k = bad[0]
        raise ConfigError(Param("schedule", "poptorch"), f" runs dense activations: layer {l} has capacity {k} but {n} "
                          "neurons; build the network without ", Param("max_activity", action="drop"),
                          " (capacity = layer size)")


class MatmulLowering:
    """One planned matmul on ``pM pK pN`` consecutive tiles from ``base`` (wrapping around the chip):
    its vertex sets and transfers. Successive matmuls start where the previous one ended, so
    their resident tensors (weights, gradient accumulators) spread over the chip."""

    def __init__(self, plan: MatmulPlan, base: int, n_tiles: int):
        self.p = plan
        pM, pK, pN = plan.pM, plan.pK, plan.pN
        iM, iK, iN = (g.ravel() for g in np.meshgrid(np.arange(pM), np.arange(pK), np.arange(pN), indexing="ij"))
        self.iM, self.iK, self.iN = iM, iK, iN
        self.tiles = (base + np.arange(plan.tiles)) % n_tiles
        self.m = block_sizes(plan.M, pM, plan.m)[iM]
        # the tile's parallel block over every serial iteration, and one iteration's: cut in sK (sN) slices
        self.k_all = block_sizes(plan.K, pK, min(plan.k * plan.sK, plan.K))[iK]
        self.n_all = block_sizes(plan.N, pN, min(plan.n * plan.sN, plan.N))[iN]
        self.k = -(-self.k_all // plan.sK)
        self.n = -(-self.n_all // plan.sN)
        self.base, self.T = base, n_tiles  # message sources are spread over the chip from ``base``

    def serial_slices(self, layer) -> list[VertexSet]:
        """Before each serial iteration (S > 1): the iteration's input slice (sK > 1) and weight
        slice, DynamicSlice1D on each tile (ConvModel.cpp addDynamicSliceEstimate)."""
        p, e = self.p, BYTES[self.p.precision]
        if p.serial == 1:
            return []
        used = p.tiles
        out = [VertexSet("popops.dynamic_slice", layer, self.tiles,
                         dict(elements=np.full(used, -(-(-(-(p.K * p.N) // used)) // p.serial)), dtype_bytes=e))]
        if p.sK > 1:
            out.append(VertexSet("popops.dynamic_slice", layer, self.tiles,
                                 dict(elements=np.full(used, -(-(-(-(p.M * p.K) // used)) // p.sK)), dtype_bytes=e)))
        return out

    def serial_tail(self, layer) -> list[VertexSet]:
        """After each serial iteration: the outputs' dynamic update (sN > 1) or the partials' in-place
        add (sK > 1) on each tile (addDynamicUpdateEstimate, addInPlaceEstimate)."""
        p = self.p
        out_tile = -(-(self.m * self.n) // p.pK)
        if p.sN > 1:
            return [VertexSet("popops.dynamic_update", layer, self.tiles,
                              dict(elements=-(-out_tile // p.sN), dtype_bytes=F32))]
        if p.sK > 1:
            return [VertexSet("popops.binary_op", layer, self.tiles,
                              dict(elements=out_tile, form="tensor", in_place=True, dtype_bytes=F32))]
        return []

    @property
    def share(self) -> np.ndarray:
        """Each tile's share of one serial iteration's outputs once the pK partials are reduced."""
        return -(-(self.m * self.n) // self.p.pK)

    @property
    def share_all(self) -> np.ndarray:
        """Each tile's share of the whole output (every serial iteration), reduced."""
        return -(-(self.m * self.n_all) // self.p.pK)

    def operands(self, name, rhs_resident: bool) -> list[Transfer]:
        """The lhs block (iM, iK) multicast to the pN tiles that use it; the rhs block (iK, iN) to
        the pM tiles that use it, or only to the pM - 1 that do not hold it when it is resident."""
        e = BYTES[self.p.precision]
        out = []
        lhs_group = self.iM * self.p.pK + self.iK
        src = (self.base + self.p.tiles + lhs_group) % self.T
        out.append(Transfer(f"{name}.lhs", src, self.tiles, (self.m * self.k * e).astype(np.int64), lhs_group))
        rhs_group = self.iK * self.p.pN + self.iN
        if rhs_resident:
            home = self.tiles[(self.iM == 0)]  # tile of (0, iK, iN) holds the block
            src = home[rhs_group]
        else:
            src = (self.base + self.p.tiles + self.p.pM * self.p.pK + rhs_group) % self.T
        out.append(Transfer(f"{name}.rhs", src, self.tiles, (self.k * self.n * e).astype(np.int64),
                            1_000_000 + rhs_group))
        return out

    def matmul(self, layer, zeroing=True, **roles) -> VertexSet:
        return VertexSet("poplin.matmul", layer, self.tiles, dict(field=self.m, depth=self.k, cols=self.n,
                                                                  precision=self.p.precision, zeroing=zeroing,
                                                                  **roles))

    def reduction(self, name, layer, accumulate=False):
        """pK > 1: each tile of a (iM, iN) group reduces its share of the group's outputs over the pK
        partials (poplin's reduction, ConvReduce.cpp, costed by estimateConvReduceCycles);
        ``accumulate``: then adds its share into the gradient accumulator (PopART's gradient sum
        over the steps at the weight's type: popops addInPlace, BinaryOp1DInPlace). Returns (transfers,
        vertex sets)."""
        pK, share = self.p.pK, self.share
        acc = [VertexSet("popops.binary_op", layer, self.tiles,
                         dict(elements=share, form="tensor", in_place=True, dtype_bytes=BYTES[self.p.precision]))
               ] if accumulate else []
        if pK == 1:
            return [], acc
        # tile j of a group receives its share from the pK - 1 other tiles of the group
        j = np.arange(self.tiles.size)
        group_first = j - self.iK * self.p.pN  # the tile with iK = 0 in the same (iM, iN) group
        dst = np.repeat(j, pK - 1)
        others = (np.arange(pK)[None, :] != self.iK[:, None])
        src_k = np.nonzero(others)[1]
        src = self.tiles[np.repeat(group_first, pK - 1) + src_k * self.p.pN]
        dst = self.tiles[dst]
        nbytes = np.repeat(share * F32, pK - 1).astype(np.int64)
        tr = Transfer(f"{name}.partials", src, dst, nbytes, np.arange(dst.size))
        vs = VertexSet("poplin.reduce", layer, self.tiles,
                       dict(outputs=share, depth=pK, in_serial=self.p.sK, out_float=self.p.precision == "fp32"))
        return [tr], [vs] + acc


def _elementwise(op, layer, tiles, per, e, **roles) -> VertexSet:
    """One element-wise op of a neuron update on the state's linear mapping (one region per tile):
    ``("scalar", 0)`` BroadcastScalar1D, ``("tensor", 0)`` BinaryOp1D (``popops.binary_op``), ``("map", ops)``
    a generated popops map expression of ``ops`` operations (``popops.neuron_map``, ops per vector)."""
    kind, ops = op
    if kind == "map":
        return VertexSet("popops.neuron_map", layer, tiles, dict(elements=per, per_vector=ops, per_element=0, **roles))
    return VertexSet("popops.binary_op", layer, tiles, dict(elements=per, form=kind, in_place=False, dtype_bytes=e,
                                                            **roles))


def spread(total: int, n_tiles: int) -> np.ndarray:
    """Elements per tile of a tensor mapped linearly over ``n_tiles`` tiles."""
    return block_sizes(total, n_tiles, -(-total // n_tiles))


def occupied(total: int, n_tiles: int) -> tuple[np.ndarray, np.ndarray]:
    """The tiles that hold elements of a tensor mapped linearly over ``n_tiles`` tiles, and how many each."""
    per = spread(total, n_tiles)
    hit = np.flatnonzero(per)
    return hit, per[hit]


REDUCE_MORE_STAGES = 64  # popops reductionFactorThresholdToAddMoreStages (lib/popops/reduction/ReductionPlan.hpp)


def bias_reduction(B: int, n: int, n_tiles: int, dtype_bytes: int = F32):
    """popops::reduce of a ``[B, n]`` gradient over the batch, the tensor on its linear mapping (no tile
    holds two rows of one column, so no on-tile first stage), as poplibs plans it (graphcore/poplibs
    sdk/poplar/2.5.1 ``lib/popops/reduction/Reduction.cpp`` ``reduceFirstDim2D``; ``ReductionPlan.cpp``
    ``calculateNextStep``, ``calculateSplit``; ``ReductionStages.cpp`` ``findGrainSizeForOp``).

    Returns ``(cols, depth)`` of each stage: ``cols`` output columns per reducing piece, ``depth``
    partials each; one piece per tile. An intermediate stage is added while the partials exceed
    64 per output (``B > 64``: with fewer, the single stage reduces all ``B``)."""
    grain = 2 * (8 // dtype_bytes)  # ADD: twice the vector width (float 2, half 4)
    if B * n <= n * REDUCE_MORE_STAGES:
        return [(n, B)]
    avg = max(int(np.sqrt(B)), 1)  # sqrt(total data / outputs): the partials per output
    min_cols = max(grain, ((n // grain) // avg) * grain)  # minIntervalSize = n (whole rows)
    pieces = max(min(-(-n // min_cols), n_tiles), 1)  # splitRegions: at least min_cols columns a piece
    cols = -(-n // pieces)
    ideal = max((B * n) // n_tiles, 1)
    N = max((B * cols) // ideal, 1)
    if (B * cols) // N < REDUCE_MORE_STAGES:
        N = max((B * cols) // REDUCE_MORE_STAGES, 1)
    if B // N < 2:  # minPieceRows
        N = max(B // 2, 1)
    return [(cols, -(-B // N)), (n, N)]


def _tile_reduce(layer, tiles, outputs, depth, workers: int = 6) -> list[VertexSet]:
    """One tile's reduction of ``outputs`` (one region) over ``depth`` partials: fewer regions than
    workers, so popops splits the partials between the workers (never under 2 rows a piece) and adds
    a second on-tile stage to combine them (poplibs sdk/poplar/2.5.1 ``lib/popops/reduction/
    ReductionConnection.cpp`` ``connectReductions``: ``useTwoStageReduction``,
    ``splitTwoStageReductionsBetweenWorkers``)."""
    outputs = np.asarray(outputs, dtype=np.int64)
    pieces = min(workers, max(depth // 2, 1))
    if pieces == 1:
        return [VertexSet("popops.reduce", layer, tiles, dict(outputs=outputs, inputs_per_output=depth,
                                                              dtype_bytes=F32))]
    return [VertexSet("popops.reduce", layer, tiles, dict(outputs=outputs * pieces, regions=pieces,
                                                          inputs_per_output=-(-depth // pieces), dtype_bytes=F32)),
            VertexSet("popops.reduce", layer, tiles, dict(outputs=outputs, inputs_per_output=pieces, dtype_bytes=F32))]


def _bias_columns(name, per, n, n_tiles, e) -> Transfer:
    """The bias ``[n]`` (linearly mapped) to each tile of a ``[B, n]`` tensor's linear mapping: the
    columns of the tile's elements (min(elements, n) values, from the tile holding the first)."""
    hit = np.flatnonzero(per)
    first = (np.cumsum(per) - per)[hit] % n
    home = spread(n, n_tiles)
    src = np.minimum(first // max(int(home.max()), 1), n_tiles - 1)
    return Transfer(name, src, hit, (np.minimum(per[hit], n) * e).astype(np.int64), np.arange(hit.size))


def _bias_gradient(name, layer, per, B, n, n_tiles):
    """dL/db of one step: dI ``[B, n]`` (on its linear mapping, ``per`` elements a tile) reduced over the
    batch by popops in ``bias_reduction``'s stages, the last also adding the result into the gradient
    accumulator (``BinaryOp1DInPlace``, as the weights' gradients). Returns (transfers, vertex sets)
    per stage. Stage 1 piece (column block c, row chunk r) on tile ``c·chunks + r``; each partial row
    segment comes from the tile holding it; stage 2 outputs on ``ceil(n / grain)`` tiles."""
    stages = bias_reduction(B, n, n_tiles)
    starts = np.cumsum(per) - per  # first element of each tile on the linear mapping
    tile_of = lambda flat: np.searchsorted(starts, flat, side="right") - 1  # noqa: E731
    out = []
    if len(stages) == 2:
        (cols, depth), (_, chunks) = stages
        pieces = -(-n // cols)
        p_idx, r_idx = np.divmod(np.arange(pieces * chunks), chunks)
        dst1 = p_idx * chunks + r_idx
        # messages: piece p, chunk r, each of its rows: a row segment of <= cols columns
        rows = r_idx[:, None] * depth + np.arange(depth)[None, :]
        ok = rows < B
        c0 = p_idx * cols
        width = np.minimum(cols, n - c0)
        src = tile_of(rows * n + c0[:, None])
        d = np.broadcast_to(dst1[:, None], rows.shape)
        w = np.broadcast_to(width[:, None], rows.shape)
        tr1 = Transfer(f"{name}.partials", src[ok] % n_tiles, d[ok] % n_tiles, (w[ok] * F32).astype(np.int64),
                       np.arange(int(ok.sum())))
        out.append(([tr1], _tile_reduce(layer, dst1 % n_tiles, width, min(depth, B))))
        final_depth, src_pieces = chunks, dst1
    else:
        final_depth, src_pieces = B, None
    grain = 4
    out_tiles = min(n_tiles, -(-n // grain))
    o = spread(n, out_tiles)
    dst = np.arange(out_tiles)
    if src_pieces is None:  # one stage: each output tile gathers its columns' B rows
        rows = np.arange(B)
        c0 = np.cumsum(o) - o
        src = tile_of(rows[None, :] * n + c0[:, None])
        tr2 = Transfer(f"{name}.outputs", src.ravel() % n_tiles, np.repeat(dst, B),
                       np.repeat(o * F32, B).astype(np.int64), np.arange(out_tiles * B))
    else:  # each output tile gathers its columns' partial sums from the chunks of its piece
        (cols, _), _ = stages
        piece = (np.cumsum(o) - o) // cols
        src = piece[:, None] * final_depth + np.arange(final_depth)[None, :]
        tr2 = Transfer(f"{name}.outputs", src.ravel() % n_tiles, np.repeat(dst, final_depth),
                       np.repeat(o * F32, final_depth).astype(np.int64), np.arange(out_tiles * final_depth))
    acc = VertexSet("popops.binary_op", layer, dst, dict(elements=o, form="tensor", in_place=True, dtype_bytes=F32))
    out.append(([tr2], _tile_reduce(layer, dst, o, final_depth) + [acc]))
    return out


def lower(low: LayerContext, static_input: bool = False):
    """``(tensors, schedule, loss tile, matmul plans)`` of the PopTorch-built training step
    (``static_input``: one input per sample for all steps, streamed once)."""
    sizes, st, T, B, L = low.sizes, low.st, low.T, low.B, low.L
    check_dense(sizes, low.capacities)
    chip = low.system.chip
    NT = chip.tiles  # one IPU, every tile
    prec = low.precision
    e = BYTES[prec]
    specs, readout = st.layers, st.readout
    tensors = TensorList()
    alloc = tensors.alloc
    all_tiles = np.arange(NT)
    fwd = {k: [[] for _ in range(L + 1)] for _, a, b in FWD_KINDS for k in (a, b) if k}
    bwd = {k: [[] for _ in range(L + 1)] for _, a, b in BWD_KINDS for k in (a, b) if k}
    plans, temps, update = [], [np.zeros(NT)], []
    base = 0

    def place(name, M, K, N, resident=False, zeroing=True):
        nonlocal base
        pl = plan_matmul(name, M, K, N, chip, prec, tiles=NT, rhs_resident=resident, zeroing=zeroing, fc_pass=True)
        plans.append(pl)
        low_ = MatmulLowering(pl, base, NT)
        base = (base + pl.tiles) % NT
        t = np.zeros(NT)
        t[low_.tiles] = low_.m * low_.k * e + low_.k * low_.n * e + low_.m * low_.n * F32
        temps.append(t)
        return low_

    def planned(phase, key, red, l, name, M, K, N, *, resident=False, zeroing=True, accumulate=False, **roles):
        """One planned matmul of layer ``l``: placed, its operands exchanged (``phase["x_" + key]``),
        its vertices (``phase[key]``) and its partial-sum reduction (``phase["x_" + red]``,
        ``phase[red]``; ``accumulate``: the gradient accumulator is one more input)."""
        mm = place(name, M, K, N, resident=resident, zeroing=zeroing)
        x, v = mm.reduction(name, l, accumulate=accumulate)
        # a serially split plan runs its iteration S times; here the S iterations share the
        # matmul's supersteps (S copies of each vertex set and message), so the per-iteration
        # syncs and exchange latencies are charged once (``mimdsim op matmul`` charges each)
        for _ in range(mm.p.serial):
            phase[f"x_{key}"][l] += mm.operands(name, rhs_resident=resident)
            phase[key][l] += mm.serial_slices(l) + [mm.matmul(l, zeroing=zeroing, **roles)]
            phase[f"x_{red}"][l] += x
            phase[red][l] += v + mm.serial_tail(l)
        return mm

    def copies(layer, tiles, elements, dtype_bytes=e) -> VertexSet:
        """An on-tile Copy of a tensor's ``elements`` on each of ``tiles`` (outlining's call copies)."""
        return VertexSet("popops.copy", layer, tiles, dict(elements=elements, dtype_bytes=dtype_bytes))

    def linear_copies(layer, *totals) -> list[VertexSet]:
        """One Copy per tensor of ``totals`` elements on its linear mapping over the chip (none if empty)."""
        return [copies(layer, *occupied(total, NT)) for total in filter(None, totals)]

    def to_map(name, src_tiles, n_elements, dest):
        """The tensor's elements from ``src_tiles`` to their linear mapping over all tiles."""
        hit, elements = occupied(n_elements, NT)
        dest.append(point_to_point(name, np.asarray(src_tiles)[hit % len(src_tiles)], hit, elements * e))

    for l in range(1, L + 1):
        spec = specs[l - 1]
        n_in, n = sizes[l - 1], sizes[l]
        a2a = spec.recurrence == "all-to-all"
        args = layer_codelet_args(spec, st.bias[l - 1], l == L and readout.on_membrane,
                                  bool(readout.activity_l1) and l < L)
        # ---- forward
        mm = planned(fwd, "mm", "red", l, f"L{l}.fc", B, n_in, n, resident=True, role="forward", dense=True)
        out_tiles = mm.tiles
        if a2a:
            rm = planned(fwd, "rmm", "rred", l, f"L{l}.recurrent", B, n, n, resident=True)
            to_map(f"L{l}.recurrent_current", rm.tiles, B * n, fwd["x_neuron"][l])
        per = spread(B * n, NT)
        if st.bias[l - 1]:  # the bias add: the current and the bias columns of each tile's elements, then BinaryOp1D
            to_map(f"L{l}.current", out_tiles, B * n, fwd["x_bias"][l])
            fwd["x_bias"][l].append(_bias_columns(f"L{l}.bias", per, n, NT, e))
            fwd["bias"][l].append(VertexSet("popops.binary_op", l, all_tiles, dict(elements=per, form="tensor",
                                                                               in_place=False, dtype_bytes=e)))
            for key, (x, v) in zip(("bg", "bgred"),
                                   _bias_gradient(f"L{l}.bias.grad", l, per, B, n, NT)):
                bwd[f"x_{key}"][l] += x
                bwd[key][l] += v
        else:
            to_map(f"L{l}.current", out_tiles, B * n, fwd["x_neuron"][l])
        as_built = spec.model == "leaky" and spec.reset == "subtract" and spec.recurrence == "none"
        if as_built:  # one compute set per op, each costed by the vertex popops picks
            for i, op_ in enumerate(LEAKY_FORWARD_OPS):
                fwd["neuron" if i == 0 else f"neuron{i}"][l].append(_elementwise(op_, l, all_tiles, per, e))
            for i, op_ in enumerate(LEAKY_BACKWARD_OPS):
                roles = dict(role="scatter", dense=True) if i == 0 else {}
                bwd["neuron" if i == 0 else f"neuron{i}"][l].append(_elementwise(op_, l, all_tiles, per, e, **roles))
        else:  # one compute set for the model's whole update (its chain as built is not traced here)
            fwd["neuron"][l].append(VertexSet("popops.neuron_map", l, all_tiles,
                                              dict(elements=per, per_vector=args["update"], per_element=0)))
        # ---- backward
        if not as_built:
            bwd["neuron"][l].append(VertexSet("popops.neuron_map", l, all_tiles,
                                              dict(elements=per, per_vector=args["carry"], per_element=args["own"],
                                                   role="scatter", dense=True)))
        if l < L:  # dS from the next layer's input-gradient matmul to the neuron mapping
            to_map(f"L{l}.dS", np.arange(NT), B * n, bwd["x_neuron"][l])
        wg = planned(bwd, "wg", "wred", l, f"L{l}.fc.wgrad", n_in, B, n, zeroing=False, accumulate=True,
                     role="weight_grad", source="input")
        grads = [wg]
        if a2a:
            rwg = planned(bwd, "rwg", "rwred", l, f"L{l}.recurrent.wgrad", n, B, n, zeroing=False, accumulate=True,
                          role="weight_grad", source="own")
            grads.append(rwg)
            rig = planned(bwd, "rig", "rired", l, f"L{l}.recurrent.igrad", B, n, n, role="input_grad", source="own")
            # dS[t - 1] of the layer's own spikes, to the neuron mapping for the next backward step
            to_map(f"L{l}.dS_recurrent", rig.tiles, B * n, bwd["x_neuron"][l])
        if l > 1:
            planned(bwd, "ig", "ired", l, f"L{l}.fc.igrad", B, n, n_in, role="input_grad", source="input")
        # ---- memory: weights on the forward plan's home tiles, gradients where they accumulate
        home = mm.iM == 0
        w_block = mm.k_all[home] * mm.n_all[home]  # every serial iteration's slice of the tile's block
        alloc(f"L{l}.weights", "weights", mm.tiles[home], w_block * e, l)
        if low.optimizer == "adam":
            alloc(f"L{l}.adam_moments", "optimizer", mm.tiles[home], 2 * w_block * e, l)
        for g in grads:  # the gradient (PopART's SumOp output, the weight's type): the tile's share, reduced
            alloc(f"L{l}.{g.p.name.split('.', 1)[1]}_accumulator", "gradients", g.tiles, g.share_all * e, l)
        if a2a:
            rhome = rm.iM == 0
            rw_block = rm.k_all[rhome] * rm.n_all[rhome]
            alloc(f"L{l}.recurrent_weights", "weights", rm.tiles[rhome], rw_block * e, l)
            if low.optimizer == "adam":
                alloc(f"L{l}.recurrent_adam_moments", "optimizer", rm.tiles[rhome], 2 * rw_block * e, l)
        if T > 1:  # one step repeats nothing: no subgraph, no SumOp
            # outlining's copies (FWD_KINDS): into each forward step's call the weights, the layer's input and
            # the bias, out of it the current; into each backward step's the input and dL/dI (and the weights
            # for an input gradient), out of it the weight gradient's partial (at the weight's type, PopART's
            # MatMulRhsGradOp), the bias gradient's and the input gradient. The T partials stay for one SumOp
            # (decomposeGradSum false, willow/src/transforms/autodiff/gradgrowersumop.cpp)
            n_bias = n if st.bias[l - 1] else 0
            fwd["callcp"][l].append(copies(l, mm.tiles[home], w_block))
            if a2a:
                fwd["callcp"][l].append(copies(l, rm.tiles[rhome], rw_block))
            fwd["callcp"][l] += linear_copies(l, B * n_in, n_bias, B * n)
            if l > 1:  # the input gradient reads W
                bwd["callcp"][l].append(copies(l, mm.tiles[home], w_block))
            if a2a:  # the recurrent input gradient reads V
                bwd["callcp"][l].append(copies(l, rm.tiles[rhome], rw_block))
            for g in grads:
                bwd["callcp"][l].append(copies(l, g.tiles, g.share_all))
                alloc(f"L{l}.{g.p.name.split('.', 1)[1]}_partials", "gradients", g.tiles, T * g.share_all * e, l)
            bwd["callcp"][l] += linear_copies(l, B * n_in, B * n, n_bias, B * n_in if l > 1 else 0)
        # PopART keeps every forward activation the backward reads: the layer's input and its
        # state histories per step, on their linear mappings
        steps_kept = 1 if (static_input and l == 1) else T  # one input tensor serves every step
        alloc(f"L{l}.input_history", "history", all_tiles, spread(steps_kept * B * n_in, NT) * e, l)
        for h in spec.histories:
            alloc(f"L{l}.{h}_history", "history", all_tiles, spread(T * B * n, NT) * e, l)
        alloc(f"L{l}.state", "state", all_tiles, spread(len(spec.state_variables) * B * n, NT) * e, l)
        alloc(f"L{l}.dU_dI", "state", all_tiles, spread((spec.carries + 1) * B * n, NT) * e, l)
        # the update: the accumulated gradient to the weights' tiles, then the optimizer there
        trainable = n_in * n + (n if st.bias[l - 1] else 0) + (n * n + n if a2a and spec.learn_recurrent else 0)
        w_tiles = mm.tiles[home]
        w_el = spread(trainable, w_tiles.size)
        update.append((l, w_tiles, w_el, wg.tiles))
    # matmul temporaries (operand copies, partials) live only in their compute set: the largest
    alloc("matmul.temporaries", "buffers", all_tiles, np.max(np.stack(temps), axis=0).astype(np.int64))
    out_n = sizes[-1]
    loss_tile = 0
    alloc("loss.buffers", "buffers", [loss_tile], B * out_n * e * (2 + (T if readout.loss == "ce_rate" else 0)), L)
    alloc("output_record", "history", all_tiles, spread(T * B * out_n, NT) * e, L)
    per_sample = T * out_n if readout.loss in ("ce_rate", "ce_max_membrane") else out_n
    loss = Superstep("loss", "forward", (loss_vertices(readout, L, loss_tile, B, out_n, T, out_n),),
                     (point_to_point("outputs", all_tiles[1:2], [loss_tile], B * per_sample * e),), low.sync)
    loss_back = Superstep("loss.grad", "backward", (), (
        point_to_point("dL_doutputs", [loss_tile], all_tiles[1:2], B * per_sample * e),), low.sync)
    forward = Loop("forward", T, tuple(group_supersteps("fwd", fwd, FWD_KINDS, layer_groups(L, st.delay), "forward",
                                                        low.sync)))
    backward = Loop("backward", T, tuple(group_supersteps("bwd", bwd, BWD_KINDS, layer_groups(L, st.delay,
                                                                                             reverse=True),
                                                          "backward", low.sync)), reverse=True)
    opt = tuple(VertexSet(low.optimizer, l, w_tiles, dict(elements=w_el, copies=1, role="published_update"))
                for l, w_tiles, w_el, _ in update)
    moves = tuple(point_to_point(f"L{l}.gradient", g_tiles[np.arange(w_tiles.size) % g_tiles.size], w_tiles,
                                 w_el * F32) for l, w_tiles, w_el, g_tiles in update)
    inputs = Superstep("io.inputs", "io", exchange=(
        host_stream("inputs", all_tiles, spread((1 if static_input else T) * B * sizes[0], NT) * e),
        point_to_point("labels", [-1], [loss_tile], B * 4)), sync=low.sync)
    outputs = Superstep("io.outputs", "io", exchange=(
        host_stream("output_record", all_tiles, spread(T * B * out_n, NT) * e, to_host=True),
        host_stream("loss", [loss_tile], [F32], to_host=True)), sync=low.sync)
    # as in the published op, a program with nothing to exchange runs without a barrier (docs/cost-model.md §1.4)
    local = lambda s: dataclasses.replace(s, body=tuple(map(barrier_free, s.body))) if isinstance(s, Loop) \
        else barrier_free(s) if isinstance(s, Superstep) else s  # noqa: E731
    # the call: Poplar's engine run (the chip's run_launch_s) and PopTorch's own host work around it
    # (poptorch_call_s: Python dispatch, the ATen ops and stream copies of PoplarExecutable::run, PopART's run)
    call = Launch("poptorch.call", host_call="poptorch_call_s")
    # the chip's waits for the host at the stream copies nothing buffered ahead (host_wait_s): buffering depth 1
    # (PopTorch's user guide shows the waits at it), and PopART reconnects the input streams at every run,
    # "invalidating prefetches" (popart sdk/poplar/2.5.1 devicex.cpp Devicex::run -> reconnectInputStreams).
    # Each input is copied as late as possible (irlowering.cpp fromHostTask, groupHostSync false): the data
    # before the first matmul, the labels before the loss (their 512 B still travel in io.inputs); the Final
    # anchors leave one after the other in toHostFinalCopyFragment (popprograms.cpp), merged by Poplar into one
    # copy: one wait
    def wait(what: str) -> Launch:
        return Launch(f"io.host_wait.{what}", host_call="host_wait_s")

    schedule = [*map(local, [Launch(), call, wait("inputs"), inputs, forward, wait("labels"), loss, loss_back,
                             backward, Superstep("update.optimizer", "update", opt, moves, low.sync),
                             wait("outputs"), outputs])]
    return tensors, schedule, loss_tile, tuple(plans)
