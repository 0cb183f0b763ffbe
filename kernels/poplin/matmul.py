"""poplin's AMP matmul vertex (``ConvPartial1x1Out``) and its cycle estimator, vectorised over tiles.

poplin computes a matmul ``[m x k] . [k x n]`` as a 1x1 convolution: the ``m`` rows are the
field, ``k`` the input channels, ``n`` the output channels. On each tile one
``ConvPartial1x1Out`` supervisor vertex accumulates the tile's partials ``P[m, n] (+)=
A[m, k] B[k, n]`` on the AMP unit, in groups of ``IN_CHANS`` input channels by ``conv units``
output channels; the field is split between the ``workers`` contexts. The partials are float
(fp16 inputs accumulate in fp32: poplin's default ``partialsType``).

Cycle estimator: graphcore/poplibs sdk-release-2.6 (d29b6c10, the SDK the study's op ran on)
``lib/poplin/PerformanceEstimation.hpp`` ``getConvPartial1x1SupervisorCycleEstimate`` (inner loop
``getConvPartial1x1SupervisorInnerLoopCycleEstimateHalfFloat``, outer loop
``getConvPartial1x1SupervisorOuterLoopCycleEstimateHalfFloat``, weight loads
``getConvPartialAmpSupervisorWeightLoadCycleEstimate``), as ``ConvModel.cpp
addPartialCalcCycleEstimate`` calls it for a matmul: one conv group, one output pass per group
(partial channels = conv units), the batch flattened into the field (``calculateFlattenedParams``)
and split between the workers at ``i field / W`` (``ConvUtilInternal.cpp
partitionConvPartialByWorker``). Float partials on the conv units' common code path (half inputs
with 16 conv units, or float partials: ``commonHalfAndFloatPartialsCodePath``, c = 1) and the
workers' state retention of that release (``conv1x1WorkerRetentionSavings``: 7 and 3 cycles for
half inputs with float partials, 0 for float inputs)::

    worker(e, z)  = fp16:  e = 1: 31 + (z ? 1 : 2); 2: 40 + (z ? 1 : 2); else (z ? 37 : 38) + 4 (e - 3);  - 7
                    fp32:  e = 1: 47 + 10 z; 2: 46 + 18 z; else 46 + (2 + 8 e) z + 8 (e - 3)
    inner(z)      = max(W worker(ceil(f/W), z), W worker(floor(f/W), z) + 14)  (an idle worker: 0)
    loads         = conv_units x IN_CHANS x bytes / (COEFF_LOAD_BYTES_PER_CYCLE / 2)   (use128BitConvUnitLoad off)
    vertex        = 50 + W (r1 + r2 (in_groups - 1)) + 12 + c
                    + (in_groups - 1)(15 - c + 1 + out_groups (19 + 6 + loads + inner(0)))
                    + 10 + 1 + out_groups (19 - c + 7 + loads + inner(zeroing))

``r1, r2`` = 7, 3 (fp16) or 0, 0 (fp32). The conv units (output channels per group) follow from
the tile's AMP rate: a tile finishes one field element of a group every ``core`` cycles (4 fp16,
8 fp32), ``IN_CHANS x conv_units`` MACs, so ``conv_units = amp_flops x core / (2 IN_CHANS)``: 16
for fp16 on MK2 (hardware.md: 16 conv units, 64 MACs/cycle), 8 on MK1.
"""
from __future__ import annotations

import numpy as np

from ..codelet import register
from ..tile import Tile

