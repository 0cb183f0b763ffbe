"""Kalman codelet: instruction counts, cycle estimators and memory footprint against hand-worked
numbers. Every expectation is a literal expression from the instruction sequences documented in
``kernels/mimdsim_kalman/track_fit.py`` / docs/workloads.md and the barrel model
``cycles = workers * max worker instructions + vertex_launch_cycles`` (6 workers, 11 launch),
never the estimator's own formula.
"""
import numpy as np
import pytest

import mimdsim
from mimdsim.kernels import CODELETS, Tile
from mimdsim.kernels.mimdsim_kalman import track_fit as kk

TILE = Tile()


def test_matop_co_issue_rule():
    # a load pairs with an arithmetic instruction; extra loads and every store cost a slot
    assert kk.MatOp("x", 10, 4, 2).instructions == 10 + 2
    assert kk.MatOp("x", 2, 5, 1).instructions == 2 + 1 + 3
    # dense 4x4 x 4x4: 64 mul + 48 add; each multiply loads 2 operands (128 loads); 16 stores
    g = kk.gemm("T=F*C", 4, 4, 4)
    assert (g.arith, g.loads, g.stores) == (64 + 48, 128, 16)
    assert g.instructions == 112 + 16 + (128 - 112)
    # accumulate onto a matrix in memory: + r*c adds and + r*c loads
    g = kk.gemm("C=T*Ft+Q", 4, 4, 4, acc=True, load_acc=True)
    assert (g.arith, g.loads, g.stores) == (64 + 48 + 16, 128 + 16, 16)


def test_inverse_counts():
    assert kk.INVERSE_4X4_ARITH == 18 * 3 + 27 + 4 + 16 * 6 == 181
    assert kk.INVERSE_2X2_ARITH == 3 + 4 + 4 + 2 == 13


def test_scalar_stage_instructions_by_hand():
    st = lambda s: kk.stage_instructions("scalar", "state", s)  # noqa: E731
    assert st("init") == 2  # 2 ld hit (co-issued with zeroing tx, ty)
    assert st("predict") == 28 + 4  # F p: 16 mul + 12 add (16 ld of F co-issued); st 4
    # H p (8 mul + 6 add) + r = m - Hp (2) + p += K r (8 mul + 4 add + 4 acc; st 4)
    assert st("update") == 14 + 2 + (16 + 4)
    # d = ps' - pp' (4 sub) + ps = pf + A d (16 mul + 12 add + 4 acc; 20 ld; st 4)
    assert st("smooth") == 4 + (32 + 4)
    assert st("final") == 4
    cv = lambda s: kk.stage_instructions("scalar", "cov", s)  # noqa: E731
    assert cv("init") == 16 + 16
    assert cv("predict") == (112 + 16 + 16) + (128 + 16 + 16)
    # HC, S = HC Ht + V, inv(S), C Ht, K, C -= K HC
    assert cv("update") == (56 + 8 + 8) + (32 + 4 + 4) + (13 + 4) + (56 + 8 + 8) + (24 + 8 + 8) + (64 + 16 + 16)
    # inv(Cp) (181 + 16 st), M, A, D (16 sub, 32 ld, 16 st), E, Cs
    assert cv("smooth") == (181 + 16) + 144 + 144 + (16 + 16 + 16) + 144 + 160
    assert cv("final") == 32


def test_vectorised_stage_instructions_by_hand():
    st = lambda s: kk.stage_instructions("vectorised", "state", s)  # noqa: E731
    assert [st(s) for s in kk.STAGES] == [1, 2 + 1, (1) + (4 + 2), (2) + (8 + 2), 2]
    cv = lambda s: kk.stage_instructions("vectorised", "cov", s)  # noqa: E731
    assert [cv(s) for s in kk.STAGES] == [1 + 1, 7 + 3, 5 + (2 + 2) + (6 + 3), 4 + 11 + (12 + 4) + 3 + 12 + (12 + 3), 3]


