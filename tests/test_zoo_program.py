"""The neuron zoo on the chip: instruction counts, layer timing (delay 0/1), memory
footprints, float16 costs and numerics, non-spiking readout, and clear errors."""

import numpy as np
import pytest

import mimdsim
from mimdsim.kernels.mimdsim_snn import bptt, lif
from mimdsim.kernels.tile import Tile
from mimdsim.workloads.snn.programs.compile import compile_program
from mimdsim.errors import ConfigError
from mimdsim.program import Loop
from mimdsim.snn import NeuronSpec, Surrogate


def test_published_lif_instruction_counts_are_unchanged():
    assert lif.forward_update_instructions() == lif.UPDATE_PER_VECTOR == 10
    assert bptt.backward_instructions() == (bptt.CARRY_PER_VECTOR, bptt.SCATTER_OWN_PER_ID) == (5, 15)


def test_update_instructions_by_hand():
    f = lif.forward_update_instructions
    # base 8; subtract +3; bias +2
    assert f("leaky", "subtract", bias=True) == 8 + 3 + 2
    # synaptic +4, zero +2, same-step reset +4
    assert f("synaptic", "zero", reset_delay=False) == 8 + 4 + 2 + 4
    # alpha: currents (10) replace mul beta and add (-2); zero +2
    assert f("alpha", "zero") == 8 + 10 - 2 + 2
    assert f("leaky", "none", one_to_one=True, per_neuron_params=2, membrane_max=True) == 8 + 3 + 2 + 3
    c, o = bptt.backward_instructions("synaptic", "zero", reset_in_gradient=True, whole=True, surrogate="atan",
                                      learn_beta=True, learn_threshold=True, bias=True)
    assert c == 5 + 3 + 1 + 4 + 3 + 3 and o == 7 + 8 + 2
    c, o = bptt.backward_instructions("leaky", "subtract", reset_delay=False, reset_in_gradient=True,
                                      surrogate="sigmoid", one_to_one=True)
    assert c == 5 + 5 + 5 and o == 7 + 21 + 2 + 1


def test_fp16_tile_has_four_lanes_and_halves_vector_work():
    chip = mimdsim.chip("ipu-mk2")
    assert Tile.of(chip).simd == 2 and Tile.of(chip, "fp16").simd == 4
    t32, t16 = Tile.of(chip), Tile.of(chip, "fp16")
    # 8 neurons: 4 float2 vectors (register accumulator) vs 2 half4 vectors
    c32 = lif.lif_forward_cycles(np.array([8]), np.array([3] * 6), t32)
    c16 = lif.lif_forward_cycles(np.array([8]), np.array([3] * 6), t16)
    assert c32[0] == 6 * (10 + 3 * (4 + 4) + 4 * 10) + 11
    assert c16[0] == 6 * (10 + 3 * (4 + 2) + 2 * 10) + 11


def _program(spec, sizes=(40, 30, 20, 6), delay=1, T=5, B=3, **kw):
    net = mimdsim.Network.build(list(sizes), spec, delay=delay, **kw)
    return net, compile_program(net.sizes, net.capacities, mimdsim.system("ipu-mk2", tiles=128), timesteps=T,
                                batch_size=B, neurons_per_tile=2, structure=net.structure, schedule="fused")


