"""The published sparse-BPTT op's vertices (kernels/graphcore_snn/vertices.py) and the poplibs programs it
calls (kernels/popops/vertices.py) against cycle counts worked out by hand.

Every expectation is a literal arithmetic expression from the named constants' values (the
tests never call the estimator's own formula). Default tile: 6 workers, 11 launch cycles;
the supervisor's ``run`` costs 2 issue slots per vertex (VERTEX_RUN_INSTRUCTIONS) and a
compiled C++ vertex's entry/exit 7 (WORKER_VERTEX_OVERHEAD), so a C++ worker vertex of I
counted instructions occupies its context for I + 9 slots. The counts are issue slots with no
bundle (``compiled_coissue_fraction`` pinned to 0 for the whole module, its low end);
``test_coissue_by_hand`` checks the bundled counts the model uses by default (rule C1). An indexed
load or store scales its register index in hardware, so ``a[id]`` costs no shift (rule C4).

Hand count of one vertex of each C++ codelet, traced to custom_codelet.cpp at commit 6ea3c8b
(CC; character offsets as in docs/as-built/graphcore_snn.md; S2D = sparse2dense/custom_codelet.cpp
at 8b38e55):

* LIFStateUpdateInPlaceTwoNeuronSIMD (CC @c45844), 22 input spikes: setup 7 (zero float2,
  ld num_inp_spikes ptr+value, ld weights/ids ptrs, loop setup 2) + 22 x 4 (ld32 id,
  ld64 weights2[id], f32v2add, brnzdec) + neuron-loop setup 9 + 2 neurons x 13 (ld state,
  ld threshold, cmp/move/branch 3, ld decay, mul, ld oneMinus, ld syn, mul, add, st,
  brnzdec) = 130; + 7 + 2 = 139 slots.
* LIFStateUpdateInPlaceMultiNeuronSIMD (CC @c47882), n = 16, 3 spikes: 15 + 8 pairs x (5 +
  3 x 6 + 2 x 12) = 391 (the id list is re-read for every pair).
* DenseSpikesMultiThresh (CC @c18415): 3 scalar fields x 2 + ptr 1 + cmp/move/branch 3 +
  2 stores = 12.
* DenseToSparseSpikes<unsigned> (CC @c19575), 61 flags scanned, 14 found: 13 + 61 x 4 +
  14 x 4 = 313 (random_offset is dead code at -O3).
* LIFOutSpikesMultiThreshsCombine_singleThresh (CC @c27495), 6 lists, 14 ids: 15 + 6 x 12 +
  14 x 3 = 129.
* LIFOutSpikesMultiThreshsCombine (CC @c25157), 4 lists, 14 ids, second pass: 21 + 4 x 12 +
  (2 + 4 x 12) + 14 x 3 = 161.
* LIFStateOutGrad<float> (CC @c31109, superspike_surrogate @c30909), 14 listed: 10 + 14 x
  (13 + 505 soft double) = 7262; with the float surrogate 10 + 14 x (13 + 4) = 248.
* LIFWeightsGradTwoNeuronSIMD (CC @c40354), 8 samples, 100 spikes: 10 + 8 x 7 + 100 x 5 = 566.
* LIFInpSpikesGradTwoRowSIMD (CC @c43664), 14 listed: 9 + 14 x 6 = 93.
* CustomSparseReduceStage1<float> (CC @c38891), 24 inputs, active: 10 + 5 + 12 x 3 = 51;
  FloatSIMD8 (CC @c39695): 8 + 9 = 17.
* Sparse2Dense (S2D), 2 spikes: 7 + 2 x 3 = 13; Sparse2DenseGradMultiThresh, K = 2: 11 + 2 x 4 = 19.
"""
from __future__ import annotations

import numpy as np
import pytest

from mimdsim.kernels import CODELETS, Tile
from mimdsim.kernels.graphcore_snn import vertices as G
from mimdsim.kernels.assumed import Pinned
from mimdsim.kernels.tile import VERTEX_RUN_INSTRUCTIONS, WORKER_VERTEX_OVERHEAD, deal_vertices, multi_vertex_cycles

# The hand counts below are issue slots with no co-issue (the assumption's low end), pinned on the tile
UNBUNDLED = Pinned.of({"compiled_coissue_fraction": 0})
TILE = Tile(pinned=UNBUNDLED)  # workers=6, vertex_launch_cycles=11
RUN, OVH = 2, 7


def _eq(actual, expected):
    np.testing.assert_array_equal(np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64))


def _cost(name, tiles, geometry, work=None, tile=TILE):
    return CODELETS[name].cost(np.asarray(tiles), geometry, work or {}, tile)


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


