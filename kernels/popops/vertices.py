"""The poplibs and poprand programs the published sparse-BPTT op calls, costed with poplibs'
own cycle estimators (github graphcore/poplibs), vectorised over vertices.

The op (``docs/as-built/graphcore_snn.md``) calls popops dynamicSlice / dynamicUpdate, cast,
zero, mulInPlace, sub / subInPlace on a scalar, reduceMany, and poprand::uniform. poplibs
makes the vertices per tile itself; every route here takes **one entry per tile** (that
tile's share of the tensor) and returns that tile's cycles for the compute set. Sources
(file, function; ``PCE`` = ``lib/popops/popopsCycleEstimators.cpp``, stored read_file
id 9871586832, 147,373 characters; ``PE`` = ``lib/popops/PerformanceEstimation.cpp``, id
9869193324; ``EOU`` = ``lib/popops/ExprOpUtil.hpp`` commit 87cd4f3 perf tables):

* ``popops.dynamic_slice`` / ``popops.dynamic_update``: ``lib/popops/DynamicSlice.cpp``
  makes one ``DynamicSlice1D`` MultiVertex per tile whose slice region is contiguous, else
  ``DynamicSlice2D`` worker vertices (regions split between workers). Estimators PCE
  ``internal::getDynamicSlice1DEstimate`` (the update's 1D estimator is the same) and
  ``MAKE_PERF_ESTIMATOR_NAME(DynamicSlice2D)`` / ``(DynamicUpdateSlice2D)``.
* ``popops.reduce``: reduceMany's reduction vertices, ``lib/popops/reduction/
  CycleEstimationFunctions.cpp`` (commit b2996457) ``getCyclesEstimateForReduce`` (partials
  anywhere: the input-spike gradients' stage 2) or ``getCyclesEstimateForStridedReduce``
  (partials at a fixed stride: the 6 weight-gradient copies), outputs split between workers.
* ``popops.mul_in_place``: a scalar operand: ``BroadcastScalar1DInPlace`` (PCE
  ``internal::broadcastArithmetic1DCycleEstimate``, MULTIPLY/FLOAT in EOU
  ``broadcastOpInPlacePerfInfo`` = {1, natural width}); a per-neuron vector repeated over the
  batch (the op's decay and (1 - alpha) 10 products): ``BroadcastVectorInner2DInPlace``
  (PCE ``vectorInner2DMulCycles`` + 3) or, for at most two contiguous regions, the
  ``...InPlaceSupervisor`` (PCE ``vectorInnerMultiVertexMulCycles``), as
  ``lib/popops/ElementWise.cpp`` (binaryOpBroadcastInnerVector) chooses.
* ``popops.cast``: ``Cast1D`` MultiVertex (PE ``getCast1DCycleEstimate``) or ``Cast2D`` workers
  (PE ``getCast2DCycleEstimate``), per element PE ``castWorkerCycles`` (float <-> integer).
* ``popops.zero``: ``Fill`` / ``Fill2d`` worker vertices (PE ``getFill1DCycleEstimate``,
  ``getFill2DCycleEstimate``).
* ``popops.scalar_op``: ``BroadcastScalar1D[InPlace]`` on an integer scalar (the backward
  loop's ``itime`` arithmetic on tile 0; PCE ``broadcastArithmetic1DCycleEstimate``, EOU
  SUBTRACT/UNSIGNED_INT = {6 cycles, 1 per loop}).
* ``poprand.uniform``: ``UniformSupervisor<int>`` (``lib/poprand/poprandCycleEstimators.cpp``
  commit 64b4540, ``MAKE_CYCLE_ESTIMATOR_NAME(UniformSupervisor)``, INT with scale != 0).

Estimators of poplibs' worker vertices count the worker's own cycles; a tile pays
``workers`` times its busiest worker plus ``VERTEX_RUN_INSTRUCTIONS`` per vertex and the
compute set's ``vertex_launch_cycles`` (poplibs ``basicOpSupervisorOverhead`` = 11, PE).
MultiVertex estimators already return tile cycles; where they use
``basicOpSupervisorOverhead()`` the tile's ``vertex_launch_cycles`` stands in for it.
"""
from __future__ import annotations