IN_CHANS = {"fp16": 16, "fp32": 8}  # input channels per AMP group (poplar Target getWeightsPerConvUnit)
CORE_CYCLES = {"fp16": 4, "fp32": 8}  # PE inner loop: "Core loop cycles for 16x8 AMP vertex": float 8, half 4
BYTES = {"fp16": 2, "fp32": 4}
COEFF_LOAD_BYTES_PER_CYCLE = 16  # Target::getConvUnitCoeffLoadBytesPerCycle (not public for MK2: assumption, 128-bit
# loads); ConvModel.cpp addPartialCalcCycleEstimate halves it unless use128BitConvUnitLoad (ConvOptions.hpp: false)
SUPERVISOR_NONLOOP = 50  # PE outer loop: supervisorNonloopOverhead
CONV_GROUP_OVERHEAD = 12  # PE outer loop: numConvGroups * (12 + common + ...)
IN_GROUP_OVERHEAD = 15  # per extra input-channel group (15 - common + excessInChanOverhead)
LAST_IN_GROUP_OVERHEAD = 10  # the last (zeroing) input-channel group (10 + excessInChanOverhead)
EXCESS_IN_CHAN_OVERHEAD = 1  # PE outer loop: excessInChanOverhead
COMMON_PATH = 1  # commonHalfAndFloatPartialsCodePath: float partials (the model's) always take it
OUT_GROUP_OVERHEAD = 19  # per output-channel group
OUT_PASS_OVERHEAD = 6  # per output pass of a non-zeroing input group
OUT_PASS_OVERHEAD_ZEROING = 7  # outPassesOverhead, the zeroing (last) input group
TAG_CYCLES = 14  # PE inner loop: "tag cost to worker with min cycles"
RETENTION = {"fp16": (7, 3), "fp32": (0, 0)}  # conv1x1WorkerRetentionSavings (half inputs, float partials)