# ---------------------------------------------------------------------- F3 state update


def test_state_update_two_neuron_by_hand():
    # 48 vertices (one tile, n = 2, 22 spikes each): 8 per worker context
    per = (7 + 22 * 4 + 9 + 2 * 13) + OVH + RUN
    assert per == 139
    _eq(_cost("gsnn.state_update", [1] * 48, {"n": np.full(48, 2)}, {"in_spikes": np.full(48, 22)})[1],
        [6 * 8 * 139 + 11])


def test_state_update_multi_neuron_and_odd_by_hand():
    t, c = _cost("gsnn.state_update", [1, 1, 2], {"n": np.array([16, 16, 7])}, {"in_spikes": np.array([3, 4, 5])})
    even3 = 15 + 8 * (5 + 3 * 6 + 2 * 12)  # 391
    even4 = 15 + 8 * (5 + 4 * 6 + 2 * 12)  # 439
    odd = 15 + 3 * (5 + 5 * 6 + 2 * 12) + (3 + 5 * 6 + 12)  # 237: 3 pairs and the scalar tail
    assert (even3, even4, odd) == (391, 439, 237)
    _eq(t, [1, 2])
    _eq(c, [6 * max(even3 + 9, even4 + 9) + 11, 6 * (odd + 9) + 11])


def test_state_update_monotone_and_batched():
    tiles = np.repeat([1, 2, 3], 16)
    n = np.repeat([2, 6, 5], 16)
    rng = np.random.default_rng(0)
    k = rng.integers(0, 30, (4, 48))
    t, c = _cost("gsnn.state_update", tiles, {"n": n}, {"in_spikes": k})
    for i in range(4):
        ti, ci = _cost("gsnn.state_update", tiles, {"n": n}, {"in_spikes": k[i]})
        _eq(ti, t)
        _eq(ci, c[i])
    _, more = _cost("gsnn.state_update", tiles, {"n": n}, {"in_spikes": k[0] + 1})
    assert (more > c[0]).all()


# ---------------------------------------------------------------------- F4 flags


def test_dense_spikes_by_hand():
    # 96 flag vertices on a tile: 16 per worker context, each 12 + 7 + 2 slots
    _eq(_cost("gsnn.dense_spikes", [4] * 96, {})[1], [6 * 16 * (12 + 7 + 2) + 11])
    assert CODELETS["gsnn.dense_spikes"].static


# ---------------------------------------------------------------------- F6, F7, F8 spike lists


def test_dense_to_sparse_by_hand():
    g = {"width": np.array([61, 61]), "cap": np.array([14, 14])}
    t, c = _cost("gsnn.dense_to_sparse", [7, 7], g, {"scanned": np.array([61, 61]), "found": np.array([14, 14])})
    assert 13 + 61 * 4 + 14 * 4 == 313
    _eq(c, [6 * (313 + 9) + 11])
    # work beyond a vertex's range is a source's error, reported rather than clipped
    with pytest.raises(ValueError, match="exceeds"):
        _cost("gsnn.dense_to_sparse", [7, 7], g, {"scanned": np.array([61, 80]), "found": np.array([14, 20])})


def test_combines_by_hand():
    assert 15 + 6 * 12 + 14 * 3 == 129
    _eq(_cost("gsnn.combine_worker_lists", [2], {"lists": np.array([6])}, {"copied": np.array([14])})[1],
        [6 * (129 + 9) + 11])
    one = 21 + 4 * 12 + 14 * 3  # no second pass
    two = 21 + 4 * 12 + (2 + 4 * 12) + 14 * 3
    assert (one, two) == (111, 161)
    _eq(_cost("gsnn.combine_lists", [2, 3], {"lists": np.array([4, 4])},
              {"copied": np.array([14, 14]), "second_pass": np.array([0, 1])})[1],
        [6 * (111 + 9) + 11, 6 * (161 + 9) + 11])


