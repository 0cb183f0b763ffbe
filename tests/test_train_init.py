"""Initial weights: the activity rule starts every layer near its target spike fraction, for
every neuron model of the zoo; the fan-in rule is what weight_scale selects; bad targets are
refused naming the value."""
import warnings

import numpy as np
import pytest

import mimdsim
from mimdsim import NeuronSpec
from mimdsim.errors import ConfigError
from mimdsim.snn.network import activity_stds, init_weights

SIZES = [400, 300, 300, 50]
MODELS = {"published": None, "leaky": NeuronSpec("leaky", beta=0.9),
          "leaky-zero": NeuronSpec("leaky", beta=0.8, reset="zero"),
          "synaptic": NeuronSpec("synaptic", alpha=0.8, beta=0.7), "alpha": NeuronSpec("alpha", alpha=0.9, beta=0.8),
          "lapicque": NeuronSpec("lapicque", beta=0.9)}


def _activity(net, rate=0.05, T=100, B=4):
    x = (np.random.default_rng(0).random((T, B, net.sizes[0])) < rate).astype(np.uint8)
    y = np.random.default_rng(1).integers(0, net.sizes[-1], B)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a silent layer fails the test
        run = mimdsim.simulate(net, mimdsim.chip("ipu-mk2", tiles=400), inputs=x, labels=y, training=False)
    return np.array([ly["activity"] for ly in run.report.layers[1:]])


@pytest.mark.parametrize("model", list(MODELS))
def test_every_layer_starts_near_its_target(model):
    spec, target = MODELS[model], 0.05
    if spec is None:  # the published LIF behind 10% lists: half full
        net = mimdsim.Network.feedforward(SIZES, max_activity=2 * target, input_activity=0.05)
    else:
        net = mimdsim.Network.build(SIZES, spec, init_activity=target, input_activity=0.05)
    ratio = _activity(net) / target
    assert np.all((ratio > 0.6) & (ratio < 1.4)), ratio  # 0.78-1.05 when written


def test_sparse_lists_keep_every_layer_alive():
    net = mimdsim.Network.feedforward(SIZES, max_activity=0.02, input_activity=0.05)  # K = 6 of 300: bursts cut
    ratio = _activity(net) / 0.01
    assert np.all((ratio > 0.25) & (ratio < 1.4)), ratio  # 0.70, 0.56, 0.42 when written


def test_the_readme_network_spikes_at_half_its_max_activity():
    net = mimdsim.Network.feedforward([2312, 978, 978, 976, 10], max_activity=0.01)
    ratio = _activity(net, rate=0.005, B=8) / 0.005
    assert np.all((ratio > 0.6) & (ratio < 1.4)), ratio


def test_weight_scale_is_the_fan_in_rule_and_excludes_the_activity_rule():
    net = mimdsim.Network.feedforward([100, 60, 10], weight_scale=2.0, seed=3)
    ref = init_weights([100, 60, 10], seed=3, scale=2.0)
    assert all(np.array_equal(a, b) for a, b in zip(net.weights, ref))
    with pytest.raises(ConfigError, match="weight_scale=2.0 .*give one"):
        mimdsim.Network.feedforward([100, 60, 10], weight_scale=2.0, init_activity=0.01)
    with pytest.raises(ConfigError, match="init_activity"):
        mimdsim.Network.build([100, 60, 10], "leaky", beta=0.9, init_activity=1.5)
    with pytest.raises(ConfigError, match="init_activity has 3 entries"):
        mimdsim.Network.build([100, 60, 10], "leaky", beta=0.9, init_activity=[0.1, 0.1, 0.1])


def test_the_rule_is_deterministic_and_scales_with_the_active_inputs():
    specs = [NeuronSpec("leaky", beta=0.9)] * 2
    a = activity_stds([400, 300, 10], [400, 300, 10], specs, 0.05, 0.05)
    b = activity_stds([1600, 300, 10], [1600, 300, 10], specs, 0.05, 0.05)
    assert a == activity_stds([400, 300, 10], [400, 300, 10], specs, 0.05, 0.05)
    assert b[0] == pytest.approx(a[0] / 2)  # four times the active inputs: half the weight scale
