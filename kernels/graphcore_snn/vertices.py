"""The published sparse-BPTT op's own vertices (github jrfinkbeiner/graphcore_snn), counted
from its source as a compiler emits them.

Source: ``custom_lif_multi_layer/custom_lif_layer_vectorize_transpose/custom_codelet.cpp``
at commit 6ea3c8b (50,608 characters; "CC"; ``@cNNNNN`` is a character offset into it, as in
``docs/as-built/graphcore_snn.md``) and ``custom_lif_multi_layer/sparse2dense/custom_codelet.cpp``
at commit 8b38e55 ("S2D"). All are C++ vertices built with ``popc -O3`` (the op's Makefile).
Placement and vertex counts come from ``poplar_code.cpp`` / ``poplar_functions.cpp`` and are
the lowering's business; every cost route here takes one entry per vertex.

Equations (what the vertices compute, per sample b; ``k0 = num[b][0]`` spikes,
``k1 = num[b][1]`` spikes + candidates)::

    F3  I_i = sum_{j < k0} W[id_j, i];  U_i <- c I_i if U_i > theta1 else alpha U_i + c I_i
    F4  flag0_i = U_i > theta1;  flag1_i = theta2 < U_i <= theta1
    F6  worker list = first Kw flagged ids of the worker's neuron range (ascending)
    F7  tile list   = its workers' lists concatenated, truncated at Kc
    F8  list        = threshold-0 tile lists, truncated at K (num0); then, if room is left,
                      threshold-1 tile lists appended, truncated at K (num1)
    B4  dU_id += dS_j / (beta |U_id - theta1| + 1)^2   for j < k1, id = ids[j]  (beta = 10)
    B7  dW_w[id_j, :] += dI                             for j < k0 (w = the sample's worker)
    B8  dx_j = sum_{i on tile} W[id_j, i] dI_i          for j < k1
    B9  r_{g,b,j} = sum_{p in group g} dx_{p,b,j}       if j < k1

The compiled-code rules (docs/cost-model.md, "The published op's vertices"), checked against
popc's back end (github graphcore/llvm-project-fork, ``llvm/lib/Target/Colossus``, its lit tests):

* C1. Every machine operation is one instruction; a float (aux-pipeline) instruction may share a
  bundle with a non-branch main-pipeline instruction of the same loop body. popc co-issues by default
  for worker code (``ColossusCoissuePass.cpp``, ``colossus-coissue`` ``cl::init(true)``; test
  ``coissue.ll``) with a scheduler that interleaves the two pipelines; a bundle cannot start with a
  branch or a call. ``PAIRABLE`` counts, per count, the float instructions that can have such a
  partner given the dependences (see its comment); the share of them that are bundled is the named
  assumption ``compiled_coissue_fraction``
  (1, range 0-1: 0 is the no-co-issue count). Loads and stores are one instruction each; their latency
  is hidden by the barrel.
* C2. ``-O3`` hoists loop-invariant loads and removes dead code (CC's ``random_offset`` in
  ``DenseToSparseSpikes`` is never used, so it is never loaded).
* C3. A counted loop costs one ``brnzdec`` per iteration plus 2 to set up (zero test, count); a loop
  with a data-dependent ``break`` adds its compare and branch. popc makes an ``rpt`` loop (no branch)
  only when the trip count provably fits the repeat counter (lit test
  ``T41788_builtin_assume_hwloop_64b_counter.c``); CC's counts are 32-bit vertex fields with no
  ``__builtin_assume``, so its loops are ``brnzdec`` loops.
* C4. An access ``a[x]`` with a loaded index ``x`` is one load or store: the IPU scales a register
  index by the access size (popc's ``f32-memory.ll``: ``ld32 $a0, $m0, $m15, $m1`` for ``ptr[off]``;
  poplibs ``BinarySearch.S`` ``indicesPtr[mid]``). A pointer formed for an inner loop
  (base + x * stride, walked by post-increment) pays its multiply, shift and add once per x.
* C5. A float ``if`` costs compare, move to the integer side, branch (3).
* C6. ``f32div`` costs 3 (poplibs popopsCycleEstimators.cpp, vectorInnerDivCoreCycles_float:
  "3 cycles for each 'f32div' instruction").
* C7. A field read costs its vertex-state load: 1 for a pointer (``Vector``, ``ONE_PTR``), 2 for
  a scalar ``Input<T>`` (pointer, then value). Vertex entry and exit are
  ``kernels.tile.WORKER_VERTEX_OVERHEAD``; the supervisor's ``run`` is ``VERTEX_RUN_INSTRUCTIONS``.

Every worker vertex is dealt to the workers of its tile by ``kernels.tile.deal_vertices``;
``LIFWeightsGradMultiNeuron`` (odd n) is a MultiVertex (``kernels.tile.multi_vertex_cycles``).
"""
from __future__ import annotations

import numpy as np

from ..assumed import NOTHING, Pinned
from ..codelet import register
from .._jit import njit, numba_loaded
from ..tile import (Tile, VERTEX_RUN_INSTRUCTIONS, WORKER_VERTEX_OVERHEAD, busiest_workers, deal_jobs, deal_plan,
                   deal_sample_grid, deal_vertices, multi_vertex_cycles)