def _spike_generation_reference(U, th1, th2, K, spread):
    """A direct, loop-by-loop statement of poplar_code.cpp's F4-F8 (one sample at a time)."""
    B, N = U.shape
    W = min(6 * spread, N)
    Kw, Kc = min(K, -(-N // W)), min(K, -(-N // spread))
    width = [N // W + (N % W > w) for w in range(W)]
    out = {"scanned": np.zeros((B, 2, W), int), "found": np.zeros((B, 2, W), int),
           "copied_tile": np.zeros((B, 2, spread), int), "ids": np.full((B, K), -1), "num": np.zeros((B, 2), int)}
    for b in range(B):
        tile_lists = [[[] for _ in range(spread)] for _ in range(2)]
        for th in range(2):
            start = 0
            worker_lists = []
            for w in range(W):
                lst, scanned = [], 0
                for i in range(start, start + width[w]):
                    scanned += 1
                    flag = U[b, i] > th1 if th == 0 else (th2 < U[b, i] <= th1)
                    if flag:
                        lst.append(i)
                        if len(lst) >= Kw:
                            break
                out["scanned"][b, th, w], out["found"][b, th, w] = scanned, len(lst)
                worker_lists.append(lst)
                start += width[w]
            for s in range(spread):
                merged = []
                for lst in worker_lists[6 * s:6 * s + 6]:
                    merged += lst[:Kc - len(merged)]
                tile_lists[th][s] = merged
                out["copied_tile"][b, th, s] = len(merged)
        final = []
        for lst in tile_lists[0]:
            final += lst[:K - len(final)]
        out["num"][b, 0] = len(final)
        if len(final) < K:
            for lst in tile_lists[1]:
                final += lst[:K - len(final)]
        out["num"][b, 1] = len(final)
        out["ids"][b, :len(final)] = final
    return out


@pytest.mark.parametrize("N,K,spread,centre", [(1466, 14, 4, 0.5), (1466, 14, 4, 1.0), (600, 8, 2, 0.92),
                                               (300, 40, 1, 0.9), (10, 2, 1, 0.95), (734, 72, 2, 0.95)])
def test_spike_generation_matches_the_source_loops(N, K, spread, centre):
    rng = np.random.default_rng(N + K)
    U = rng.normal(centre, 0.1, (5, N))
    got = G.spike_generation(U, 1.0, 0.9, K, spread)
    ref = _spike_generation_reference(U, 1.0, 0.9, K, spread)
    if (N, K, centre) in ((1466, 14, 1.0), (600, 8, 0.92)):  # these cases exercise the per-worker cap (the scan stops early)
        assert (got["scanned"] < got["width"]).any()
    for key in ("scanned", "found", "copied_tile", "ids", "num"):
        _eq(got[key], ref[key])
    _eq(got["copied"], ref["num"][:, 1])
    _eq(got["second_pass"], ref["num"][:, 0] < K)


def test_spike_generation_second_pass_truncates_candidates():
    # rare spikes, many candidates: the list fills with candidates in the second pass
    rng = np.random.default_rng(7)
    U = rng.uniform(0.85, 1.001, (6, 900))
    got = G.spike_generation(U, 1.0, 0.9, 20, 2)
    ref = _spike_generation_reference(U, 1.0, 0.9, 20, 2)
    for key in ("scanned", "found", "copied_tile", "ids", "num"):
        _eq(got[key], ref[key])
    assert got["second_pass"].all() and (got["num"][:, 0] < got["num"][:, 1]).all()


# ---------------------------------------------------------------------- B4 surrogate


def test_state_out_grad_by_hand():
    assert G.SURROGATE_SOFT_DOUBLE == 20 + 130 + 320 + 35 == 505
    t, c = _cost("gsnn.state_out_grad", [1, 2], {"n": np.array([1466, 1466])}, {"listed": np.array([14, 0])})
    _eq(c, [6 * (10 + 14 * (13 + 505) + 9) + 11, 6 * (10 + 9) + 11])
    t, c = _cost("gsnn.state_out_grad", [1], {"n": np.array([1466]), "surrogate": "float"}, {"listed": np.array([14])})
    _eq(c, [6 * (10 + 14 * (13 + 4) + 9) + 11])


# ---------------------------------------------------------------------- B7 weight gradient


def test_weights_grad_by_hand():
    g = {"n": np.full(6, 2), "samples": np.full(6, 8)}
    two = 10 + 8 * 7 + 100 * 5
    assert two == 566
    _eq(_cost("gsnn.weights_grad", [5] * 6, g, {"in_spikes": np.full(6, 100)})[1], [6 * (566 + 9) + 11])
    multi = 13 + 4 * 7 + 50 * (7 + 8 * 5)  # n = 16, 4 samples, 50 spikes
    _eq(_cost("gsnn.weights_grad", [5] * 6, {"n": np.full(6, 16), "samples": np.full(6, 4)},
              {"in_spikes": np.full(6, 50)})[1], [6 * (multi + 9) + 11])
    # odd n = 7: six MultiVertex instances, each on all workers, one after another;
    # the busiest worker has ceil(7 / 6) = 2 neurons
    scalar = 13 + 2 * (7 + 4 * 7 + 50 * 7)
    _eq(_cost("gsnn.weights_grad", [5] * 6, {"n": np.full(6, 7), "samples": np.full(6, 4)},
              {"in_spikes": np.full(6, 50)})[1], [6 * 6 * (scalar + 9) + 11])


def test_weights_grad_mixed_tiles_batched():
    tiles = np.repeat([1, 2], 6)
    g = {"n": np.repeat([2, 5], 6), "samples": np.full(12, 8)}
    k = np.arange(24).reshape(2, 12) * 3
    t, c = _cost("gsnn.weights_grad", tiles, g, {"in_spikes": k})
    assert c.shape == (2, 2)
    for i in range(2):
        ti, ci = _cost("gsnn.weights_grad", tiles, g, {"in_spikes": k[i]})
        _eq(ti, t)
        _eq(ci, c[i])
    _, more = _cost("gsnn.weights_grad", tiles, g, {"in_spikes": k[0] + 1})
    assert (more > c[0]).all()


# ---------------------------------------------------------------------- B8 input gradient


def test_inp_spikes_grad_by_hand():
    t, c = _cost("gsnn.inp_spikes_grad", [1, 2, 3], {"n": np.array([2, 16, 5])}, {"in_listed": np.array([14, 10, 10])})
    two = 9 + 14 * 6
    multi = 11 + 10 * (11 + 7 * 4)
    scalar = 10 + 10 * (9 + 5 * 5)
    assert (two, multi, scalar) == (93, 401, 350)
    _eq(c, [6 * (two + 9) + 11, 6 * (multi + 9) + 11, 6 * (scalar + 9) + 11])


# ---------------------------------------------------------------------- co-issue (rule C1)


def test_coissue_by_hand():
    """At the model's default (compiled_coissue_fraction 1) each count's pairable float instructions
    (PAIRABLE: those a non-branch main-pipeline instruction can carry, given the dependences) cost no
    slot: state update setup 7 - 1 (the accumulator's zero beside a pointer load), per spike
    {ld32 id(next) ; f32v2add} {ld64 w[id]} {brnzdec}: 4 - 1, per neuron 13 - 3 (not the add that feeds
    the store); B4 per id 13 - 2 (the soft-double calls split the rest); B7 per spike 5 - 1; B8 (n = 2)
    per id 6 - 1 (its float store keeps the next row's load behind it); B9 active 5 - 1, per float2 step
    3 - 1; F4 12 - 1."""
    bundled = Tile()  # the model's default: every pairable instruction bundled
    _eq(_cost("gsnn.state_update", [1] * 48, {"n": np.full(48, 2)}, {"in_spikes": np.full(48, 22)}, bundled)[1],
        [6 * 8 * ((6 + 22 * 3 + 9 + 2 * 10) + 9) + 11])
    _eq(_cost("gsnn.state_out_grad", [1], {"n": np.array([1466])}, {"listed": np.array([14])}, bundled)[1],
        [6 * (10 + 14 * (11 + 505) + 9) + 11])
    _eq(_cost("gsnn.weights_grad", [5] * 6, {"n": np.full(6, 2), "samples": np.full(6, 8)},
              {"in_spikes": np.full(6, 100)}, bundled)[1], [6 * (10 + 8 * 7 + 100 * 4 + 9) + 11])
    _eq(_cost("gsnn.inp_spikes_grad", [1], {"n": np.array([2])}, {"in_listed": np.array([14])}, bundled)[1],
        [6 * (9 + 14 * 5 + 9) + 11])
    assert G.reduce_stage1_instructions(24, 1) == 10 + (5 - 1) + 12 * (3 - 1)
    assert G.reduce_stage1_instructions(5, 1) == 10 + (5 - 1) + 2 * (3 - 1) + 2  # the remainder's add reads its load
    _eq(_cost("gsnn.dense_spikes", [4] * 96, {}, tile=bundled)[1], [6 * 16 * (11 + 7 + 2) + 11])
    half = Pinned.of({"compiled_coissue_fraction": 0.5})  # half of them: the count in between
    assert G.reduce_stage1_instructions(24, 1, half) == 10 + 4.5 + 12 * 2.5
    for name, pairable in G.PAIRABLE.items():  # a bundle needs a partner: never more than half the body
        assert 0 < pairable <= getattr(G, name) / 2, name


# ---------------------------------------------------------------------- B9 stage-1 reduce


def test_reduce_stage1_by_hand():
    # 14 vertices on one tile (3 contexts run 3, 3 run 2); 24 inputs; slots 0..9 active
    active = (np.arange(14) < 10).astype(int)
    t, c = _cost("gsnn.reduce_stage1", [9] * 14, {"inputs": np.full(14, 24)}, {"active": active})
    on, off = 10 + 5 + 12 * 3 + 9, 10 + 9  # 60, 19
    # contexts get vertices {0,6,12} {1,7,13} {2,8} {3,9} {4,10} {5,11}: context 0 = on + on + off
    _eq(c, [6 * max(on + on + off, on + on + off, on + on, on + on, on + off, on + off) + 11])
    _eq(_cost("gsnn.reduce_stage1", [9], {"inputs": np.array([8])}, {"active": np.array([1])})[1], [6 * (17 + 9) + 11])
    _eq(_cost("gsnn.reduce_stage1", [9], {"inputs": np.array([5])}, {"active": np.array([1])})[1],
        [6 * (10 + 5 + 2 * 3 + 2 + 9) + 11])


# ---------------------------------------------------------------------- Keras sparse2dense


def test_sparse2dense_by_hand():
    _eq(_cost("gsnn.sparse2dense", [0, 0], {}, {"spikes": np.array([2, 0])})[1],
        [6 * (7 + 2 * 3 + 9) + 11])
    _eq(_cost("gsnn.sparse2dense_grad", [0] * 7, {"k": np.full(7, 2)})[1], [6 * 2 * (11 + 2 * 4 + 9) + 11])
    assert CODELETS["gsnn.sparse2dense_grad"].static


# ---------------------------------------------------------------------- monotone and batched, all


BATCHED = {
    "gsnn.state_update": ({"n": np.array([2, 2, 8, 3])}, "in_spikes"),
    "gsnn.dense_to_sparse": ({"width": np.full(4, 64), "cap": np.full(4, 64)}, "scanned"),
    "gsnn.combine_worker_lists": ({"lists": np.full(4, 6)}, "copied"),
    "gsnn.state_out_grad": ({"n": np.full(4, 10)}, "listed"),
    "gsnn.inp_spikes_grad": ({"n": np.array([2, 4, 7, 2])}, "in_listed"),
    "gsnn.reduce_stage1": ({"inputs": np.array([24, 8, 5, 3])}, "active"),
    "gsnn.sparse2dense": ({}, "spikes"),
}


@pytest.mark.parametrize("name", sorted(BATCHED))
def test_batched_equals_per_iteration_and_monotone(name):
    g, key = BATCHED[name]
    tiles = np.array([0, 0, 1, 2])
    rng = np.random.default_rng(3)
    hi = 2 if key == "active" else 40
    w = rng.integers(0, hi, (5, 4))
    other = {"dense_to_sparse": {"found": np.zeros((5, 4), int)}}.get(name.split(".")[1], {})
    t, c = _cost(name, tiles, g, {key: w, **other})
    assert CODELETS[name].batched and c.shape == (5, t.size)
    for i in range(5):
        ti, ci = _cost(name, tiles, g, {key: w[i], **{k: v[i] for k, v in other.items()}})
        _eq(ti, t)
        _eq(ci, c[i])
    lo = np.zeros(4, int)
    hi_w = np.ones(4, int) if key == "active" else np.full(4, 30)
    _, c0 = _cost(name, tiles, g, {key: lo, **{k: v[0] for k, v in other.items()}})
    _, c1 = _cost(name, tiles, g, {key: hi_w, **{k: v[0] for k, v in other.items()}})
    assert (c1 > c0).all()


def test_combine_lists_batched_and_monotone():
    g = {"lists": np.array([4, 4, 1])}
    copied = np.array([[3, 14, 2], [0, 5, 2]])
    sp = np.array([[1, 0, 1], [1, 1, 0]])
    t, c = _cost("gsnn.combine_lists", [0, 1, 1], g, {"copied": copied, "second_pass": sp})
    for i in range(2):
        _eq(_cost("gsnn.combine_lists", [0, 1, 1], g, {"copied": copied[i], "second_pass": sp[i]})[1], c[i])
    _, more = _cost("gsnn.combine_lists", [0, 1, 1], g, {"copied": copied[0] + 1, "second_pass": sp[0]})
    assert (more > c[0]).all()


# ---------------------------------------------------------------------- poplibs programs


def test_dynamic_slice_and_update_by_hand():
    # one contiguous region of 96 uint32 per tile: DynamicSlice1D, nCopies = ceil(96/6) // 2 = 8
    one_d = 11 + 1 + 6 + 1 + 6 + 6 * (35 + (24 + 2 * 8))
    # 48 regions of 2: DynamicSlice2D, 8 regions on the busiest of 6 workers, 1 vector each
    two_d = 6 * (2 + 23 + 8 * ((29 + 1) + 13)) + 11
    assert (one_d, two_d) == (475, 2225)
    g = {"elements": np.array([96, 96]), "regions": np.array([1, 48])}
    _eq(_cost("popops.dynamic_slice", [0, 1], g)[1], [one_d, two_d])
    _eq(_cost("popops.dynamic_update", [0, 1], g)[1], [one_d, two_d])
    # half, 3 regions of 34: ceil(34 / 4) = 9 vectors: 31 + 2 * 9 per slice
    _eq(_cost("popops.dynamic_slice", [0], {"elements": np.array([100]), "regions": np.array([3]),
                                            "dtype_bytes": np.array([2])})[1], [6 * (2 + 23 + (31 + 18 + 13)) + 11])


def test_reduce_by_hand():
    # stage 2 of the input-spike gradients: 1 output of 30 scattered partials
    default = 7 + 26 + (24 + 2 * 2) + (4 + (2 * 1 + 1) + 30 * 10 + 30 * (2 + 1 + 3))
    assert default == 548
    # the 6 gradient copies of a 2312 x 2 block: strided, 772 outputs on the busiest worker
    strided = 15 + 386 * (3 + 5 + 3 + 5)
    assert strided == 6191
    g = {"outputs": np.array([1, 4624]), "inputs_per_output": np.array([30, 6]),
         "specialisation": np.array(["default", "strided"])}
    _eq(_cost("popops.reduce", [0, 1], g)[1], [6 * (2 + 548) + 11, 6 * (2 + 6191) + 11])
    # 8 outputs in one region of 3 partials: 2 accumulator vectors, one worker each
    vec = 7 + 26 + 28 + 1 * (3 + 2 + 5 + 1) + 1 * 3 * 10 + 3 * 1 * (6 + 3)
    _eq(_cost("popops.reduce", [0], {"outputs": np.array([8]), "inputs_per_output": np.array([3])})[1],
        [6 * (2 + vec) + 11])


def test_mul_in_place_by_hand():
    scalar = 6 * (20 + 8 * 2) + 11  # 96 elements: 16 per worker, 8 float2 loops of 2
    # BroadcastVectorInner1DInPlace, SDK 2.6: 48 blocks of 2, ceil(48 / 6) = 8 per worker; MULTIPLY in place
    # adds 6 supervisor and 3 per worker
    sup = 13 + 6 * 17 + 6 * (17 + (2 + 5 + 2 * (8 + 2 * 8))) + 6 + 3 * 6
    assert sup == 571
    # 50 blocks: ceil(50 / 6) = 9 per worker (the estimator rounds up; no packed-remainder quirk in 2.6)
    sup50 = 13 + 6 * 17 + 6 * (17 + (2 + 5 + 2 * (8 + 2 * 9))) + 6 + 3 * 6
    two_d = 6 * (2 + 3 + 8 * (9 + (2 + 5 + 2 * (8 + 2))) + 1 + 3) + 11  # 48 regions: 8 entries per worker
    g = {"elements": np.array([96] * 3), "form": np.array(["scalar", "vector_inner", "vector_inner"]),
         "pattern": np.array([1, 2, 2]), "regions": np.array([1, 1, 48])}
    _eq(_cost("popops.mul_in_place", [0, 1, 2], g)[1], [scalar, sup, two_d])
    g = {"elements": np.array([100]), "form": np.array(["vector_inner"]), "pattern": np.array([2]),
         "regions": np.array([1])}
    _eq(_cost("popops.mul_in_place", [0], g)[1], [sup50])


def test_cast_zero_scalar_uniform_by_hand():
    # cast 100 elements, one region: busiest worker 4 * ceil(25 / 6) = 20
    _eq(_cost("popops.cast", [0, 1], {"elements": np.array([100, 100]), "regions": np.array([1, 10])})[1],
        [19 + 6 * (23 + 19 + 2 * 20), 6 * (2 + 5 + 2 * (11 + 19 + 2 * 10)) + 11])
    # zero 100 float: 6 Fill vertices of up to 17; 10 regions of 10: Fill2d with 2 regions
    _eq(_cost("popops.zero", [0, 1], {"elements": np.array([100, 100]), "regions": np.array([1, 10])})[1],
        [6 * (2 + (23 + 8 + 1)) + 11, 6 * (2 + 5 + 2 * (23 + 5) + 1 - 3 * 2) + 11])
    # itime - 1 on one uint32 on tile 0
    _eq(_cost("popops.scalar_op", [0], {})[1], [6 * (20 + 1 * 6) + 11])
    # poprand uniform int over 24 elements
    _eq(_cost("poprand.uniform", [0], {"elements": np.array([24])})[1], [4 + 22 * 6 + 6 * 12])


# ---------------------------------------------------------------------- registry


EXPECTED = {"gsnn.state_update": 640, "gsnn.dense_spikes": 96, "gsnn.dense_to_sparse": 128,
            "gsnn.combine_worker_lists": 160, "gsnn.combine_lists": 256, "gsnn.state_out_grad": 2304,
            "gsnn.weights_grad": 512, "gsnn.inp_spikes_grad": 448, "gsnn.reduce_stage1": 192,
            "gsnn.sparse2dense": 96, "gsnn.sparse2dense_grad": 128,
            "popops.dynamic_slice": 512, "popops.dynamic_update": 512, "popops.reduce": 768,
            "popops.mul_in_place": 384, "popops.cast": 256, "popops.zero": 192, "popops.scalar_op": 256,
            "poprand.uniform": 384}
STATIC = {"gsnn.dense_spikes", "gsnn.sparse2dense_grad"} | {n for n in EXPECTED if not n.startswith("gsnn.")}


def test_registry_entries_and_code_sizes():
    for name, code in EXPECTED.items():
        c = CODELETS[name]
        assert c.code_bytes == code, name
        assert c.static == (name in STATIC), name
        assert c.batched == (name not in STATIC), name
        assert c.doc, name
        assert c.footprint(3) == code + 32 * 3


def test_sample_grid_deal_equals_dealing_every_vertex():
    """A sample-major (sample, tile) grid of affine vertices costs what dealing each vertex costs."""
    from mimdsim.kernels.tile import deal_sample_grid, deal_vertices
    tile = Tile()
    rng = np.random.default_rng(0)
    tiles = np.array([3, 7, 9])
    const, slope = np.array([20.0, 30.0, 25.0]), np.array([7.0, 9.0, 7.0])
    x = rng.integers(0, 12, (4, 13)).astype(float)  # 4 iterations, 13 samples
    grid_tiles, grid = deal_sample_grid(tiles, const, slope, x, tile)
    every = const[None, None, :] + slope[None, None, :] * x[:, :, None]  # [I, B, T]: vertex b * T + j
    all_tiles, dealt = deal_vertices(np.tile(tiles, 13), every.reshape(4, -1), tile)
    np.testing.assert_array_equal(grid_tiles, all_tiles)
    np.testing.assert_array_equal(grid, dealt)


def test_sample_grid_compiled_pass_equals_numpy_route_bit_for_bit():
    """Once numba is loaded deal_sample_grid takes its compiled pass; it forms the same products and
    sums as the numpy route, so non-integer instructions (where an order change would show) agree exactly."""
    from unittest import mock

    from mimdsim.kernels import tile as tile_mod
    import numba  # noqa: F401  (the compiled pass runs once numba is imported)
    tile = Tile()
    rng = np.random.default_rng(1)
    tiles = np.sort(rng.choice(3000, 200, replace=False))
    const, slope = rng.random(200) * 37.3, rng.random(200) * 3.1
    for x in (rng.random(16) * 11.7, rng.random((5, 16)) * 11.7):  # outside a loop, and 5 iterations
        fast = tile_mod.deal_sample_grid(tiles, const, slope, x, tile)[1]
        with mock.patch.object(tile_mod, "numba_loaded", lambda: False):
            plain = tile_mod.deal_sample_grid(tiles, const, slope, x, tile)[1]
        assert fast.shape == plain.shape == x.shape[:-1] + (200,)
        np.testing.assert_array_equal(fast, plain)
    # by hand: 2 samples on worker 0 and 1 of 6; tile j: 6 * max(c + s * x0, c + s * x1) + 11
    tiles2, cyc = tile_mod.deal_sample_grid(np.array([4]), np.array([10.0]), np.array([2.0]), np.array([3.0, 5.0]),
                                            tile)
    assert tiles2.tolist() == [4] and cyc.tolist() == [6 * (2 + 10 + 2 * 5) + 11]


def test_deal_jobs_compiled_maxima_equal_numpy_route_bit_for_bit():
    """deal_jobs' busiest worker per tile, compiled once numba is loaded, equals numpy's maximum over
    the workers for one row and for a loop's rows (non-integer instructions), and a by-hand tile."""
    from unittest import mock

    from mimdsim.kernels import tile as tile_mod
    import numba  # noqa: F401
    tile = Tile()
    rng = np.random.default_rng(2)
    job_tiles = np.repeat(np.arange(0, 90, 3), 9)  # 30 tiles, 9 jobs each: 6 workers, two rounds
    four = np.repeat(np.arange(0, 90, 3), 4)  # 4 jobs a tile: one per slot, in order (a loop's rows)
    for job_tiles, instr in ((job_tiles, rng.random(job_tiles.size) * 9.3), (four, rng.random((4, four.size)) * 9.3)):
        fast = tile_mod.deal_jobs(job_tiles, instr, tile)
        with mock.patch.object(tile_mod, "numba_loaded", lambda: False):
            plain = tile_mod.deal_jobs(job_tiles, instr, tile)
        np.testing.assert_array_equal(fast[0], plain[0])
        np.testing.assert_array_equal(fast[1], plain[1])
    # by hand: 7 jobs of 1..7 instructions on tile 5: worker 0 gets jobs 1 and 7 (8), the busiest
    t, cyc = tile_mod.deal_jobs(np.full(7, 5), np.arange(1.0, 8.0), tile)
    assert t.tolist() == [5] and cyc.tolist() == [6 * 8 + 11]


def test_on_tile_copy_costs_a_one_slice_dynamic_slice_and_has_a_footprint():
    """popops.copy (B5's Copy of dL/dU, on the tile): the bytes a DynamicSlice vertex moves for one slice."""
    from mimdsim.kernels.popops import vertices as poplibs
    tile = Tile()
    e, r = np.array([96, 32]), np.array([48, 1])
    np.testing.assert_array_equal(poplibs.copy_cycles(e, r, np.array([4, 4]), tile),
                                  poplibs.dynamic_slice_cycles(e, r, np.array([4, 4]), np.array([1, 1]), tile))
    t, c = CODELETS["popops.copy"].cost(np.array([3, 4]), {"elements": e, "regions": r}, {}, tile)
    np.testing.assert_array_equal(c, poplibs.copy_cycles(e, r, np.array([4, 4]), tile))
    assert CODELETS["popops.copy"].static and CODELETS["popops.copy"].footprint([0, 2])[1] > 0


def test_reduce_stage1_from_per_sample_counts_equals_per_vertex_active():
    """The route's ``in_listed`` form (per sample; compiled over a loop's iterations where numba
    is loaded) costs exactly what the per-vertex ``active`` form costs."""
    import numba  # noqa: F401
    rng = np.random.default_rng(3)
    V, B, K = 300, 6, 5
    tiles = rng.integers(0, 20, V)
    g = {"inputs": rng.choice([3, 5, 8, 24], V), "sample": rng.integers(0, B, V), "slot": rng.integers(0, K, V)}
    listed = rng.integers(0, K + 1, (9, B))
    got = _cost("gsnn.reduce_stage1", tiles, g, {"in_listed": listed})
    for i in range(9):
        want = _cost("gsnn.reduce_stage1", tiles, g, {"active": (g["slot"] < listed[i, g["sample"]]).astype(int)})
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1][i], want[1])


def test_scan_hits_equals_the_flag_counts():
    """The compiled scan work (one pass over U) equals the counts from the flag arrays,
    including workers that stop at their cap."""
    from types import SimpleNamespace

    from mimdsim.kernels.graphcore_snn.vertices import scan_hits
    from mimdsim.workloads.snn.sources import scan_work_from_flags
    rng = np.random.default_rng(1)
    B, n = 7, 61
    U = rng.normal(0.9, 0.2, (B, n)).astype(np.float32)
    th1, th2 = np.full(n, 1.0, np.float32), np.full(n, 0.9, np.float32)
    bounds = np.array([0, 11, 21, 31, 41, 51, 61])
    for cap in (np.full((B, 2, 6), 2), rng.integers(1, 6, (B, 2, 6))):
        vs = SimpleNamespace(layer=1, geometry={"bounds": bounds, "cap": cap.ravel()})
        src = SimpleNamespace(_found={})
        flags = np.stack([U > th1, (U > th2) & (U <= th1)], axis=1)
        want = scan_work_from_flags(src, vs, flags)
        hits, scanned = np.empty((B, 2, 6), np.int64), np.empty((B, 2, 6), np.int64)
        scan_hits(U, th1, th2, bounds, cap.astype(np.int64), hits, scanned)
        assert np.array_equal(np.minimum(hits, cap).ravel(), want["found"])
        assert np.array_equal(scanned.ravel(), want["scanned"])


def test_reduce_stage1_instructions_by_hand():
    """B9's stage-1 vertex as its docstring counts it: eight inputs take the SIMD vertex, others the
    generic loop (two inputs per float2 step, one left over); an inactive slot pays its setup only."""
    from mimdsim.kernels.graphcore_snn.vertices import reduce_stage1_instructions
    assert reduce_stage1_instructions(8, 1, UNBUNDLED) == 8 + 9
    assert reduce_stage1_instructions(5, 1, UNBUNDLED) == 10 + 5 + 2 * 3 + 1 * 2
    assert reduce_stage1_instructions(5, 0, UNBUNDLED) == 10
    assert list(reduce_stage1_instructions(np.array([8, 4]), np.array([0, 1]), UNBUNDLED)) == [8, 10 + 5 + 2 * 3]