def test_delay0_runs_layers_in_sequence_and_delay1_in_the_same_supersteps():
    spec = NeuronSpec("leaky", beta=0.9)
    _, p1 = _program(spec, delay=1)
    _, p0 = _program(spec, delay=0)
    names1 = [s.name for s in p1.supersteps()]
    names0 = [s.name for s in p0.supersteps()]
    assert names1[1:4] == ["fwd.neuron", "fwd.scan", "fwd.combine"]
    assert names0[1:10] == ["fwd.neuron.L1", "fwd.scan.L1", "fwd.combine.L1", "fwd.neuron.L2", "fwd.scan.L2",
                            "fwd.combine.L2", "fwd.neuron.L3", "fwd.scan.L3", "fwd.combine.L3"]
    bwd0 = [s for s in p0.schedule if isinstance(s, Loop) and s.name == "backward"][0]
    assert [s.name for s in bwd0.body] == ["bwd.neuron.L3", "bwd.reduce1.L3", "bwd.reduce2.L3", "bwd.neuron.L2",
                                           "bwd.reduce1.L2", "bwd.reduce2.L2", "bwd.neuron.L1"]
    T, L = 5, 3
    count = lambda prog: sum(len(s.body) * s.count if isinstance(s, Loop) else 1 for s in prog.schedule)  # noqa: E731
    assert count(p1) == 1 + 3 * T + 2 + 3 * T + 2
    assert count(p0) == 1 + 3 * L * T + 2 + (3 * L - 2) * T + 2
    # same work, more barriers and exchange phases: delay 0 is slower on the chip
    r0 = mimdsim.simulate(_program(spec, delay=0)[0], mimdsim.chip("ipu-mk2", tiles=128), timesteps=5,
                          batch_size=3, activity=0.1, schedule="fused")
    r1 = mimdsim.simulate(_program(spec, delay=1)[0], mimdsim.chip("ipu-mk2", tiles=128), timesteps=5,
                          batch_size=3, activity=0.1, schedule="fused")
    s0, s1 = r0.report.kind_totals(), r1.report.kind_totals()
    assert s0["sync"] > s1["sync"] and r0.report.total_cycles > r1.report.total_cycles


def test_codelets_and_geometry_follow_the_neuron_model():
    for model, kw, fwd, bwd in [("synaptic", dict(alpha=0.8, beta=0.7), "synaptic_forward", "synaptic_scatter"),
                                ("alpha", dict(alpha=0.9, beta=0.8), "alpha_forward", "alpha_scatter"),
                                ("lapicque", dict(beta=0.9), "lapicque_forward", "lapicque_scatter")]:
        spec = NeuronSpec(model, **kw)
        _, prog = _program(spec)
        step = {s.name: s for s in prog.supersteps()}
        assert {v.codelet for v in step["fwd.neuron"].compute} == {fwd}
        assert bwd in {v.codelet for v in step["bwd.neuron"].compute}
        update = lif.forward_update_instructions(model, spec.reset)
        assert {v.geometry["update"] for v in step["fwd.neuron"].compute} == {update}


def _bytes_on(prog, tile):
    out = {}
    for a in prog.tensors:
        hit = a.tiles == tile
        if hit.any():
            out[a.name] = out.get(a.name, 0) + int(a.nbytes[hit].sum())
    return out


def test_memory_footprints_of_states_histories_and_recurrence():
    T, B = 5, 3
    syn = NeuronSpec("synaptic", alpha=0.8, beta=0.7, reset_delay=False)
    _, prog = _program(syn, T=T, B=B)
    t = prog.mapping.layers[0].first_tile
    m = _bytes_on(prog, t)
    assert m["L1.state"] == B * 2 * 4  # the synaptic current, live
    assert m["L1.m_history"] == T * B * 2 * 4  # membrane after the same-step reset
    assert m["L1.dU_dI"] == 3 * B * 2 * 4  # dL/dm, dL/ds carries and dI
    alpha = NeuronSpec("alpha", alpha=0.9, beta=0.8, learn_beta=True)
    m = _bytes_on(_program(alpha, T=T, B=B)[1], t)
    assert m["L1.exc_history"] == m["L1.inh_history"] == T * B * 2 * 4
    a2a = NeuronSpec("leaky", beta=0.9, recurrence="all-to-all")
    net, prog = _program(a2a, T=T, B=B)
    m = _bytes_on(prog, t)
    n1, K1 = net.sizes[1], net.capacities[1]
    assert m["L1.extra_params"] == (n1 + 1) * 2 * 4  # recurrent columns and bias
    assert m["L1.own_list_history"] == T * B * (K1 + 2) * 2
    assert m["L1.partials"] == B * K1 * 4  # layer 1: only its own list's partials
    # fp16 halves every value (not the ids)
    prog16 = compile_program(net.sizes, net.capacities, mimdsim.system("ipu-mk2", tiles=128), timesteps=T,
                             batch_size=B, neurons_per_tile=2, structure=net.structure, precision="fp16",
                             schedule="fused")
    m16 = _bytes_on(prog16, t)
    for name in ("L1.weights", "L1.grad_copies", "L1.membrane_history", "L1.extra_params"):
        assert m16[name] * 2 == m[name]
    assert m16["L1.own_list_history"] == m["L1.own_list_history"]