# --------------------------------------------------------------------------- co-issue (C1)
# Per count, the float (aux) instructions that a non-branch main-pipeline instruction can carry in the
# same bundle, given the dependences in the count's sequence below: a float op cannot share a bundle with
# the load it reads or the store that reads it; a loop with no store pipelines across iterations (popc runs
# the MachinePipeliner), so a float op pairs with the next iteration's load; a float store keeps later float
# loads behind it (the fields are not restrict and have one type), while unsigned id loads move past it
# (type-based alias analysis); calls (the soft-double routines) and branches end a bundle's reach.
PAIRABLE = {"SU2_SETUP": 1,  # zero the accumulator beside a pointer load
            "SU2_PER_SPIKE": 1,  # f32v2add beside the next id's ld32
            "SU_PER_NEURON": 3, "SU_NEURON_UNROLLED": 3,  # compare, both multiplies beside loads / the move; not the add feeding the store
            "SUM_PAIR_OVERHEAD": 1, "SUM_PER_SPIKE": 1, "SUM_TAIL_OVERHEAD": 1, "SUM_TAIL_PER_SPIKE": 1,
            "DS_INSTRUCTIONS": 1,  # the compare beside a field load
            "SOG_PER_ID": 2,  # of six: two float ops beside independent loads; the calls split the rest
            "WG2_PER_SPIKE": 1, "WGS_PER_SPIKE": 1,  # the add beside the next id's ld32 (WGM's pair loop: none)
            "IG2_PER_ID": 1, "IGM_PER_ID": 1,  # the multiply beside the next id's ld32 / the inner setup
            "IGM_PER_EXTRA_PAIR": 1, "IGS_PER_ID": 1, "IGS_PER_NEURON": 2,  # no store: pipelined
            "RS_ACTIVE": 1, "RS_PER_VECTOR": 1, "RS8_ACTIVE": 2}  # RS8: one chain of four loads and three adds
COISSUE_FRACTION = 1.0  # the named assumption compiled_coissue_fraction (mimdsim/assumptions.py)


def issued(name: str, pinned: Pinned = NOTHING) -> float:
    """The count ``name`` as popc issues it: its instructions less the bundled share of its pairable
    float instructions (``compiled_coissue_fraction`` x ``PAIRABLE[name]``; C1), as ``pinned`` holds it."""
    return globals()[name] - pinned.get("compiled_coissue_fraction", COISSUE_FRACTION) * PAIRABLE.get(name, 0)


# --------------------------------------------------------------------------- F3 state update
# LIFStateUpdateInPlaceTwoNeuronSIMD (CC @c45844), n == 2
SU2_SETUP = 7  # zero the float2 accumulator (1); ld num_inp_spikes ptr + value (2); ld weights, ids ptrs (2); loop setup (2)
SU2_PER_SPIKE = 4  # ld32 id (post-inc); ld64 weights2[id] (scaled index, C4); f32v2add; brnzdec
SU_NEURON_SETUP = 9  # ld state, threshold, decay, oneMinus ptrs (4); num_neurons ptr + value (2); st64 syn pair to the stack (it is indexed by a runtime neuron index) (1); loop setup (2)
SU_PER_NEURON = 13  # ld state; ld threshold; f32cmpgt, move, branch (3); ld decay; mul; ld oneMinus; ld syn; mul; add; st state; brnzdec (no-reset path)
# LIFStateUpdateInPlaceMultiNeuronSIMD (CC @c47882), n != 2
SUM_SETUP = 15  # ld weights, state, ids ptrs (3); num_inp_spikes (2); decay, oneMinus, threshold ptrs (3); num_neurons (2); shr n/2 (1); pair-loop setup (2); odd-n test (2)
SUM_PAIR_OVERHEAD = 5  # zero accumulator (1); spike-loop setup (2); st64 accumulator to the stack (1); pair brnzdec (1)
SUM_PER_SPIKE = 6  # ld32 id; mul by n/2 (the source's "store ... to not always recompute it"); add pair; ld64 (scaled index); f32v2add; brnzdec
SU_NEURON_UNROLLED = 12  # SU_PER_NEURON without its brnzdec: the 2-neuron loop has a constant trip count and is unrolled
SUM_TAIL_OVERHEAD = 3  # odd n: zero the scalar sum (1); loop setup (2)
SUM_TAIL_PER_SPIKE = 6  # ld32 id; mul n; add neuron; ld32 weight (scaled index); f32add; brnzdec


def state_update_instructions(n, in_spikes, pinned: Pinned = NOTHING):
    """Instructions of one ``LIFStateUpdateInPlace*`` vertex (one per neuron tile and sample).

    n == 2 (TwoNeuronSIMD)::  SU2_SETUP + k (SU2_PER_SPIKE) + SU_NEURON_SETUP + 2 SU_PER_NEURON
    else (MultiNeuronSIMD)::  SUM_SETUP + n//2 (SUM_PAIR_OVERHEAD + k SUM_PER_SPIKE + 2 SU_NEURON_UNROLLED)
                              + (n % 2) (SUM_TAIL_OVERHEAD + k SUM_TAIL_PER_SPIKE + SU_NEURON_UNROLLED)

    with k = ``in_spikes`` (count[0] of the sample's input list): the multi-neuron vertex
    re-reads the id list once per neuron pair (and once more for an odd tail).
    """
    n = np.asarray(n)
    pairs, odd = n // 2, n % 2
    per_neuron, unrolled = issued("SU_PER_NEURON", pinned), issued("SU_NEURON_UNROLLED", pinned)
    # affine in k: per-vertex constant and slope from n, then one pass over [..., V]
    const = np.where(n == 2, issued("SU2_SETUP", pinned) + SU_NEURON_SETUP + 2 * per_neuron,
                     SUM_SETUP + pairs * (issued("SUM_PAIR_OVERHEAD", pinned) + 2 * unrolled)
                     + odd * (issued("SUM_TAIL_OVERHEAD", pinned) + unrolled)).astype(np.float64)
    slope = np.where(n == 2, issued("SU2_PER_SPIKE", pinned),
                     pairs * issued("SUM_PER_SPIKE", pinned) + odd * issued("SUM_TAIL_PER_SPIKE", pinned)).astype(np.float64)
    return const + slope * np.asarray(in_spikes, dtype=np.float64)


def state_update_cycles(vertex_tiles, n, in_spikes, tile: Tile):
    """(tiles, cycles) of F3: ``state_update_instructions`` + vertex overhead, dealt to workers."""
    return deal_vertices(vertex_tiles, state_update_instructions(n, in_spikes, tile.pinned) + WORKER_VERTEX_OVERHEAD,
                         tile)


