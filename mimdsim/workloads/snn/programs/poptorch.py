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

Every matmul is planned by :func:`~mimdsim.poplibs.matmul_plan.plan_matmul` on the tiles of one chip (the
study ran one IPU; further chips are not used). The numerics are the zoo's, exactly: the
work source runs the same neuron codelets with every neuron listed.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ....kernels.poplin.matmul import BYTES

from ....compiler.transfers import host_stream, point_to_point
from ....errors import ConfigError, Param
from ....program import Launch, Loop, Superstep, Transfer, VertexSet
from .lowering import (F32, LayerContext, TensorList, barrier_free, group_supersteps, layer_codelet_args, layer_groups,
                       loss_vertices)
from ....poplibs.linear import occupied, spread
from ....poplibs.matmul import MatmulLowering
from ....poplibs.matmul_plan import plan_matmul
from ....poplibs.reduce import reduce_first_dim_stages, tile_reduce

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
# popart sdk/poplar/2.5.1 willow/include/popart/op/add.hpp), one popops::reduce in two stages (poplibs/reduce.py)
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


def _elementwise(op, layer, tiles, per, e, **roles) -> VertexSet:
    """One element-wise op of a neuron update on the state's linear mapping (one region per tile):
    ``("scalar", 0)`` BroadcastScalar1D, ``("tensor", 0)`` BinaryOp1D (``popops.binary_op``), ``("map", ops)``
    a generated popops map expression of ``ops`` operations (``popops.neuron_map``, ops per vector)."""
    kind, ops = op
    if kind == "map":
        return VertexSet("popops.neuron_map", layer, tiles, dict(elements=per, per_vector=ops, per_element=0, **roles))
    return VertexSet("popops.binary_op", layer, tiles, dict(elements=per, form=kind, in_place=False, dtype_bytes=e,
                                                            **roles))


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
    batch by popops in ``reduce_first_dim_stages``'s stages, the last also adding the result into the gradient
    accumulator (``BinaryOp1DInPlace``, as the weights' gradients). Returns (transfers, vertex sets)
    per stage. Stage 1 piece (column block c, row chunk r) on tile ``c·chunks + r``; each partial row
    segment comes from the tile holding it; stage 2 outputs on ``ceil(n / grain)`` tiles."""
    stages = reduce_first_dim_stages(B, n, n_tiles)
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
        out.append(([tr1], tile_reduce(layer, dst1 % n_tiles, width, min(depth, B))))
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
    out.append(([tr2], tile_reduce(layer, dst, o, final_depth) + [acc]))
    return out


def _without_idle_barriers(step):
    """As in the published op, a program with nothing to exchange runs without a barrier
    (docs/cost-model.md §1.4): every superstep of ``step`` (a loop's body too) that exchanges nothing."""
    if isinstance(step, Loop):
        return dataclasses.replace(step, body=tuple(map(barrier_free, step.body)))
    return barrier_free(step) if isinstance(step, Superstep) else step


def _host_wait(what: str) -> Launch:
    """The chip's wait for the host at a stream copy nothing buffered ahead (the named assumption
    ``host_wait_s``)."""
    return Launch(f"io.host_wait.{what}", host_call="host_wait_s")


class PoptorchLowering:
    """The training step PopTorch builds, one method per part: each layer's forward (its matmuls,
    the bias add, the neuron update), its backward (the neuron's adjoint, the gradient matmuls and
    the bias gradient), its parameters and their gradients in memory, outlining's call copies, the
    activations kept for the backward pass and the weight update; then the loss, the host streams
    and the schedule around them (:meth:`build`).

    Every matmul is placed on the tiles after the previous one's (``base``), so resident weights and
    gradient accumulators spread over the chip; ``fwd`` and ``bwd`` collect each superstep kind's
    vertex sets and transfers per layer (``FWD_KINDS``, ``BWD_KINDS``)."""

    def __init__(self, low: LayerContext, static_input: bool = False):
        check_dense(low.sizes, low.capacities)
        self.low, self.static_input = low, static_input
        self.chip = low.system.chip
        self.NT = self.chip.tiles  # one IPU, every tile
        self.e = BYTES[low.precision]
        self.all_tiles = np.arange(self.NT)
        self.tensors = TensorList()
        L = low.L
        self.fwd = {k: [[] for _ in range(L + 1)] for _, a, b in FWD_KINDS for k in (a, b) if k}
        self.bwd = {k: [[] for _ in range(L + 1)] for _, a, b in BWD_KINDS for k in (a, b) if k}
        self.plans, self.temps, self.updates = [], [np.zeros(self.NT)], []
        self.base = 0
        self.loss_tile = 0

    # ---- building blocks

    def place(self, name, M, K, N, resident=False, zeroing=True) -> MatmulLowering:
        """poplin's plan of one matmul on the whole chip, placed from ``base``; its operand and
        partial-sum temporaries noted."""
        pl = plan_matmul(name, M, K, N, self.chip, self.low.precision, tiles=self.NT, rhs_resident=resident,
                         zeroing=zeroing, fc_pass=True)
        self.plans.append(pl)
        mm = MatmulLowering(pl, self.base, self.NT)
        self.base = (self.base + pl.tiles) % self.NT
        t = np.zeros(self.NT)
        e = self.e
        t[mm.tiles] = mm.m * mm.k * e + mm.k * mm.n * e + mm.m * mm.n * F32
        self.temps.append(t)
        return mm

    def planned(self, phase, key, red, l, name, M, K, N, *, resident=False, zeroing=True, accumulate=False,
                **roles) -> MatmulLowering:
        """One planned matmul of layer ``l``: placed, its operands exchanged (``phase["x_" + key]``),
        its vertices (``phase[key]``) and its partial-sum reduction (``phase["x_" + red]``,
        ``phase[red]``; ``accumulate``: the gradient accumulator is one more input)."""
        mm = self.place(name, M, K, N, resident=resident, zeroing=zeroing)
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

    def copies(self, layer, tiles, elements) -> VertexSet:
        """An on-tile Copy of a tensor's ``elements`` on each of ``tiles`` (outlining's call copies)."""
        return VertexSet("popops.copy", layer, tiles, dict(elements=elements, dtype_bytes=self.e))

    def linear_copies(self, layer, *totals) -> list[VertexSet]:
        """One Copy per tensor of ``totals`` elements on its linear mapping over the chip (none if empty)."""
        return [self.copies(layer, *occupied(total, self.NT)) for total in filter(None, totals)]

    def to_map(self, name, src_tiles, n_elements, dest) -> None:
        """The tensor's elements from ``src_tiles`` to their linear mapping over all tiles."""
        hit, elements = occupied(n_elements, self.NT)
        dest.append(point_to_point(name, np.asarray(src_tiles)[hit % len(src_tiles)], hit, elements * self.e))

    @staticmethod
    def resident(mm: MatmulLowering) -> tuple[np.ndarray, np.ndarray]:
        """The tiles holding a forward matmul's weights (its plan's home, ``iM = 0``) and each one's
        block over every serial iteration."""
        home = mm.iM == 0
        return mm.tiles[home], mm.k_all[home] * mm.n_all[home]

    def as_built(self, l) -> bool:
        """Layer ``l`` is snnTorch's Leaky, whose ops PopART builds one compute set each."""
        spec = self.low.st.layers[l - 1]
        return spec.model == "leaky" and spec.reset == "subtract" and spec.recurrence == "none"

    def all_to_all(self, l) -> bool:
        return self.low.st.layers[l - 1].recurrence == "all-to-all"

    # ---- one layer

    def forward(self, l):
        """The forward step of layer ``l``: ``X W`` (and ``S[t-1] V``), the bias add, the neuron
        update. Returns the forward matmul and the recurrent one (None without recurrence)."""
        low, fwd, NT, e = self.low, self.fwd, self.NT, self.e
        B, st, (n_in, n) = low.B, low.st, low.sizes[l - 1:l + 1]
        spec = st.layers[l - 1]
        mm = self.planned(fwd, "mm", "red", l, f"L{l}.fc", B, n_in, n, resident=True, role="forward", dense=True)
        rm = None
        if self.all_to_all(l):
            rm = self.planned(fwd, "rmm", "rred", l, f"L{l}.recurrent", B, n, n, resident=True)
            self.to_map(f"L{l}.recurrent_current", rm.tiles, B * n, fwd["x_neuron"][l])
        per = spread(B * n, NT)
        if st.bias[l - 1]:  # the bias add: the current and the bias columns of each tile's elements, then BinaryOp1D
            self.to_map(f"L{l}.current", mm.tiles, B * n, fwd["x_bias"][l])
            fwd["x_bias"][l].append(_bias_columns(f"L{l}.bias", per, n, NT, e))
            fwd["bias"][l].append(VertexSet("popops.binary_op", l, self.all_tiles, dict(elements=per, form="tensor",
                                                                                    in_place=False, dtype_bytes=e)))
        else:
            self.to_map(f"L{l}.current", mm.tiles, B * n, fwd["x_neuron"][l])
        if self.as_built(l):  # one compute set per op, each costed by the vertex popops picks
            for i, op_ in enumerate(LEAKY_FORWARD_OPS):
                fwd["neuron" if i == 0 else f"neuron{i}"][l].append(_elementwise(op_, l, self.all_tiles, per, e))
        else:  # one compute set for the model's whole update (its chain as built is not traced here)
            args = self.codelet_args(l)
            fwd["neuron"][l].append(VertexSet("popops.neuron_map", l, self.all_tiles,
                                              dict(elements=per, per_vector=args["update"], per_element=0)))
        return mm, rm

    def codelet_args(self, l) -> dict:
        low, st = self.low, self.low.st
        readout = st.readout
        return layer_codelet_args(st.layers[l - 1], st.bias[l - 1], l == low.L and readout.on_membrane,
                                  bool(readout.activity_l1) and l < low.L)

    def backward(self, l) -> list[MatmulLowering]:
        """The backward step of layer ``l``: the neuron's adjoint (dL/dI), the bias gradient, dW
        (and dV), the recurrent and the input gradients. Returns the weight-gradient matmuls."""
        low, bwd, NT, e = self.low, self.bwd, self.NT, self.e
        B, st, (n_in, n) = low.B, low.st, low.sizes[l - 1:l + 1]
        per = spread(B * n, NT)
        if st.bias[l - 1]:
            for key, (x, v) in zip(("bg", "bgred"), _bias_gradient(f"L{l}.bias.grad", l, per, B, n, NT)):
                bwd[f"x_{key}"][l] += x
                bwd[key][l] += v
        if self.as_built(l):
            for i, op_ in enumerate(LEAKY_BACKWARD_OPS):
                roles = dict(role="scatter", dense=True) if i == 0 else {}
                bwd["neuron" if i == 0 else f"neuron{i}"][l].append(
                    _elementwise(op_, l, self.all_tiles, per, e, **roles))
        else:
            args = self.codelet_args(l)
            bwd["neuron"][l].append(VertexSet("popops.neuron_map", l, self.all_tiles,
                                              dict(elements=per, per_vector=args["carry"], per_element=args["own"],
                                                   role="scatter", dense=True)))
        if l < low.L:  # dS from the next layer's input-gradient matmul to the neuron mapping
            self.to_map(f"L{l}.dS", np.arange(NT), B * n, bwd["x_neuron"][l])
        grads = [self.planned(bwd, "wg", "wred", l, f"L{l}.fc.wgrad", n_in, B, n, zeroing=False, accumulate=True,
                              role="weight_grad", source="input")]
        if self.all_to_all(l):
            grads.append(self.planned(bwd, "rwg", "rwred", l, f"L{l}.recurrent.wgrad", n, B, n, zeroing=False,
                                      accumulate=True, role="weight_grad", source="own"))
            rig = self.planned(bwd, "rig", "rired", l, f"L{l}.recurrent.igrad", B, n, n, role="input_grad",
                               source="own")
            # dS[t - 1] of the layer's own spikes, to the neuron mapping for the next backward step
            self.to_map(f"L{l}.dS_recurrent", rig.tiles, B * n, bwd["x_neuron"][l])
        if l > 1:
            self.planned(bwd, "ig", "ired", l, f"L{l}.fc.igrad", B, n, n_in, role="input_grad", source="input")
        return grads

    def parameters(self, l, mm, rm, grads) -> None:
        """Memory: the weights (and Adam's moments) on the forward plans' home tiles, each gradient
        (PopART's SumOp output, the weight's type) where it accumulates: the tile's share, reduced."""
        alloc, e, adam = self.tensors.alloc, self.e, self.low.optimizer == "adam"
        w_tiles, w_block = self.resident(mm)
        alloc(f"L{l}.weights", "weights", w_tiles, w_block * e, l)
        if adam:
            alloc(f"L{l}.adam_moments", "optimizer", w_tiles, 2 * w_block * e, l)
        for g in grads:
            alloc(f"L{l}.{g.p.name.split('.', 1)[1]}_accumulator", "gradients", g.tiles, g.share_all * e, l)
        if rm is not None:
            rw_tiles, rw_block = self.resident(rm)
            alloc(f"L{l}.recurrent_weights", "weights", rw_tiles, rw_block * e, l)
            if adam:
                alloc(f"L{l}.recurrent_adam_moments", "optimizer", rw_tiles, 2 * rw_block * e, l)

    def call_copies(self, l, mm, rm, grads) -> None:
        """Outlining's copies (FWD_KINDS), with more than one step (one step repeats nothing: no
        subgraph, no SumOp): into each forward step's call the weights, the layer's input and the
        bias, out of it the current; into each backward step's the input and dL/dI (and the weights
        for an input gradient), out of it the weight gradient's partial (at the weight's type,
        PopART's MatMulRhsGradOp), the bias gradient's and the input gradient. The T partials stay
        for one SumOp (decomposeGradSum false, willow/src/transforms/autodiff/gradgrowersumop.cpp)."""
        low, fwd, bwd = self.low, self.fwd, self.bwd
        T, B, (n_in, n) = low.T, low.B, low.sizes[l - 1:l + 1]
        n_bias = n if low.st.bias[l - 1] else 0
        w_tiles, w_block = self.resident(mm)
        fwd["callcp"][l].append(self.copies(l, w_tiles, w_block))
        if rm is not None:
            fwd["callcp"][l].append(self.copies(l, *self.resident(rm)))
        fwd["callcp"][l] += self.linear_copies(l, B * n_in, n_bias, B * n)
        if l > 1:  # the input gradient reads W
            bwd["callcp"][l].append(self.copies(l, w_tiles, w_block))
        if rm is not None:  # the recurrent input gradient reads V
            bwd["callcp"][l].append(self.copies(l, *self.resident(rm)))
        for g in grads:
            bwd["callcp"][l].append(self.copies(l, g.tiles, g.share_all))
            self.tensors.alloc(f"L{l}.{g.p.name.split('.', 1)[1]}_partials", "gradients", g.tiles,
                               T * g.share_all * self.e, l)
        bwd["callcp"][l] += self.linear_copies(l, B * n_in, B * n, n_bias, B * n_in if l > 1 else 0)

    def activations(self, l) -> None:
        """PopART keeps every forward activation the backward reads: the layer's input and its
        state histories per step, on their linear mappings; and the neuron state and dU/dI."""
        low, NT, e, alloc = self.low, self.NT, self.e, self.tensors.alloc
        T, B, (n_in, n) = low.T, low.B, low.sizes[l - 1:l + 1]
        spec = low.st.layers[l - 1]
        steps_kept = 1 if (self.static_input and l == 1) else T  # one input tensor serves every step
        alloc(f"L{l}.input_history", "history", self.all_tiles, spread(steps_kept * B * n_in, NT) * e, l)
        for h in spec.histories:
            alloc(f"L{l}.{h}_history", "history", self.all_tiles, spread(T * B * n, NT) * e, l)
        alloc(f"L{l}.state", "state", self.all_tiles, spread(len(spec.state_variables) * B * n, NT) * e, l)
        alloc(f"L{l}.dU_dI", "state", self.all_tiles, spread((spec.carries + 1) * B * n, NT) * e, l)

    def weight_update(self, l, mm, wg) -> None:
        """The update's share of layer ``l``: its trainable values spread over the forward weights'
        tiles, their gradient gathered from the weight gradient's tiles."""
        st, (n_in, n) = self.low.st, self.low.sizes[l - 1:l + 1]
        spec = st.layers[l - 1]
        trainable = n_in * n + (n if st.bias[l - 1] else 0) + (n * n + n if self.all_to_all(l) and spec.learn_recurrent
                                                               else 0)
        w_tiles, _ = self.resident(mm)
        self.updates.append((l, w_tiles, spread(trainable, w_tiles.size), wg.tiles))

    def layer(self, l) -> None:
        mm, rm = self.forward(l)
        grads = self.backward(l)
        self.parameters(l, mm, rm, grads)
        if self.low.T > 1:
            self.call_copies(l, mm, rm, grads)
        self.activations(l)
        self.weight_update(l, mm, grads[0])

    # ---- the program around the layers

    def loss(self) -> tuple[Superstep, Superstep]:
        """The loss on one tile from the output record, and its gradient back."""
        low, e, all_tiles, loss_tile = self.low, self.e, self.all_tiles, self.loss_tile
        T, B, L, readout = low.T, low.B, low.L, low.st.readout
        out_n = low.sizes[-1]
        self.tensors.alloc("loss.buffers", "buffers", [loss_tile],
                           B * out_n * e * (2 + (T if readout.loss == "ce_rate" else 0)), L)
        self.tensors.alloc("output_record", "history", all_tiles, spread(T * B * out_n, self.NT) * e, L)
        per_sample = T * out_n if readout.loss in ("ce_rate", "ce_max_membrane") else out_n
        loss = Superstep("loss", "forward", (loss_vertices(readout, L, loss_tile, B, out_n, T, out_n),),
                         (point_to_point("outputs", all_tiles[1:2], [loss_tile], B * per_sample * e),), low.sync)
        loss_back = Superstep("loss.grad", "backward", (), (
            point_to_point("dL_doutputs", [loss_tile], all_tiles[1:2], B * per_sample * e),), low.sync)
        return loss, loss_back

    def optimizer_step(self) -> Superstep:
        """The accumulated gradients to the weights' tiles, then the optimizer there."""
        low = self.low
        opt = tuple(VertexSet(low.optimizer, l, w_tiles, dict(elements=w_el, copies=1, role="published_update"))
                    for l, w_tiles, w_el, _ in self.updates)
        moves = tuple(point_to_point(f"L{l}.gradient", g_tiles[np.arange(w_tiles.size) % g_tiles.size], w_tiles,
                                     w_el * F32) for l, w_tiles, w_el, g_tiles in self.updates)
        return Superstep("update.optimizer", "update", opt, moves, low.sync)

    def host_io(self) -> tuple[Superstep, Superstep]:
        """Every step's inputs (one, ``static_input``) and the labels in; the output record and the loss out."""
        low, e, all_tiles, NT = self.low, self.e, self.all_tiles, self.NT
        T, B, out_n = low.T, low.B, low.sizes[-1]
        inputs = Superstep("io.inputs", "io", exchange=(
            host_stream("inputs", all_tiles, spread((1 if self.static_input else T) * B * low.sizes[0], NT) * e),
            point_to_point("labels", [-1], [self.loss_tile], B * 4)), sync=low.sync)
        outputs = Superstep("io.outputs", "io", exchange=(
            host_stream("output_record", all_tiles, spread(T * B * out_n, NT) * e, to_host=True),
            host_stream("loss", [self.loss_tile], [F32], to_host=True)), sync=low.sync)
        return inputs, outputs

    def build(self):
        """``(tensors, schedule, loss tile, matmul plans)`` of the training step."""
        low = self.low
        L, T, delay, sync = low.L, low.T, low.st.delay, low.sync
        for l in range(1, L + 1):
            self.layer(l)
        # matmul temporaries (operand copies, partials) live only in their compute set: the largest
        self.tensors.alloc("matmul.temporaries", "buffers", self.all_tiles,
                           np.max(np.stack(self.temps), axis=0).astype(np.int64))
        loss, loss_back = self.loss()
        forward = Loop("forward", T, tuple(group_supersteps("fwd", self.fwd, FWD_KINDS, layer_groups(L, delay),
                                                            "forward", sync)))
        backward = Loop("backward", T, tuple(group_supersteps("bwd", self.bwd, BWD_KINDS,
                                                              layer_groups(L, delay, reverse=True), "backward",
                                                              sync)), reverse=True)
        update = self.optimizer_step()
        inputs, outputs = self.host_io()
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
        schedule = [*map(_without_idle_barriers, [
            Launch(), call, _host_wait("inputs"), inputs, forward, _host_wait("labels"), loss, loss_back, backward,
            update, _host_wait("outputs"), outputs])]
        return self.tensors, schedule, self.loss_tile, tuple(self.plans)


def lower(low: LayerContext, static_input: bool = False):
    """``(tensors, schedule, loss tile, matmul plans)`` of the PopTorch-built training step
    (``static_input``: one input per sample for all steps, streamed once)."""
    return PoptorchLowering(low, static_input).build()