def test_fp16_numerics_within_documented_tolerance_of_fp32():
    """docs/cost-model.md: fp16 runs keep the loss within 1%, spikes within 0.1% and the
    weight gradients' direction (cosine >= 0.99) of float32 on these feed-forward models."""
    rng = np.random.default_rng(0)
    x = (rng.random((25, 16, 100)) < 0.2).astype(np.uint8)
    y = rng.integers(0, 10, 16)
    for net in (mimdsim.Network.feedforward([100, 64, 10], capacities=[100, 64, 10], theta2=-np.inf,
                                            weight_scale=4.0),
                mimdsim.Network.build([100, 64, 10], NeuronSpec("leaky", beta=0.9), bias=True, weight_scale=3.0)):
        chip = mimdsim.chip("ipu-mk2", tiles=64)
        r32 = mimdsim.simulate(net, chip, inputs=x, labels=y, schedule="fused")
        r16 = mimdsim.simulate(net, chip, inputs=x, labels=y, precision="fp16", schedule="fused")
        assert r16.loss == pytest.approx(r32.loss, rel=1e-2)
        s32 = np.concatenate([t["spk"].ravel() for t in r32.traces])
        s16 = np.concatenate([t["spk"].ravel() for t in r16.traces])
        assert (s32 != s16).mean() <= 1e-3
        for a, b in zip(r32.grads, r16.grads):
            assert np.dot(a.ravel(), b.ravel()) / np.linalg.norm(a) / np.linalg.norm(b) >= 0.99
        # values stored in half precision
        assert np.array_equal(r16.traces[0]["mem"], r16.traces[0]["mem"].astype(np.float16))
        # cheaper compute and smaller tiles
        assert r16.report.total_cycles < r32.report.total_cycles
        assert r16.report.memory["max_tile_bytes"] < r32.report.memory["max_tile_bytes"]
        assert (r32.report.placement["precision"], r16.report.placement["precision"]) == ("fp32", "fp16")


def test_rate_driven_zoo_network_runs_and_exec_rate_agree_on_structure():
    net = mimdsim.Network.build([60, 40, 10], NeuronSpec("synaptic", alpha=0.8, beta=0.7, recurrence="all-to-all"),
                                max_activity=0.2, bias=True, weight_scale=3.0)
    chip = mimdsim.chip("ipu-mk2", tiles=64)
    rng = np.random.default_rng(1)
    x = (rng.random((10, 6, 60)) < 0.2).astype(np.uint8)
    ex = mimdsim.simulate(net, chip, inputs=x, labels=rng.integers(0, 10, 6))
    acts = [ly["activity"] for ly in ex.report.layers]
    rt = mimdsim.simulate(net, chip, timesteps=10, batch_size=6, activity=acts[1:], input_activity=acts[0])
    assert set(ex.report.steps) == set(rt.report.steps)
    assert rt.report.total_cycles == pytest.approx(ex.report.total_cycles, rel=0.25)


def test_non_spiking_output_layer_reads_the_membrane():
    from snntorch_reference import run_snntorch
    pytest.importorskip("snntorch")
    specs = [NeuronSpec("leaky", beta=0.9), NeuronSpec("leaky", beta=0.8, spiking=False)]
    net = mimdsim.Network.build([12, 10, 5], specs, bias=True, loss="ce_max_membrane", weight_scale=2.0)
    rng = np.random.default_rng(3)
    x = (rng.random((50, 3, 12)) < 0.3).astype(np.uint8)
    y = rng.integers(0, 5, 3)
    run = mimdsim.simulate(net, mimdsim.chip("ipu-mk2", tiles=32), inputs=x, labels=y, schedule="fused")
    names = {s.name for s in run.program.supersteps()}
    assert "fwd.scan.L2" not in names and "fwd.scan.L1" in names
    # snnTorch: a Leaky with no reset whose membrane is read (its spikes go nowhere)
    ref_net = mimdsim.Network.build([12, 10, 5], [specs[0], NeuronSpec("leaky", beta=0.8, reset="none")],
                                    bias=True, loss="ce_max_membrane")
    ref_net.weights, ref_net.biases = net.weights, net.biases
    loss, grads, traces = run_snntorch(ref_net, x, y)
    assert run.loss == pytest.approx(loss, rel=1e-5)
    np.testing.assert_allclose(run.traces[1]["mem"], traces[1]["mem"], rtol=1e-5, atol=1e-5)
    for l in range(2):
        g = grads[(l, "weight")]
        assert np.linalg.norm(run.grads[l] - g) / np.linalg.norm(g) < 1e-5


