"""A poplin-style matmul planner: how to split ``[M x K] . [K x N]`` over the tiles.

poplin (graphcore/poplibs ``lib/poplin/ConvPlan.cpp``, ``MatMul.cpp``) plans a matmul as a 1x1
convolution: it splits the field (the M rows: the batch), the input channels (K) and the
output channels (N) over the tiles, estimates every candidate's cycles — exchange of the
operand blocks into the tiles, the AMP vertex on each tile, and, when K is split, the
exchange and reduction of the partial sums — and keeps the fastest candidate whose
temporary memory per tile fits ``available_memory_proportion`` of the tile (poplin's
``availableMemoryProportion`` option, default 0.6). This module does the same search over
every distinct split (block sizes change only at ``ceil(X / p)`` boundaries), vectorised
over candidates:

    tiles      = pM pK pN <= tiles available
    compute    = poplin.matmul vertex (kernels.poplin) on an m x k x n block
    exchange   = (m k e_lhs + [rhs not resident or pM > 1] k n e_rhs) / recv B/cycle
                 + exchange latency + phase overhead + sync
    reduction  = pK > 1: partials m n 4 B; each tile receives (pK - 1)/pK of its share and
                 sums pK partials per output (popops reduce), + latency, overhead, sync
    temporary  = m k e_lhs + k n e_rhs + m n 4 (+ reduction buffers)  <= proportion x SRAM

Operand blocks are counted as received in full (the lhs comes from the previous op's
layout; the rhs is resident only for the forward weights, on one of the pM tiles sharing
its block). A split that leaves every tile one AMP group is the finest poplin considers.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ....kernels.poplibs import reduce_cycles
from ....kernels.poplin import BYTES, IN_CHANS, amp_matmul_cycles, conv_units
from ....kernels.tile import Tile

from ....errors import ConfigError

AVAILABLE_MEMORY_PROPORTION = 0.6  # poplin ConvOptions availableMemoryProportion default (PopTorch keeps it)
PARTIAL_BYTES = 4  # float partials (poplin's default partialsType)


@dataclass(frozen=True)
class MatmulPlan:
    """One matmul's split: ``pM x pK x pN`` tiles, blocks ``m x k x n``, and its estimated cost."""

    name: str
    M: int
    K: int
    N: int
    precision: str
    pM: int
    pK: int
    pN: int
    m: int
    k: int
    n: int
    compute_cycles: float
    exchange_cycles: float
    reduce_cycles: float
    temp_bytes: int

    @property
    def tiles(self) -> int:
        return self.pM * self.pK * self.pN

    @property
    def cycles(self) -> float:
        return self.compute_cycles + self.exchange_cycles + self.reduce_cycles

    def describe(self) -> dict:
        return {"matmul": self.name, "shape": [self.M, self.K, self.N], "split": [self.pM, self.pK, self.pN],
                "block": [self.m, self.k, self.n], "tiles": self.tiles, "cycles": round(self.cycles)}


def _splits(X: int, grain: int, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct (parts, block size) of X split in blocks of whole ``grain``s, at most ``limit`` parts."""
    units = -(-X // grain)
    p = np.arange(1, min(units, max(limit, 1)) + 1)
    per = -(-units // p)
    per = np.unique(per)
    parts = -(-units // per)
    return parts, np.minimum(per * grain, X)


def plan_matmul(name, M, K, N, chip, precision="fp16", *, tiles=None, rhs_resident=False, zeroing=True,
                memory_proportion=AVAILABLE_MEMORY_PROPORTION, force=None) -> MatmulPlan:
    """The fastest split of ``[M x K] . [K x N]`` on ``tiles`` tiles of ``chip`` (a ChipSpec)
    whose temporary memory fits; ``force=(pM, pK, pN)`` costs that split instead."""
    T = int(tiles if tiles is not None else chip.tiles)
    tile = Tile.of(chip, precision)
    e = BYTES[precision]
    units = conv_units(tile, precision)
    if force is not None:
        pM, pK, pN = (int(v) for v in force)
        m, k, n = -(-M // pM), -(-K // pK), -(-N // pN)
        cand = [np.array([v]) for v in (pM, pK, pN, m, k, n)]
    else:
        gM = _splits(M, 1, T)
        gK = _splits(K, IN_CHANS[precision], T)
        gN = _splits(N, units, T)
        grid = np.meshgrid(np.arange(gM[0].size), np.arange(gK[0].size), np.arange(gN[0].size), indexing="ij")
        iM, iK, iN = (g.ravel() for g in grid)
        cand = [gM[0][iM], gK[0][iK], gN[0][iN], gM[1][iM], gK[1][iK], gN[1][iN]]
    pM, pK, pN, m, k, n = cand
    used = pM * pK * pN
    compute = amp_matmul_cycles(m, k, n, tile, precision, zeroing)
    rhs_in = np.where(rhs_resident & (pM == 1), 0, k * n * e)
    fixed = chip.exchange_latency_cycles + chip.exchange_phase_overhead_cycles + chip.sync_cycles
    exchange = (m * k * e + rhs_in) / chip.exchange_recv_bytes_per_cycle + fixed
    share = -(-(m * n) // pK)  # outputs each tile of a reduction group sums
    red = np.where(pK > 1, share * (pK - 1) * PARTIAL_BYTES / chip.exchange_recv_bytes_per_cycle + fixed
                   + reduce_cycles(share, pK, 1, PARTIAL_BYTES, tile), 0.0)
    temp = m * k * e + k * n * e + m * n * PARTIAL_BYTES + np.where(pK > 1, share * (pK - 1) * PARTIAL_BYTES, 0)
    budget = memory_proportion * chip.sram_per_tile
    ok = (used <= T) & (temp <= budget)
    if force is None and not ok.any():
        raise ConfigError(f"matmul {name} [{M} x {K}] . [{K} x {N}] ({precision}) has no split over {T} tiles whose "
                          f"temporary memory fits {memory_proportion:g} x {chip.sram_per_tile} B per tile; "
                          f"lower the batch or the layer sizes, or use more tiles")
    total = compute + exchange + red
    # fastest; ties go to fewer tiles
    i = int(np.lexsort((used, np.where(ok, total, np.inf)))[0]) if force is None else 0
    return MatmulPlan(name, int(M), int(K), int(N), precision, int(pM[i]), int(pK[i]), int(pN[i]), int(m[i]),
                      int(k[i]), int(n[i]), float(compute[i]), float(exchange[i]), float(red[i]), int(temp[i]))


def block_sizes(X: int, parts: int, block: int) -> np.ndarray:
    """Sizes of the ``parts`` blocks of X (block ``block``; the last ones may be short or empty)."""
    starts = np.minimum(np.arange(parts + 1) * block, X)
    return np.diff(starts)
