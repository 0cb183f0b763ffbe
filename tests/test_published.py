"""The published sparse-BPTT program (schedule="published"): memory plan by hand, the study's
configurations fit, numerics equal to the fused program, per-vertex work counts."""
import numpy as np
import pytest

import mimdsim
from mimdsim.compiler.memory import check_fits
from mimdsim.workloads.snn.programs import published
from mimdsim.workloads.snn.programs.compile import compile_program
from mimdsim.workloads.snn.study import configurations, multi_chip, multi_layer, multi_neuron

F32 = U32 = 4


def compile_config(c, schedule="published"):
    net = mimdsim.Network.feedforward(list(c.sizes), max_activity=c.max_activity, input_capacity=c.input_capacity)
    return net, compile_program(net.sizes, net.capacities, mimdsim.system("ipu-mk2", chips=c.chips),
                                timesteps=c.timesteps, batch_size=c.batch_size, neurons_per_tile=c.neurons_per_tile,
                                optimizer=c.optimizer, structure=net.structure, schedule=schedule)


def test_memory_plan_of_a_neuron_tile_by_hand():
    """Multi-layer, 2 hidden layers, 1 % max activity: tile 100 holds 2 neurons of layer 1."""
    c = [c for c in multi_layer() if c.sizes[1:] == (1466, 1466, 10) and c.max_activity == 0.01][0]
    net, prog = compile_config(c)
    T, B, n_in, nl, K0 = 100, 48, 2312, 2, 32
    assert prog.plan.weight_grad_copies == 6
    mine = {}
    for a in prog.tensors:
        hit = a.tiles == 100
        if hit.any():
            mine[a.name] = int(a.nbytes[hit].sum())
    assert mine["L1.weights"] == n_in * nl * F32  # W[:, its 2 neurons]
    assert mine["L1.grad_copies"] == 6 * n_in * nl * F32  # dLdweights [6, N_in, N]
    assert mine["L1.grad"] == n_in * nl * F32  # dLdweights_final
    assert mine["L1.adam_moments"] == 2 * n_in * nl * F32
    assert mine["L1.membrane_history"] == T * B * nl * F32  # stateSeqOutput on the neuron tile
    assert mine["L1.state"] == B * nl * F32
    assert mine["L1.dU_dI"] == 2 * B * nl * F32  # dL/dU and dL/dI
    assert mine["L1.dense_spikes"] == 2 * B * nl * U32  # flags [N, B, 2] uint32
    assert mine["L1.input_lists"] == B * (K0 + 1) * U32  # replicated [B, K0] ids and [B, 1] counts
    assert mine["L1.neuron_params"] == 4 * nl * F32  # decay, (1 - alpha) c, thresholds [2, N]
    # the list histories are sliceable tensors from tile 1, not kept on the consumers: the ids
    # [T, B, 14] one column per tile on tiles 1..672 (tile 100 holds one), the counts [T, B, 2] on
    # tiles 1..96 (not tile 100); uint32, its float32 output copy and the backward's uint32 re-cast
    assert net.capacities[1] == 14
    assert mine["L1.list_history"] == T * 1 * (U32 + F32 + U32)
    assert "L1.input_list_history" not in mine  # the fused plan's per-consumer history
    check_fits(prog)


@pytest.mark.parametrize("pick", [
    lambda: [c for c in multi_layer() if c.sizes[1:] == (1466, 1466, 10) and c.max_activity == 0.5][0],
    lambda: [c for c in multi_layer() if len(c.sizes) == 7 and c.max_activity == 0.25][0],
    lambda: [c for c in multi_neuron() if c.neurons_per_tile == 32 and len(c.sizes) == 34 and c.max_activity == 0.1][0],
    lambda: [c for c in multi_chip() if c.chips == 16 and c.neurons_per_tile == 8][0],
], ids=["2-layer-50%", "5-layer-25%", "32-per-tile-10%", "16-chips"])
def test_study_configurations_fit_with_the_published_program(pick):
    c = pick()
    _, prog = compile_config(c)
    check_fits(prog)  # the fused plan refuses the first three (input-list histories, gradient copies)


