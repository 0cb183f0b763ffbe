"""poplin's matmul planner: how to split ``[M x K] . [K x N]`` over the tiles, and in time.

poplin (graphcore/poplibs sdk-release-2.6, ``lib/poplin/MatMul.cpp``, ``ConvModel.cpp``,
``ConvPlan.cpp``) plans a matmul as a 1x1 convolution: the M rows are the field, K the input
channels, N the output channels. At the tile level it splits the field (pM), the input
channels (pK) and the output channels (pN) over the tiles **and** the input or output channels
in time (``inChanSplit.serial`` sK, ``outChanSplit.serial`` sN; only one kind at a time:
``constructModel``, ``m.equal(m.min({inSerial, outSerial}), 1)``). It estimates each candidate's
cycles with ``addEstimates`` and keeps the fastest whose temporary bytes per tile fit
``availableMemoryProportion`` x the tile's memory (``ConvPlan.cpp runPlanner``); when none
fits it doubles the bound while the bound is below twice the tile memory, then plans with
no bound (``createPlan``'s ``minimizeMemory``). This module makes the same choice over every
distinct split, vectorised over candidates; the estimate (ConvModel.cpp ``addEstimates``)::

    S          = sK sN  (serial iterations);  used tiles = pM pK pN
    per iter.  = dynamic slices  DS1D(ceil(MK/used / sK)) [sK > 1] + DS1D(ceil(KN/used / S)) [S > 1]
               + exchange   ceil((mk - mk // pN) e / (4 | 8 if pN even))          inputs
                            + ceil((kn - kn // pM) e / 4)                          weights
                            + ceil(mn 4 / 4) + later reduce stages' outputs        partial sums
               + poplin.matmul(m, k, n)                                            AMP vertex
               + estimateConvReduceCycles(ceil(mn / pK), pK, sK)                   reduction
               + DS1D(ceil(ceil(mn/pK) / sN)) [sN > 1] + BinaryOp1DInPlace(ceil(mn/pK)) [sK > 1]
    total      = S per iter. + rearrange before slice (FC passes, S > 1) + cast (sK > 1)
                 (the input exchange once, before the loop, when sN > 1 and sK = 1:
                  ``broadcastInputBeforeLoop``)
    temporary  = [bibl] mk e + [FC, S > 1] KN/used e
                 + max((1 - bibl) mk e + kn e + mn 4, ceil(mn/pK) pK 4 [pK > 1])
                 + [sK > 1] ceil(mn/pK) 4                     <= bound

A plain matmul (poplin's pass NONE_MATMUL: ``mimdsim op matmul``) is planned in both operand orders
(``ConvPlan.cpp getSwapOperandCandidates``: swapped first, the conv ``[N x K] . [K x M]`` whose field is N
and output channels M) and pays its order's rearrangement inside the loop (``ConvModel.cpp
addTransformCycleEstimate``: as given, inputs, weights and output; swapped, none, but fp32's output
regrouping), :func:`_transforms`. Its M, N and K must be whole AMP groups (else refused: poplin pads
them and weighs vertices this model does not cost). The programs' fully-connected passes keep the
operands as given with no rearrangement (docs/cost-model.md §7.2, what is left).

The estimate has no sync and no fixed exchange term (poplin's has none); the engine charges
those when the plan runs (:class:`~.matmul.MatmulLowering`; the rearrangement is the planner's only).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kernels.popops.vertices import binary_op_cycles, dynamic_slice_cycles
from ..kernels.poplin.matmul import (BYTES, IN_CHANS, amp_matmul_cycles, cast_estimate_cycles, conv_reduce_cycles,
                              conv_units, reduce_exchange_cycles)
from ..kernels.tile import Tile

from ..errors import ConfigError, Param

AVAILABLE_MEMORY_PROPORTION = 0.6  # poplin ConvOptions.hpp / MatMul.cpp availableMemoryProportion default (PopTorch keeps it)
PARTIAL_BYTES = 4  # float partials (ConvOptions.hpp partialsType default)
EXCHANGE_BYTES_PER_CYCLE = 4  # poplin ExchangeEstimator: Target::getExchangeBytesPerCycle
MEMORY_BOUND_STEPS = 2  # createPlan minimizeMemory: bound x 2 while below 2 x bytesPerTile (0.6 -> 1.2 -> 2.4)
# Target::getMemcpyBytesPerCycle (not public): a named assumption (mimdsim/assumptions.py
# poplin_memcpy_bytes_per_cycle). It only decides fp32's output regrouping; every other transform copies at
# min(memcpy, element bytes) = the element bytes for any value in the range (4-16).
MEMCPY_BYTES_PER_CYCLE = 8


@dataclass(frozen=True)
class MatmulPlan:
    """One matmul's split: ``pM x pK x pN`` tiles, ``sK`` or ``sN`` serial iterations, per-iteration
    blocks ``m x k x n``, and poplin's estimate of it."""

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
    compute_cycles: float  # AMP vertex, all iterations
    exchange_cycles: float  # operands and partial sums, all iterations
    reduce_cycles: float  # reduction, all iterations
    temp_bytes: int
    sK: int = 1
    sN: int = 1
    serial_cycles: float = 0.0  # dynamic slices / updates, in-place adds, rearrangement, cast
    broadcast_before_loop: bool = False
    memory_bound: float = 0.0  # the bytes bound the plan was chosen under (inf: none)
    swapped: bool = False  # poplin's swapOperands: the conv is [N x K] . [K x M] (M, K, N above are the conv's)
    transform_cycles: float = 0.0  # addTransformCycleEstimate: rearranging operands and output, all iterations

    @property
    def tiles(self) -> int:
        return self.pM * self.pK * self.pN

    @property
    def serial(self) -> int:
        return self.sK * self.sN

    @property
    def cycles(self) -> float:
        return (self.compute_cycles + self.exchange_cycles + self.reduce_cycles + self.serial_cycles
                + self.transform_cycles)

    @property
    def matmul_shape(self) -> list[int]:
        """The matmul's own ``[M, K, N]`` (the conv's, swapped back)."""
        return [self.N, self.K, self.M] if self.swapped else [self.M, self.K, self.N]

    def describe(self) -> dict:
        return {"matmul": self.name, "shape": self.matmul_shape, "split": [self.pM, self.pK, self.pN],
                "serial": [self.sK, self.sN], "block": [self.m, self.k, self.n], "tiles": self.tiles,
                "cycles": round(self.cycles), "swapped": self.swapped}


