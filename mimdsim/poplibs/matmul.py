"""A planned matmul lowered onto a program: each tile's vertex sets (poplin's AMP vertex, the
reduction of its partial sums, the serial loop's slices and updates) and the transfers that bring
it its operands and partial sums, as poplin builds them (graphcore/poplibs sdk-release-2.6
``lib/poplin/MatMul.cpp``, ``Convolution.cpp``, ``ConvReduce.cpp``). The plan comes from
:func:`~.matmul_plan.plan_matmul`; the engine charges the syncs and exchange latencies the plan's
own estimate leaves out. A swapped plan (poplin's ``swapOperands``) is lowered as the conv it is,
``[N x K] . [K x M]``: its "lhs" blocks are the matmul's right operand, transposed."""
from __future__ import annotations

import numpy as np

from ..kernels.poplin.matmul import BYTES
from ..program import Transfer, VertexSet
from .linear import block_sizes
from .matmul_plan import PARTIAL_BYTES, MatmulPlan


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
                              dict(elements=-(-out_tile // p.sN), dtype_bytes=PARTIAL_BYTES))]
        if p.sK > 1:
            return [VertexSet("popops.binary_op", layer, self.tiles,
                              dict(elements=out_tile, form="tensor", in_place=True, dtype_bytes=PARTIAL_BYTES))]
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
        nbytes = np.repeat(share * PARTIAL_BYTES, pK - 1).astype(np.int64)
        tr = Transfer(f"{name}.partials", src, dst, nbytes, np.arange(dst.size))
        vs = VertexSet("poplin.reduce", layer, self.tiles,
                       dict(outputs=share, depth=pK, in_serial=self.p.sK, out_float=self.p.precision == "fp32"))
        return [tr], [vs] + acc
