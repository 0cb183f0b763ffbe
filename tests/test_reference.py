"""Tests of the independent dense-BPTT reference (``tests/reference.py``).

What is verified:

* numpy (hand-written backward) == torch autograd, float64, rtol 1e-10, on
  random 3-layer networks with and without random masks (needs torch);
* a torch-free adjoint test: <dL/dW, dW> equals a forward-mode (tangent)
  propagation through the surrogate-linearised network, for random dW;
* the last layer's gradient equals a closed-form expression;
* hand-computed trajectories (strict threshold, reset, one-step delay);
* mask semantics, zero-gradient cases, T = 1, dtype handling, determinism
  and argument validation.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

try:  # tests/ on sys.path (pytest "rootdir/tests" insertion)
    from reference import dense_bptt_numpy, dense_bptt_torch, margin
except ImportError:  # tests is a package
    from tests.reference import dense_bptt_numpy, dense_bptt_torch, margin

P = dict(alpha=0.95, c=10.0, theta1=1.0, beta=10.0)
SIZES = [12, 9, 7, 4]
T, B = 15, 5
MASK_KINDS = ["none", "input", "spike", "list", "all"]


# ---------------------------------------------------------------- helpers
def make_net(seed, sizes=SIZES, T=T, B=B, p_in=0.3, scale=1.0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    W = [(rng.normal(0.3, 1.0, (a, b)) * 3.0 * scale / np.sqrt(a)).astype(dtype)
         for a, b in zip(sizes[:-1], sizes[1:])]
    x = (rng.random((T, B, sizes[0])) < p_in).astype(dtype)
    y = rng.integers(0, sizes[-1], B)
    return W, x, y


def make_masks(seed, kind, sizes=SIZES, T=T, B=B):
    """Random masks; ``kind`` selects which ones are given (others None)."""
    rng = np.random.default_rng(1000 + seed)
    out = {}
    if kind in ("input", "all"):
        out["input_mask"] = rng.random((T, B, sizes[0])) < 0.8
    if kind in ("spike", "all"):
        out["spike_mask"] = [rng.random((T, B, n)) < 0.7 for n in sizes[1:]]
    if kind in ("list", "all"):
        out["list_mask"] = [rng.random((T, B, n)) < 0.6 for n in sizes[1:]]
    return out


def sg(u, theta1, beta):
    return 1.0 / (beta * np.abs(u - theta1) + 1.0) ** 2


def listed_or_ones(masks, trace):
    lm = masks.get("list_mask")
    return [np.ones(u.shape, bool) for u in trace["U"]] if lm is None else lm


def output_grad(trace, labels):
    """dL/dC = (softmax(C) - onehot) / B from the recorded counts."""
    C = trace["counts"]
    p = np.exp(C - C.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    p[np.arange(len(labels)), labels] -= 1.0
    return p / len(labels)


def assert_grads_close(g_ref, g, rtol, atol_rel=1e-12):
    assert len(g_ref) == len(g)
    for a, b in zip(g_ref, g):
        assert a.shape == b.shape
        np.testing.assert_allclose(b, a, rtol=rtol,
                                   atol=atol_rel * max(1.0, np.abs(a).max()))


# ---------------------------------------------------------------- numpy vs torch
@pytest.mark.parametrize("kind", MASK_KINDS)
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_numpy_backward_matches_torch_autograd(seed, kind):
    pytest.importorskip("torch")
    W, x, y = make_net(seed)
    masks = make_masks(seed, kind)
    loss_n, g_n, tr_n = dense_bptt_numpy(W, x, y, **P, **masks)
    loss_t, g_t, tr_t = dense_bptt_torch(W, x, y, **P, **masks)

    # the test is only meaningful if every layer spikes and no spike sits on
    # a rounding boundary
    for l, s in enumerate(tr_n["S_raw"]):
        assert s.sum() > 0, f"layer {l + 1} never spikes"
        assert s.sum() < s.size, f"layer {l + 1} always spikes"
    assert margin(tr_n, P["theta1"]) > 1e-9

    for a, b in zip(tr_n["S"], tr_t["S"]):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(tr_n["U"], tr_t["U"]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(tr_n["counts"], tr_t["counts"])
    assert loss_n == pytest.approx(loss_t, rel=1e-12)
    for g in g_n:
        assert np.abs(g).max() > 0
    assert_grads_close(g_t, g_n, rtol=1e-10)


@pytest.mark.parametrize("kind", MASK_KINDS)
def test_activity_l1_matches_torch_autograd(kind):
    """The L1 penalty on hidden spikes: hand-written backward == autograd, and it changes the gradient."""
    pytest.importorskip("torch")
    W, x, y = make_net(5)
    masks = make_masks(5, kind)
    loss_n, g_n, tr = dense_bptt_numpy(W, x, y, **P, **masks, activity_l1=0.01)
    loss_t, g_t, _ = dense_bptt_torch(W, x, y, **P, **masks, activity_l1=0.01)
    loss_0, g_0, _ = dense_bptt_numpy(W, x, y, **P, **masks)
    hidden_spikes = sum(s.sum() for s in tr["S"][:-1])
    assert hidden_spikes > 0
    assert loss_n == pytest.approx(loss_0 + 0.01 * hidden_spikes, rel=1e-12)
    assert loss_n == pytest.approx(loss_t, rel=1e-12)
    assert_grads_close(g_t, g_n, rtol=1e-10)
    assert not np.allclose(g_n[0], g_0[0])
    np.testing.assert_array_equal(g_n[-1], g_0[-1])  # the output layer's weights see no penalty


def test_numpy_matches_torch_float32():
    pytest.importorskip("torch")
    W, x, y = make_net(7, dtype=np.float32)
    masks = make_masks(7, "all")
    loss_n, g_n, tr_n = dense_bptt_numpy(W, x, y, **P, **masks, dtype=np.float32)
    loss_t, g_t, tr_t = dense_bptt_torch(W, x, y, **P, **masks, dtype=np.float32)
    assert margin(tr_n, P["theta1"]) > 1e-4
    for g in g_n + g_t:
        assert g.dtype == np.float32
    for u in tr_n["U"] + tr_t["U"]:
        assert u.dtype == np.float32
    for a, b in zip(tr_n["S"], tr_t["S"]):
        np.testing.assert_array_equal(a, b)
    assert loss_n == pytest.approx(loss_t, rel=1e-5)
    assert_grads_close(g_t, g_n, rtol=1e-4, atol_rel=1e-6)


def test_torch_edge_cases_match_numpy():
    pytest.importorskip("torch")
    # T = 1 and a layer with an all-False list mask
    for T_, sizes in [(1, [5, 3]), (1, SIZES), (6, SIZES)]:
        W, x, y = make_net(3, sizes=sizes, T=T_, B=3)
        lm = [np.ones((T_, 3, n), bool) for n in sizes[1:]]
        lm[0][:] = False
        for masks in ({}, {"list_mask": lm}):
            loss_n, g_n, _ = dense_bptt_numpy(W, x, y, **P, **masks)
            loss_t, g_t, _ = dense_bptt_torch(W, x, y, **P, **masks)
            assert loss_n == pytest.approx(loss_t, rel=1e-12)
            assert_grads_close(g_t, g_n, rtol=1e-10)


# ---------------------------------------------------------------- torch-free checks
def surrogate_jvp(W, dW, trace, labels, list_mask, *, alpha, c, theta1, beta):
    """Forward-mode derivative of the surrogate-linearised network.

    Around the recorded trajectory, with dS~/dU := sg(U) * list_mask and the
    reset treated as constant:
        dX^1 = 0,  dX^l[t] = dS~^{l-1}[t-1]  (l >= 2, t >= 1)
        dU^l[t] = alpha dU^l[t-1] + c (1 - alpha) (dX^l[t] @ W^l + X^l[t] @ dW^l)
        dS~^l[t] = sg(U^l[t]) list_mask^l[t] dU^l[t]
        dL = < dL/dC, sum_t dS~^L[t] >
    """
    L = len(W)
    T_, B_, _ = trace["X"][0].shape
    gain = c * (1.0 - alpha)
    dS = [np.zeros_like(u) for u in trace["U"]]
    dU = [np.zeros(u.shape[1:]) for u in trace["U"]]
    for t in range(T_):
        for l in range(L):
            dI = trace["X"][l][t] @ dW[l]
            if l > 0 and t > 0:
                dI = dI + dS[l - 1][t - 1] @ W[l]
            dU[l] = alpha * dU[l] + gain * dI
            dS[l][t] = sg(trace["U"][l][t], theta1, beta) * list_mask[l][t] * dU[l]
    return float(np.sum(output_grad(trace, labels) * dS[L - 1].sum(0)))


@pytest.mark.parametrize("kind", MASK_KINDS)
@pytest.mark.parametrize("seed", [0, 1, 4])
def test_backward_adjoint_against_forward_mode(seed, kind):
    """<dL/dW, dW> (reverse mode) == directional derivative (forward mode)."""
    W, x, y = make_net(seed)
    masks = make_masks(seed, kind)
    _, grads, trace = dense_bptt_numpy(W, x, y, **P, **masks)
    assert all(s.sum() > 0 for s in trace["S_raw"])
    lm = listed_or_ones(masks, trace)
    rng = np.random.default_rng(seed + 77)
    for trial in range(4):
        # one layer at a time, then all at once
        dW = [rng.normal(size=w.shape) for w in W]
        if trial < len(W):
            dW = [d if k == trial else np.zeros_like(d) for k, d in enumerate(dW)]
        rev = sum(float(np.sum(g * d)) for g, d in zip(grads, dW))
        fwd = surrogate_jvp(W, dW, trace, y, lm, **P)
        assert rev == pytest.approx(fwd, rel=1e-10, abs=1e-14)
        if trial < len(W):
            assert abs(fwd) > 1e-8  # non-trivial check


@pytest.mark.parametrize("kind", ["none", "all"])
def test_last_layer_gradient_closed_form(kind):
    """dL/dW^L[i, j] = c(1-alpha) sum_{t,b} X^L[t,b,i]
                        sum_{s>=t} alpha^{s-t} dL/dC[b,j] sg(U^L[s,b,j]) list^L[s,b,j]"""
    W, x, y = make_net(5)
    masks = make_masks(5, kind)
    _, grads, trace = dense_bptt_numpy(W, x, y, **P, **masks)
    lm = listed_or_ones(masks, trace)
    a = P["alpha"]
    s_idx, t_idx = np.meshgrid(np.arange(T), np.arange(T))
    K = np.where(s_idx >= t_idx, a ** (s_idx - t_idx).astype(float), 0.0)  # K[t, s]
    D = output_grad(trace, y)[None] * sg(trace["U"][-1], P["theta1"], P["beta"]) * lm[-1]
    A = np.einsum("ts,sbj->tbj", K, D)
    expected = P["c"] * (1 - a) * np.einsum("tbi,tbj->ij", trace["X"][-1], A)
    np.testing.assert_allclose(grads[-1], expected, rtol=1e-10, atol=1e-14)


def test_single_neuron_trajectory_strict_threshold_and_reset():
    # alpha = 0.5, c = 2  ->  gain = 1; constant input 1, w = 1 (exact in binary)
    W = [np.array([[1.0]])]
    x = np.ones((6, 1, 1))
    loss, grads, tr = dense_bptt_numpy(W, x, np.array([0]), alpha=0.5, c=2.0,
                                       theta1=1.0, beta=1.0)
    # U: 1 (not > 1: strict), 1.5 (spike), reset -> 1, 1.5, 1, 1.5
    np.testing.assert_array_equal(tr["U"][0][:, 0, 0], [1, 1.5, 1, 1.5, 1, 1.5])
    np.testing.assert_array_equal(tr["S"][0][:, 0, 0], [0, 1, 0, 1, 0, 1])
    assert tr["counts"][0, 0] == 3
    assert loss == 0.0  # single class: logsumexp(C) - C = 0
    np.testing.assert_array_equal(grads[0], [[0.0]])


def test_one_step_delay_between_layers():
    # input spikes only at t = 0; each layer fires as soon as it gets a spike
    W = [np.array([[5.0]]), np.array([[5.0]]), np.array([[5.0, 0.0]])]
    x = np.zeros((6, 1, 1))
    x[0] = 1.0
    _, _, tr = dense_bptt_numpy(W, x, np.array([0]), alpha=0.5, c=2.0,
                                theta1=1.0, beta=1.0)
    fire_times = [np.nonzero(s[:, 0, 0])[0].tolist() for s in tr["S"]]
    assert fire_times == [[0], [1], [2]]
    np.testing.assert_array_equal(tr["X"][1][:, 0, 0], [0, 1, 0, 0, 0, 0])
    np.testing.assert_array_equal(tr["X"][2][:, 0, 0], [0, 0, 1, 0, 0, 0])
    # layer 2 potential: 0 at t=0, 5 at t=1 (spike), reset then decays: 0 ...
    np.testing.assert_array_equal(tr["U"][1][:, 0, 0], [0, 5, 0, 0, 0, 0])


def test_loss_and_counts_from_trace():
    W, x, y = make_net(2)
    masks = make_masks(2, "all")
    loss, _, tr = dense_bptt_numpy(W, x, y, **P, **masks)
    np.testing.assert_array_equal(tr["counts"], tr["S"][-1].sum(0))
    for s, raw, u, m in zip(tr["S"], tr["S_raw"], tr["U"], masks["spike_mask"]):
        np.testing.assert_array_equal(raw, u > P["theta1"])
        np.testing.assert_array_equal(s, raw * m)
    C = tr["counts"]
    expected = np.mean([math.log(sum(math.exp(v) for v in row)) - row[lab]
                        for row, lab in zip(C, y)])
    assert loss == pytest.approx(expected, rel=1e-13)
    np.testing.assert_array_equal(tr["X"][0], x * masks["input_mask"])


def test_shapes_dtypes_and_determinism():
    W, x, y = make_net(1)
    masks = make_masks(1, "all")
    W_copy, x_copy = [w.copy() for w in W], x.copy()
    r1 = dense_bptt_numpy(W, x, y, **P, **masks)
    r2 = dense_bptt_numpy(W, x, y, **P, **masks)
    assert isinstance(r1[0], float)
    assert r1[0] == r2[0]
    for g, h, w in zip(r1[1], r2[1], W):
        assert g.shape == w.shape and g.dtype == np.float64
        np.testing.assert_array_equal(g, h)
    for key in ("U", "S"):
        assert [u.shape for u in r1[2][key]] == [(T, B, n) for n in SIZES[1:]]
    assert r1[2]["counts"].shape == (B, SIZES[-1])
    # arguments are not modified
    for w, wc in zip(W, W_copy):
        np.testing.assert_array_equal(w, wc)
    np.testing.assert_array_equal(x, x_copy)


def test_silent_inputs_and_unsent_neurons_have_zero_weight_rows():
    W, x, y = make_net(0)
    x[:, :, 3] = 0.0                              # input 3 never spikes
    im = np.ones(x.shape, bool)
    im[:, :, 5] = False                           # input 5 always masked out
    sm = [np.ones((T, B, n), bool) for n in SIZES[1:]]
    sm[0][:, :, 2] = False                        # hidden neuron (1, 2) never sent
    sm[1][:, :, 4] = False                        # hidden neuron (2, 4) never sent
    _, grads, tr = dense_bptt_numpy(W, x, y, **P, input_mask=im, spike_mask=sm)
    assert tr["S_raw"][0][:, :, 2].sum() > 0 and tr["S_raw"][1][:, :, 4].sum() > 0
    np.testing.assert_array_equal(grads[0][3], 0.0)
    np.testing.assert_array_equal(grads[0][5], 0.0)
    np.testing.assert_array_equal(grads[1][2], 0.0)
    np.testing.assert_array_equal(grads[2][4], 0.0)
    # ...but their incoming weights still learn: spike_mask does not gate
    # the gradient path (list_mask alone does)
    assert np.abs(grads[0][:, 2]).max() > 0
    assert np.abs(grads[1][:, 4]).max() > 0


def test_spike_mask_does_not_gate_gradient_of_output_layer():
    W, x, y = make_net(1)
    sm = [np.ones((T, B, n), bool) for n in SIZES[1:]]
    sm[-1][:] = False                             # no output spike is sent
    loss, grads, tr = dense_bptt_numpy(W, x, y, **P, spike_mask=sm)
    assert tr["counts"].sum() == 0
    assert loss == pytest.approx(math.log(SIZES[-1]), rel=1e-14)
    for g in grads:
        assert np.abs(g).max() > 0


@pytest.mark.parametrize("layer", [1, 2, 3])
def test_unlisted_layer_blocks_gradient_below(layer):
    """list_mask all False in layer l: dL/dW^k = 0 for every k <= l."""
    W, x, y = make_net(4)
    lm = [np.ones((T, B, n), bool) for n in SIZES[1:]]
    lm[layer - 1][:] = False
    _, grads, _ = dense_bptt_numpy(W, x, y, **P, list_mask=lm)
    for k in range(len(W)):
        if k < layer:
            np.testing.assert_array_equal(grads[k], 0.0)
        else:
            assert np.abs(grads[k]).max() > 0


def test_unlisted_neuron_has_zero_incoming_gradient():
    W, x, y = make_net(4)
    lm = [np.ones((T, B, n), bool) for n in SIZES[1:]]
    lm[1][:, :, 6] = False
    lm[2][:, 1, 0] = False                       # only for sample 1
    _, grads, _ = dense_bptt_numpy(W, x, y, **P, list_mask=lm)
    np.testing.assert_array_equal(grads[1][:, 6], 0.0)
    assert np.abs(grads[1][:, 5]).max() > 0
    assert np.abs(grads[2][:, 0]).max() > 0


def test_single_step():
    # one layer: dL/dW = c(1-alpha) x0^T (dL/dC * sg(U) * list)
    W, x, y = make_net(6, sizes=[8, 5], T=1, B=4, p_in=0.5)
    loss, grads, tr = dense_bptt_numpy(W, x, y, **P)
    D = output_grad(tr, y) * sg(tr["U"][0][0], P["theta1"], P["beta"])
    np.testing.assert_allclose(grads[0], P["c"] * (1 - P["alpha"]) * x[0].T @ D,
                               rtol=1e-12)
    assert np.abs(grads[0]).max() > 0
    # deeper: nothing reaches the output in one step -> uniform loss, zero grads
    W, x, y = make_net(6, T=1, B=4, p_in=0.5)
    loss, grads, tr = dense_bptt_numpy(W, x, y, **P)
    assert tr["S_raw"][0].sum() > 0
    assert loss == pytest.approx(math.log(SIZES[-1]), rel=1e-14)
    for g in grads:
        np.testing.assert_array_equal(g, 0.0)


def test_float32_dtype_numpy():
    W, x, y = make_net(3)
    _, g64, tr64 = dense_bptt_numpy(W, x, y, **P)
    loss32, g32, tr32 = dense_bptt_numpy(W, x, y, **P, dtype=np.float32)
    assert margin(tr64, P["theta1"]) > 1e-4
    for g in g32:
        assert g.dtype == np.float32
    for u in tr32["U"]:
        assert u.dtype == np.float32
    for a, b in zip(tr64["S"], tr32["S"]):
        np.testing.assert_array_equal(a, b)
    assert_grads_close(g64, g32, rtol=1e-4, atol_rel=1e-6)


def test_margin_helper():
    tr = {"U": [np.array([[[0.2, 1.5]]]), np.array([[[0.97]]])]}
    assert margin(tr, 1.0) == pytest.approx(0.03)


@pytest.mark.parametrize("bad", ["inputs", "labels", "weights", "mask", "mask_count"])
def test_argument_validation(bad):
    W, x, y = make_net(0, sizes=[4, 3, 2], T=3, B=2)
    kw = dict(P)
    if bad == "inputs":
        x = x[:, :, :3]
    elif bad == "labels":
        y = np.array([0, 2])
    elif bad == "weights":
        W = [W[0], W[1][:2]]
    elif bad == "mask":
        kw["list_mask"] = [np.ones((3, 2, 3), bool), np.ones((3, 2, 3), bool)]
    else:
        kw["spike_mask"] = [np.ones((3, 2, 3), bool)]
    with pytest.raises(ValueError):
        dense_bptt_numpy(W, x, y, **kw)
