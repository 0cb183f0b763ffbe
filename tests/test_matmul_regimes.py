"""poplin's matmul plans in every regime of issue 37's grid: batch 1-1024 x square weights 1024^2-8192^2, fp16
and fp32, on a GC200 (ipu-mk2) and a Bow. Every point plans (and the relations below hold) or is refused with
a clear message; each regime has a shape whose plan and estimate are poplin's arithmetic worked by hand.

Source: graphcore/poplibs sdk-release-2.6 (d29b6c10): lib/poplin/MatMul.cpp getConvParams (a matmul
[M x K] . [K x N] is a conv: batch M, field {1}, K input and N output channels), ConvModel.cpp
calculateFlattenedParams (the batch is flattened into the field), ConvPlan.cpp getSwapOperandCandidates (a
matmul tries the swapped conv [N x K] . [K x M] first), ConvModel.cpp addEstimates, addTransformCycleEstimate,
addExchangeCycleEstimates, addReduceCycleEstimate, PerformanceEstimation.hpp getConvPartial1x1Supervisor*
HalfFloat, estimateConvReduceCycles, getReduceCycleEstimate; ConvReducePlan.cpp getMultiStageReducePlan.
Regimes and what the model does: docs/cost-model.md §7.2, "Regimes (issue 37)".
"""
from functools import lru_cache

import numpy as np
import pytest

from mimdsim import assumptions as A
from mimdsim.arch import as_system
from mimdsim.errors import ConfigError
from mimdsim.poplibs import matmul_plan
from mimdsim.poplibs.matmul_plan import AVAILABLE_MEMORY_PROPORTION, plan_matmul

BATCHES = (1, 2, 4, 8, 16, 64, 256, 1024)
WIDTHS = (1024, 2048, 4096, 8192)
PRECISIONS = ("fp16", "fp32")
GC200, BOW = as_system("ipu-mk2").chip, as_system("bow").chip


@lru_cache(maxsize=None)
def _plan(chip_name, B, W, precision):
    """The plan of [B x W] . [W x W], or the ConfigError's message (planned once per test session)."""
    chip = GC200 if chip_name == "ipu-mk2" else BOW
    try:
        return plan_matmul("grid", B, W, W, chip, precision)
    except ConfigError as e:
        return str(e)