def _grid(g, work, key):
    """(tiles, per-sample work) of a sample-major (sample, tile) grid of vertices: geometry ``grid``
    holds the tiles, and the work is given per sample (``[..., B]``), not per vertex."""
    return g["grid"], np.asarray(work[key])


def _state_update_cost(tiles, g, work, tile):
    if "grid" in g:  # one vertex per (sample, tile): affine in the sample's input spikes
        t, x = _grid(g, work, "in_spikes")
        n = np.asarray(g["n"])[: len(t)]
        const = state_update_instructions(n, 0, tile.pinned) + WORKER_VERTEX_OVERHEAD
        return deal_sample_grid(t, const, state_update_instructions(n, 1, tile.pinned) + WORKER_VERTEX_OVERHEAD - const,
                                x, tile)
    return state_update_cycles(tiles, g["n"], work["in_spikes"], tile)


# --------------------------------------------------------------------------- F4 threshold flags
# DenseSpikesMultiThresh<float> (CC @c18415), one per (neuron, sample)
DS_INSTRUCTIONS = 12  # ld state, first_thresh, second_thresh (scalar Inputs: 2 each = 6); ld dense_spikes ptr (1); f32cmpgt, move, branch (3); st32 zero x2 (2): the common, unflagged path
DS_FLAGGED_EXTRA = 4  # a flagged neuron: the second compare (3) and the constant 1 (1); not charged (static)


def dense_spikes_cycles(vertex_tiles, tile: Tile):
    """(tiles, cycles) of F4: DS_INSTRUCTIONS + vertex overhead per vertex, dealt to workers."""
    vertex_tiles = np.asarray(vertex_tiles)
    return deal_vertices(vertex_tiles, np.full(vertex_tiles.shape, issued("DS_INSTRUCTIONS", tile.pinned) + WORKER_VERTEX_OVERHEAD,
                                               float), tile)


def _dense_spikes_cost(tiles, g, work, tile):
    return dense_spikes_cycles(tiles, tile)


# --------------------------------------------------------------------------- F6 scan
# DenseToSparseSpikes<unsigned> (CC @c19575), one per (sample, threshold, worker)
D2S_SETUP = 13  # ld dense_spikes, ids, num ptrs (3); num_dense_spikes, sparse_size, start_id (2 each = 6); zero counter (1); loop setup (2); st32 count (1)
D2S_PER_FLAG = 4  # ld32 flag (post-inc); brz; add state_id; brnzdec
D2S_PER_HIT = 4  # st32 id (post-inc); add counter; cmp counter >= sparse_size; branch (break)


def dense_to_sparse_instructions(scanned, found):
    """D2S_SETUP + scanned * D2S_PER_FLAG + found * D2S_PER_HIT.

    ``scanned``: flags read before the loop stops (the worker's width, or the position of its
    cap-th hit); ``found``: ids written (<= cap).
    """
    return D2S_SETUP + np.asarray(scanned, dtype=np.float64) * D2S_PER_FLAG + np.asarray(found) * D2S_PER_HIT


def dense_to_sparse_cycles(vertex_tiles, scanned, found, tile: Tile):
    """(tiles, cycles) of F6, dealt to workers."""
    return deal_vertices(vertex_tiles, dense_to_sparse_instructions(scanned, found) + WORKER_VERTEX_OVERHEAD, tile)


def _dense_to_sparse_cost(tiles, g, work, tile):
    scanned, found = np.asarray(work["scanned"]), np.asarray(work["found"])
    if (scanned > g["width"]).any() or (found > g["cap"]).any():  # a work source's error: never clamp it away
        raise ValueError("dense_to_sparse work exceeds its vertices' ranges: scanned > width or found > cap")
    return dense_to_sparse_cycles(tiles, scanned, found, tile)


# --------------------------------------------------------------------------- F7, F8 combines
COMBINE_SETUP = 15  # ld 4 field ptrs (4); num_workers, sparse_size, worker_size (2 each = 6); zero counter, start (2); loop setup (2); st32 count (1)
COMBINE_PER_LIST = 12  # ld count; add; cmp >= sparse_size; sub; select numIter; list address (add); copy-loop setup (2); counter += numIter; branch terminate; start += worker_size; brnzdec
COMBINE_PER_ID = 3  # ld32; st32 (both post-inc); brnzdec
COMBINE2_SETUP = 21  # ld 6 field ptrs (6); 3 scalar fields (6); zero counter, start (2); loop setup (2); st num[0] (1); reset start (1); test counter < sparse_size (2); st num[1] (1)
COMBINE2_SECOND_PASS = 2  # the second pass's loop setup


def combine_worker_lists_instructions(lists, copied):
    """LIFOutSpikesMultiThreshsCombine_singleThresh (CC @c27495), one per (sample, threshold,
    spread tile): COMBINE_SETUP + lists * COMBINE_PER_LIST + copied * COMBINE_PER_ID."""
    return COMBINE_SETUP + np.asarray(lists) * COMBINE_PER_LIST + np.asarray(copied, dtype=np.float64) * COMBINE_PER_ID


def combine_lists_instructions(lists, copied, second_pass):
    """LIFOutSpikesMultiThreshsCombine (CC @c25157), one per sample::

        COMBINE2_SETUP + lists * COMBINE_PER_LIST
        + second_pass * (COMBINE2_SECOND_PASS + lists * COMBINE_PER_LIST) + copied * COMBINE_PER_ID

    ``copied``: ids copied in both passes (num[1]); ``second_pass``: 1 when the list was not
    full after the spikes (num[0] < K) and the candidate loop ran.
    """
    sp = np.asarray(second_pass, dtype=np.float64)
    lists = np.asarray(lists)
    return (COMBINE2_SETUP + lists * COMBINE_PER_LIST + sp * (COMBINE2_SECOND_PASS + lists * COMBINE_PER_LIST)
            + np.asarray(copied) * COMBINE_PER_ID)