import numpy as np

from ..codelet import register
from ..tile import Tile, VERTEX_RUN_INSTRUCTIONS


def _g(g, key, default, like):
    return np.broadcast_to(np.asarray(g.get(key, default)), np.shape(like))


def _cdiv(a, b):
    return -(-np.asarray(a) // np.asarray(b))


def _workers_cost(est, tile: Tile):
    """A tile's cycles when its busiest worker vertex takes ``est`` worker cycles."""
    return tile.workers * (VERTEX_RUN_INSTRUCTIONS + np.asarray(est, dtype=np.float64)) + tile.vertex_launch_cycles


def _vector_width(dtype_bytes):
    """Elements per 64-bit vector: 2 (4-byte), 4 (2-byte and 1-byte: poplibs' 8-bit width)."""
    return np.where(np.asarray(dtype_bytes) == 4, 2, np.where(np.asarray(dtype_bytes) == 8, 2, 4))


# --------------------------------------------------------------------------- dynamic slice / update
DS1D_SUPERVISOR_EXTRA = 1 + 6 + 1 + 6  # PCE getDynamicSlice1DEstimate: basicOpSupervisorOverhead() + 1 + 6 + 1 + 6
DS1D_WORKER = 35  # worker cycles: 35 + (24 + 2 nCopies) per slice (72 + (70 + 2 n) for 8-bit)
DS1D_PER_SLICE = 24
DS1D_WORKER_8BIT, DS1D_PER_SLICE_8BIT = 72, 70
DS2D_VERTEX = 23  # PCE DynamicSlice2D / DynamicUpdateSlice2D: 23 + per region ((29 + nVectors) slices + 13)
DS2D_PER_REGION = 13
DS2D_PER_SLICE = {4: 29, 2: 31, 1: 50}


def dynamic_slice_cycles(elements, regions, dtype_bytes, slices, tile: Tile, update=False):
    """Cycles of one tile's share of a dynamicSlice (``update``: dynamicUpdate).

    One contiguous region (``regions`` == 1): the DynamicSlice1D MultiVertex::

        launch + 1 + 6 + 1 + 6 + workers * (35 + (24 + 2 nCopies) slices),
        nCopies = ceil((1 + 64-bit) elements / workers) // vectorWidth

    More regions: DynamicSlice2D workers, the busiest with ceil(regions / min(workers,
    regions)) regions of ceil(elements / regions) elements::

        workers * (run + 23 + regions_w ((29 + nVectors) slices + 13)) + launch
        (half: 31 + 2 nVectors; 8-bit: 50 + 2 nVectors, update 50 + 23 nVectors; 64-bit update + 1)
    """
    e = np.asarray(elements, dtype=np.int64)
    regions = np.asarray(regions, dtype=np.int64)
    b = np.asarray(dtype_bytes)
    sub = np.asarray(slices)
    W = tile.workers
    vw = _vector_width(b)
    is8, is64 = b == 1, b == 8
    epw = _cdiv((1 + is64) * e, W)
    n_copies = epw // vw
    worker = np.where(is8, DS1D_WORKER_8BIT + (DS1D_PER_SLICE_8BIT + 2 * n_copies) * sub,
                      DS1D_WORKER + (DS1D_PER_SLICE + 2 * n_copies) * sub)
    one_d = tile.vertex_launch_cycles + DS1D_SUPERVISOR_EXTRA + W * worker
    vertices = np.minimum(W, np.maximum(regions, 1))
    per_w = _cdiv(regions, vertices)
    rs = _cdiv(e, np.maximum(regions, 1))
    nv = _cdiv(rs * (1 + (is64 & update)), vw)
    base = np.where(is8, 50, np.where(b == 2, 31, 29 + (is64 & update)))
    per_vec = np.where(is8, 23 if update else 2, np.where(b == 2, 2, 1))
    two_d = _workers_cost(DS2D_VERTEX + per_w * ((base + per_vec * nv) * sub + DS2D_PER_REGION), tile)
    return np.where(regions <= 1, one_d, two_d).astype(np.float64)


def _dynamic_slice_cost(tiles, g, work, tile):
    e = g["elements"]
    return tiles, dynamic_slice_cycles(e, _g(g, "regions", 1, e), _g(g, "dtype_bytes", 4, e), _g(g, "slices", 1, e),
                                       tile)


def dynamic_update_cycles(elements, regions, dtype_bytes, slices, tile: Tile):
    """``dynamic_slice_cycles`` with the update's 2D estimator (PCE DynamicUpdateSlice2D); the
    1D update uses the slice's estimator (PCE DynamicUpdateSlice1D)."""
    return dynamic_slice_cycles(elements, regions, dtype_bytes, slices, tile, update=True)


def _dynamic_update_cost(tiles, g, work, tile):
    e = g["elements"]
    return tiles, dynamic_update_cycles(e, _g(g, "regions", 1, e), _g(g, "dtype_bytes", 4, e), _g(g, "slices", 1, e),
                                        tile)


# --------------------------------------------------------------------------- reduce
# lib/popops/reduction/CycleEstimationFunctions.cpp, commit b2996457 (float or half partials,
# ADD, not update; 64-bit data path; no forced interleaving)
REDUCE_ENTRY = 5 + 1 + 1  # getCyclesEstimateForReduce: entry/exit
REDUCE_STATE = 3 + 23  # load state etc.
REDUCE_PER_REGION = 16 + 6 + 2  # setzi, ld32, call _Reduce_outer_loop_setup; remainder setup and vector-loop test; loop end; + 2 per remainder check
REDUCE_ZERO_AND_LOAD = 3  # _Reduce_zero_and_load
REDUCE_FETCH_PTR = 7  # _Reduce_ptr_fetch, per partial and outer loop (+ 3)
REDUCE_LOAD_OVERHEAD = 2  # call, br $lr (accumulating ops)
STRIDED_ENTRY = 2 + 2 + 6 + 5  # getCyclesEstimateForStridedReduce: entry/exit; loop setup
STRIDED_POST = {4: 3 + 2, 2: 1 + 7}  # inner-loop completion + result storage (float ADD: 3 + 2; half ADD: 1 + 7)


def _store(width, out_vw):
    return 2 * np.minimum(width, out_vw) + 1  # getStoreCycles: (2 + isUpdate) min(width, outVW) + usesAccumulators


def reduce_worker_cycles(regions, out_size, partials, dtype_bytes=4, specialisation="default"):
    """One reduction worker vertex: ``regions`` output regions of ``out_size`` elements, each
    the sum of ``partials`` partials of that size (ADD).

    ``"default"`` (getCyclesEstimateForReduce, partials anywhere)::

        7 + 26 + regions (28 + 2 checks + vol (5 + store(acc) + 1) + vol p (7 + 3)
                          + per remainder bit b: (3 + 1) + store(b) + p (7 + 3)
                          + p (vol (cyclesPerVectorLoad + 3) + per remainder bit (2 + 1 + 3)))

    acc = 4 (float) / 8 (half) elements, vol = o // acc, checks = log2(acc), 64-bit data path
    dpw = 2 / 4 elements, cyclesPerVectorLoad = 2 + 2 + acc / dpw, store(w) = 2 min(w, dpw) + 1.

    ``"strided"`` (getCyclesEstimateForStridedReduce, partials of one region at a fixed
    stride, e.g. the 6 per-worker weight-gradient copies)::

        15 + ceil(o / epl) (3 + post + (3 + (p - 1))),  epl = min(acc, dpw), post 5 (float) / 8 (half)
    """
    o = np.asarray(out_size, dtype=np.int64)
    p = np.asarray(partials, dtype=np.int64)
    b = np.asarray(dtype_bytes)
    dpw = np.where(b == 2, 4, 2)
    acc = 2 * dpw
    checks = np.where(b == 2, 3, 2)
    vol = o // acc
    rem = o % acc
    load = REDUCE_LOAD_OVERHEAD + 2 + acc // dpw
    per_region = REDUCE_PER_REGION + 2 * checks + vol * (REDUCE_ZERO_AND_LOAD + 2 + _store(acc, dpw) + 1)
    per_region = per_region + vol * p * (REDUCE_FETCH_PTR + 3) + p * vol * (load + 3)
    for bit in (1, 2, 4):
        has = ((rem & bit) > 0) & (bit < acc)
        per_region = per_region + has * ((REDUCE_ZERO_AND_LOAD + 1) + _store(bit, dpw) + p * (REDUCE_FETCH_PTR + 3)
                                         + p * (2 + bit // np.minimum(bit, dpw) + 3))
    default = REDUCE_ENTRY + REDUCE_STATE + np.asarray(regions) * per_region
    post = np.where(b == 2, STRIDED_POST[2], STRIDED_POST[4])
    strided = STRIDED_ENTRY + np.asarray(regions) * _cdiv(o, dpw) * (3 + post + 3 + (p - 1))
    return np.where(np.asarray(specialisation) == "strided", strided, default).astype(np.float64)


def reduce_cycles(outputs, inputs_per_output, regions, dtype_bytes, tile: Tile, specialisation="default"):
    """Cycles of the reduction vertices on one tile: ``outputs`` output elements in ``regions``
    contiguous regions, each the sum of ``inputs_per_output`` partials already on the tile.
    Regions are split between min(workers, regions) worker vertices; a single region is split
    into min(workers, ceil(outputs / acc)) pieces of whole accumulator vectors::

        workers * (run + reduce_worker_cycles(busiest)) + launch
    """
    out = np.asarray(outputs, dtype=np.int64)
    regions = np.maximum(np.asarray(regions, dtype=np.int64), 1)
    acc = 2 * np.where(np.asarray(dtype_bytes) == 2, 4, 2)
    W = tile.workers
    many = regions > 1
    v_many = np.minimum(W, regions)
    r_many, o_many = _cdiv(regions, v_many), _cdiv(out, regions)
    v_one = np.minimum(W, np.maximum(_cdiv(out, acc), 1))
    o_one = np.minimum(out, acc * _cdiv(_cdiv(out, acc), v_one))
    est = reduce_worker_cycles(np.where(many, r_many, 1), np.where(many, o_many, o_one), inputs_per_output,
                               dtype_bytes, specialisation)
    return _workers_cost(est, tile)


def _reduce_cost(tiles, g, work, tile):
    o = g["outputs"]
    return tiles, reduce_cycles(o, g["inputs_per_output"], _g(g, "regions", 1, o), _g(g, "dtype_bytes", 4, o), tile,
                                _g(g, "specialisation", "default", o))


# --------------------------------------------------------------------------- mul in place
BCAST_SCALAR_WORKER = 20  # broadcastArithmetic1DCycleEstimate: cycles = 20 + loops * cyclesPerLoop
BCAST_MUL_FLOAT_PER_LOOP = 1 + 1  # EOU MULTIPLY/FLOAT {1, natural width} + in-place overhead per loop (1)
VI2D_PRE, VI2D_EXIT, VI2D_PER_ENTRY, VI2D_INPLACE_MUL = 3, 1, 9, 3  # vectorInner2DMulCycles; the 2D in-place MULTIPLY adds 3
VI_CORE_RETURN_BRZ, VI_CORE_PRE, VI_CORE_LOOP = 2, 5, 3 + 5  # vectorInnerMulCoreCycles_float: 1 + 1; 5; per element 3 + 2 blocks + 5
VI_MV_SUPERVISOR = 1 + 6 * 2  # vectorInnerMultiVertexMulCycles: setzi; runall; br
VI_MV_WORKER = 17  # per worker (charged twice in the published estimator: numCycles += 6 * 17 and maxWorkerCycles = 17)
VI_MV_INPLACE_MUL_SUPER, VI_MV_INPLACE_MUL_WORKER = 6, 3  # BroadcastVectorInner1DInPlace, MULTIPLY: addedSuperOverhead, addedWorkerOverhead


def _vector_inner_mul_core(blen, blocks):
    return np.where(blocks == 0, VI_CORE_RETURN_BRZ,
                    VI_CORE_RETURN_BRZ + VI_CORE_PRE + blen * (VI_CORE_LOOP + 2 * blocks))


def mul_in_place_cycles(elements, form, pattern, regions, tile: Tile):
    """Cycles of one tile's share of ``popops::mulInPlace`` (float).

    ``form == "scalar"`` (BroadcastScalar1DInPlace)::

        workers * (20 + ceil(ceil(elements / workers) / 2) * 2) + launch

    ``form == "vector_inner"``: ``pattern`` neurons' factors repeated over ``elements /
    pattern`` blocks in ``regions`` contiguous regions. At most 2 regions: one
    BroadcastVectorInner1DInPlace MultiVertex per region (poplibs sdk-release-2.6, PCE
    ``MAKE_PERF_ESTIMATOR_NAME(BroadcastVectorInner1DInPlace)``, MULTIPLY, calling
    ``vectorInnerMultiVertexMulCycles``), blocksPerWorker = ceil(blocks / workers)::

        13 + workers * 17 + workers * (17 + core(pattern, blocksPerWorker)) + 6 + 3 workers

    more: BroadcastVectorInner2DInPlace workers, the busiest with ceil(regions / min(workers,
    regions)) entries of ``pattern`` x blocks::

        workers * (run + 3 + entries (9 + core(pattern, blocks)) + 1 + 3) + launch
        core(B, c) = 2 + 5 + B (8 + 2 c)        (c > 0; 2 when c == 0)
    """
    e = np.asarray(elements, dtype=np.int64)
    pattern = np.maximum(np.asarray(pattern, dtype=np.int64), 1)
    regions = np.maximum(np.asarray(regions, dtype=np.int64), 1)
    W = tile.workers
    scalar = W * (BCAST_SCALAR_WORKER + _cdiv(_cdiv(e, W), 2) * BCAST_MUL_FLOAT_PER_LOOP) + tile.vertex_launch_cycles
    blocks_region = _cdiv(e, regions * pattern)
    # BroadcastVectorInner1DInPlace (SDK 2.6 estimator): blocksPerWorker = iceil(bBroadcastFactor, workers)
    max_blocks = _cdiv(blocks_region, W)
    sup = regions * (VI_MV_SUPERVISOR + W * VI_MV_WORKER + W * (VI_MV_WORKER + _vector_inner_mul_core(pattern, max_blocks))
                     + VI_MV_INPLACE_MUL_SUPER + W * VI_MV_INPLACE_MUL_WORKER)
    v = np.minimum(W, regions)
    entries = _cdiv(regions, v)
    est = (VI2D_PRE + entries * (VI2D_PER_ENTRY + _vector_inner_mul_core(pattern, blocks_region)) + VI2D_EXIT
           + VI2D_INPLACE_MUL)
    vector = np.where(regions <= 2, sup, _workers_cost(est, tile))
    return np.where(np.asarray(form) == "scalar", scalar, vector).astype(np.float64)


def _mul_in_place_cost(tiles, g, work, tile):
    e = g["elements"]
    return tiles, mul_in_place_cycles(e, _g(g, "form", "scalar", e), _g(g, "pattern", 1, e), _g(g, "regions", 1, e),
                                      tile)


# --------------------------------------------------------------------------- cast
CAST_PROLOGUE = 19  # castWorkerCycles: prologue
CAST_INT_FLOAT_PER_ELEMENT = 2  # opVectorWidth 1 (not the aux pipeline): max(load, store) 1 + 1
CAST1D_SUPERVISOR = 19  # getCast1DCycleEstimate: setzi, runall, sync, br
CAST1D_FROM_SUPERVISOR = 23  # worker entry from the supervisor, exitz and call
CAST1D_ATOM = 4  # workers' shares differ by 4 elements (maxM4 = workerElems - 4)
CAST2D_VERTEX, CAST2D_PER_REGION = 5, 11  # getCast2DCycleEstimate: 5 + per region (11 + castWorkerCycles)


def _cast_worker(n):
    return CAST_PROLOGUE + CAST_INT_FLOAT_PER_ELEMENT * np.asarray(n)


def cast_cycles(elements, regions, tile: Tile):
    """Cycles of one tile's share of ``popops::cast`` between float and 32-bit integers.

    One region: Cast1D MultiVertex, busiest worker ceil(ceil(elements / 4) / workers) * 4::

        19 + workers * (23 + 19 + 2 busiest)

    More: Cast2D workers, the busiest with ceil(regions / min(workers, regions)) regions of
    ceil(elements / regions)::  workers * (run + 5 + regions_w (11 + 19 + 2 size)) + launch
    """
    e = np.asarray(elements, dtype=np.int64)
    regions = np.maximum(np.asarray(regions, dtype=np.int64), 1)
    W = tile.workers
    busiest = CAST1D_ATOM * _cdiv(_cdiv(e, CAST1D_ATOM), W)
    one_d = CAST1D_SUPERVISOR + W * (CAST1D_FROM_SUPERVISOR + _cast_worker(busiest))
    per_w = _cdiv(regions, np.minimum(W, regions))
    two_d = _workers_cost(CAST2D_VERTEX + per_w * (CAST2D_PER_REGION + _cast_worker(_cdiv(e, regions))), tile)
    return np.where(regions <= 1, one_d, two_d).astype(np.float64)


def _cast_cost(tiles, g, work, tile):
    e = g["elements"]
    return tiles, cast_cycles(e, _g(g, "regions", 1, e), tile)


# --------------------------------------------------------------------------- zero
FILL_FLOAT = 16 + 6 + 1  # _fillCycleEstimate (32-bit): 16 pre-loop + size / 2 + 6 post-loop + (size % 2 == 1) + 1
FILL2D_VERTEX = 5  # getFill2DCycleEstimate: 5 + sum(fill) + 1 (not half) - (2 + 1) per region


def _fill(size, dtype_bytes):
    s = np.asarray(size)
    half = np.where(s == 1, 15, np.where(s == 2, 21, 26 + s // 4))
    word = FILL_FLOAT + s // 2 + (s % 2 == 1)
    return np.where(np.asarray(dtype_bytes) == 2, half, word)


def zero_cycles(elements, regions, dtype_bytes, tile: Tile):
    """Cycles of one tile's share of ``popops::zero`` (Fill worker vertices).

    At most ``workers`` regions: the elements split over min(workers, elements) Fill vertices,
    the busiest with ceil(elements / vertices)::  workers * (run + fill(busiest)) + launch,
    fill(s) = 16 + s // 2 + 6 + (s % 2) + 1 (32-bit; half: 15, 21, 26 + s // 4).
    More regions: Fill2d workers with ceil(regions / workers) regions of ceil(elements / regions)::
    workers * (run + 5 + k fill(size) + [not half] - (2 + [not half]) k) + launch
    """
    e = np.asarray(elements, dtype=np.int64)
    regions = np.maximum(np.asarray(regions, dtype=np.int64), 1)
    b = np.asarray(dtype_bytes)
    W = tile.workers
    one = _fill(_cdiv(e, np.minimum(W, np.maximum(e, 1))), b)
    k = _cdiv(regions, W)
    word = (b != 2).astype(np.int64)
    two = FILL2D_VERTEX + k * _fill(_cdiv(e, regions), b) + word - (2 + word) * k
    return _workers_cost(np.where(regions <= W, one, two), tile)


def _zero_cost(tiles, g, work, tile):
    e = g["elements"]
    return tiles, zero_cycles(e, _g(g, "regions", 1, e), _g(g, "dtype_bytes", 4, e), tile)


# --------------------------------------------------------------------------- scalar op
SCALAR_OP_CYCLES_PER_ELEMENT = 6  # EOU SUBTRACT/UNSIGNED_INT {6, not natural width, 1 per loop}; no per-loop overhead


def scalar_op_cycles(elements, cycles_per_element, tile: Tile):
    """BroadcastScalar1D[InPlace] on an integer tensor::

        workers * (20 + ceil(elements / workers) * cycles_per_element) + launch
    """
    e = np.asarray(elements, dtype=np.int64)
    return (tile.workers * (BCAST_SCALAR_WORKER + _cdiv(e, tile.workers) * np.asarray(cycles_per_element))
            + tile.vertex_launch_cycles).astype(np.float64)


def _scalar_op_cost(tiles, g, work, tile):
    e = g.get("elements", np.ones(np.shape(tiles), dtype=np.int64))
    e = np.broadcast_to(np.asarray(e), np.shape(tiles))
    return tiles, scalar_op_cycles(e, _g(g, "cycles_per_element", SCALAR_OP_CYCLES_PER_ELEMENT, e), tile)


# --------------------------------------------------------------------------- poprand uniform
UNIFORM_SUPERVISOR = 4  # "supervisor call"
UNIFORM_PER_WORKER = 22  # "prep cycles per thread"
UNIFORM_PER_PAIR = 6  # "rpt loop cycles per element": 6 per 2 elements
UNIFORM_ODD = 2


def uniform_cycles(elements, tile: Tile):
    """UniformSupervisor<int>, scale != 0::  4 + 22 workers + 6 (elements // 2) + 2 (elements % 2)."""
    e = np.asarray(elements, dtype=np.int64)
    return (UNIFORM_SUPERVISOR + UNIFORM_PER_WORKER * tile.workers + UNIFORM_PER_PAIR * (e // 2)
            + UNIFORM_ODD * (e % 2)).astype(np.float64)


def _uniform_cost(tiles, g, work, tile):
    return tiles, uniform_cycles(g["elements"], tile)



# --------------------------------------------------------------------------- binary ops (add, sub, mul)
# PCE (sdk-release-2.6) internal::binaryOpInnerLoopCycles, MAKE_PERF_ESTIMATOR_NAME(BinaryOp1D),
# internal::getBinaryOp1DInPlaceEstimate, internal::broadcastArithmetic1DCycleEstimate; perf tables
# lib/popops/popopsCycleEstimators.hpp binaryOpPerfInfo / broadcastOpPerfInfo: ADD, SUBTRACT,
# MULTIPLY on float or half = {1 cycle per vector, natural width}, external codelets.
BINARY1D_WORKER = {4: 29, 2: 26}  # BinaryOp1D: workerCycles = float 29, half 26
BINARY1D_INPLACE_WORKER = 58  # getBinaryOp1DInPlaceEstimate: workerCycles = 58
BINARY_EXTERNAL_OVERHEAD = 2  # binaryOpInnerLoopCycles: cyclesPerLoop += 2 (external codelet)
BCAST_EXTERNAL_OVERHEAD = 1  # broadcastArithmetic1DCycleEstimate: overheadPerLoop 1 (external codelet)


def binary_op_cycles(elements, form, in_place, dtype_bytes, tile: Tile):
    """One tile's share of a float/half ADD, SUBTRACT or MULTIPLY on one contiguous region.

    ``form == "tensor"`` (two tensors: BinaryOp1D, BinaryOp1DInPlace)::

        W (29 | 26 [in place: 58] + ceil(ceil(n / W) / vw) (1 + 2)) + launch

    ``form == "scalar"`` (a tensor and a one-element tensor: BroadcastScalar1D[InPlace])::

        W (20 + ceil(ceil(n / W) / vw) (1 + 1)) + launch
    """
    e = np.asarray(elements, dtype=np.int64)
    b = np.asarray(dtype_bytes)
    W = tile.workers
    vw = np.where(b == 2, 4, 2)
    loops = _cdiv(_cdiv(e, W), vw)
    base = np.where(np.asarray(in_place, dtype=bool), BINARY1D_INPLACE_WORKER, np.where(b == 2, 26, 29))
    tensor = W * (base + loops * (1 + BINARY_EXTERNAL_OVERHEAD)) + tile.vertex_launch_cycles
    scalar = W * (BCAST_SCALAR_WORKER + loops * (1 + BCAST_EXTERNAL_OVERHEAD)) + tile.vertex_launch_cycles
    return np.where(np.asarray(form) == "scalar", scalar, tensor).astype(np.float64)


def _binary_op_cost(tiles, g, work, tile):
    e = g["elements"]
    return tiles, binary_op_cycles(e, _g(g, "form", "tensor", e), _g(g, "in_place", False, e),
                                   _g(g, "dtype_bytes", 4, e), tile)

# --------------------------------------------------------------------------- registration
# code_bytes: estimates of the size of poplibs' (mostly assembly) codelets (docs/cost-model.md).
def copy_cycles(elements, regions, dtype_bytes, tile: Tile):
    """An on-tile Copy program: the same bytes moved as a one-slice ``dynamic_slice_cycles``.

    Poplar lowers a Copy between two tensors on one tile to copy vertices whose estimator is not
    public; this assumes they cost what poplibs' DynamicSlice vertices cost to move the same
    regions (docs/cost-model.md, poplibs programs)."""
    return dynamic_slice_cycles(elements, regions, dtype_bytes, 1, tile)


def _copy_cost(tiles, g, work, tile):
    e = g["elements"]
    return tiles, copy_cycles(e, _g(g, "regions", 1, e), _g(g, "dtype_bytes", 4, e), tile)


COPY = register("popops.copy", copy_cycles, code_bytes=256, cost=_copy_cost, static=True)
DYNAMIC_SLICE = register("popops.dynamic_slice", dynamic_slice_cycles, code_bytes=512, cost=_dynamic_slice_cost,
                         static=True)
DYNAMIC_UPDATE = register("popops.dynamic_update", dynamic_update_cycles, code_bytes=512, cost=_dynamic_update_cost,
                          static=True)
REDUCE = register("popops.reduce", reduce_cycles, code_bytes=768, cost=_reduce_cost, static=True)
MUL_IN_PLACE = register("popops.mul_in_place", mul_in_place_cycles, code_bytes=384, cost=_mul_in_place_cost,
                        static=True)
CAST = register("popops.cast", cast_cycles, code_bytes=256, cost=_cast_cost, static=True)
ZERO = register("popops.zero", zero_cycles, code_bytes=192, cost=_zero_cost, static=True)
SCALAR_OP = register("popops.scalar_op", scalar_op_cycles, code_bytes=256, cost=_scalar_op_cost, static=True)
UNIFORM = register("poprand.uniform", uniform_cycles, code_bytes=384, cost=_uniform_cost, static=True)
BINARY_OP = register("popops.binary_op", binary_op_cycles, code_bytes=384, cost=_binary_op_cost, static=True)
