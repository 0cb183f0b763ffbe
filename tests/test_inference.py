"""simulate(training=False): the training step's forward pass and loss, nothing of BPTT."""
import numpy as np
import pytest

import mimdsim
from mimdsim import ConfigError

CHIP = mimdsim.chip("ipu-mk2", tiles=128)


def _problem(sizes, T=12, B=6, seed=0, rate=0.2):
    rng = np.random.default_rng(seed)
    return (rng.random((T, B, sizes[0])) < rate).astype(np.uint8), rng.integers(0, sizes[-1], B)


def _category_totals(program):
    return {k: int(v.sum()) for k, v in program.tile_memory().items()}


@pytest.mark.parametrize("build", [
    lambda s: mimdsim.Network.feedforward(s, max_activity=0.1, weight_scale=4.0, seed=1),
    lambda s: mimdsim.Network.build(s, "synaptic", alpha=0.8, beta=0.9, weight_scale=4.0, seed=1),
    lambda s: mimdsim.Network.build(s, "leaky", beta=0.9, dense=True, weight_scale=4.0, seed=1),
], ids=["sparse-lif", "synaptic", "dense-activations"])
def test_inference_is_the_training_forward_pass(build):
    sizes = [24, 40, 32, 5]
    x, y = _problem(sizes)
    net = build(sizes)
    # one placement for both (the search may place inference, a program of its own, elsewhere)
    # the spike-list programs (an snnTorch model's default, PopTorch's, keeps no per-layer histories like these)
    kw = {"schedule": "fused"} if net.layers and not any(net.dense) else {}
    train = mimdsim.simulate(net, CHIP, inputs=x, labels=y, seed=3, neurons_per_tile=2, **kw)
    infer = mimdsim.simulate(net, CHIP, inputs=x, labels=y, seed=3, training=False, neurons_per_tile=2, **kw)
    assert infer.loss == train.loss and infer.grads is None and infer.param_grads is None
    np.testing.assert_array_equal(infer.counts, train.counts)
    rt, ri = train.report, infer.report
    assert ri.cycles["forward"] == rt.cycles["forward"] and ri.cycles["io"] == rt.cycles["io"]
    assert sum(ri.cycles["backward"].values()) == 0 and sum(ri.cycles["update"].values()) == 0
    assert ri.samples_per_second > rt.samples_per_second
    assert ri.placement["program"] == "inference" and rt.placement["program"] == "training"
    assert "inference" in ri.format()
    mt, mi = _category_totals(train.program), _category_totals(infer.program)
    assert mi.get("gradients", 0) == 0 and mi.get("optimizer", 0) == 0 and mt["gradients"] > 0
    T = x.shape[0]
    full = {a.name: int(a.nbytes.sum()) for a in train.program.tensors if a.category == "history"}
    kept = {a.name: int(a.nbytes.sum()) for a in infer.program.tensors if a.category == "history"}
    assert kept.keys() == full.keys() and full
    for name, nbytes in full.items():  # one step of state instead of T; the host streams all T inputs in
        assert kept[name] == (nbytes if name == "L1.input_history" else nbytes // T), name
    assert ri.memory["max_tile_bytes"] < rt.memory["max_tile_bytes"]
    # the weights are left alone
    assert all(np.array_equal(a, b) for a, b in zip(net.weights, build(sizes).weights))


def test_inference_rate_driven_and_per_step_loss_keeps_the_output_record():
    sizes = [24, 40, 5]
    net = mimdsim.Network.build(sizes, "leaky", beta=0.9, loss="ce_rate", max_activity=0.2)
    kw = dict(timesteps=10, batch_size=4, activity=0.05, neurons_per_tile=2)  # one placement for both
    train = mimdsim.simulate(net, CHIP, **kw)
    infer = mimdsim.simulate(net, CHIP, training=False, **kw)
    assert infer.report.cycles["forward"] == train.report.cycles["forward"]
    hist = {a.name: int(a.nbytes.sum()) for a in infer.program.tensors}
    full = {a.name: int(a.nbytes.sum()) for a in train.program.tensors}
    assert hist["L2.output_list_history"] == full["L2.output_list_history"]  # ce_rate reads all T steps
    assert hist["L1.membrane_history"] * 10 == full["L1.membrane_history"]


def test_inference_refuses_an_optimizer_and_a_non_bool():
    net = mimdsim.Network.feedforward([8, 6, 3])
    kw = dict(timesteps=4, batch_size=2, activity=0.1)
    with pytest.raises(ConfigError, match="inference computes no gradients"):
        mimdsim.simulate(net, CHIP, optimizer=mimdsim.Adam(), training=False, **kw)
    with pytest.raises(ConfigError, match="training="):
        mimdsim.simulate(net, CHIP, training="no", **kw)


def test_a_network_too_big_to_train_may_fit_for_inference():
    """Training keeps T steps of state, gradient copies and Adam moments; inference does not."""
    net = mimdsim.Network.feedforward([700, 1024, 1024, 20], max_activity=0.05)
    chip = mimdsim.chip("ipu-mk2", tiles=64)
    kw = dict(timesteps=100, batch_size=16, activity=0.02)
    with pytest.raises(mimdsim.OutOfTileMemory):
        mimdsim.simulate(net, chip, **kw)
    run = mimdsim.simulate(net, chip, training=False, **kw)
    assert run.report.memory["max_tile_bytes"] <= run.report.memory["tile_bytes_limit"]


def test_compare_refuses_inference():
    net = mimdsim.Network.feedforward([8, 6, 3])
    with pytest.raises(ConfigError, match="compare times training steps"):
        mimdsim.compare(net, CHIP, timesteps=4, batch_size=2, activity=0.1, training=False)