def conv_units(tile: Tile, precision: str) -> int:
    """Output channels per AMP group: the tile's AMP rate over ``IN_CHANS`` per ``CORE_CYCLES``."""
    flops = tile.amp_flops_fp16 if precision == "fp16" else tile.amp_flops_fp32
    return max(1, int(flops * CORE_CYCLES[precision] // (2 * IN_CHANS[precision])))


def _worker(e, zeroing, precision):
    """One worker context's cycles for ``e >= 1`` field elements (PE inner loop switch, float partials on
    the common code path, less the retention saving)."""
    e = np.asarray(e, dtype=np.int64)
    core = CORE_CYCLES[precision]
    z = int(bool(zeroing))
    if precision == "fp32":  # zeroCyclesPerGroup 8: float activations on 16 conv units
        many = 46 + (2 + 8 * e) * z + (e - 3) * core
        return np.select([e == 1, e == 2], [47 + 10 * z, 46 + 18 * z], many)
    extra = 1 if z else 2
    many = (37 if z else 38) + (e - 3) * core
    return np.select([e == 1, e == 2], [31 + extra, 40 + extra], many) - RETENTION[precision][0]


def _inner(field, zeroing, precision, workers):
    field = np.asarray(field, dtype=np.int64)
    e_max = -(-field // workers)
    all_used = field >= workers  # else some workers have no elements: 0 cycles, the minimum
    e_min = np.maximum(field // workers, 1)
    hi = workers * _worker(np.maximum(e_max, 1), zeroing, precision)
    lo = np.where(all_used, workers * _worker(e_min, zeroing, precision), 0)
    return np.maximum(hi, lo + TAG_CYCLES)


def amp_matmul_cycles(field, depth, cols, tile: Tile, precision="fp16", zeroing=True):
    """Cycles of the ``ConvPartial1x1Out`` vertex on each tile: partials ``[field x cols]`` of
    ``[field x depth] . [depth x cols]`` (0 where the tile has no work). ``zeroing=False``
    accumulates into existing partials (every input group runs the non-zeroing loop)."""
    field, depth, cols = (np.asarray(a, dtype=np.int64) for a in (field, depth, cols))
    units = conv_units(tile, precision)
    in_groups = -(-depth // IN_CHANS[precision])
    out_groups = -(-cols // units)
    loads = units * IN_CHANS[precision] * BYTES[precision] // (COEFF_LOAD_BYTES_PER_CYCLE // 2)
    nz = _inner(field, False, precision, tile.workers)
    first = _inner(field, zeroing, precision, tile.workers)
    r1, r2 = RETENTION[precision]
    c, x = COMMON_PATH, EXCESS_IN_CHAN_OVERHEAD
    cyc = (SUPERVISOR_NONLOOP + tile.workers * (r1 + r2 * (in_groups - 1)) + CONV_GROUP_OVERHEAD + c
           + (in_groups - 1) * (IN_GROUP_OVERHEAD - c + x
                                + out_groups * (OUT_GROUP_OVERHEAD + OUT_PASS_OVERHEAD + loads + nz))
           + LAST_IN_GROUP_OVERHEAD + x
           + out_groups * (OUT_GROUP_OVERHEAD - c + OUT_PASS_OVERHEAD_ZEROING + loads + first))
    return np.where((field > 0) & (depth > 0) & (cols > 0), cyc, 0).astype(np.float64)


def amp_matmul(A, B, precision="fp16", out=None, accumulate=False):
    """The partials ``A B`` as the AMP computes them: fp16 inputs, fp32 accumulation."""
    if precision == "fp16":
        A = np.asarray(A, dtype=np.float16).astype(np.float32)
        B = np.asarray(B, dtype=np.float16).astype(np.float32)
    P = np.asarray(A, dtype=np.float32) @ np.asarray(B, dtype=np.float32)
    if out is None:
        return P
    if accumulate:
        out += P
    else:
        out[...] = P
    return out


def _matmul_cost(tiles, g, work, tile):
    shape = np.shape(tiles)
    b = lambda k: np.broadcast_to(np.asarray(g[k]), shape)  # noqa: E731
    return tiles, amp_matmul_cycles(b("field"), b("depth"), b("cols"), tile, g["precision"], g.get("zeroing", True))


MATMUL = register("poplin.matmul", amp_matmul_cycles, code_bytes=2048, cost=_matmul_cost, static=True)


# --------------------------------------------------------------------------- partial-sum reduction
# graphcore/poplibs sdk-release-2.6 (d29b6c10): lib/poplin/ConvReducePlan.cpp getNumReduceStages /
# getMultiStageReducePlanAndCost; lib/poplin/PerformanceEstimation.hpp estimateConvReduceCycles,
# getReduceCycleEstimate (the ReduceAdd vertex), estimateCastCycles. Float partials, 64-bit data
# path, 6 workers, enableMultiStageReduce on, enableFastReduce off (ConvOptions.hpp defaults).
DATA_PATH_BITS = 64
REDUCE_SINGLE_SUPERVISOR = 33  # getReduceCycleEstimate, singleInput: supervisorCycles
REDUCE_SINGLE_WORKER = 20
REDUCE_GENERAL_WORKER = 32
CAST_WORKER = 26  # estimateCastCycles: (max(loads, writes) + 26) * workers


def _reduce_stages(depth: int) -> int:
    """ConvReducePlan.cpp getNumReduceStages: depth >= 125 -> 3, >= 16 -> 2, else 1."""
    return 3 if depth >= 125 else 2 if depth >= 16 else 1


def _plan_and_cost(depth: int, stages: int):
    if stages == 1:
        return [], float(depth)
    down = int(float(depth) ** ((stages - 1.0) / stages))
    p_dn, c_dn = _plan_and_cost(down, stages - 1)
    c_dn += depth / down
    p_up, c_up = _plan_and_cost(down + 1, stages - 1)
    c_up += depth / (down + 1)
    return ([down] + p_dn, c_dn) if c_dn < c_up else ([down + 1] + p_up, c_up)


def multi_stage_reduce_plan(depth: int) -> list[int]:
    """getMultiStageReducePlan: the depths of the intermediate partials tensors (empty: one stage)."""
    return _plan_and_cost(int(depth), _reduce_stages(int(depth)))[0]


def reduce_stage_depths(depth: int) -> list[int]:
    """The depth each stage reduces over, the final stage last (poplin's loop over the plan)."""
    out, remaining = [], int(depth)
    for d in multi_stage_reduce_plan(depth):
        dts = -(-remaining // d)
        remaining = -(-remaining // dts)
        out.append(dts)
    if remaining > 1:
        out.append(remaining)
    return out


def reduce_add_cycles(out_size, partials, out_float, single_input, workers=6):
    """getReduceCycleEstimate for float partials (accumulator width 4, 2 partials per 64-bit load)::

        single input:  workers (20 + (2 P + (8 | 7)) ceil((o // 4) / W)) + 33
        general:       workers (32 [+ 2 P + 13 on a partial last round] + (3 P + (7 | 6)) rounds),
                       loops = o // 4 + popcount(o mod 4), rounds = loops // W (+ 1 if whole vectors)
    """
    o = np.asarray(out_size, dtype=np.int64)
    P = np.asarray(partials, dtype=np.int64)
    outf = np.asarray(out_float, dtype=bool)
    lpw = -(-(o // 4) // workers)
    single = (REDUCE_SINGLE_WORKER + (2 * P + np.where(outf, 8, 7)) * lpw) * workers + REDUCE_SINGLE_SUPERVISOR
    loops = o // 4 + (o & 1) + ((o >> 1) & 1)
    rounds = loops // workers
    rem = (loops % workers) > 0
    tail = rem & ((o & 3) > 0)
    rounds = rounds + (rem & ~tail)
    general = (REDUCE_GENERAL_WORKER + tail * (2 * P + 13) + (3 * P + np.where(outf, 7, 6)) * rounds) * workers
    return np.where(np.asarray(single_input, dtype=bool), single, general).astype(np.float64)


def cast_estimate_cycles(outputs, out_vector_width, workers=6):
    """estimateCastCycles (float partials, vector width 2, to the output type)."""
    opw = -(-np.asarray(outputs, dtype=np.int64) // workers)
    return ((np.maximum(-(-opw // 2), -(-opw // out_vector_width)) + CAST_WORKER) * workers).astype(np.float64)


def conv_reduce_cycles(outputs, depth, in_serial, out_float, tile_bytes, workers=6):
    """estimateConvReduceCycles: the reduction of ``depth`` float partials into ``outputs`` outputs per
    tile, stage by stage (getMultiStageReducePlan). ``depth`` is one value; ``outputs`` and
    ``in_serial`` arrays. A stage uses the single-input vertex when its outputs are whole
    accumulator vectors (4 floats) and its exchanged partials take under 1/16 of the tile
    (checkPartialsSizeForSingleInputReduce; memory-element rounding not modelled)."""
    o = np.asarray(outputs, dtype=np.int64)
    depth = int(depth)
    if depth <= 1:  # a cast of float partials to the output type, unless a serial in-chan split defers it
        cast = cast_estimate_cycles(o, 2 if out_float else 4, workers)
        return np.where(out_float | (np.asarray(in_serial) > 1), 0.0, cast) * np.ones(o.shape)
    stages = reduce_stage_depths(depth)
    size = o * depth
    remaining = depth
    cyc = np.zeros(o.shape)
    for dts in stages:
        remaining = -(-remaining // dts)
        size = -(-size // dts)
        single = (size % 4 == 0) & ((dts - 1) * size * 4 < tile_bytes / 16)
        cyc = cyc + reduce_add_cycles(size, dts - single, out_float if remaining == 1 else True, single, workers)
    return cyc


def reduce_exchange_cycles(partials, depth, exchange_bytes_per_cycle=4):
    """addExchangeCycleEstimates' partial sums: the first stage sends the tile's ``partials``
    (float) whatever the depth; every further stage of the plan its outputs, ceil(bytes / 4)."""
    p = np.asarray(partials, dtype=np.int64)
    cyc = -(-(p * 4) // exchange_bytes_per_cycle)
    if depth <= 1:
        return cyc.astype(np.float64)
    size, remaining = p, int(depth)
    plan = multi_stage_reduce_plan(depth)
    for i, d in enumerate(plan):
        if i:
            cyc = cyc + -(-(size * 4) // exchange_bytes_per_cycle)
        dts = -(-remaining // d)
        size = -(-size // dts)
        remaining = -(-remaining // dts)
    if remaining > 1 and plan:
        cyc = cyc + -(-(size * 4) // exchange_bytes_per_cycle)
    return cyc.astype(np.float64)


def _conv_reduce_cost(tiles, g, work, tile):
    shape = np.shape(tiles)
    o = np.broadcast_to(np.asarray(g["outputs"]), shape)
    return tiles, conv_reduce_cycles(o, int(g["depth"]), np.broadcast_to(np.asarray(g.get("in_serial", 1)), shape),
                                     bool(g.get("out_float", True)), g.get("tile_bytes", 638976), tile.workers)


CONV_REDUCE = register("poplin.reduce", conv_reduce_cycles, code_bytes=768, cost=_conv_reduce_cost, static=True)
