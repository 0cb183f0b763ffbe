"""Dense activations on the MIMD chip: a matmul per step (AMP in fp16, SIMD in fp32)."""
import dataclasses

import numpy as np
import pytest

import mimdsim
from mimdsim.kernels.mimdsim_snn import dense_snn
from mimdsim.kernels.tile import Tile
from mimdsim.errors import ConfigError
from mimdsim.snn import NeuronSpec


def _data(T=25, B=8, n=50, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.random((T, B, n)) < 0.2).astype(np.uint8), rng.integers(0, 10, B)


@pytest.mark.parametrize("delay", [0, 1])
def test_dense_numerics_equal_the_exact_sparse_lists(delay):
    x, y = _data()
    spec = NeuronSpec("synaptic", alpha=0.8, beta=0.7, recurrence="one-to-one", reset="zero")
    chip = mimdsim.chip("ipu-mk2", tiles=64)
    sparse = mimdsim.Network.build([50, 40, 10], spec, bias=True, weight_scale=3.0, delay=delay)
    dense = mimdsim.Network.build([50, 40, 10], spec, bias=True, weight_scale=3.0, delay=delay, dense=True)
    rs = mimdsim.simulate(sparse, chip, inputs=x, labels=y, schedule="fused")  # the exact spike lists
    rd = mimdsim.simulate(dense, chip, inputs=x, labels=y)
    assert rd.loss == rs.loss
    for a, b in zip(rs.grads, rd.grads):
        np.testing.assert_array_equal(a, b)
    names = {v.codelet for s in rd.program.supersteps() for v in s.compute}
    assert {"dense_forward", "dense_scatter", "dense_weight_grad", "dense_input_grad"} <= names
    assert not names & {"spike_scan", "spike_combine", "lif_forward", "synaptic_forward"}
    assert rd.report.layers[1]["activity"] == rs.report.layers[1]["activity"]


def test_dense_activations_with_the_activity_penalty_equal_the_lists():
    """Readout(activity_l1) on the matmul program: the same loss and gradients as full lists."""
    x, y = _data()
    chip = mimdsim.chip("ipu-mk2", tiles=64)
    sizes = [50, 40, 30, 10]
    lists = mimdsim.Network.feedforward(sizes, capacities=sizes, theta2=-np.inf, weight_scale=4.0)
    lists.readout = mimdsim.Readout(activity_l1=1e-3)
    dense = dataclasses.replace(lists, dense=(True,) * 3)
    plain = dataclasses.replace(lists, readout=mimdsim.Readout())
    rl, rd, rp = (mimdsim.simulate(n, chip, inputs=x, labels=y) for n in (lists, dense, plain))
    assert rd.loss == pytest.approx(rl.loss, rel=1e-6) and rl.loss > rp.loss
    for a, b in zip(rl.grads, rd.grads):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-7)
    assert rd.report.cycles["backward"]["compute"] > mimdsim.simulate(
        dataclasses.replace(dense, readout=mimdsim.Readout()), chip, inputs=x, labels=y).report.cycles["backward"]["compute"]


def test_dense_costs_by_hand():
    tile = Tile()
    # fp32 SIMD: 4 neurons (2 float2 vectors), 3 inputs, batch 6: 10 + 3 (1 + 2) + 2 * 10 = 39 per sample
    assert dense_snn.dense_forward_cycles(np.array([4]), 3, 6, tile, 10)[0] == 6 * 39 + 11
    # fp16 AMP, poplin's ConvPartial1x1Out estimate of [6 x 3] . [3 x 4] (sdk-release-2.6, HalfFloat): one input
    # group, one output group (16 conv units), loads 16 x 32 B / 8 = 64, one field element per worker: worker(1)
    # 31 + 1 (zeroing) - 7 (retention) = 25, inner max(6 x 25, 6 x 25 + 14) = 164:
    # 50 + 6 x 7 + 12 + 1 + 10 + 1 + (19 - 1 + 7 + 64 + 164) = 369; + update loop
    t16 = Tile(simd=4)
    amp = 50 + 6 * 7 + 12 + 1 + 10 + 1 + (19 - 1 + 7 + 64 + 164)
    upd = 6 * (4 + 1 * 10) + 11
    assert dense_snn.dense_forward_cycles(np.array([4]), 3, 6, t16, 10, "fp16")[0] == amp + upd
    # weight gradient fp32: per sample 3 * (1 + 2 * 3) = 21; input gradient: 3 * (2 + 3) = 15
    assert dense_snn.dense_weight_grad_cycles(np.array([4]), 3, 6, tile)[0] == 6 * 21 + 11
    assert dense_snn.dense_input_grad_cycles(np.array([4]), 3, 6, tile)[0] == 6 * 15 + 11


def test_sparse_beats_dense_at_low_activity_and_fp16_amp_beats_fp32_simd():
    spec = NeuronSpec("leaky", beta=0.9)
    chip = mimdsim.chip("ipu-mk2")
    kw = dict(timesteps=25, batch_size=16, activity=0.01)
    sparse = mimdsim.Network.build([784, 1000, 10], spec, max_activity=0.02)
    dense = mimdsim.Network.build([784, 1000, 10], spec, dense=True)
    rs = mimdsim.simulate(sparse, chip, **kw).report
    rd32 = mimdsim.simulate(dense, chip, **kw).report
    rd16 = mimdsim.simulate(dense, chip, precision="fp16", **kw).report
    assert rs.samples_per_second > rd32.samples_per_second
    assert rd16.samples_per_second > rd32.samples_per_second
    assert rd16.memory["max_tile_bytes"] < rd32.memory["max_tile_bytes"]


def test_dense_errors():
    with pytest.raises(ConfigError, match="apply to every layer"):
        mimdsim.Network.build([5, 4, 3], "leaky", beta=0.9, dense=[True, False])
    with pytest.raises(ConfigError, match="capacities must equal the sizes"):
        mimdsim.Network.build([5, 4, 3], "leaky", beta=0.9, dense=True, max_activity=0.5)
