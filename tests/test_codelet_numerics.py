"""Functional implementations of the codelets against direct NumPy statements of their equations."""
import numpy as np
import pytest

from mimdsim.kernels.mimdsim_snn import bptt, lif, loss, reduce, spikes, surrogate
from mimdsim.kernels.mimdsim_snn.optim import adam_step, sgd_step
from mimdsim.kernels.tile import worker_of_sample


def test_published_lif_forward_matches_equation():
    """gather_rows + leaky_update in the published configuration (zero reset, gain c(1 - alpha))."""
    rng = np.random.default_rng(0)
    B, n_in, n, K = 5, 30, 9, 6
    W = rng.standard_normal((n_in, n)).astype(np.float32)
    U_prev = (rng.random((B, n)) * 2).astype(np.float32)
    ids = rng.integers(0, n_in, (B, K)).astype(np.int32)
    cnt = np.array([0, 1, 3, 6, 2])
    I_sum = np.empty_like(U_prev)
    lif.gather_rows(W, ids, cnt, I_sum, False)
    out = np.empty_like(U_prev)
    full = lambda v: np.full(n, v, np.float32)  # noqa: E731
    lif.leaky_update(I_sum, full(10 * (1 - 0.9)), U_prev, full(0.9), full(1), lif.ZERO, False, True, out, out)
    I = np.stack([W[ids[b, :cnt[b]]].sum(axis=0) for b in range(B)])
    expect = 0.9 * U_prev * (U_prev <= 1) + 10 * (1 - 0.9) * I
    np.testing.assert_allclose(out, expect, rtol=1e-5, atol=1e-6)


