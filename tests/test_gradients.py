"""Loss and gradients of the simulated chip against an independent dense BPTT reference."""
import numpy as np
import pytest

import mimdsim
from reference import dense_bptt_numpy, margin


def _problem(sizes, T, B, seed, rate=0.3, weight_scale=3.0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    x = (rng.random((T, B, sizes[0])) < rate).astype(np.uint8)
    y = rng.integers(0, sizes[-1], B)
    return x, y


def _relerr(a, b):
    return np.linalg.norm(np.asarray(a, np.float64) - b) / max(np.linalg.norm(b), 1e-30)


def _dense_net(sizes, seed, weight_scale, dtype=np.float32):
    # capacity = layer size and theta2 = -inf: every neuron is listed -> dense BPTT
    return mimdsim.Network.feedforward(sizes, capacities=list(sizes), theta2=-np.inf, seed=seed,
                                       weight_scale=weight_scale, dtype=dtype)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("sizes", [[24, 16, 12, 5], [30, 20, 4]])
def test_dense_capacity_equals_dense_bptt(sizes, seed):
    x, y = _problem(sizes, T=30, B=7, seed=seed)
    net = _dense_net(sizes, seed, weight_scale=4.0)
    chip = mimdsim.chip("ipu-mk2", tiles=32)
    run = mimdsim.simulate(net, chip, inputs=x, labels=y)
    kw = dict(alpha=0.95, c=10.0, theta1=1.0, beta=10.0)
    loss, grads, trace = dense_bptt_numpy([w.astype(np.float64) for w in net.weights], x, y, **kw)
    assert margin(trace, 1.0) > 1e-4, "a membrane sits on the threshold; the spike pattern is ill-posed"
    for l, S in enumerate(trace["S"], start=1):
        assert S.any(), f"layer {l} never spiked: the test would not exercise it"
    assert run.loss == pytest.approx(loss, rel=1e-5)
    for l, (g, gr) in enumerate(zip(run.grads, grads)):
        assert g.shape == net.weights[l].shape
        assert np.abs(gr).sum() > 0
        assert _relerr(g, gr) < 1e-5, f"layer {l} gradient"


def test_dense_capacity_float64_is_exact():
    sizes = [20, 14, 9, 3]
    x, y = _problem(sizes, T=25, B=6, seed=5)
    net = _dense_net(sizes, 5, weight_scale=4.0, dtype=np.float64)
    run = mimdsim.simulate(net, mimdsim.chip("ipu-mk2", tiles=32), inputs=x, labels=y)
    loss, grads, _ = dense_bptt_numpy(net.weights, x, y, alpha=0.95, c=10.0, theta1=1.0, beta=10.0)
    assert run.loss == pytest.approx(loss, rel=1e-12)
    for g, gr in zip(run.grads, grads):
        assert _relerr(g, gr) < 1e-10


def _masks_from_run(run, net, T, B):
    """Rebuild the dense masks that the chip's spike lists imply."""
    masks_spk, masks_list = [], []
    for l in range(len(net.sizes)):
        n = net.sizes[l]
        ids = run.lists[l]
        kept, listed = run.stats.kept[l], run.stats.listed[l]
        k = np.arange(ids.shape[2])
        spk = np.zeros((T, B, n), bool)
        lst = np.zeros((T, B, n), bool)
        tt, bb, kk = np.nonzero(k[None, None, :] < kept[..., None])
        spk[tt, bb, ids[tt, bb, kk]] = True
        tt, bb, kk = np.nonzero(k[None, None, :] < listed[..., None])
        lst[tt, bb, ids[tt, bb, kk]] = True
        masks_spk.append(spk)
        masks_list.append(lst)
    return masks_spk, masks_list


@pytest.mark.parametrize("policy", ["lowest-index", "random"])
def test_small_capacity_equals_masked_dense_bptt(policy):
    sizes = [40, 30, 24, 6]
    T, B = 30, 8
    x, y = _problem(sizes, T, B, seed=3, rate=0.25)
    net = mimdsim.Network.feedforward(sizes, capacities=[6, 4, 4, 2], theta2=0.5, seed=3, weight_scale=5.0,
                                      overflow=policy, input_overflow=policy)
    run = mimdsim.simulate(net, mimdsim.chip("ipu-mk2", tiles=64), inputs=x, labels=y, seed=11)
    rep = {ly["layer"]: ly for ly in run.report.layers}
    assert rep[0]["dropped_spikes"] > 0 and rep[1]["dropped_spikes"] > 0, "lists must overflow in this test"
    assert rep[1]["dropped_candidates"] > 0
    spk, lst = _masks_from_run(run, net, T, B)
    loss, grads, trace = dense_bptt_numpy([w.astype(np.float64) for w in net.weights], x, y,
                                          alpha=0.95, c=10.0, theta1=1.0, beta=10.0,
                                          input_mask=spk[0], spike_mask=spk[1:], list_mask=lst[1:])
    assert margin(trace, 1.0) > 1e-4
    # the spikes the reference sees are exactly those the chip listed
    for l in range(1, len(sizes)):
        assert np.array_equal(trace["S"][l - 1].astype(bool), spk[l])
    assert run.loss == pytest.approx(loss, rel=1e-5)
    for l, (g, gr) in enumerate(zip(run.grads, grads)):
        assert np.abs(gr).sum() > 0
        assert _relerr(g, gr) < 1e-5, f"layer {l} gradient"


def test_identical_seeds_identical_results():
    sizes = [40, 30, 24, 6]
    x, y = _problem(sizes, 20, 6, seed=9)
    runs = []
    for _ in range(2):
        net = mimdsim.Network.feedforward(sizes, capacities=[6, 4, 4, 2], seed=4, weight_scale=5.0,
                                          overflow="random", input_overflow="random")
        runs.append(mimdsim.simulate(net, mimdsim.chip("ipu-mk2", tiles=64), inputs=x, labels=y, seed=2))
    a, b = runs
    assert a.loss == b.loss
    for g1, g2 in zip(a.grads, b.grads):
        assert np.array_equal(g1, g2)
    assert a.report.to_dict() == b.report.to_dict()


def test_optimizer_applies_update():
    sizes = [24, 16, 5]
    x, y = _problem(sizes, 20, 6, seed=1)
    net = mimdsim.Network.feedforward(sizes, capacities=list(sizes), theta2=-np.inf, weight_scale=4.0)
    before = [w.copy() for w in net.weights]
    run = mimdsim.simulate(net, mimdsim.chip("ipu-mk2", tiles=16), inputs=x, labels=y, optimizer=mimdsim.SGD(lr=0.1))
    for w0, w, g in zip(before, net.weights, run.grads):
        np.testing.assert_allclose(w, w0 - 0.1 * g, rtol=1e-6, atol=1e-7)
    opt = mimdsim.Adam(lr=1e-2)
    losses = []
    for _ in range(15):
        losses.append(mimdsim.simulate(net, mimdsim.chip("ipu-mk2", tiles=16), inputs=x, labels=y,
                                       optimizer=opt).loss)
    assert losses[-1] < losses[0]


def test_dense_output_lists_every_output_neuron_and_matches_masked_bptt():
    """dense_output: per-layer theta2 (hidden 0.5, output -inf) reaches the chip's lists."""
    sizes = [40, 30, 24, 6]
    T, B = 30, 8
    x, y = _problem(sizes, T, B, seed=3, rate=0.25)
    net = mimdsim.Network.feedforward(sizes, capacities=[6, 4, 4, 6], theta2=0.5, seed=3, weight_scale=5.0,
                                      dense_output=True)
    assert [s.theta2 for s in net.specs] == [0.5, 0.5, -np.inf]
    run = mimdsim.simulate(net, mimdsim.chip("ipu-mk2", tiles=64), inputs=x, labels=y, seed=11)
    spk, lst = _masks_from_run(run, net, T, B)
    assert lst[3].all(), "every output neuron is listed at every step"
    assert not lst[1].all() and lst[1].sum(axis=2).max() <= 4, "hidden lists stay sparse"
    loss, grads, _ = dense_bptt_numpy([w.astype(np.float64) for w in net.weights], x, y,
                                      alpha=0.95, c=10.0, theta1=1.0, beta=10.0,
                                      input_mask=spk[0], spike_mask=spk[1:], list_mask=lst[1:])
    assert run.loss == pytest.approx(loss, rel=1e-5)
    for l, (g, gr) in enumerate(zip(run.grads, grads)):
        assert _relerr(g, gr) < 1e-5, f"layer {l} gradient"
    with pytest.raises(mimdsim.ConfigError, match="dense_output"):
        mimdsim.Network.feedforward(sizes, capacities=[6, 4, 4, 2], dense_output=True)


@pytest.mark.parametrize("dense", [True, False])
def test_activity_l1_equals_reference(dense):
    """activity_l1 on the chip == the reference's L1 penalty (dense lists and small ones)."""
    sizes = [40, 30, 24, 6]
    T, B = 30, 8
    x, y = _problem(sizes, T, B, seed=4, rate=0.25)
    caps = list(sizes) if dense else [6, 4, 4, 2]
    net = mimdsim.Network.feedforward(sizes, capacities=caps, theta2=-np.inf if dense else 0.5, seed=4,
                                      weight_scale=5.0, overflow="random")
    net.readout = mimdsim.Readout(activity_l1=0.003)
    run = mimdsim.simulate(net, mimdsim.chip("ipu-mk2", tiles=64), inputs=x, labels=y, seed=2)
    spk, lst = _masks_from_run(run, net, T, B)
    loss, grads, trace = dense_bptt_numpy([w.astype(np.float64) for w in net.weights], x, y,
                                          alpha=0.95, c=10.0, theta1=1.0, beta=10.0, activity_l1=0.003,
                                          input_mask=spk[0], spike_mask=spk[1:], list_mask=lst[1:])
    assert margin(trace, 1.0) > 1e-4
    assert sum(s.sum() for s in trace["S"][:-1]) > 0
    assert run.loss == pytest.approx(loss, rel=1e-5)
    for l, (g, gr) in enumerate(zip(run.grads, grads)):
        assert _relerr(g, gr) < 1e-5, f"layer {l} gradient"
    with pytest.raises(mimdsim.ConfigError, match="activity_l1"):
        mimdsim.Readout(activity_l1=-1.0)