def _splits(X: int, grain: int, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct (parts, block size in grains) of X split in blocks of whole ``grain``s, at most ``limit`` parts."""
    units = -(-X // grain)
    p = np.arange(1, min(units, max(limit, 1)) + 1)
    per = np.unique(-(-units // p))
    return -(-units // per), per


def _channel_options(X: int, grain: int, limit: int, serial: bool):
    """(parallel, serial, block) options of a channel dimension: for each distinct parallel split
    the distinct serial splits of its block (ceil(ceil(u/p)/s) = ceil(u/(p s))), smallest serial first."""
    par, per = _splits(X, grain, limit)
    if not serial:
        return par, np.ones_like(par), np.minimum(per * grain, X)
    P, S, B = [], [], []
    for p_, u in zip(par, per):
        s_parts, s_per = _splits(int(u) * grain, grain, int(u))
        P.append(np.full(s_parts.size, p_))
        S.append(s_parts)
        B.append(np.minimum(s_per * grain, X))
    return np.concatenate(P), np.concatenate(S), np.concatenate(B)


def _ds1d(elements, dtype_bytes, tile):
    return dynamic_slice_cycles(elements, 1, dtype_bytes, 1, tile)


def _estimate(M, K, N, pM, pK, pN, sK, sN, m, k, n, e, tile, precision, fc_pass, zeroing, rhs_resident, sram,
              swapped=False, units=16):
    """poplin's addEstimates for the candidates (arrays); returns the cost parts and temporaries. A plain
    matmul (no ``fc_pass``, no ``rhs_resident``) pays its operand order's transforms (:func:`_transforms`)."""
    S = sK * sN
    used = pM * pK * pN
    in_tile = -(-(M * K) // used)
    w_tile = -(-(K * N) // used)
    ds = (np.where(sK > 1, _ds1d(-(-in_tile // sK), e, tile), 0.0)
          + np.where(S > 1, _ds1d(-(-w_tile // S), e, tile), 0.0))
    mk, kn, mn = m * k, k * n, m * n
    x_in = -(-((mk - mk // pN) * e) // (EXCHANGE_BYTES_PER_CYCLE * np.where(pN % 2 == 0, 2, 1)))
    x_w = -(-((kn - kn // pM) * e) // EXCHANGE_BYTES_PER_CYCLE)
    if rhs_resident:  # the forward weights already sit on their tiles (the plan's own layout)
        x_w = np.where(pM == 1, 0, x_w)
    out_tile = -(-mn // pK)
    x_red = np.zeros(mn.shape)
    red = np.zeros(mn.shape)
    out_float = precision == "fp32"
    for d in np.unique(pK):
        sel = pK == d
        x_red[sel] = reduce_exchange_cycles(mn[sel], int(d), EXCHANGE_BYTES_PER_CYCLE)
        red[sel] = conv_reduce_cycles(out_tile[sel], int(d), sK[sel], out_float, sram, tile.workers)
    amp = amp_matmul_cycles(m, k, n, tile, precision, zeroing)
    upd = np.where(sN > 1, _ds1d(-(-out_tile // sN), PARTIAL_BYTES, tile), 0.0)
    add = np.where(sK > 1, binary_op_cycles(out_tile, "tensor", True, PARTIAL_BYTES, tile), 0.0)
    rbs = np.where(fc_pass & (S > 1), -(-(w_tile * e) // EXCHANGE_BYTES_PER_CYCLE) + w_tile, 0)
    cast = np.where(sK > 1, cast_estimate_cycles(out_tile, 2 if out_float else 4, tile.workers), 0.0)
    bibl = (sK == 1) & (sN > 1)
    conv_temp = kn * e + mn * PARTIAL_BYTES
    red_temp = np.where(pK > 1, out_tile * pK * PARTIAL_BYTES, 0)
    rbs_temp = np.where(fc_pass & (S > 1), w_tile * e, 0)
    add_temp = np.where(sK > 1, out_tile * PARTIAL_BYTES, 0)
    if not fc_pass and not rhs_resident:
        t_in, t_wo, b_in, b_wo = _transforms(M, K, N, used, e, precision, swapped, units)
    else:
        t_in = t_wo = b_in = b_wo = np.zeros(used.shape)
    # totalTempBytes: the transforms' temporaries twice (input and output live together), maxed with the
    # conv's; with broadcastInputBeforeLoop the inputs' transform and the inputs outlive the loop
    temp = rbs_temp + np.maximum.reduce([mk * e + conv_temp, red_temp, rbs_temp, 2 * np.maximum(b_in, b_wo)]) + add_temp
    temp_b = mk * e + b_in + rbs_temp + np.maximum.reduce([conv_temp, red_temp, rbs_temp, 2 * b_wo]) + add_temp
    return dict(S=S, used=used, ds=ds, x_in=x_in, x_w=x_w, x_red=x_red, amp=amp, red=red, upd=upd, add=add,
                rbs=rbs, cast=cast, bibl=bibl, temp=temp, temp_b=temp_b, t_in=t_in, t_wo=t_wo)


def _transform_factor(dim_size, precision):
    """ConvModel.cpp getScaleFactorForTransform: (5, 4) when the dimension is whole vectors (float 2,
    half 4), else (5, 3)."""
    return np.where(np.asarray(dim_size) % (2 if precision == "fp32" else 4) == 0, 4, 3)


def _transforms(M, K, N, used, e, precision, swapped, units):
    """ConvModel.cpp addTransformCycleEstimate for a plain matmul (pass NONE_MATMUL) whose channels are
    whole groups (no padding): the conv ``[M x K] . [K x N]`` of the candidates (M, K, N its field,
    input and output channels), ``used`` tiles. Unswapped, poplin rearranges the inputs, weights and
    output (``swapOperands != isMatmulOrFullyConnectedLayer``): each ``ceil(bytes 5 / (min(memcpy, e)
    f))`` copy cycles plus ``ceil(bytes / 4)`` exchange, bytes per tile ``ceil(MK e / used)``,
    ``ceil(KN e / used)``, ``ceil(MN / used) e``. Swapped, none; but an fp32 output whose partial
    channels (conv units) differ from the weights per conv unit is regrouped (``regroupOutput``):
    ``ceil(bytes 5 / (min(memcpy, units 4) f))`` copy cycles, no exchange. Returns (inputs cycles,
    weights + output cycles, inputs temp bytes, weights/output temp bytes)."""
    reorder = min(MEMCPY_BYTES_PER_CYCLE, e)
    x = EXCHANGE_BYTES_PER_CYCLE
    zero = np.zeros(np.shape(used))
    if swapped:
        if units == IN_CHANS[precision]:
            return zero, zero, zero, zero
        b_out = -(-(M * N) // used) * e
        copy = -(-(b_out * 5) // (min(MEMCPY_BYTES_PER_CYCLE, units * e) * _transform_factor(N, precision)))
        return zero, copy.astype(np.float64), zero, b_out
    f_io = _transform_factor(K * N, precision)
    b_in = -(-(M * K * e) // used)
    b_w = -(-(K * N * e) // used)
    b_out = -(-(M * N) // used) * e
    t_in = -(-(b_in * 5) // (reorder * f_io)) + -(-b_in // x)
    t_w = -(-(b_w * 5) // (reorder * f_io)) + -(-b_w // x)
    t_out = -(-(b_out * 5) // (reorder * _transform_factor(N, precision))) + -(-b_out // x)
    return t_in.astype(np.float64), (t_w + t_out).astype(np.float64), b_in, np.maximum(b_w, b_out)


def _candidates(M, K, N, T, tile, precision, e, units, serial):
    """Every distinct split of the conv ``[M x K] . [K x N]`` over at most T tiles (ConvModel.cpp
    constructModel): (pM, pK, pN, sK, sN, m, k, n) arrays."""
    gM = _splits(M, 1, T)
    kP, kS, kB = _channel_options(K, IN_CHANS[precision], T, serial)
    nP, nS, nB = _channel_options(N, units, T, serial)
    # the (iM, iK, iN) of the product with pM pK pN <= T and one kind of serial split, in the product's own
    # order (iM slowest, iN fastest; the plan's ties go to the first): per (iM, iK) pair with room for a
    # pN, the iN whose pN <= T // (pM pK) (the same integers), without the product's [iM, iK, iN] arrays
    room = T // (gM[0][:, None] * kP[None, :])
    iM, iK = np.nonzero(room >= nP.min())
    one = kS[iK] == 1
    iP, iN = np.nonzero((nP[None, :] <= room[iM, iK][:, None]) & (one[:, None] | (nS == 1)[None, :]))
    iM, iK = iM[iP], iK[iP]
    return gM[0][iM], kP[iK], nP[iN], kS[iK], nS[iN], np.minimum(gM[1][iM], M), kB[iK], nB[iN]


def _check_plain(name, M, K, N, precision, units):
    """A plain matmul's channels must be whole AMP groups: otherwise poplin pads them and weighs vertex
    candidates this model does not cost (ConvVertexType.cpp getConvVertexTypeCandidates: AMP with 8 conv
    units or fewer input channels per group, SLIC, HMAC, VMAC, outer product; ConvModel.cpp
    addTileLevelTransformEstimates' zero padding)."""
    grain = IN_CHANS[precision]
    for dim, value, limit, what in (("m", M, units, "rows (poplin's batch: the output channels once it swaps "
                                     "the operands)"), ("n", N, units, "columns (the output channels)"),
                                    ("k", K, grain, "inner dimension (the input channels)")):
        if value % limit:
            raise ConfigError(f"matmul {name} [{M} x {K}] . [{K} x {N}] ({precision}): {dim.upper()} = {value} "
                              f"{what} is not a multiple of {limit}, the AMP's group; poplin would pad it and choose "
                              f"among vertices this model does not cost (AMP with 8 conv units, HMAC, VMAC, SLIC, "
                              f"outer product); use ", Param(dim, -(-value // limit) * limit),
                              f" (a multiple of {limit})")


def plan_matmul(name, M, K, N, chip, precision="fp16", *, tiles=None, rhs_resident=False, zeroing=True,
                memory_proportion=AVAILABLE_MEMORY_PROPORTION, force=None, serial=True,
                fc_pass=False, swap=None) -> MatmulPlan:
    """poplin's plan of ``[M x K] . [K x N]`` on ``tiles`` tiles of ``chip`` (a ChipSpec).

    A plain matmul (no ``fc_pass``, no ``rhs_resident``: poplin's pass NONE_MATMUL) is planned as
    poplin plans it: both operand orders (``getSwapOperandCandidates``: swapped, the conv
    ``[N x K] . [K x M]``, and as given), each with its rearrangement (``addTransformCycleEstimate``);
    M, N and K must be whole AMP groups (:func:`_check_plain`). The programs' passes (``fc_pass``,
    ``rhs_resident``) keep the operands as given and charge no rearrangement (docs/cost-model.md §7.2).
    ``swap`` forces one order. ``force=(pM, pK, pN)`` or ``(pM, pK, pN, sK, sN)`` costs that split
    (of the conv as given, unless ``swap``); ``serial=False`` leaves serial splits out; ``fc_pass``:
    a fully-connected training pass (PopART's matmuls), which pays poplin's rearrangement of the
    weights before a serial loop."""
    T = int(tiles if tiles is not None else chip.tiles)
    tile = Tile.of(chip, precision)
    e = BYTES[precision]
    units = conv_units(tile, precision)
    sram = chip.sram_per_tile
    plain = not fc_pass and not rhs_resident
    if swap is None:
        orders = (True, False) if plain and force is None else (False,)
    else:
        orders = (bool(swap),)
    if plain and force is None:
        _check_plain(name, M, K, N, precision, units)
    parts = []
    for swapped in orders:
        cM, cN = (N, M) if swapped else (M, N)
        if force is not None:
            f = [int(v) for v in force] + [1, 1][len(force) - 3:]
            pM, pK, pN, sK, sN = (np.array([v]) for v in f)
            m, k, n = -(-cM // pM), -(-K // (pK * sK)), -(-cN // (pN * sN))
        else:
            pM, pK, pN, sK, sN, m, k, n = _candidates(cM, K, cN, T, tile, precision, e, units, serial)
        c = _estimate(cM, K, cN, pM, pK, pN, sK, sN, m, k, n, e, tile, precision, fc_pass, zeroing, rhs_resident,
                      sram, swapped, units)
        c.update(pM=pM, pK=pK, pN=pN, sK=sK, sN=sN, m=m, k=k, n=n,
                 swapped=np.full(pM.shape, swapped), cM=np.full(pM.shape, cM), cN=np.full(pM.shape, cN))
        parts.append(c)
    c = {key: np.concatenate([np.atleast_1d(p[key]) for p in parts]) for key in parts[0]}
    S = c["S"]
    loop = c["ds"] + c["x_w"] + c["x_red"] + c["amp"] + c["red"] + c["upd"] + c["add"]
    # the transforms are inside the loop (totalCycles x serialSplits); with broadcastInputBeforeLoop the
    # inputs' go before it, once
    total_a = S * (loop + c["x_in"] + c["t_in"] + c["t_wo"]) + c["rbs"] + c["cast"]
    total_b = np.where(c["bibl"], S * (loop + c["t_wo"]) + c["x_in"] + c["t_in"] + c["rbs"] + c["cast"], np.inf)
    bound = memory_proportion * sram
    bounds = [bound * 2 ** i for i in range(MEMORY_BOUND_STEPS + 1)] + [np.inf]
    if force is not None:
        bounds = [np.inf]
    for b in bounds:
        ta = np.where(c["temp"] <= b, total_a, np.inf)
        tb = np.where(c["temp_b"] <= b, total_b, np.inf)
        best = np.minimum(ta, tb)
        if np.isfinite(best).any():
            break
    # fastest; ties go to fewer tiles, then to the swapped order (poplin tries it first for a matmul)
    i = int(np.lexsort((~c["swapped"], c["used"], best))[0])
    use_b = bool(tb[i] < ta[i])
    temp = int(c["temp_b"][i] if use_b else c["temp"][i])
    if force is None and temp > sram:
        raise ConfigError(f"matmul {name} [{M} x {K}] . [{K} x {N}] ({precision}): poplin's best plan over {T} tiles "
                          f"needs {temp:,} B of temporaries per tile, more than a tile's {sram:,} B; lower the batch "
                          f"or the layer sizes, or use more tiles")
    s = int(S[i])
    x_in = float(c["x_in"][i]) * (1 if use_b else s)
    t_in = float(c["t_in"][i]) * (1 if use_b else s)
    return MatmulPlan(name, int(c["cM"][i]), int(K), int(c["cN"][i]), precision, int(c["pM"][i]), int(c["pK"][i]),
                      int(c["pN"][i]), int(c["m"][i]), int(c["k"][i]), int(c["n"][i]), s * float(c["amp"][i]),
                      x_in + s * float(c["x_w"][i] + c["x_red"][i]), s * float(c["red"][i]), temp,
                      int(c["sK"][i]), int(c["sN"][i]),
                      s * float(c["ds"][i] + c["upd"][i] + c["add"][i]) + float(c["rbs"][i] + c["cast"][i]),
                      use_b, float(b), bool(c["swapped"][i]), t_in + s * float(c["t_wo"][i]))