def test_pass_instructions_five_planes():
    # state pass: init + 4 predict + 5 update + 4 smooth + final + (2*5 - 1) loop steps + 3 per track
    assert kk.pass_instructions("vectorised", "state", 5) == 1 + 4 * 3 + 5 * 7 + 4 * 12 + 2 + 9 + 3 == 110
    assert kk.pass_instructions("vectorised", "cov", 5) == 2 + 4 * 10 + 5 * 18 + 4 * 61 + 3 + 9 == 388
    assert kk.pass_instructions("scalar", "state", 5) == 2 + 4 * 32 + 5 * 36 + 4 * 40 + 4 + 9 + 3 == 486
    assert kk.pass_instructions("scalar", "cov", 5) == 32 + 4 * 304 + 5 * 337 + 4 * 837 + 32 + 9 == 6322
    # two planes: no smoothing beyond one gap
    assert kk.pass_instructions("vectorised", "state", 2) == 1 + 3 + 2 * 7 + 12 + 2 + 3 + 3


def test_fused_cycles_shared_covariance():
    # 408 tracks on a tile: 68 per worker; the covariance pass once per worker
    assert kk.kalman_cycles([408], 5, TILE, "vectorised", "shared")[0] == 6 * (8 + 388 + 68 * 110) + 11 == 47267
    # 100 tracks: the busiest worker has 17
    assert kk.kalman_cycles([100], 5, TILE, "scalar", "shared")[0] == 6 * (8 + 6322 + 17 * 486) + 11
    # fewer tracks than workers: one track on the busiest worker; a tile without tracks costs nothing
    np.testing.assert_array_equal(kk.kalman_cycles([3, 0, 7], 5, TILE, "vectorised", "shared"),
                                  [6 * (8 + 388 + 110) + 11, 0, 6 * (8 + 388 + 2 * 110) + 11])


def test_fused_cycles_per_track_covariance():
    assert kk.kalman_cycles([100], 5, TILE, "vectorised", "per-track")[0] == 6 * (8 + 17 * (110 + 388)) + 11
    assert kk.kalman_cycles([12], 5, TILE, "scalar", "per-track")[0] == 6 * (8 + 2 * (486 + 6322)) + 11


def test_cycles_follow_the_tile():
    t4 = Tile(workers=4, vertex_launch_cycles=3)
    assert kk.kalman_cycles([10], 5, t4, "vectorised", "shared")[0] == 4 * (8 + 388 + 3 * 110) + 3


def test_per_op_cycles():
    op = kk.VECTORISED_STATE["update"][1]  # u,t += k r: 4 arith, 2 ld, 2 st -> 6
    assert op.instructions == 6
    np.testing.assert_array_equal(kk.op_cycles([408, 1, 0], op, "state", TILE, "shared"),
                                  [6 * (8 + 68 * (6 + 3)) + 11, 6 * (8 + 1 * (6 + 3)) + 11, 0])
    cov = kk.SCALAR_COV["update"][2]  # inv(S): 13 arith, 4 ld, 4 st -> 17
    assert kk.op_cycles([408], cov, "cov", TILE, "shared")[0] == 6 * (8 + 17) + 11
    assert kk.op_cycles([408], cov, "cov", TILE, "per-track")[0] == 6 * (8 + 68 * (17 + 3)) + 11


def test_op_schedule_order_and_count():
    ops = list(kk.op_schedule(5, "scalar"))
    # init (1 cov + 1 state), plane 0 update (6 + 3), 4 x (predict 2 + 1, update 6 + 3), final (1 + 1),
    # 4 x smooth (6 + 2)
    assert len(ops) == 2 + 9 + 4 * (3 + 9) + 2 + 4 * 8 == 93
    assert [(s, p) for s, p, _, _ in ops[:4]] == [("init", "cov"), ("init", "state"), ("update", "cov"), ("update", "cov")]
    assert ops[-1][0] == "smooth" and ops[-1][1] == "state"
    assert len(list(kk.op_schedule(5, "vectorised"))) == 2 + 5 + 4 * (2 + 5) + 2 + 4 * 8 == 69