@pytest.mark.slow
def test_every_study_configuration_fits_with_the_published_program():
    refused = []
    for c in configurations():
        try:
            check_fits(compile_config(c)[1])
        except mimdsim.MimdsimError as e:
            refused.append((c.name, type(e).__name__))
    assert not refused, refused


def test_single_thread_weight_gradients_where_six_copies_do_not_fit():
    c = [c for c in multi_neuron() if c.neurons_per_tile == 32 and len(c.sizes) == 34][0]
    _, prog = compile_config(c)
    assert prog.plan.weight_grad_copies == 1
    names = {s.name for s in prog.supersteps()}
    assert "update.copies" not in names and "bwd.weight_grad" in names


def test_published_numerics_equal_the_fused_program():
    net = mimdsim.Network.feedforward([60, 40, 30, 10], max_activity=0.2, weight_scale=5.0, dtype=np.float64)
    rng = np.random.default_rng(3)
    x = (rng.random((12, 6, 60)) < 0.15).astype(np.uint8)
    y = rng.integers(0, 10, 6)
    chip = mimdsim.chip("ipu-mk2", tiles=128)
    pub = mimdsim.simulate(net, chip, inputs=x, labels=y, schedule="published")
    fus = mimdsim.simulate(net, chip, inputs=x, labels=y, schedule="fused")
    assert pub.report.placement["schedule"] == "published" and fus.report.placement["schedule"] == "fused"
    assert all(ly["activity"] > 0 for ly in pub.report.layers)  # a live network
    assert pub.loss == pytest.approx(fus.loss, rel=1e-12)
    for a, b in zip(pub.grads, fus.grads):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(pub.counts, fus.counts)
    for l in range(len(net.sizes)):
        np.testing.assert_array_equal(pub.stats.kept[l], fus.stats.kept[l])


def test_scan_work_counts_follow_the_flags():
    """Per (sample, threshold, worker): found = min(hits, cap); scanned stops at the cap-th hit."""
    net = mimdsim.Network.feedforward([50, 200, 10], max_activity=0.05, weight_scale=8.0)
    rng = np.random.default_rng(0)
    x = (rng.random((5, 4, 50)) < 0.3).astype(np.uint8)
    y = rng.integers(0, 10, 4)
    run = mimdsim.simulate(net, mimdsim.chip("ipu-mk2", tiles=200), inputs=x, labels=y, schedule="published")
    src = run._source
    U = run.traces[0]["u"][-1]  # layer 1, last step
    theta, theta2 = 1.0, net.specs[0].theta2
    gen = published.LayerGen(200, net.capacities[1])
    vs = [v for s in run.program.supersteps() for v in s.compute
          if v.codelet == "gsnn.dense_to_sparse" and v.layer == 1][0]
    work = src.published_scan(vs, 4)  # recomputes step 4's lists (the same numbers)
    flags = np.stack([U > theta, (U > theta2) & (U <= theta)], axis=1)
    for b in range(4):
        for th in range(2):
            for w in range(gen.workers):
                f = flags[b, th, gen.bounds[w]:gen.bounds[w + 1]]
                cap = gen.cap_worker[w]
                i = (b * 2 + th) * gen.workers + w
                assert work["found"][i] == min(f.sum(), cap)
                stop = np.flatnonzero(np.cumsum(f) == cap)
                want = stop[0] + 1 if f.sum() >= cap else f.size
                assert work["scanned"][i] == want


def test_published_schedule_refuses_other_models():
    net = mimdsim.Network.build([20, 10, 4], "synaptic", beta=0.9, alpha=0.8)
    with pytest.raises(mimdsim.UnsupportedModel, match="published"):
        mimdsim.simulate(net, mimdsim.chip("ipu-mk2", tiles=16), timesteps=3, batch_size=2, activity=0.1,
                         schedule="published")
    # the op's surrogate vertices sit on tiles 1 + B layer + b: 65 layers of B = 24 pass a chip
    too_deep = mimdsim.Network.feedforward([700] + [704] * 64 + [20], max_activity=0.01)
    with pytest.raises(mimdsim.ConfigError, match="surrogate vertices"):
        compile_program(too_deep.sizes, too_deep.capacities, mimdsim.system("ipu-mk2"), timesteps=2, batch_size=24,
                        neurons_per_tile=32, structure=too_deep.structure, schedule="published")
    with pytest.raises(mimdsim.ConfigError, match="schedule='bogus'"):
        mimdsim.simulate(net, mimdsim.chip("ipu-mk2", tiles=16), timesteps=3, batch_size=2, activity=0.1,
                         schedule="bogus")