def _lists(U, theta1, theta2, K, chunk=64, cap=None, random=False, seed=0):
    B, n = U.shape
    chunks = -(-n // chunk)
    ids = np.empty((B, K), np.int32)
    cnt = np.empty((B, 2), np.int64)
    drop = np.empty((B, 2), np.int64)
    flag = np.empty((B, chunks), np.int64)
    spikes.spike_lists(U, theta1, theta2, K, chunk, K if cap is None else cap, random, seed, ids, cnt, drop, flag)
    return ids, cnt, drop, flag


def test_spike_lists_spikes_first_then_candidates_lowest_index():
    U = np.array([[0.95, 1.5, 0.2, 2.0, 0.91, 1.2, 0.5, 0.99]], np.float32)
    ids, cnt, drop, flag = _lists(U, 1.0, 0.9, K=5)
    # spikes (U > 1): 1, 3, 5; candidates (0.9 < U <= 1): 0, 4, 7 -> keep 0, 4
    assert ids[0].tolist() == [1, 3, 5, 0, 4]
    assert cnt[0].tolist() == [3, 5] and drop[0].tolist() == [0, 1] and flag[0].tolist() == [6]
    ids, cnt, drop, _ = _lists(U, 1.0, 0.9, K=2)
    assert ids[0].tolist() == [1, 3] and cnt[0].tolist() == [2, 2] and drop[0].tolist() == [1, 3]
    # unused slots are -1; theta2 = -inf lists every neuron
    ids, cnt, drop, _ = _lists(U, 1.0, -np.inf, K=8)
    assert sorted(ids[0].tolist()) == list(range(8)) and cnt[0].tolist() == [3, 8]
    ids, cnt, _, _ = _lists(np.zeros((1, 8), np.float32), 1.0, 0.9, K=4)
    assert ids[0].tolist() == [-1] * 4 and cnt[0].tolist() == [0, 0]


def test_spike_lists_chunk_cap():
    # two chunks of 4 neurons, each partial list holds at most 2 entries
    U = np.array([[2, 2, 2, 0.95, 0, 0, 2, 0.95]], np.float32)
    ids, cnt, drop, flag = _lists(U, 1.0, 0.9, K=6, chunk=4, cap=2)
    assert flag[0].tolist() == [4, 2]
    assert ids[0, :cnt[0, 1]].tolist() == [0, 1, 6, 7]
    assert cnt[0].tolist() == [3, 4] and drop[0].tolist() == [1, 1]


def test_spike_lists_random_policy_is_uniform_and_seeded():
    n, K = 20, 5
    U = np.full((4000, n), 2.0, np.float32)  # everyone spikes
    ids, cnt, drop, _ = _lists(U, 1.0, 0.9, K=K, chunk=n, cap=n, random=True, seed=7)
    assert (cnt[:, 0] == K).all() and (drop[:, 0] == n - K).all()
    assert (np.diff(ids, axis=1) > 0).all()  # ascending, distinct
    freq = np.bincount(ids.ravel(), minlength=n) / (4000 * K / n)
    assert np.abs(freq - 1).max() < 0.1
    again, *_ = _lists(U, 1.0, 0.9, K=K, chunk=n, cap=n, random=True, seed=7)
    other, *_ = _lists(U, 1.0, 0.9, K=K, chunk=n, cap=n, random=True, seed=8)
    assert np.array_equal(ids, again) and not np.array_equal(ids, other)


def test_published_lif_backward_matches_equation():
    """leaky_backward in the published configuration: carry dU by alpha, add SuperSpike
    surrogate gradients of the listed ids, dI = c (1 - alpha) dU."""
    rng = np.random.default_rng(1)
    B, n, K = 4, 7, 3
    dU = rng.standard_normal((B, n))
    U_t = rng.random((B, n)) * 2
    ids = np.array([[0, 3, 6], [1, 1, -1], [2, -1, -1], [-1, -1, -1]], np.int32)
    listed = np.array([3, 2, 1, 0])
    dS = rng.standard_normal((B, K))
    expect = 0.95 * dU
    for b in range(B):
        for k in range(listed[b]):
            j = ids[b, k]
            expect[b, j] += dS[b, k] / (10 * abs(U_t[b, j] - 1) + 1) ** 2
    dI = np.empty_like(dU)
    dm = 0.95 * dU  # dU carries alpha dL/dU[t+1]: leaky_backward's dm after its step at t+1
    zeros, du = np.zeros_like(dU), np.empty_like(dU)
    full = lambda v: np.full(n, float(v))  # noqa: E731
    bptt.leaky_backward(dm, dS, ids, listed, zeros, U_t, zeros, full(10 * 0.05), full(1), full(1), lif.ZERO,
                        False, True, False, surrogate.SUPERSPIKE, 10.0, 0.0, du, zeros.copy(), dI, np.zeros(n),
                        np.zeros(n))
    np.testing.assert_allclose(du, expect, rtol=1e-12)
    np.testing.assert_allclose(dI, 10 * 0.05 * expect, rtol=1e-12)


def test_weight_grad_into_worker_copies_and_reduction():
    rng = np.random.default_rng(2)
    B, n_in, n, K, W = 7, 10, 4, 3, 6
    dI = rng.standard_normal((B, n))
    ids = rng.integers(0, n_in, (B, K)).astype(np.int32)
    cnt = rng.integers(0, K + 1, B)
    worker = worker_of_sample(B, W)
    copies = np.zeros((W, n_in, n))
    bptt.weight_grad(copies, worker, ids, cnt, dI)
    X = np.zeros((B, n_in))
    for b in range(B):
        np.add.at(X[b], ids[b, :cnt[b]], 1)
    np.testing.assert_allclose(reduce.reduce_copies(copies), X.T @ dI, rtol=1e-12)
    # each copy holds only its own worker's samples
    for w in range(W):
        np.testing.assert_allclose(copies[w], X[worker == w].T @ dI[worker == w], rtol=1e-12, atol=1e-15)


def test_input_grad_partials_and_two_stage_reduction():
    rng = np.random.default_rng(3)
    B, n_in, n, K = 3, 12, 10, 4
    Wm = rng.standard_normal((n_in, n))
    dI = rng.standard_normal((B, n))
    ids = rng.integers(0, n_in, (B, K)).astype(np.int32)
    listed = np.array([4, 2, 0])
    starts = np.array([0, 3, 6, 9, 10])  # 4 tiles
    P = np.empty((B, K, 4))
    bptt.input_grad_partials(Wm, ids, listed, dI, starts, P)
    for b in range(B):
        for k in range(K):
            for p in range(4):
                expect = Wm[ids[b, k], starts[p]:starts[p + 1]] @ dI[b, starts[p]:starts[p + 1]] if k < listed[b] else 0
                assert P[b, k, p] == pytest.approx(expect, abs=1e-12)
    stage1 = reduce.reduce_groups(P, np.array([0, 2]))
    assert stage1.shape == (B, K, 2)
    full = stage1.sum(axis=-1)
    for b in range(B):
        np.testing.assert_allclose(full[b, :listed[b]], Wm[ids[b, :listed[b]]] @ dI[b], rtol=1e-12)


def test_count_cross_entropy_and_its_gradient():
    C = np.array([[3.0, 0.0, 1.0], [0.0, 0.0, 5.0]])
    y = np.array([0, 1])
    L, g = loss.count_cross_entropy(C, y)
    logp = C - np.log(np.exp(C).sum(axis=1, keepdims=True))
    assert L == pytest.approx(-(logp[0, 0] + logp[1, 1]) / 2)
    eps = 1e-6
    for b in range(2):
        for i in range(3):
            Cp = C.copy()
            Cp[b, i] += eps
            assert g[b, i] == pytest.approx((loss.count_cross_entropy(Cp, y)[0] - L) / eps, abs=1e-5)
    counts = np.zeros((2, 3), np.int64)
    loss.accumulate_counts(counts, np.array([[2, 0, 1], [1, 1, -1]]), np.array([2, 1]))
    assert counts.tolist() == [[1, 0, 1], [0, 1, 0]]


def test_optimizer_steps():
    w = np.array([1.0, -2.0], np.float32)
    g = np.array([0.5, -0.25], np.float32)
    sgd_step(w, g, 0.1)
    np.testing.assert_allclose(w, [0.95, -1.975], rtol=1e-6)
    w = np.array([1.0, -2.0])
    m, v = np.zeros(2), np.zeros(2)
    adam_step(w, g.astype(float), m, v, 1, 0.01, 0.9, 0.999, 1e-8)
    # first Adam step: m_hat = g, v_hat = g^2 -> w -= lr * g / (|g| + eps)
    np.testing.assert_allclose(w, [1.0 - 0.01 * 0.5 / (0.5 + 1e-8), -2.0 + 0.01 * 0.25 / (0.25 + 1e-8)], rtol=1e-12)


def test_kernels_name_the_valid_choices():
    from mimdsim.kernels.mimdsim_kalman import track_fit as kk
    with pytest.raises(ValueError, match=r"variant='vector' is not one of 'scalar', 'vectorised'"):
        kk.check_variant("vector")
    with pytest.raises(ValueError, match=r"covariance='pertrack' is not one of 'shared', 'per-track'"):
        kk.check_variant("scalar", "pertrack")
    with pytest.raises(ValueError, match=r"unknown loss kind 'ce'; expected one of ce_count, ce_rate"):
        loss.readout_loss("ce", np.zeros(2, int))
    with pytest.raises(ValueError, match=r"unknown surrogate 'atn'; expected one of atan, fast_sigmoid"):
        surrogate.surrogate_numpy(np.zeros(2), "atn", 1.0)


def _lists_reference(U, th1, th2, K, chunk, cap):
    """The list builder written out neuron by neuron, chunk by chunk (lowest-index policy)."""
    B, n = U.shape
    out = []
    for b in range(B):
        spk, cand, flags, ts, tc = [], [], [], 0, 0
        for c0 in range(0, n, chunk):
            room, f = cap, 0
            for i in range(c0, min(c0 + chunk, n)):
                if U[b, i] > th1[i]:
                    f, ts = f + 1, ts + 1
                    if room > 0:
                        spk.append(i)
                        room -= 1
            for i in range(c0, min(c0 + chunk, n)):
                if th2[i] < U[b, i] <= th1[i]:
                    f, tc = f + 1, tc + 1
                    if room > 0:
                        cand.append(i)
                        room -= 1
            flags.append(f)
        ks = min(len(spk), K)
        kc = min(len(cand), K - ks)
        ids = spk[:ks] + cand[:kc]
        out.append((ids + [-1] * (K - len(ids)), [ks, ks + kc], [ts - ks, tc - kc], flags))
    return out


def test_spike_lists_per_neuron_equals_the_neuron_by_neuron_reference():
    rng = np.random.default_rng(2)
    B, n = 6, 150
    for K, chunk, cap, frac in [(5, 64, 64, 0.05), (3, 16, 2, 0.3), (150, 150, 150, 0.9), (7, 10, 3, 0.2)]:
        U = ((rng.random((B, n)) < frac) * rng.uniform(0.5, 1.5, (B, n))).astype(np.float32)
        U[1, 3] = np.nan
        th1 = rng.uniform(0.9, 1.1, n).astype(np.float32)
        th2 = np.where(rng.random(n) < 0.2, np.float32(1.2), np.float32(0.85)).astype(np.float32)  # some theta2 > theta1
        chunks = -(-n // chunk)
        ids, cnt, drop = np.empty((B, K), np.int32), np.empty((B, 2), np.int64), np.empty((B, 2), np.int64)
        flag = np.empty((B, chunks), np.int64)
        spikes.spike_lists_per_neuron(U, th1, th2, K, chunk, cap, False, 0, ids, cnt, drop, flag)
        for b, (want_ids, want_cnt, want_drop, want_flag) in enumerate(_lists_reference(U, th1, th2, K, chunk, cap)):
            assert ids[b].tolist() == want_ids and cnt[b].tolist() == want_cnt
            assert drop[b].tolist() == want_drop and flag[b].tolist() == want_flag