def test_arith_and_memory_totals_for_gpu_and_cpu():
    assert kk.pass_arith("vectorised", "state", 5) == 1 + 4 * 2 + 5 * 5 + 4 * 10 == 74
    assert kk.pass_memory("vectorised", "state", 5) == (1 + 4 * 1 + 5 * 3 + 4 * 7, 4 * 1 + 5 * 2 + 4 * 2 + 2)
    assert kk.pass_arith("scalar", "state", 5) == 2 + 4 * 28 + 5 * 32 + 4 * 36 == 418


def test_footprint_by_hand():
    m = kk.tile_bytes(np.array([408, 0]), 5, 6, "vectorised", "shared")
    assert m["hits"][0] == 408 * 4 * 5 * 2 == 16320
    # predicted u (2 floats) x 4 gaps, filtered and smoothed (4 floats) x 5 planes
    assert m["states"][0] == 408 * 4 * (4 * 2 + 2 * 5 * 4) == 78336
    # per worker: predicted (4 x 6) and filtered (5 x 6) covariances, K (5 x 4), A (4 x 8); smoothed 5 x 6
    assert m["covariances"][0] == 6 * 4 * (4 * 6 + 5 * 6 + 5 * 4 + 4 * 8) + 6 * 4 * 5 * 6 == 3264
    assert m["code"][0] == kk.code_bytes("vectorised") + 32 * 6
    assert all(v[1] == 0 for v in m.values())
    pt = kk.tile_bytes(np.array([408]), 5, 6, "scalar", "per-track", per_hit_variance=True)
    assert pt["hit_variances"][0] == 408 * 4 * 5 * 2
    scratch = 16 + 8 + 4 + 4 + 8 + 16 + 16 + 16 + 16
    assert pt["covariances"][0] == 6 * 4 * (4 * 16 + 5 * 16 + 5 * 8 + 4 * 16 + scratch) + 408 * 4 * 5 * 16
    assert pt["states"][0] == 408 * 4 * (4 * 4 + 2 * 5 * 4)


def test_code_bytes_and_registry():
    body = sum(kk.stage_instructions("vectorised", p, s) for p in ("state", "cov") for s in kk.STAGES)
    assert body == (1 + 3 + 7 + 12 + 2) + (2 + 10 + 18 + 61 + 3)
    assert kk.code_bytes("vectorised") == 256 + 4 * body
    import mimdsim.workloads  # noqa: F401  (registers the workload codelets)
    for name, variant in (("kalman_fit.scalar", "scalar"), ("kalman_fit.vectorised", "vectorised")):
        c = CODELETS[name]
        assert c.code_bytes == kk.code_bytes(variant) and "workers" in c.doc
        assert c.footprint(np.array([6, 0]))[0] == kk.code_bytes(variant) + 32 * 6


@pytest.mark.parametrize("variant", kk.VARIANTS)
def test_cycles_monotone_in_tracks_and_planes(variant):
    for cov in kk.COVARIANCE_MODES:
        c = kk.kalman_cycles(np.arange(0, 500), 5, TILE, variant, cov)
        assert (np.diff(c) >= 0).all()
        assert kk.kalman_cycles([50], 6, TILE, variant, cov)[0] > kk.kalman_cycles([50], 5, TILE, variant, cov)[0]
    # the vectorised code is cheaper than the scalar one
    assert kk.kalman_cycles([408], 5, TILE, "vectorised")[0] < kk.kalman_cycles([408], 5, TILE, "scalar")[0]


def test_tile_of_chip_feeds_the_estimator():
    t = Tile.of(mimdsim.chip("ipu-mk1"))
    assert kk.kalman_cycles([6], 5, t)[0] == 6 * (8 + 388 + 110) + 11