def combine_worker_lists_cycles(vertex_tiles, lists, copied, tile: Tile):
    """(tiles, cycles) of F7: ``combine_worker_lists_instructions`` + vertex overhead, dealt to workers."""
    return deal_vertices(vertex_tiles, combine_worker_lists_instructions(lists, copied) + WORKER_VERTEX_OVERHEAD, tile)


def combine_lists_cycles(vertex_tiles, lists, copied, second_pass, tile: Tile):
    """(tiles, cycles) of F8: ``combine_lists_instructions`` + vertex overhead, dealt to workers."""
    return deal_vertices(vertex_tiles, combine_lists_instructions(lists, copied, second_pass) + WORKER_VERTEX_OVERHEAD,
                         tile)


def _combine_worker_lists_cost(tiles, g, work, tile):
    return combine_worker_lists_cycles(tiles, g["lists"], work["copied"], tile)


def _combine_lists_cost(tiles, g, work, tile):
    return combine_lists_cycles(tiles, g["lists"], work["copied"], work["second_pass"], tile)


# --------------------------------------------------------------------------- B4 surrogate
# LIFStateOutGrad<float> (CC @c31109) calling superspike_surrogate (CC @c30909)
SOG_SETUP = 10  # ld 5 field ptrs (5); end (2); beta constant (1); loop setup (2)
SOG_PER_ID = 13  # ld32 idx; ld state[idx] (scaled index); ld threshold[idx]; f32sub; f32abs; mul beta; add 1; ld dLdout[i]; f32mul; ld dLdState[idx]; f32add; st; brnzdec
# 1 / std::pow(beta |x| + 1, 2): std::pow(float, int) is the C++11 overload that promotes both
# arguments to double ([c.math]); LLVM folds pow(x, 2.0) to x * x (SimplifyLibCalls,
# optimizePow: exact, no fast-math needed) but in double, and InstCombine cannot narrow the
# 1.0 / (double product) back to float (its divisor is not an fpext). The IPU has no double
# hardware, so the square, the divide and the conversions are soft-float library calls.
SOFT_F64_EXTEND = 20  # __extendsfdf2, call included (unknown; assumption: compiler-rt's generic C, normal operands)
SOFT_F64_MUL = 130  # __muldf3: unpack + checks ~25, 64x64->128 multiply from 32-bit halves ~70, round/pack ~30, call ~4 (unknown; assumption)
SOFT_F64_DIV = 320  # __divdf3: compiler-rt divdf3.c, 3 half-width + 1 full Newton-Raphson iterations and the final wide multiply (unknown; assumption)
SOFT_F64_TRUNC = 35  # __truncdfsf2, rounding on two words, call included (unknown; assumption)
SURROGATE_SOFT_DOUBLE = SOFT_F64_EXTEND + SOFT_F64_MUL + SOFT_F64_DIV + SOFT_F64_TRUNC  # 505: the as-compiled default
SURROGATE_FLOAT = 4  # the alternative: square and reciprocal kept in float: f32mul (1) + f32div (3)
SURROGATES = {"double": SURROGATE_SOFT_DOUBLE, "float": SURROGATE_FLOAT}


def state_out_grad_instructions(listed, surrogate="double", pinned: Pinned = NOTHING):
    """SOG_SETUP + listed * (SOG_PER_ID + surrogate arithmetic); ``listed`` = count[1]. The double path's
    count is the named assumption ``surrogate_arithmetic_instructions`` (mimdsim/assumptions.py; its
    value is SURROGATE_SOFT_DOUBLE), read at cost time so that a band or ``--assume`` can move it."""
    arith = (pinned.get("surrogate_arithmetic_instructions", SURROGATE_SOFT_DOUBLE) if surrogate == "double"
             else SURROGATES[surrogate])
    return SOG_SETUP + np.asarray(listed, dtype=np.float64) * (issued("SOG_PER_ID", pinned) + arith)


def state_out_grad_cycles(vertex_tiles, listed, tile: Tile, surrogate="double"):
    """(tiles, cycles) of B4: ``state_out_grad_instructions`` + vertex overhead, dealt to workers."""
    return deal_vertices(vertex_tiles, state_out_grad_instructions(listed, surrogate, tile.pinned)
                         + WORKER_VERTEX_OVERHEAD, tile)


def _state_out_grad_cost(tiles, g, work, tile):
    return state_out_grad_cycles(tiles, work["listed"], tile, g.get("surrogate", "double"))


# --------------------------------------------------------------------------- B7 weight gradient
# LIFWeightsGradTwoNeuronSIMD (CC @c40354), n == 2
WG_SETUP = 10  # ld dLdState, ids, nums, dLdweights ptrs (4); sparse_out_dim, batchsize (2 each); sample-loop setup (2)
WG_PER_SAMPLE = 7  # ld count[0]; ld64 dL/dI pair (post-inc); id pointer (add start_idx; add); spike-loop setup (2); brnzdec
WG2_PER_SPIKE = 5  # ld32 id; ld64 dW pair (scaled index); f32v2add; st64; brnzdec
# LIFWeightsGradMultiNeuronSIMD (CC @c41810), even n > 2
WGM_SETUP = 13  # WG_SETUP + num_neurons (2) + shr n/2 (1)
WGM_PER_SPIKE = 7  # ld32 id; mul n/2; shl 3; add base (a pointer the pair loop walks, C4); pair-loop setup (2); brnzdec
WGM_PER_PAIR = 5  # ld64 dW; ld64 dL/dI; f32v2add; st64; brnzdec
# LIFWeightsGradMultiNeuron<float> MultiVertex (CC, after @c33263), odd n: per worker
WGS_SETUP = 13  # numWorkers (1); ld 4 ptrs (4); sparse_out_dim, batchsize, num_neurons (2 each); neuron-loop setup (2)
WGS_PER_NEURON = 7  # start indices (2); sample-loop setup (2); ineuron += numWorkers, compare, branch (3)
WGS_PER_SAMPLE = 7  # ld dLdS; ld count[0]; spike-loop setup (2); two index bumps (2); brnzdec
WGS_PER_SPIKE = 7  # ld32 id; mul num_neurons; add ineuron; ld32 dW (scaled index); f32add; st32; brnzdec


