"""The published sparse-BPTT op's vertices (kernels/graphcore_snn.py) and the poplibs programs it
calls (kernels/poplibs.py) against cycle counts worked out by hand.

Every expectation is a literal arithmetic expression from the named constants' values (the
tests never call the estimator's own formula). Default tile: 6 workers, 11 launch cycles;
the supervisor's ``run`` costs 2 issue slots per vertex (VERTEX_RUN_INSTRUCTIONS) and a
compiled C++ vertex's entry/exit 7 (WORKER_VERTEX_OVERHEAD), so a C++ worker vertex of I
counted instructions occupies its context for I + 9 slots.

Hand count of one vertex of each C++ codelet, traced to custom_codelet.cpp at commit 6ea3c8b
(CC; character offsets as in docs/as-built/graphcore_snn.md; S2D = sparse2dense/custom_codelet.cpp
at 8b38e55):

* LIFStateUpdateInPlaceTwoNeuronSIMD (CC @c45844), 22 input spikes: setup 7 (zero float2,
  ld num_inp_spikes ptr+value, ld weights/ids ptrs, loop setup 2) + 22 x 5 (ld32 id, shl,
  ld64 weights2[id], f32v2add, brnzdec) + neuron-loop setup 9 + 2 neurons x 13 (ld state,
  ld threshold, cmp/move/branch 3, ld decay, mul, ld oneMinus, ld syn, mul, add, st,
  brnzdec) = 152; + 7 + 2 = 161 slots.
* LIFStateUpdateInPlaceMultiNeuronSIMD (CC @c47882), n = 16, 3 spikes: 15 + 8 pairs x (5 +
  3 x 7 + 2 x 12) = 415 (the id list is re-read for every pair).
* DenseSpikesMultiThresh (CC @c18415): 3 scalar fields x 2 + ptr 1 + cmp/move/branch 3 +
  2 stores = 12.
* DenseToSparseSpikes<unsigned> (CC @c19575), 61 flags scanned, 14 found: 13 + 61 x 4 +
  14 x 4 = 313 (random_offset is dead code at -O3).
* LIFOutSpikesMultiThreshsCombine_singleThresh (CC @c27495), 6 lists, 14 ids: 15 + 6 x 12 +
  14 x 3 = 129.
* LIFOutSpikesMultiThreshsCombine (CC @c25157), 4 lists, 14 ids, second pass: 21 + 4 x 12 +
  (2 + 4 x 12) + 14 x 3 = 161.
* LIFStateOutGrad<float> (CC @c31109, superspike_surrogate @c30909), 14 listed: 10 + 14 x
  (14 + 505 soft double) = 7276; with the float surrogate 10 + 14 x (14 + 4) = 262.
* LIFWeightsGradTwoNeuronSIMD (CC @c40354), 8 samples, 100 spikes: 10 + 8 x 7 + 100 x 6 = 666.
* LIFInpSpikesGradTwoRowSIMD (CC @c43664), 14 listed: 9 + 14 x 7 = 107.
* CustomSparseReduceStage1<float> (CC @c38891), 24 inputs, active: 10 + 5 + 12 x 3 = 51;
  FloatSIMD8 (CC @c39695): 8 + 9 = 17.
* Sparse2Dense (S2D), 2 spikes: 7 + 2 x 4 = 15; Sparse2DenseGradMultiThresh, K = 2: 11 + 2 x 5 = 21.
"""
from __future__ import annotations

import numpy as np
import pytest

from kernels import CODELETS, Tile  # noqa: F401
from kernels.tile import VERTEX_RUN_INSTRUCTIONS, WORKER_VERTEX_OVERHEAD, deal_vertices, multi_vertex_cycles

TILE = Tile()  # workers=6, vertex_launch_cycles=11
RUN, OVH = 2, 7


def _eq(actual, expected):
    np.testing.assert_array_equal(np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64))


def _cost(name, tiles, geometry, work=None):
    return CODELETS[name].cost(np.asarray(tiles), geometry, work or {}, TILE)


# ---------------------------------------------------------------------- the vertex-launch model


def test_launch_constants():
    assert (VERTEX_RUN_INSTRUCTIONS, WORKER_VERTEX_OVERHEAD) == (RUN, OVH)


def test_deal_vertices_by_hand():
    # 7 vertices of 10 on tile 3: context 0 runs two -> 6 * 2 * (10 + 2) + 11; one on tile 5
    t, c = deal_vertices([3, 3, 3, 3, 3, 3, 3, 5], [10] * 8, TILE)
    _eq(t, [3, 5])
    _eq(c, [6 * 2 * (10 + 2) + 11, 6 * (10 + 2) + 11])
    # unequal costs: round robin in compute-set order (ranks 0 and 6 share context 0)
    t, c = deal_vertices([1] * 7, [50, 1, 1, 1, 1, 1, 40], TILE)
    _eq(c, [6 * ((50 + 2) + (40 + 2)) + 11])


def test_multi_vertex_by_hand():
    t, c = multi_vertex_cycles([3, 3, 5], [[10, 20, 30], [1, 1, 1]], TILE)
    _eq(t, [3, 5])
    _eq(c, [[6 * (2 + 10) + 6 * (2 + 20) + 11, 6 * (2 + 30) + 11],
            [6 * (2 + 1) * 2 + 11, 6 * (2 + 1) + 11]])


def test_deal_vertices_batched_equals_per_iteration():
    rng = np.random.default_rng(1)
    tiles = rng.integers(0, 5, 40)
    instr = rng.integers(0, 100, (3, 40))
    t, c = deal_vertices(tiles, instr, TILE)
    for i in range(3):
        ti, ci = deal_vertices(tiles, instr[i], TILE)
        _eq(ti, t)
        _eq(ci, c[i])