def test_every_grid_point_plans_or_is_refused_and_the_relations_hold():
    """Batch below one AMP group (16 output channels once poplin swaps the operands) is refused: poplin pads it
    and weighs vertices the model does not cost. Every other point plans: on at most the chip's tiles, covering
    the shape, with temporaries under the bound it was chosen by (0.6 x 624 KiB, ConvPlan.cpp runPlanner) and
    under a tile; more batch never plans faster, fp32 never faster than fp16, wider weights never faster."""
    for precision in PRECISIONS:
        for W in WIDTHS:
            last = 0.0
            for B in BATCHES:
                p = _plan("ipu-mk2", B, W, precision)
                if B < 16:
                    assert isinstance(p, str), (B, W, precision)
                    assert f"M = {B} rows" in p and "not a multiple of 16" in p and "use m=16" in p, p
                    continue
                assert not isinstance(p, str), p
                assert p.matmul_shape == [B, W, W] and p.tiles <= GC200.tiles
                assert p.pM * p.m >= p.M and p.pK * p.k * p.sK >= p.K and p.pN * p.n * p.sN >= p.N
                assert min(p.sK, p.sN) == 1  # one kind of serial split (constructModel)
                assert p.temp_bytes <= p.memory_bound and p.memory_bound == AVAILABLE_MEMORY_PROPORTION * GC200.sram_per_tile
                assert p.cycles >= last, (B, W, precision)
                last = p.cycles
                if precision == "fp32":
                    assert p.cycles >= _plan("ipu-mk2", B, W, "fp16").cycles
                if W > 1024:
                    assert p.cycles >= _plan("ipu-mk2", B, W // 2, precision).cycles
                # poplin's own order for a matmul: swapped, which rearranges nothing in fp16 (and in fp32 only
                # regroups its output: 16 partial channels against 8 weights per conv unit)
                assert p.swapped and (p.transform_cycles == 0) == (precision == "fp16")
    # weights that no longer fit in one pass are split in time over the output channels (the batch, swapped)
    assert _plan("ipu-mk2", 1024, 8192, "fp16").sN > 1 and _plan("ipu-mk2", 1024, 8192, "fp32").sN > 1


def test_a_bow_plans_as_a_gc200_and_only_its_clock_differs():
    """The planner reads the tiles, their memory and the tile's AMP (per cycle): a Bow's equal a GC200's,
    so its plans are the same in cycles (checked on the two smaller widths), faster by the clock ratio."""
    assert (BOW.tiles, BOW.sram_per_tile) == (GC200.tiles, GC200.sram_per_tile)
    for precision in PRECISIONS:
        for W in WIDTHS[:2]:
            for B in BATCHES:
                g, b = _plan("ipu-mk2", B, W, precision), _plan("bow", B, W, precision)
                assert (g if isinstance(g, str) else g.describe()) == (b if isinstance(b, str) else b.describe())
    p = _plan("bow", 64, 1024, "fp16")
    assert p.cycles / BOW.clock_hz < p.cycles / GC200.clock_hz


def test_batch_one_group_wide_weights_by_hand():
    """Batch 16 (one AMP group), [16 x 1024] . [1024 x 1024] fp16 on a GC200. poplin's swapped conv: field
    N = 1024, 1024 input channels, output channels M = 16. Chosen split 45 x 32 x 1 (field over 45 tiles,
    input channels over 32, the 16 output channels on each): block 23 x 32 x 16.

    AMP (PerformanceEstimation.hpp, HalfFloat): 2 input groups, 1 output group; 23 elements over 6 workers,
    4 and 3 each: worker(4) = 37 + 4 - 7 = 34 (zeroing) / 35, worker(3) = 30 / 31; inner = max(6 x 34,
    6 x 30 + 14) = 204 / max(210, 200) = 210; loads 64; 50 + 6 (7 + 3) + 13 + (15 + 25 + 64 + 210) + 11 +
    (25 + 64 + 204) = 741.
    Exchange (addExchangeCycleEstimates): the conv's inputs (23 x 32) go to pN = 1 tile: 0; its weights
    (the batch, 32 x 16 halves) to 45 tiles, ceil((512 - 512 // 45) x 2 / 4) = 251; the partial sums
    23 x 16 = 368 floats, 368, and the second reduce stage's ceil(368 / 6) = 62 (plan [6] for depth 32): 681.
    Reduction over pK = 32 (stages [6, 6]) of ceil(368 / 32) = 12 outputs: stage 1 single-input ReduceAdd of
    64 outputs, 5 partials, 6 (20 + (2 x 5 + 8) ceil(16 / 6)) + 33 = 477; stage 2 the general vertex on 11
    outputs (to half), 6 (32 + (2 x 6 + 13)) = 342: 819. No rearrangement (swapped, whole groups).
    Total 741 + 681 + 819 = 2,241. The order as given costs 3,883 (its rearrangement alone 1,347: inputs
    ceil(32768 / 1408) = 24 B -> 15 + 6, weights 1490 B -> 932 + 373, output 24 B -> 15 + 6), so poplin swaps."""
    p = _plan("ipu-mk2", 16, 1024, "fp16")
    assert p.swapped and (p.M, p.K, p.N) == (1024, 1024, 16)
    assert (p.pM, p.pK, p.pN, p.sK, p.sN, p.m, p.k, p.n) == (45, 32, 1, 1, 1, 23, 32, 16)
    assert (p.compute_cycles, p.exchange_cycles, p.reduce_cycles, p.transform_cycles) == (741, 681, 819, 0)
    assert p.cycles == 2241
    given = plan_matmul("x", 16, 1024, 1024, GC200, "fp16", swap=False)
    assert given.transform_cycles == 21 + 1305 + 21 and given.cycles == 3883 > p.cycles


def test_fp32_regroups_its_output_by_hand():
    """[16 x 1024] . [1024 x 1024] fp32 on a GC200: swapped, split 23 x 64 x 1, block 45 x 16 x 16.

    AMP (float activations: core 8, no retention, zeroCyclesPerGroup 8): 2 input groups of 8; 45 elements,
    8 and 7 per worker: worker(8) = 46 + (2 + 64) + 40 = 152 (zeroing) / 86, worker(7) = 136 / 78; inner 912 /
    516; 50 + 13 + (15 + 25 + 64 + 516) + 11 + (25 + 64 + 912) = 1,695.
    Exchange: inputs 0 (pN = 1); weights 16 x 16 floats to 23 tiles, (256 - 11) x 4 / 4 = 245; partial sums
    45 x 16 = 720 plus the second stage's 90 (plan [8] for depth 64): 1,055.
    Reduction over 64 (stages [8, 8]) of 12 outputs: single-input, 96 outputs x 7 partials: 6 (20 + 22 x 4) + 33
    = 681; 12 outputs x 7 partials: 6 (20 + 22) + 33 = 285: 966.
    regroupOutput (16 partial channels against 8 weights per conv unit, addTransformCycleEstimate): ceil(16384 /
    1472) = 12 floats, 48 B, ceil(48 x 5 / (min(memcpy 8, 64) x 4)) = 8. Total 3,724."""
    assert matmul_plan.MEMCPY_BYTES_PER_CYCLE == A.REGISTRY["poplin_memcpy_bytes_per_cycle"].value
    p = _plan("ipu-mk2", 16, 1024, "fp32")
    assert p.swapped and (p.pM, p.pK, p.pN, p.m, p.k, p.n) == (23, 64, 1, 45, 16, 16)
    assert (p.compute_cycles, p.exchange_cycles, p.reduce_cycles, p.transform_cycles) == (1695, 1055, 966, 8)
    assert p.cycles == 3724


def test_operand_order_is_chosen_by_the_rearrangement_by_hand():
    """A square block on one tile: both orders run the same vertex (16^3 fp16: 423 + the cast of 256 float
    partials to half, (max(ceil(43 / 2), ceil(43 / 4)) + 26) x 6 = 288, + the 256 partials' exchange 256 = 967).
    As given, poplin rearranges inputs, weights and output, 512 B each: 3 x (ceil(512 x 5 / (2 x 4)) + 512 / 4)
    = 3 x 448 = 1,344; swapped, nothing."""
    given = plan_matmul("x", 16, 16, 16, GC200, "fp16", tiles=1, swap=False)
    chosen = plan_matmul("x", 16, 16, 16, GC200, "fp16", tiles=1)
    assert chosen.swapped and chosen.transform_cycles == 0 and chosen.cycles == 423 + 288 + 256 == 967
    assert not given.swapped and given.transform_cycles == 1344 and given.cycles == 967 + 1344


def test_serial_output_channel_split_by_hand():
    """Weights split in time (sN = 2), [16 x 32] . [32 x 32] fp16 on one tile, order as given, forced.

    Per iteration: the weight slice DynamicSlice1D(512 halves: 86 per worker, 21 copies) = 11 + 14 + 6 (35 +
    24 + 42) = 631; the partial sums' exchange 256; AMP 16 x 32 x 16 = 769 (worker(3) 30/31, worker(2) 34/35,
    inner 218/224: 50 + 60 + 13 + (15 + 313) + 11 + 307); the cast 288; the outputs' update DynamicSlice1D(128
    floats: 22 per worker, 11 copies) = 25 + 6 (35 + 24 + 22) = 511; rearranging weights 2,048 B (1,280 + 512)
    and output 1,024 B (640 + 256). Once, before the loop (broadcastInputBeforeLoop, sK = 1 < sN): the inputs'
    rearrangement 1,024 B, 640 + 256 = 896. Total 2 (631 + 256 + 769 + 288 + 511 + 2,688) + 896 = 11,182."""
    p = plan_matmul("x", 16, 32, 32, GC200, "fp16", tiles=1, force=(1, 1, 1, 1, 2), swap=False)
    assert (p.sN, p.n, p.broadcast_before_loop) == (2, 16, True)
    assert (p.compute_cycles, p.exchange_cycles, p.reduce_cycles) == (2 * 769, 2 * 256, 2 * 288)
    assert p.serial_cycles == 2 * (631 + 511) and p.transform_cycles == 896 + 2 * (1792 + 896)
    assert p.cycles == 11182


def test_refusals_name_the_value_the_limit_and_the_fix():
    with pytest.raises(ConfigError, match=r"N = 1000 columns .* not a multiple of 16.*use n=1008"):
        plan_matmul("x", 64, 1024, 1000, GC200, "fp16")
    with pytest.raises(ConfigError, match=r"K = 1020 inner dimension .* not a multiple of 16.*use k=1024"):
        plan_matmul("x", 64, 1020, 1024, GC200, "fp16")
    assert plan_matmul("x", 64, 1016, 1024, GC200, "fp32").K == 1016  # fp32 groups 8 input channels
    # the programs' passes keep their operands as given: no refusal, no swap
    p = plan_matmul("x", 4, 1024, 1000, GC200, "fp16", fc_pass=True)
    assert not p.swapped and p.transform_cycles == 0 and np.isfinite(p.cycles)


@pytest.mark.parametrize("M, K, N, T, precision, serial", [(1024, 2048, 512, 1472, "fp32", True),
                                                          (300, 4096, 64, 1216, "fp16", True),
                                                          (48, 1000, 976, 100, "fp32", False), (7, 13, 1, 5, "fp16", True)])
def test_the_candidates_are_the_whole_products_splits_that_fit_in_its_order(M, K, N, T, precision, serial):
    """The candidate splits are those of the whole [pM, pK, pN] product with pM pK pN <= T and one kind of serial
    split, in the product's order (the plan's ties go to the first): checked against the product built outright."""
    tile = matmul_plan.Tile.of(GC200, precision)
    units = matmul_plan.conv_units(tile, precision)
    got = matmul_plan._candidates(M, K, N, T, tile, precision, matmul_plan.BYTES[precision], units, serial)
    gM = matmul_plan._splits(M, 1, T)
    kP, kS, kB = matmul_plan._channel_options(K, matmul_plan.IN_CHANS[precision], T, serial)
    nP, nS, nB = matmul_plan._channel_options(N, units, T, serial)
    rows = [(gM[0][i], kP[j], nP[k], kS[j], nS[k], min(gM[1][i], M), kB[j], nB[k])
            for i in range(gM[0].size) for j in range(kP.size) for k in range(nP.size)
            if min(kS[j], nS[k]) == 1 and gM[0][i] * kP[j] * nP[k] <= T]
    assert len(rows) > 0
    assert [tuple(int(a[r]) for a in got) for r in range(got[0].size)] == [tuple(int(v) for v in row) for row in rows]