def test_published_inference_drops_the_backward_and_keeps_the_output_record():
    net = mimdsim.Network.feedforward([60, 40, 10], max_activity=0.2)
    chip = mimdsim.system("ipu-mk2", tiles=64)
    kw = dict(timesteps=8, batch_size=4, structure=net.structure, schedule="published")
    train = compile_program(net.sizes, net.capacities, chip, **kw)
    infer = compile_program(net.sizes, net.capacities, chip, training=False, **kw)
    names = {a.name for a in infer.tensors}
    assert not any(n.endswith((".surrogate_rows", ".sliced_dS", ".grad_copies", ".adam_moments")) for n in names)
    total = lambda p, name: sum(int(a.nbytes.sum()) for a in p.tensors if a.name == name)  # noqa: E731
    assert total(infer, "L2.list_history") == total(train, "L2.list_history")  # sparse2dense reads every step
    assert total(infer, "L1.list_history") < total(train, "L1.list_history")
    assert not any(s.phase in ("backward", "update") for s in infer.supersteps())


@pytest.mark.parametrize("max_activity", [0.05, 0.8], ids=["caps-never-bind", "tile-cap-binds"])
def test_published_lists_are_the_ops_lists(max_activity):
    """The source's lists equal the op's algorithm (kernels.graphcore_snn.vertices.spike_generation), also
    when a spread tile's cap (Kc = ceil(n / spread) < K) cuts a nearly saturated list."""
    from mimdsim.kernels.graphcore_snn.vertices import spike_generation
    net = mimdsim.Network.feedforward([50, 512, 10], max_activity=max_activity, weight_scale=30.0, seed=1)
    net.weights[0][:] = np.abs(net.weights[0])  # excitatory: nearly every neuron fires (a saturated list)
    rng = np.random.default_rng(2)
    x = (rng.random((6, 3, 50)) < 0.5).astype(np.uint8)
    y = rng.integers(0, 10, 3)
    run = mimdsim.simulate(net, mimdsim.chip("ipu-mk2", tiles=300), inputs=x, labels=y, schedule="published")
    U = run.traces[0]["u"]
    K, spread = net.capacities[1], published.spread_factor(512)
    for t in range(6):
        gen = spike_generation(U[t], 1.0, net.specs[0].theta2, K, spread)
        np.testing.assert_array_equal(run.stats.kept[1][t], gen["num"][:, 0])
        np.testing.assert_array_equal(run.stats.listed[1][t], gen["num"][:, 1])
        spikes = (U[t] > 1.0).sum(axis=1)
        np.testing.assert_array_equal(run.stats.dropped_spikes[1][t], spikes - gen["num"][:, 0])
    if max_activity == 0.8:
        assert K > -(-512 // spread) and run.stats.dropped_spikes[1].sum() > 0  # the tile cap cut, and it is counted


def test_single_thread_weight_gradient_where_the_six_copy_plan_does_not_fit():
    """examples/scaling.py at 16 neurons per tile (700-976x23-20, T = 10, B = 24): the
    weight-sized tensors alone fit six copies, the tile's whole plan does not (tile 70: 702,112
    B). The program takes the op's single-thread weight gradient instead of refusing."""
    net = mimdsim.Network.feedforward([700] + [976] * 23 + [20], max_activity=0.01, input_capacity=48)
    system = mimdsim.system("ipu-mk2")
    kw = dict(timesteps=10, batch_size=24, neurons_per_tile=16, schedule="published")
    program = compile_program(net.sizes, net.capacities, system, **kw)
    assert program.plan.weight_grad_copies == 1
    check_fits(program)
    with pytest.raises(mimdsim.OutOfTileMemory, match="grad_copies"):  # six copies, forced
        six = compile_program(net.sizes, net.capacities, system, **kw, weight_grad_copies=6)
        check_fits(six)


def test_programs_without_exchange_run_without_a_barrier_and_the_band_prices_one():
    """Every published superstep with nothing to exchange is 'local' (no sync; each tile runs on),
    every other one syncs; the band's high end for local_sync_cycles is the run with it pinned
    (a 126-cycle barrier before each local program and no overlap), to the cycle."""
    net = mimdsim.Network.feedforward([40, 30, 30, 10], max_activity=0.1)
    chip = mimdsim.chip("ipu-mk2", tiles=40)
    run = mimdsim.simulate(net, chip, timesteps=3, batch_size=4, activity=0.05, schedule="published")
    steps = list(run.program.supersteps())
    assert {s.sync for s in steps if not s.exchange} == {"local"}
    assert {s.sync for s in steps if s.exchange} == {"chip"}
    rep = run.report
    assert rep.activity["local_overlap_cycles"] > 0
    driver = next(d for d in rep.uncertainty["drivers"] if d["name"] == "local_sync_cycles")
    pinned = mimdsim.simulate(net, chip, timesteps=3, batch_size=4, activity=0.05, schedule="published",
                              assume={"local_sync_cycles": 126}).report
    assert driver["at_high"] == pytest.approx(pinned.seconds_per_step, rel=1e-12)
    assert pinned.seconds_per_step > rep.seconds_per_step


def test_histories_are_sliceable_tensors_and_every_slice_its_own_program():
    """popops::createSliceableTensor (minGrainSize 0) puts ceil(E / tiles) unsliced elements on each
    tile from the graph's first tile (tile 1 of chip 0), so every history starts on tile 1; each
    popops::dynamicSlice / dynamicUpdate call is its own compute set (graphcore_snn 9e30597
    poplar_code_stateBasedReset.cpp Build loopFwd, Build_grad loopBwd)."""
    hold = np.arange(1, 1472)
    t, e = published.sliceable(48 * 32, hold)  # layer 0's ids [T, 48, 32]: 1536 over 1471 tiles
    assert t[0] == 1 and t[-1] == 768 and set(e) == {2}
    t, e = published.sliceable(48 * 146, hold)  # 7008 elements: 5 per tile on 1402 tiles, the last 3
    assert t.size == 1402 and e[:-1].max() == e[:-1].min() == 5 and e[-1] == 3
    t, e = published.merged((np.array([1, 2, 3]), np.array([2, 2, 2])), (np.array([1, 5]), np.array([1, 1])))
    assert t.tolist() == [1, 2, 3, 5] and e.tolist() == [3, 2, 2, 1]
    c = [c for c in multi_layer() if len(c.sizes) == 7 and c.max_activity == 0.01][0]  # 5 hidden, K = 4
    net, prog = compile_config(c)
    steps = {s.name: s for s in prog.supersteps()}
    tiles = {n: s.compute[0].tiles for n, s in steps.items() if s.compute}
    # layer 0: ids [T, 48, 32] on tiles 1..768 (2 each), counts [T, 48, 1] on tiles 1..48: two programs
    for phase in ("fwd", "bwd"):
        assert tiles[f"{phase}.slice_input_ids"].tolist() == list(range(1, 769))
        assert tiles[f"{phase}.slice_input_counts"].tolist() == list(range(1, 49))
    L, B = len(c.sizes) - 1, 48
    for l in range(1, L + 1):  # every layer's ids [T, B, K] and counts [T, B, 2] start on tile 1
        K = net.capacities[l]
        assert tiles[f"fwd.update_ids.L{l}"].tolist() == list(range(1, B * K + 1))
        assert tiles[f"fwd.update_counts.L{l}"].tolist() == list(range(1, 2 * B + 1))
        assert tiles[f"bwd.slice_ids.L{l}"].tolist() == tiles[f"fwd.update_ids.L{l}"].tolist()
    # per backward step 5L + 1 dynamic slices, per forward step 2 + 3L slices and updates
    assert sum(n.startswith("bwd.slice_") for n in steps) == 5 * L + 1
    assert sum(n.startswith(("fwd.slice_", "fwd.update_")) for n in steps) == 2 + 3 * L