@pytest.mark.parametrize("kwargs, match", [
    (dict(model="leaky", beta=1.2), r"beta=1.2 lies outside \[0, 1\].*give a value in \[0, 1\]"),
    (dict(model="leaky", beta=-0.1), r"beta=-0.1 lies outside \[0, 1\]"),
    (dict(model="synaptic", alpha=1.5, beta=0.5), r"alpha=1.5 lies outside \[0, 1\]"),
    (dict(model="alpha", alpha=0.7, beta=0.8), r"alpha=0.7 must be greater than beta=0.8"),
    (dict(model="alpha", alpha=0.8, beta=0.8), r"alpha=0.8 must be greater than beta=0.8"),
    (dict(model="leaky"), r"needs beta"),
    (dict(model="synaptic", beta=0.5), r"needs alpha"),
    (dict(model="lif", beta=0.5), r"neuron model='lif' is not one of 'leaky'"),
    (dict(model="leaky", beta=0.5, reset="hard"), r"reset='hard'"),
    (dict(model="alpha", alpha=0.9, beta=0.8, reset_delay=False), r"reset_delay=False exists only"),
    (dict(model="lapicque"), r"give beta, or R and C"),
    (dict(model="leaky", beta=0.5, surrogate="atn"), r"surrogate='atn' is not one of .* Did you mean 'atan'"),
    (dict(model="leaky", beta=0.5, surrogate=Surrogate("fast_sigmoid", slope=25)), None),
    (dict(model="leaky", beta=0.5, theta2=2.0), r"theta2=2.0 must be a number <= 1; gradient candidates lie below the spike threshold"),
    (dict(model="leaky", beta=0.5, recurrence="full"), r"recurrence='full'"),
])
def test_inconsistent_neuron_parameters_get_clear_errors(kwargs, match):
    if match is None:
        NeuronSpec(**kwargs)
        return
    with pytest.raises(ConfigError, match=match):
        NeuronSpec(**kwargs)


def test_network_level_errors():
    with pytest.raises(ConfigError, match="only the output layer"):
        mimdsim.Network.build([5, 4, 3], [NeuronSpec("leaky", beta=0.9, spiking=False),
                                          NeuronSpec("leaky", beta=0.9)])
    with pytest.raises(ConfigError, match="not a multiple of num_classes=4"):
        mimdsim.Network.build([5, 4, 10], "leaky", beta=0.9, num_classes=4)
    with pytest.raises(ConfigError, match="reads spikes; use loss 'ce_max_membrane'"):
        mimdsim.Network.build([5, 4, 3], [NeuronSpec("leaky", beta=0.9), NeuronSpec("leaky", beta=0.9, spiking=False)])
    with pytest.raises(ConfigError, match="delay=2"):
        mimdsim.Network.build([5, 4, 3], "leaky", beta=0.9, delay=2)
    with pytest.raises(ConfigError, match="beta has 3 values for 4 neurons"):
        mimdsim.Network.build([5, 4, 4], "leaky", beta=(0.1, 0.2, 0.3))
    with pytest.raises(ConfigError, match="population code"):
        mimdsim.Readout("ce_rate", num_classes=2)
    net = mimdsim.Network.build([5, 4, 3], "leaky", beta=0.9, recurrence="all-to-all")
    net.recurrent[0] = np.ones((3, 3), np.float32)
    with pytest.raises(ConfigError, match=r"net.recurrent has shape \(3, 3\); layer 1 needs \(4, 4\)"):
        mimdsim.simulate(net, "ipu-mk2", inputs=np.zeros((2, 1, 5)), labels=np.zeros(1, int))
    with pytest.raises(ConfigError, match="precision='fp8'"):
        mimdsim.simulate(mimdsim.Network.build([5, 4, 3], "leaky", beta=0.9), "ipu-mk2", timesteps=2, batch_size=1,
                         activity=0.1, precision="fp8")
