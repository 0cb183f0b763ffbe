"""The neuron model zoo against snnTorch 1.0 (the oracle): identical spikes and membrane
traces over 50 steps, and gradients equal to snnTorch's autograd, for every neuron type,
reset mechanism, surrogate, recurrence, learnable parameter, loss and layer timing.

Capacity = layer size and theta2 = -inf (the zoo's defaults) list every neuron, so the
sparse machinery (spike lists, listed-only surrogates, partial sums) is exact-dense here.
"""

import numpy as np
import pytest

import mimdsim
from mimdsim.snn import NeuronSpec, Surrogate

torch = pytest.importorskip("torch")
pytest.importorskip("snntorch")
from snntorch_reference import run_snntorch  # noqa: E402

T = 50


def _relerr(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def _problem(spec, sizes=(12, 10, 6), B=3, delay=0, loss="ce_count", bias=True, seed=0, scale=2.0, rate=0.3,
             dtype=np.float32, **kw):
    net = mimdsim.Network.build(list(sizes), spec, delay=delay, bias=bias, loss=loss, seed=seed,
                                weight_scale=scale, dtype=dtype, **kw)
    rng = np.random.default_rng(seed + 100)
    x = (rng.random((T, B, sizes[0])) < rate).astype(np.uint8)
    y = rng.integers(0, net.readout.classes(sizes[-1]), B)
    return net, x, y


def check_against_snntorch(net, x, y, tol=1e-5, schedule=None):
    run = mimdsim.simulate(net, mimdsim.chip("ipu-mk2", tiles=32), inputs=x, labels=y, schedule=schedule)
    loss, grads, traces = run_snntorch(net, x, y)
    assert np.isfinite(loss)
    for l, (mine, ref) in enumerate(zip(run.traces, traces), start=1):
        if net.specs[l - 1].spiking:
            assert ref["spk"].sum() > 0, f"layer {l} never spiked: the case would not exercise it"
            np.testing.assert_array_equal(mine["spk"], ref["spk"], err_msg=f"layer {l} spikes")
        scale = max(np.abs(ref["mem"]).max(), 1e-6)
        assert np.abs(mine["mem"] - ref["mem"]).max() / scale < tol, f"layer {l} membrane"
    assert run.loss == pytest.approx(loss, rel=tol)
    assert set(grads) == {(l, k) for l, d in enumerate(run.param_grads) for k in d
                          if k != "recurrent_bias" or (l, k) in grads}
    for (l, key), g in grads.items():
        assert np.abs(g).sum() > 0, f"layer {l + 1} {key}: zero gradient, the case would not exercise it"
        assert _relerr(run.param_grads[l][key], g) < tol, f"layer {l + 1} {key} gradient"
    return run


CASES = {
    # model x reset (snnTorch's Leaky, Synaptic, Alpha, Lapicque)
    "leaky-subtract": (NeuronSpec("leaky", beta=0.9), {}),
    "leaky-zero": (NeuronSpec("leaky", beta=0.9, reset="zero"), {}),
    "leaky-none": (NeuronSpec("leaky", beta=0.9, reset="none"), {}),
    "synaptic-subtract": (NeuronSpec("synaptic", alpha=0.8, beta=0.7), {}),
    "synaptic-zero": (NeuronSpec("synaptic", alpha=0.8, beta=0.7, reset="zero"), {}),
    "synaptic-none": (NeuronSpec("synaptic", alpha=0.8, beta=0.7, reset="none"), {}),
    "alpha-zero": (NeuronSpec("alpha", alpha=0.9, beta=0.8), dict(scale=6.0)),
    "alpha-subtract": (NeuronSpec("alpha", alpha=0.9, beta=0.8, reset="subtract"), {}),
    "alpha-none": (NeuronSpec("alpha", alpha=0.9, beta=0.8, reset="none"), {}),
    # (atan in the next four: the fast sigmoid's slope of 25, the default surrogate, amplifies snnTorch's float32
    # spike rounding past these tolerances)
    "lapicque-subtract": (NeuronSpec("lapicque", beta=0.9, surrogate="atan"), dict(scale=10.0)),
    "lapicque-zero-RC": (NeuronSpec("lapicque", R=2.0, C=5.0, time_step=1.0, reset="zero"), dict(scale=8.0)),
    "lapicque-none-beta-R": (NeuronSpec("lapicque", beta=0.85, R=3.0, reset="none"), {}),
    # reset in the spiking step (reset_delay=False)
    "leaky-subtract-nodelay": (NeuronSpec("leaky", beta=0.8, reset_delay=False), {}),
    "leaky-zero-nodelay": (NeuronSpec("leaky", beta=0.8, reset="zero", reset_delay=False), {}),
    "synaptic-zero-nodelay": (NeuronSpec("synaptic", alpha=0.8, beta=0.7, reset="zero", reset_delay=False), {}),
    # recurrence (RLeaky, RSynaptic)
    "rleaky-all-to-all": (NeuronSpec("leaky", beta=0.9, recurrence="all-to-all"), {}),
    "rleaky-one-to-one-zero-nodelay": (NeuronSpec("leaky", beta=0.9, recurrence="one-to-one", reset="zero",
                                                  reset_delay=False), {}),
    "rsynaptic-all-to-all-zero": (NeuronSpec("synaptic", alpha=0.8, beta=0.7, recurrence="all-to-all",
                                             reset="zero"), {}),
    "rsynaptic-one-to-one": (NeuronSpec("synaptic", alpha=0.8, beta=0.7, recurrence="one-to-one"), {}),
    # per-neuron parameters
    "leaky-per-neuron": (NeuronSpec("leaky", beta=tuple(np.linspace(0.5, 0.95, 10)),
                                    threshold=tuple(np.linspace(0.8, 1.2, 10))), dict(sizes=(12, 10, 10))),
    # surrogates (snnTorch's formulas and defaults; superspike = fast_sigmoid with slope 10)
    **{f"surrogate-{s}": (NeuronSpec("leaky", beta=0.9, surrogate=s), {})
       for s in ("fast_sigmoid", "straight_through", "triangular", "spike_rate_escape", "superspike")},
    "surrogate-sigmoid": (NeuronSpec("leaky", beta=0.9, surrogate=Surrogate("sigmoid", slope=5.0)), {}),
    "surrogate-atan-alpha3": (NeuronSpec("leaky", beta=0.9, surrogate=Surrogate("atan", alpha=3.0)), {}),
    "surrogate-atan": (NeuronSpec("leaky", beta=0.9, surrogate="atan"), {}),
    # layer timing: the pipelined (one-step) inter-layer delay, three layers
    "delay1-synaptic-all-to-all": (NeuronSpec("synaptic", alpha=0.8, beta=0.7, recurrence="all-to-all"),
                                   dict(sizes=(12, 10, 8, 6), delay=1)),
    "delay0-three-layers": (NeuronSpec("leaky", beta=0.9, reset="zero"), dict(sizes=(12, 10, 8, 6))),
    # losses (snntorch.functional)
    "loss-ce_rate": (NeuronSpec("leaky", beta=0.9), dict(loss="ce_rate")),
    "loss-mse_count": (NeuronSpec("leaky", beta=0.9), dict(loss="mse_count")),
    "loss-ce_max_membrane": (NeuronSpec("leaky", beta=0.9), dict(loss="ce_max_membrane")),
    "loss-ce_count-population": (NeuronSpec("leaky", beta=0.9), dict(sizes=(12, 10, 8), num_classes=4)),
    "loss-mse_count-population": (NeuronSpec("leaky", beta=0.9), dict(sizes=(12, 10, 9), loss="mse_count",
                                                                       num_classes=3)),
}


# every case through each program: the hand-fused spike lists and PopTorch's dense matmuls (the default here)
PROGRAMS = ["fused", "poptorch"]


@pytest.mark.parametrize("schedule", PROGRAMS)
@pytest.mark.parametrize("name", list(CASES))
def test_identical_to_snntorch(name, schedule):
    spec, kw = CASES[name]
    run = check_against_snntorch(*_problem(spec, **kw), schedule=schedule)
    assert run.program.plan.schedule == (schedule or run.program.plan.schedule)


# Learnable beta and threshold: the scalar parameters' gradients are sums over T x B x n
# terms that cancel (the softmax gradient sums to zero), which float32 autograd itself
# resolves only to ~1e-5; compare in float64 (to 1e-7: snnTorch's spikes are float32
# tensors even in a float64 network, so its gradients pass through float32 at every spike).
LEARNABLE = {
    "leaky": NeuronSpec("leaky", beta=0.9, learn_beta=True, learn_threshold=True),
    "leaky-zero-nodelay": NeuronSpec("leaky", beta=0.9, learn_beta=True, learn_threshold=True, reset="zero",
                                     reset_delay=False),
    "leaky-subtract-nodelay": NeuronSpec("leaky", beta=0.9, learn_beta=True, learn_threshold=True,
                                         reset_delay=False, surrogate="atan"),
    "synaptic": NeuronSpec("synaptic", alpha=0.8, beta=0.7, learn_beta=True, learn_threshold=True),
    "synaptic-zero": NeuronSpec("synaptic", alpha=0.8, beta=0.7, learn_beta=True, learn_threshold=True,
                                reset="zero"),
    "alpha-zero": NeuronSpec("alpha", alpha=0.9, beta=0.8, learn_beta=True, learn_threshold=True),
    "alpha-subtract": NeuronSpec("alpha", alpha=0.9, beta=0.8, learn_beta=True, learn_threshold=True,
                                 reset="subtract", surrogate="atan"),
    "lapicque": NeuronSpec("lapicque", beta=0.9, learn_threshold=True),
    "per-neuron-beta": NeuronSpec("leaky", beta=tuple(np.linspace(0.5, 0.95, 10)), learn_beta=True),
}


@pytest.mark.parametrize("schedule", PROGRAMS)
@pytest.mark.parametrize("name", list(LEARNABLE))
def test_learnable_beta_and_threshold_match_snntorch(name, schedule):
    kw = dict(sizes=(12, 10, 10)) if name == "per-neuron-beta" else {}
    if name.startswith("alpha"):
        kw["scale"] = 6.0
    if name.startswith("lapicque"):
        kw["scale"] = 10.0
    net, x, y = _problem(LEARNABLE[name], dtype=np.float64, **kw)
    run = check_against_snntorch(net, x, y, tol=1e-7, schedule=schedule)
    assert any(k in run.param_grads[0] for k in ("beta", "threshold"))


def test_float32_learnable_threshold_within_float32_resolution():
    net, x, y = _problem(LEARNABLE["leaky"])
    run = mimdsim.simulate(net, mimdsim.chip("ipu-mk2", tiles=32), inputs=x, labels=y)
    _, grads, _ = run_snntorch(net, x, y)
    for key in ("beta", "threshold"):
        assert _relerr(run.param_grads[0][key], grads[(0, key)]) < 1e-4


def test_clamped_beta_gets_no_gradient_and_training_updates_parameters():
    net, x, y = _problem(NeuronSpec("leaky", beta=0.9, learn_beta=True, learn_threshold=True))
    net.neuron_params[0]["beta"] = np.asarray(1.2, dtype=np.float32)  # drifted outside [0, 1]
    run = mimdsim.simulate(net, mimdsim.chip("ipu-mk2", tiles=32), inputs=x, labels=y)
    assert run.param_grads[0]["beta"] == 0  # torch.clamp passes no gradient outside [0, 1]
    _, grads, traces = run_snntorch(net, x, y)  # snnTorch clamps the forward too
    np.testing.assert_array_equal(run.traces[0]["spk"], traces[0]["spk"])
    before = {k: v.copy() for k, v in net.neuron_params[1].items()}
    mimdsim.simulate(net, mimdsim.chip("ipu-mk2", tiles=32), inputs=x, labels=y, optimizer=mimdsim.SGD(lr=0.01))
    assert net.neuron_params[1]["threshold"] != before["threshold"]


@pytest.mark.parametrize("name", ["atan", "fast_sigmoid", "sigmoid", "straight_through", "triangular",
                                  "spike_rate_escape", "superspike"])
def test_surrogate_derivative_equals_snntorch_backward(name):
    from snntorch import surrogate as S

    fn = {"atan": S.atan(), "fast_sigmoid": S.fast_sigmoid(), "sigmoid": S.sigmoid(),
          "straight_through": S.straight_through_estimator(), "triangular": S.triangular(),
          "spike_rate_escape": S.spike_rate_escape(), "superspike": S.fast_sigmoid(slope=10)}[name]
    x = torch.linspace(-3, 3, 601, dtype=torch.float64, requires_grad=True)
    out = fn(x)
    np.testing.assert_array_equal(out.detach().numpy(), (x > 0).double().detach().numpy())
    (g,) = torch.autograd.grad(out.sum(), x)
    mine = Surrogate(name)(x.detach().numpy())  # snnTorch's defaults
    np.testing.assert_allclose(mine, g.numpy(), rtol=1e-12, atol=1e-300)
    # and the numba kernel the codelets use
    from mimdsim.kernels.mimdsim_snn import surrogate as ks
    kind, p1, p2 = Surrogate(name).code()
    np.testing.assert_allclose([ks.sg(v, kind, p1, p2) for v in x.detach().numpy()[::50]], mine[::50], rtol=1e-12)


def test_published_sparse_lif_is_one_configuration_of_the_family():
    net = mimdsim.Network.feedforward([20, 10, 4])
    spec = net.specs[0]
    assert (spec.model, spec.reset, spec.reset_in_gradient, spec.surrogate.name) == ("leaky", "zero", False, "superspike")
    assert spec.gain == pytest.approx(10 * (1 - 0.95)) and spec.surrogate["beta"] == 10.0 and net.delay == 1
    chip = mimdsim.chip("ipu-mk2", tiles=16)
    prog = mimdsim.simulate(net, chip, timesteps=3, batch_size=2, activity=0.1, schedule="fused").program
    fwd = [s for s in prog.supersteps() if s.name == "fwd.neuron"][0]
    assert {v.codelet for v in fwd.compute} == {"lif_forward"}
    assert all(v.geometry["update"] == 10 for v in fwd.compute)
    # the published op runs this model by default: its own state-update vertices
    prog = mimdsim.simulate(net, chip, timesteps=3, batch_size=2, activity=0.1).program
    assert prog.plan.schedule == "published"
    fwd = [s for s in prog.supersteps() if s.name == "fwd.state_update"][0]
    assert {v.codelet for v in fwd.compute} == {"gsnn.state_update"}


def test_reset_excluded_from_gradient_is_the_backward_of_reset_none():
    """reset_in_gradient=False keeps the forward of the reset and the gradient of no reset."""
    spec = NeuronSpec("leaky", beta=0.9, reset="zero", reset_in_gradient=False, surrogate="atan")
    net, x, y = _problem(spec, dtype=np.float64)
    run = mimdsim.simulate(net, mimdsim.chip("ipu-mk2", tiles=32), inputs=x, labels=y)
    # autograd with the reset detached: u = beta m - detach(beta R m) + J
    import snntorch as snn
    W = [torch.tensor(w, requires_grad=True) for w in net.weights]
    b = [torch.tensor(v, requires_grad=True) for v in net.biases]
    sg = snn.surrogate.atan()
    xs = torch.tensor(x, dtype=torch.float64)
    m = [torch.zeros(x.shape[1], n, dtype=torch.float64) for n in net.sizes[1:]]
    out = []
    for t in range(T):
        inp = xs[t]
        for l in range(2):
            R = (m[l] > 1.0).double()
            m[l] = 0.9 * m[l] - (0.9 * R * m[l]).detach() + inp @ W[l] + b[l]
            inp = sg(m[l] - 1.0).double()
        out.append(inp)
    from snntorch import functional as SF
    loss = SF.ce_count_loss()(torch.stack(out), torch.tensor(y))
    grads = torch.autograd.grad(loss, W)
    assert run.loss == pytest.approx(float(loss.detach()), rel=1e-12)
    for g, gr in zip(run.grads, grads):
        assert _relerr(g, gr.numpy()) < 1e-7  # snnTorch's surrogate passes gradients through float32