def weights_grad_instructions(n, samples, in_spikes, pinned: Pinned = NOTHING):
    """Instructions of one ``LIFWeightsGrad*`` worker vertex (6 per tile, one per worker),
    ``samples`` samples of ``in_spikes`` real input spikes (count[0]) in total::

        n == 2:   WG_SETUP + samples WG_PER_SAMPLE + spikes WG2_PER_SPIKE
        even n:   WGM_SETUP + samples WG_PER_SAMPLE + spikes (WGM_PER_SPIKE + n/2 WGM_PER_PAIR)
        odd n:    busiest worker of the MultiVertex, m = ceil(n / 6) neurons:
                  WGS_SETUP + m (WGS_PER_NEURON + samples WGS_PER_SAMPLE + spikes WGS_PER_SPIKE)
    """
    const, per_spike = _weights_grad_affine(n, samples, pinned)
    return const + np.asarray(in_spikes, dtype=np.float64) * per_spike


def _weights_grad_affine(n, samples, pinned: Pinned):
    """``(const, per_spike)`` per vertex: ``weights_grad_instructions = const + in_spikes * per_spike``
    (the three variants above, regrouped; integer counts, so exactly equal)."""
    n = np.asarray(n)
    s = np.asarray(samples, dtype=np.float64)
    m = -(-n // 6)
    const = np.where(n == 2, WG_SETUP + s * WG_PER_SAMPLE,
                     np.where(n % 2 == 0, WGM_SETUP + s * WG_PER_SAMPLE,
                              WGS_SETUP + m * (WGS_PER_NEURON + s * WGS_PER_SAMPLE)))
    per_spike = np.where(n == 2, issued("WG2_PER_SPIKE", pinned),
                         np.where(n % 2 == 0, WGM_PER_SPIKE + (n // 2) * WGM_PER_PAIR,
                                  m * issued("WGS_PER_SPIKE", pinned)))
    return const.astype(np.float64), per_spike.astype(np.float64)


def _by_kind(tiles, kind_mask, instr, tile, vertex_kind, multi_kind):
    """Cost vertices of two kinds (worker vertices, MultiVertex instances) on disjoint tiles."""
    tiles = np.asarray(tiles)
    out_t, out_c = [], []
    for mask, fn in ((~kind_mask, vertex_kind), (kind_mask, multi_kind)):
        if mask.any():
            t, c = fn(tiles[mask], instr[..., mask] + WORKER_VERTEX_OVERHEAD, tile)
            out_t.append(t)
            out_c.append(c)
    if len(out_t) == 1:
        return out_t[0], out_c[0]
    return np.concatenate(out_t), np.concatenate(out_c, axis=-1)


def weights_grad_cycles(vertex_tiles, n, samples, in_spikes, tile: Tile):
    """(tiles, cycles) of B7: worker vertices dealt to workers (n even); MultiVertex instances
    one after another (n odd)."""
    n = np.asarray(n)
    instr = np.broadcast_to(weights_grad_instructions(n, samples, in_spikes, tile.pinned),
                            np.shape(in_spikes)[:-1] + n.shape)
    return _by_kind(vertex_tiles, n % 2 == 1, instr, tile, deal_vertices, multi_vertex_cycles)


def _weights_grad_cost(tiles, g, work, tile):
    return weights_grad_cycles(tiles, g["n"], g["samples"], work["in_spikes"], tile)


# --------------------------------------------------------------------------- B8 input gradient
# LIFInpSpikesGradTwoRowSIMD (CC @c43664), n == 2
IG2_SETUP = 9  # ld weights, dLdStates, ids, out ptrs (4); end (2); ld64 dL/dI pair (hoisted) (1); loop setup (2)
IG2_PER_ID = 6  # ld32 id; ld64 W pair (scaled index); f32v2mul; add the two lanes; st32; brnzdec
# LIFInpSpikesGradMultiRowSIMD (CC @c44630), even n > 2
IGM_SETUP = 11  # IG2_SETUP + num_iters (2)
IGM_PER_ID = 11  # ld32 id; mul num_iters; shl 3; add base (the row pointer the inner loop walks, C4); ld64; f32v2mul; inner-loop setup (2); lane add; st32; brnzdec
IGM_PER_EXTRA_PAIR = 4  # ld64; f32v2mul; f32v2add; brnzdec (num_iters - 1 times)
# LIFInpSpikesGradMultiRow<float> (CC @c36736), odd n
IGS_SETUP = 10  # ld 4 ptrs (4); num_neurons, end (2 each); loop setup (2)
IGS_PER_ID = 9  # ld32 id; mul n; shl 2; add base (the row pointer, C4); zero sum; neuron-loop setup (2); st32; brnzdec
IGS_PER_NEURON = 5  # ld32 dL/dI; ld32 W; f32mul; f32add; brnzdec (not vectorised: an odd row is not 8-byte aligned)


def inp_spikes_grad_instructions(n, in_listed, pinned: Pinned = NOTHING):
    """Instructions of one ``LIFInpSpikesGrad*`` vertex (one per neuron tile and sample) over
    m = ``in_listed`` (count[1] of the input list)::

        n == 2:  IG2_SETUP + m IG2_PER_ID
        even n:  IGM_SETUP + m (IGM_PER_ID + (n/2 - 1) IGM_PER_EXTRA_PAIR)
        odd n:   IGS_SETUP + m (IGS_PER_ID + n IGS_PER_NEURON)
    """
    n = np.asarray(n)
    even = n % 2 == 0
    const = np.where(n == 2, IG2_SETUP, np.where(even, IGM_SETUP, IGS_SETUP)).astype(np.float64)
    slope = np.where(n == 2, issued("IG2_PER_ID", pinned),
                     np.where(even, issued("IGM_PER_ID", pinned) + (n // 2 - 1) * issued("IGM_PER_EXTRA_PAIR", pinned),
                              issued("IGS_PER_ID", pinned) + n * issued("IGS_PER_NEURON", pinned))).astype(np.float64)
    return const + slope * np.asarray(in_listed, dtype=np.float64)


def inp_spikes_grad_cycles(vertex_tiles, n, in_listed, tile: Tile):
    """(tiles, cycles) of B8: ``inp_spikes_grad_instructions`` + vertex overhead, dealt to workers."""
    return deal_vertices(vertex_tiles, inp_spikes_grad_instructions(n, in_listed, tile.pinned)
                         + WORKER_VERTEX_OVERHEAD, tile)


def _inp_spikes_grad_cost(tiles, g, work, tile):
    if "grid" in g:  # one vertex per (sample, tile): affine in the sample's listed inputs
        t, x = _grid(g, work, "in_listed")
        n = np.asarray(g["n"])[: len(t)]
        const = inp_spikes_grad_instructions(n, 0, tile.pinned) + WORKER_VERTEX_OVERHEAD
        return deal_sample_grid(t, const, inp_spikes_grad_instructions(n, 1, tile.pinned) + WORKER_VERTEX_OVERHEAD - const, x,
                                tile)
    return inp_spikes_grad_cycles(tiles, g["n"], work["in_listed"], tile)


# --------------------------------------------------------------------------- B9 stage-1 reduce
# CustomSparseReduceStage1<float> (CC @c38891); ...FloatSIMD8 (CC @c39695) when 8 inputs
RS_SETUP = 10  # ld dLdx, out ptrs (2); num_grads, isparse, end (2 each); cmp isparse < num_grads, branch (2)
RS_ACTIVE = 5  # zero sum; loop setup (2); add the two lanes; st32
RS_PER_VECTOR = 3  # ld64; f32v2add; brnzdec (vectorize(enable): float2 steps)
RS_PER_REMAINDER = 2  # odd input count: ld32; f32add
RS8_SETUP = 8  # ld dLdx, out ptrs (2); num_grads, isparse (2 each); cmp, branch (2)
RS8_ACTIVE = 9  # 4 ld64; 3 f32v2add; lane add; st32


def reduce_stage1_instructions(inputs, active, pinned: Pinned = NOTHING):
    """One stage-1 vertex (one per group, sample and list slot) summing ``inputs`` partials::

        inputs == 8: RS8_SETUP + active RS8_ACTIVE
        otherwise:   RS_SETUP + active (RS_ACTIVE + inputs // 2 RS_PER_VECTOR + inputs % 2 RS_PER_REMAINDER)

    ``active`` is 1 when the slot is below the count (slot < num[1]), else 0: an inactive
    vertex still launches and tests. ``CustomSparseReduceStage1FloatSIMD5`` (poplar_code.cpp,
    5 inputs) is not in CC; 5 inputs take the generic loop.
    """
    setup, per_active = _reduce_stage1_affine(inputs, pinned)
    return setup + np.asarray(active, dtype=np.float64) * per_active


def _reduce_stage1_affine(inputs, pinned: Pinned):
    """``(setup, per_active)`` per vertex: ``reduce_stage1_instructions = setup + active * per_active``
    (static per vertex; one multiply-add per iteration)."""
    e = np.asarray(inputs)
    eight = e == 8
    setup = np.where(eight, RS8_SETUP, RS_SETUP).astype(np.float64)
    per_active = np.where(eight, issued("RS8_ACTIVE", pinned),
                          issued("RS_ACTIVE", pinned) + (e // 2) * issued("RS_PER_VECTOR", pinned)
                          + (e % 2) * RS_PER_REMAINDER).astype(np.float64)
    return setup, per_active


def reduce_stage1_cycles(vertex_tiles, inputs, active, tile: Tile):
    """(tiles, cycles) of B9: ``reduce_stage1_instructions`` + vertex overhead, dealt to workers."""
    setup, per_active = _reduce_stage1_affine(inputs, tile.pinned)  # instructions + overhead + run in one pass
    return deal_jobs(vertex_tiles, (setup + (WORKER_VERTEX_OVERHEAD + VERTEX_RUN_INSTRUCTIONS))
                     + np.asarray(active, dtype=np.float64) * per_active, tile)


def _reduce_stage1_cost(tiles, g, work, tile):
    """``active`` per vertex, or the input list's ``in_listed`` per sample: a vertex is active
    when its list slot is below its sample's count (``slot < in_listed[sample]``)."""
    if "active" in work:
        return reduce_stage1_cycles(tiles, g["inputs"], work["active"], tile)
    listed = np.asarray(work["in_listed"])
    if listed.ndim == 2 and numba_loaded():  # a loop's iterations: gate, sum and deal in one compiled pass
        order, uniq, _, _, _, _, job_slot = deal_plan(np.asarray(tiles), tile.workers)
        setup, per_active = _reduce_stage1_affine(g["inputs"], tile.pinned)
        out = np.empty((listed.shape[0], uniq.size))
        base = setup + (WORKER_VERTEX_OVERHEAD + VERTEX_RUN_INSTRUCTIONS)
        _reduce_stage1_rows(base[order], per_active[order], np.asarray(g["slot"], dtype=np.int64)[order],
                            np.asarray(g["sample"], dtype=np.int64)[order], listed.astype(np.int64), job_slot,
                            uniq.size, tile.workers, float(tile.vertex_launch_cycles), out)
        return uniq, out
    active = (g["slot"] < listed[..., g["sample"]]).astype(np.int64)
    return reduce_stage1_cycles(tiles, g["inputs"], active, tile)


@njit(cache=True)
def _reduce_stage1_rows(base, per_active, slot, sample, listed, job_slot, U, W, launch, out):
    """``deal_jobs`` of ``base + active * per_active`` with ``active = slot < listed[i, sample]``,
    per iteration i, without the ``[iterations, vertices]`` arrays (same sums, same order; the
    vertex arrays come in the deal plan's grouped order)."""
    per = np.zeros(U * W)
    for i in range(listed.shape[0]):
        per[:] = 0.0
        for j in range(job_slot.shape[0]):
            a = 1.0 if slot[j] < listed[i, sample[j]] else 0.0
            per[job_slot[j]] += base[j] + a * per_active[j]
        busiest_workers(per, U, W, launch, out[i])


# --------------------------------------------------------------------------- Keras sparse2dense
# Sparse2Dense<float> and Sparse2DenseGradMultiThresh<float> (S2D), one per (t, b)
S2D_SETUP = 7  # ld spikeIds, denseSpikes ptrs (2); numSpikes (2); the constant 1.0 (1); loop setup (2)
S2D_PER_SPIKE = 3  # ld32 id; st32 1.0 (scaled index); brnzdec
S2DG_SETUP = 11  # ld 3 ptrs (3); num_nz, end (2 each); two loop setups (4)
S2DG_PER_GATHER = 4  # ld32 id; ld32 dL/dDense[id] (scaled index); st32; brnzdec
S2DG_PER_ZERO = 2  # st32 0; brnzdec (slots past num_nz; the static cost charges every slot as a gather)


def sparse2dense_instructions(spikes):
    """S2D_SETUP + spikes * S2D_PER_SPIKE (``spikes`` = count[0] of the output list)."""
    return S2D_SETUP + np.asarray(spikes, dtype=np.float64) * S2D_PER_SPIKE


def sparse2dense_grad_instructions(k):
    """S2DG_SETUP + k * S2DG_PER_GATHER: the op's counts have 2 entries, so the gradient uses
    ``Sparse2DenseGradMultiThresh`` (num_nz = count[1] gathers, the rest zeroed); static, so
    every one of the K slots is charged as a gather (an upper bound by k (5 - 2))."""
    return S2DG_SETUP + np.asarray(k, dtype=np.float64) * S2DG_PER_GATHER


def sparse2dense_cycles(vertex_tiles, spikes, tile: Tile):
    """(tiles, cycles) of Sparse2Dense: ``sparse2dense_instructions`` + vertex overhead, dealt to workers."""
    return deal_vertices(vertex_tiles, sparse2dense_instructions(spikes) + WORKER_VERTEX_OVERHEAD, tile)


def sparse2dense_grad_cycles(vertex_tiles, k, tile: Tile):
    """(tiles, cycles) of Sparse2DenseGradMultiThresh: ``sparse2dense_grad_instructions`` + vertex
    overhead, dealt to workers."""
    k = np.broadcast_to(np.asarray(k), np.shape(vertex_tiles))
    return deal_vertices(vertex_tiles, sparse2dense_grad_instructions(k) + WORKER_VERTEX_OVERHEAD, tile)


def _sparse2dense_cost(tiles, g, work, tile):
    return sparse2dense_cycles(tiles, work["spikes"], tile)


def _sparse2dense_grad_cost(tiles, g, work, tile):
    return sparse2dense_grad_cycles(tiles, g["k"], tile)


# --------------------------------------------------------------------------- the work counts
def spike_generation(U, theta1, theta2, K, spread, workers_per_tile=6):
    """F4-F8 of one layer and timestep, as the published op computes them, with the work
    counts of their vertices (numpy, all samples at once).

    ``U[B, N]``; thresholds scalars or ``[N]``; ``K`` the list capacity; ``spread`` the tiles
    the scan is spread over (poplar_code.cpp ``determine_layerwise_tile_spread_factor``).
    Workers W = min(workers_per_tile * spread, N); worker w scans N // W + (N % W > w)
    neurons; Kw = min(K, ceil(N / W)); Kc = min(K, ceil(N / spread))
    (``dense_to_sparse_spikes_multi_tile_spread_with_combine``).

    Returns a dict: ``ids[B, K]`` (-1 past num[1]; the chip leaves those slots stale),
    ``num[B, 2]``, and per vertex: ``scanned``, ``found`` ``[B, 2, W]`` (F6), ``copied_tile``
    ``[B, 2, spread]`` (F7), ``copied[B]`` and ``second_pass[B]`` (F8).
    """
    U = np.asarray(U)
    B, N = U.shape
    th1 = np.broadcast_to(np.asarray(theta1, dtype=U.dtype), (N,))
    th2 = np.broadcast_to(np.asarray(theta2, dtype=U.dtype), (N,))
    W = min(workers_per_tile * spread, N)
    Kw = min(K, -(-N // W))
    Kc = min(K, -(-N // spread))
    f0 = U > th1
    flags = np.stack([f0, (U > th2) & ~f0], axis=1)  # [B, 2, N]
    width = N // W + (np.arange(W) < N % W)
    start = np.concatenate([[0], np.cumsum(width)])
    c = np.cumsum(flags, axis=-1)  # inclusive hit count
    cz = np.concatenate([np.zeros((B, 2, 1), dtype=c.dtype), c], axis=-1)  # exclusive, N + 1
    before = cz[..., start[:-1]]  # hits before each worker's range [B, 2, W]
    hits = cz[..., start[1:]] - before
    found = np.minimum(hits, Kw)
    # position of the Kw-th hit: one searchsorted over rows made globally monotone
    rows = np.arange(B * 2).reshape(B, 2)
    cg = (cz + (rows * (N + 1))[..., None]).ravel()
    target = before + Kw + (rows * (N + 1))[..., None]
    pos = np.searchsorted(cg, target.ravel(), side="left").reshape(B, 2, W) - (rows * (N + 1))[..., None]
    scanned = np.where(hits >= Kw, pos - start[:-1], width)  # pos: exclusive count index = position + 1
    # which ids survive each level (lists stay ascending, so a rank test per level suffices)
    rank_w = c - 1 - np.repeat(before, width, axis=-1)  # rank of a hit within its worker
    keep = flags & (rank_w < Kw)
    tile_of = np.repeat(np.arange(W) // workers_per_tile, width)
    kc = np.cumsum(keep, axis=-1)
    tile_start = np.searchsorted(tile_of, np.arange(-(-W // workers_per_tile)))
    kcz = np.concatenate([np.zeros((B, 2, 1), dtype=kc.dtype), kc], axis=-1)
    before_t = kcz[..., tile_start]  # [B, 2, spread]
    keep &= (kc - 1 - before_t[..., tile_of]) < Kc
    in_tile = np.add.reduceat(found, np.arange(0, W, workers_per_tile), axis=-1)
    if in_tile.shape[-1] < spread:  # spread tiles without workers (N < 6 spread) add nothing
        in_tile = np.concatenate([in_tile, np.zeros((B, 2, spread - in_tile.shape[-1]), in_tile.dtype)], axis=-1)
    copied_tile = np.minimum(in_tile, Kc)
    num0 = np.minimum(copied_tile[:, 0].sum(-1), K)
    num1 = num0 + np.minimum(copied_tile[:, 1].sum(-1), K - num0)
    keep0 = keep[:, 0] & (np.cumsum(keep[:, 0], axis=-1) <= num0[:, None])
    keep1 = keep[:, 1] & (np.cumsum(keep[:, 1], axis=-1) <= (num1 - num0)[:, None])
    ids = np.full((B, K), -1, dtype=np.int64)
    b0, i0 = np.nonzero(keep0)
    ids[b0, np.cumsum(keep0, axis=-1)[b0, i0] - 1] = i0
    b1, i1 = np.nonzero(keep1)
    ids[b1, num0[b1] + np.cumsum(keep1, axis=-1)[b1, i1] - 1] = i1
    return {"ids": ids, "num": np.stack([num0, num1], axis=1), "scanned": scanned, "found": found,
            "copied_tile": copied_tile, "copied": num1, "second_pass": (num0 < K).astype(np.int64),
            "width": width, "Kw": Kw, "Kc": Kc}


@njit(cache=True)
def scan_hits(U, theta1, theta2, bounds, cap, hits, scanned):
    """F6's work per (sample, threshold, worker) in one pass over ``U[B, N]``: ``hits`` in the
    worker's range ``bounds[w]:bounds[w + 1]`` (threshold 0: U > theta1; 1: theta2 < U <= theta1)
    and ``scanned``, the range's width, or up to the ``cap``-th hit where the worker stops
    (``cap[b or 0, th, w]`` >= 1). What ``spike_generation`` counts, without its flag arrays."""
    B = U.shape[0]
    W = bounds.shape[0] - 1
    for b in range(B):
        cb = b if cap.shape[0] > 1 else 0
        for w in range(W):
            n0 = 0
            n1 = 0
            s0 = bounds[w + 1] - bounds[w]
            s1 = s0
            c0 = cap[cb, 0, w]
            c1 = cap[cb, 1, w]
            for i in range(bounds[w], bounds[w + 1]):
                u = U[b, i]
                if u > theta1[i]:
                    n0 += 1
                    if n0 == c0:
                        s0 = i - bounds[w] + 1
                elif u > theta2[i]:
                    n1 += 1
                    if n1 == c1:
                        s1 = i - bounds[w] + 1
            hits[b, 0, w] = n0
            hits[b, 1, w] = n1
            scanned[b, 0, w] = s0
            scanned[b, 1, w] = s1


# --------------------------------------------------------------------------- registration
# code_bytes: estimates, 4 B per instruction of the compiled body of every variant the
# codelet name covers, plus the soft-double routines where they are called (docs/cost-model.md).
STATE_UPDATE = register("gsnn.state_update", state_update_cycles, code_bytes=640, cost=_state_update_cost,
                        batched=True)
DENSE_SPIKES = register("gsnn.dense_spikes", dense_spikes_cycles, code_bytes=96, cost=_dense_spikes_cost,
                        static=True)
DENSE_TO_SPARSE = register("gsnn.dense_to_sparse", dense_to_sparse_cycles, code_bytes=128,
                           cost=_dense_to_sparse_cost, batched=True)
COMBINE_WORKER_LISTS = register("gsnn.combine_worker_lists", combine_worker_lists_cycles, code_bytes=160,
                                cost=_combine_worker_lists_cost, batched=True)
COMBINE_LISTS = register("gsnn.combine_lists", combine_lists_cycles, code_bytes=256,
                         cost=_combine_lists_cost, batched=True)
STATE_OUT_GRAD = register("gsnn.state_out_grad", state_out_grad_cycles, code_bytes=2304,
                          cost=_state_out_grad_cost, batched=True)
WEIGHTS_GRAD = register("gsnn.weights_grad", weights_grad_cycles, code_bytes=512, cost=_weights_grad_cost,
                        batched=True)
INP_SPIKES_GRAD = register("gsnn.inp_spikes_grad", inp_spikes_grad_cycles, code_bytes=448,
                           cost=_inp_spikes_grad_cost, batched=True)
REDUCE_STAGE1 = register("gsnn.reduce_stage1", reduce_stage1_cycles, code_bytes=192,
                         cost=_reduce_stage1_cost, batched=True)
SPARSE2DENSE = register("gsnn.sparse2dense", sparse2dense_cycles, code_bytes=96, cost=_sparse2dense_cost,
                        batched=True)
SPARSE2DENSE_GRAD = register("gsnn.sparse2dense_grad", sparse2dense_grad_cycles, code_bytes=128,
                             cost=_sparse2dense_grad_cost, static=True)
