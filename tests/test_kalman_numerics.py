"""The Kalman codelet's fitted states and covariances against an independent NumPy Kalman filter.

The reference below shares no code with ``kernels/mimdsim_kalman/track_fit.py``: it is the *information* form of
the filter (TRACKR's and IPU4HEP's formulation, ``C_f = (C_p^-1 + H^T G H)^-1``) written with
explicit 4x4 matrices, while the codelet uses the gain form ``K = C H^T S^-1``; both feed the
same Rauch-Tung-Striebel smoother equations. In float64 they agree to rounding (1e-9
relative); in float32 (what the chip computes) to 1e-4. Without process noise the smoother
must also equal the batch weighted least-squares straight-line fit, a third, closed-form check.
"""
import numpy as np
import pytest

import mimdsim
from mimdsim.kernels.mimdsim_kalman.track_fit import kalman_fit
from mimdsim.workloads import kalman, synthetic_tracks

PRIOR = (1.0, np.pi)


def reference_kf(hits, z, var, prior=PRIOR, q=0.0):
    """Information-form Kalman filter + RTS smoother, one 4x4 matrix per track (batched inv)."""
    hits = np.asarray(hits, dtype=np.float64)
    T, N, _ = hits.shape
    var = np.broadcast_to(np.asarray(var, dtype=np.float64), (T, N, 2))
    Hm = np.array([[1.0, 0, 0, 0], [0, 1.0, 0, 0]])
    Qm = np.diag([0.0, 0.0, q, q])
    Fs = [np.array([[1.0, 0, d, 0], [0, 1.0, 0, d], [0, 0, 1.0, 0], [0, 0, 0, 1.0]]) for d in np.diff(z)]
    p = np.stack([hits[:, 0, 0], hits[:, 0, 1], np.zeros(T), np.zeros(T)], axis=1)
    C = np.tile(np.diag([prior[0], prior[0], prior[1], prior[1]]), (T, 1, 1))
    pp, Cp, pf, Cf = [], [], [], []
    for k in range(N):
        if k:
            p = np.einsum("ij,tj->ti", Fs[k - 1], p)
            C = np.einsum("ij,tjk,lk->til", Fs[k - 1], C, Fs[k - 1]) + Qm
        pp.append(p)
        Cp.append(C)
        G = np.zeros((T, 2, 2))
        G[:, 0, 0], G[:, 1, 1] = 1 / var[:, k, 0], 1 / var[:, k, 1]
        Cinv = np.linalg.inv(C)
        C = np.linalg.inv(Cinv + np.einsum("ai,tab,bj->tij", Hm, G, Hm))
        info = np.einsum("tij,tj->ti", Cinv, p) + np.einsum("ai,tab,tb->ti", Hm, G, hits[:, k])
        p = np.einsum("tij,tj->ti", C, info)
        pf.append(p)
        Cf.append(C)
    ps, Cs = [None] * N, [None] * N
    ps[-1], Cs[-1] = pf[-1], Cf[-1]
    for k in range(N - 2, -1, -1):
        A = np.einsum("tij,kj,tkl->til", Cf[k], Fs[k], np.linalg.inv(Cp[k + 1]))
        ps[k] = pf[k] + np.einsum("tij,tj->ti", A, ps[k + 1] - pp[k + 1])
        Cs[k] = Cf[k] + np.einsum("tij,tjk,tlk->til", A, Cs[k + 1] - Cp[k + 1], A)
    return np.stack(ps, 1), np.stack(Cs, 1), np.stack(pf, 1), np.stack(Cf, 1)


def least_squares_line(hits, z, var, prior=PRIOR):
    """Posterior mean of (x, tx) and (y, ty) at plane 0 given every hit and the prior, per view
    (closed-form normal equations), propagated to every plane."""
    T, N, _ = hits.shape
    out = np.zeros((T, N, 4))
    for v in range(2):  # the x-view and the y-view
        w = 1 / np.broadcast_to(var, (T, N, 2))[:, :, v]
        Amat = np.zeros((T, 2, 2))
        Amat[:, 0, 0] = w.sum(1) + 1 / prior[0]
        Amat[:, 0, 1] = Amat[:, 1, 0] = (w * z).sum(1)
        Amat[:, 1, 1] = (w * z * z).sum(1) + 1 / prior[1]
        rhs = np.stack([(w * hits[:, :, v]).sum(1) + hits[:, 0, v] / prior[0], (w * z * hits[:, :, v]).sum(1)], 1)
        x0, t = np.linalg.solve(Amat, rhs[..., None])[..., 0].T
        out[:, :, v] = x0[:, None] + t[:, None] * (z - z[0])
        out[:, :, 2 + v] = t[:, None]
    return out


