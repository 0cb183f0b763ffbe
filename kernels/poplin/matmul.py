"""poplin's AMP matmul vertex (``ConvPartial1x1Out``) and its cycle estimator, vectorised over tiles.

poplin computes a matmul ``[m x k] . [k x n]`` as a 1x1 convolution: the ``m`` rows are the
field, ``k`` the input channels, ``n`` the output channels. On each tile one
``ConvPartial1x1Out`` supervisor vertex accumulates the tile's partials ``P[m, n] (+)=
A[m, k] B[k, n]`` on the AMP unit, in groups of ``IN_CHANS`` input channels by ``conv units``
output channels; the field is split between the ``workers`` contexts. The partials are float
(fp16 inputs accumulate in fp32: poplin's default ``partialsType``).

Cycle estimator: graphcore/poplibs ``lib/poplin/PerformanceEstimation.hpp``
``getConvPartial1x1SupervisorCycleEstimate`` (inner loop
``getConvPartial1x1SupervisorInnerLoopCycleEstimate``, outer loop
``getConvPartial1x1SupervisorOuterLoopCycleEstimate``; stored read_file id 9873021656), with
one conv group, one output pass per group (out chans per group = conv units) and no worker
state retention (``WORKER_REG_STATE_RETAINED`` off)::

    worker(e, z)  = fp32:  e = 0: 28; 1: 50 + 10 z; 2: 50 + 18 z; else 50 + (2 + 8e) z + (e - 3) core
                    fp16:  e = 0: z ? 26 : 29; 1: z ? 39 : 43; 2: z ? 41 : 45; else (z ? 41 : 44) + (e - 3) core
    inner(z)      = max(W worker(e_max, z), W worker(e_min, z) + 14)       (e_min = 0 contexts idle)
    loads         = in_load_elems (conv_units / 2) conv_units bytes_per_elem / COEFF_LOAD_BYTES_PER_CYCLE
    vertex        = 50 + 12 + (in_groups - 1)(15 + out_groups (19 + 6 + loads + inner(0)))
                    + 10 + out_groups (19 + 6 + loads + inner(zeroing))

``core`` = 4 (fp16) / 8 (fp32) cycles per field element and worker. The conv units (output
channels per group) follow from the tile's AMP rate: a tile finishes one field element of a
group every ``core`` cycles, ``IN_CHANS x conv_units`` MACs, so
``conv_units = amp_flops x core / (2 IN_CHANS)``: 16 for fp16 on MK2 (hardware.md: 16 conv
units, 64 MACs/cycle), 8 on MK1.
"""
from __future__ import annotations

import numpy as np

from ..codelet import register
from ..tile import Tile

IN_CHANS = {"fp16": 16, "fp32": 8}  # input channels per AMP group (poplar Target getWeightsPerConvUnit)
CORE_CYCLES = {"fp16": 4, "fp32": 8}  # PE inner loop: "Core loop cycles for 16x8 AMP vertex": float 8, half 4
IN_LOAD_ELEMS = {"fp16": 4, "fp32": 2}  # convUnitInputLoadElemsPerCycle ("2 for floats and 4 for halves")
BYTES = {"fp16": 2, "fp32": 4}
COEFF_LOAD_BYTES_PER_CYCLE = 16  # convUnitCoeffLoadBytesPerCycle (Target; unknown for MK2: assumption, 128-bit loads)
SUPERVISOR_NONLOOP = 50  # PE outer loop: supervisorNonloopOverhead
CONV_GROUP_OVERHEAD = 12  # PE outer loop: numConvGroups * (12 + ...)
IN_GROUP_OVERHEAD = 15  # per extra input-channel group
LAST_IN_GROUP_OVERHEAD = 10  # the last (zeroing) input-channel group
OUT_GROUP_OVERHEAD = 19  # per output-channel group
OUT_PASS_OVERHEAD = 6  # per output pass (outPassesOverhead without retention)
TAG_CYCLES = 14  # PE inner loop: "tag cost to worker with min cycles"


def conv_units(tile: Tile, precision: str) -> int:
    """Output channels per AMP group: the tile's AMP rate over ``IN_CHANS`` per ``CORE_CYCLES``."""
    flops = tile.amp_flops_fp16 if precision == "fp16" else tile.amp_flops_fp32
    return max(1, int(flops * CORE_CYCLES[precision] // (2 * IN_CHANS[precision])))


def _worker(e, zeroing, precision):
    """One worker context's cycles for ``e`` field elements (PE inner loop switch)."""
    e = np.asarray(e, dtype=np.int64)
    core = CORE_CYCLES[precision]
    z = int(bool(zeroing))
    if precision == "fp32":
        many = 50 + (2 + 8 * e) * z + (e - 3) * core
        return np.select([e == 0, e == 1, e == 2], [28, 50 + 10 * z, 50 + 18 * z], many)
    many = (41 if z else 44) + (e - 3) * core
    return np.select([e == 0, e == 1, e == 2], [26 if z else 29, 39 if z else 43, 41 if z else 45], many)


def _inner(field, zeroing, precision, workers):
    field = np.asarray(field, dtype=np.int64)
    e_max = -(-field // workers)
    all_used = field >= workers
    e_min = field // workers
    hi = workers * _worker(e_max, zeroing, precision)
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
    loads = IN_LOAD_ELEMS[precision] * (units // 2) * units * BYTES[precision] // COEFF_LOAD_BYTES_PER_CYCLE
    nz = _inner(field, False, precision, tile.workers)
    first = _inner(field, zeroing, precision, tile.workers)
    cyc = (SUPERVISOR_NONLOOP + CONV_GROUP_OVERHEAD
           + (in_groups - 1) * (IN_GROUP_OVERHEAD + out_groups * (OUT_GROUP_OVERHEAD + OUT_PASS_OVERHEAD + loads + nz))
           + LAST_IN_GROUP_OVERHEAD + out_groups * (OUT_GROUP_OVERHEAD + OUT_PASS_OVERHEAD + loads + first))
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