@pytest.mark.parametrize("planes,q", [(5, 0.0), (2, 0.0), (7, 1e-4), (5, 1e-3)])
def test_states_and_covariances_equal_reference_float64(planes, q):
    z = np.cumsum(np.r_[0.0, np.random.default_rng(planes).uniform(0.5, 2.0, planes - 1)])  # uneven gaps
    hits, _ = synthetic_tracks(200, planes, z, 0.1, np.sqrt(q), seed=1)
    var = np.full((1, planes, 2), 0.01)
    got = kalman_fit(hits, z, var, PRIOR, q, dtype=np.float64)
    ps, Cs, pf, Cf = reference_kf(hits, z, var, PRIOR, q)
    np.testing.assert_allclose(got["states"], ps, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(np.broadcast_to(got["covariances"], Cs.shape), Cs, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(got["filtered_states"], pf, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(np.broadcast_to(got["filtered_covariances"], Cf.shape), Cf, rtol=1e-9, atol=1e-15)


def test_per_hit_variances_give_per_track_covariances():
    rng = np.random.default_rng(3)
    hits, _ = synthetic_tracks(64, 5, None, 0.1, seed=2)
    var = rng.uniform(0.002, 0.05, (64, 5, 2))
    got = kalman_fit(hits, np.arange(5.0), var, PRIOR, 0.0, dtype=np.float64)
    ps, Cs, _, _ = reference_kf(hits, np.arange(5.0), var)
    assert got["covariances"].shape == (64, 5, 4, 4)
    np.testing.assert_allclose(got["states"], ps, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got["covariances"], Cs, rtol=1e-9, atol=1e-15)
    assert not np.allclose(got["covariances"][0], got["covariances"][1])  # they differ per track


def test_smoother_equals_batch_least_squares_without_scattering():
    z = np.array([0.0, 1.0, 2.5, 3.0, 4.5])
    hits, _ = synthetic_tracks(100, 5, z, 0.1, seed=4)
    var = np.array([[0.01, 0.02]] * 5)[None]
    got = kalman_fit(hits, z, var, PRIOR, 0.0, dtype=np.float64)
    np.testing.assert_allclose(got["states"], least_squares_line(hits, z, var), rtol=1e-9, atol=1e-12)


def test_float32_chip_numerics_close_to_float64_reference():
    hits, _ = synthetic_tracks(500, 5, None, 0.1, seed=5)
    got = kalman_fit(hits, np.arange(5.0), np.full((1, 5, 2), 0.01), PRIOR, 0.0, dtype=np.float32)
    ps, Cs, _, _ = reference_kf(hits, np.arange(5.0), 0.01)
    assert got["states"].dtype == np.float32
    np.testing.assert_allclose(got["states"], ps, rtol=1e-4, atol=1e-5)
    _, _, _, Cf = reference_kf(hits, np.arange(5.0), 0.01)
    np.testing.assert_allclose(got["filtered_covariances"][0], Cf[0], rtol=1e-4, atol=1e-9)
    np.testing.assert_allclose(got["covariances"][0, 1:], Cs[0, 1:], rtol=1e-4, atol=1e-8)
    # Plane 0's smoothed slope variance is C_f + A (C_s - C_p) A^T, a difference of numbers ~3000x
    # larger than the result under the vague default slope prior (pi): float32 keeps ~2 digits there
    # (documented in docs/workloads.md); a tighter prior keeps 1e-4.
    np.testing.assert_allclose(got["covariances"][0, 0], Cs[0, 0], rtol=0.1, atol=1e-9)
    tight = kalman_fit(hits, np.arange(5.0), np.full((1, 5, 2), 0.01), (0.1, 0.01), 0.0, dtype=np.float32)
    _, Cs_t, _, _ = reference_kf(hits, np.arange(5.0), 0.01, prior=(0.1, 0.01))
    np.testing.assert_allclose(tight["covariances"][0], Cs_t[0], rtol=1e-4, atol=1e-8)


def test_fit_recovers_the_truth_within_its_covariance():
    hits, truth = synthetic_tracks(20000, 5, None, 0.1, seed=6)
    got = kalman_fit(hits, np.arange(5.0), np.full((1, 5, 2), 0.01), PRIOR, 0.0, dtype=np.float64)
    pull = (got["states"] - truth) / np.sqrt(np.diagonal(got["covariances"], axis1=-2, axis2=-1))
    # the prior on the slopes is vague, so pulls are ~ N(0, 1)
    assert abs(pull.mean()) < 0.03 and 0.95 < pull.std() < 1.05


def test_workload_returns_the_codelet_fit_for_every_tile():
    hits, _ = synthetic_tracks(6 * 7, 5, None, 0.1, seed=7)
    run = kalman(7, 5, mimdsim.chip("ipu-mk2", tiles=6), hits=hits, stream=False, dtype=np.float64,
                 schedule="fused")
    ps, Cs, _, _ = reference_kf(hits, np.arange(5.0), 0.01)
    assert run.report.mode == "execution" and run.states.shape == (42, 5, 4)
    np.testing.assert_allclose(run.states, ps, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(run.covariances, Cs, rtol=1e-9, atol=1e-15)
    np.testing.assert_array_equal(run.tracks_on_tile, [7] * 6)
    # per-track covariance mode: the same numbers, covariances per track
    pt = kalman(7, 5, mimdsim.chip("ipu-mk2", tiles=6), hits=hits, covariance="per-track", stream=False, schedule="fused",
                dtype=np.float64)
    np.testing.assert_allclose(pt.states, ps, rtol=1e-9, atol=1e-12)


def test_execute_generates_tracks_and_fits_them():
    run = kalman(5, 4, mimdsim.chip("ipu-mk1", tiles=3), execute=True, seed=3, sigma=0.05, schedule="fused")
    assert run.hits.shape == (15, 4, 2) and run.states.shape == (15, 4, 4)
    ps, _, _, _ = reference_kf(run.hits, np.arange(4.0), 0.05 ** 2)
    np.testing.assert_allclose(run.states, ps, rtol=1e-4, atol=1e-5)
    # fewer hits than tiles x tracks_per_tile: the last tiles hold fewer tracks
    hits, _ = synthetic_tracks(10, 5, seed=1)
    r = kalman(4, 5, mimdsim.chip("ipu-mk2", tiles=4), hits=hits, stream=False, schedule="fused")
    np.testing.assert_array_equal(r.tracks_on_tile, [4, 4, 2, 0])
    assert r.report.placement["tiles"] == 3
