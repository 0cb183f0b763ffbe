"""The PopTorch-built dense program (schedule='poptorch'): poplin's AMP vertex estimator by hand,
the matmul planner (the chosen split fits, a forced bad split is slower, memory per tile by
hand), real-valued inputs against snnTorch, the seed configuration for every neuron model in
fp32 and fp16 on ipu-mk2 and bow, and the program choice through the API and errors."""

import re

import numpy as np
import pytest

import mimdsim
from mimdsim.kernels.poplin.matmul import amp_matmul_cycles, conv_units
from mimdsim.kernels.tile import Tile
from mimdsim.errors import ConfigError
from mimdsim.snn.zoo import ZOO
from mimdsim.workloads.snn.programs.compile import compile_program
from mimdsim.poplibs.matmul_plan import AVAILABLE_MEMORY_PROPORTION, plan_matmul

MK2 = mimdsim.chip("ipu-mk2")

# the seed configuration's neuron models (Sun et al.: Leaky beta 0.9; the zoo's others)
MODELS = {**{k: ZOO[k] for k in ("leaky", "synaptic", "alpha", "lapicque", "rleaky-one-to-one")},
          "rleaky-all-to-all": ZOO["rleaky"], "rsynaptic-all-to-all": ZOO["rsynaptic"]}


def test_amp_vertex_cycles_by_hand():
    """getConvPartial1x1SupervisorCycleEstimate at sdk-release-2.6 (lib/poplin/PerformanceEstimation.hpp,
    HalfFloat inner and outer loops; common code path c = 1, excessInChanOverhead 1)."""
    tile = Tile.of(MK2, "fp16")
    assert conv_units(tile, "fp16") == 16  # 128 FLOPs/cycle x 4 core cycles / (2 x 16 in chans)
    # field 12, depth 32 (2 input groups of 16), cols 16 (1 output group); 12 >= 6 workers: 2 elements each
    # worker(2) = 40 + (1 zeroing | 2) - 7 retention = 34 | 35; inner = max(6 w, 6 w + 14) -> 218 / 224
    # loads = 16 conv units x 32 B per conv unit / (16 / 2 B per cycle: use128BitConvUnitLoad off) = 64
    # 50 + 6 (7 + 3 x 1) + 12 + 1 + (15 - 1 + 1 + (19 + 6 + 64 + 224)) + 10 + 1 + (19 - 1 + 7 + 64 + 218) = 769
    assert amp_matmul_cycles(12, 32, 16, tile, "fp16")[()] == 769
    # fp32: 8 in chans, core 8, no retention; field 3: one element per worker for 3 contexts (others idle: 0)
    # worker(1) = 47 + (2 + 8) (zeroing); inner = max(6 x 57, 0 + 14) = 342; loads 16 x 32 / 8 = 64
    # one input group (depth 8), one output group: 50 + 12 + 1 + 10 + 1 + (19 - 1 + 7 + 64 + 342) = 505
    assert amp_matmul_cycles(3, 8, 16, Tile.of(MK2), "fp32")[()] == 505
    assert amp_matmul_cycles(0, 8, 16, tile, "fp16")[()] == 0


def test_amp_vertex_utilisation_sits_in_the_measured_range():
    """A tile-filling GEMM reaches 48-84% of the AMP peak (hardware.md: hand-written AMP kernels)."""
    for prec, flops in (("fp16", MK2.amp_flops_fp16), ("fp32", MK2.amp_flops_fp32)):
        c = amp_matmul_cycles(96, 256, 256, Tile.of(MK2, prec), prec)[()]
        util = 2 * 96 * 256 * 256 / flops / c
        assert 0.48 <= util <= 0.84, (prec, util)


def test_planner_chooses_a_split_that_fits_and_beats_forced_ones():
    p = plan_matmul("fc1", 128, 784, 1000, MK2, "fp16", tiles=MK2.tiles, rhs_resident=True)
    assert p.tiles <= MK2.tiles
    assert p.temp_bytes <= AVAILABLE_MEMORY_PROPORTION * MK2.sram_per_tile
    assert p.pM * p.m >= 128 and p.pK * p.k >= 784 and p.pN * p.n >= 1000
    for bad in [(1, 1, 1), (128, 1, 1), (1, 49, 1), (2, 1, 63)]:
        forced = plan_matmul("fc1", 128, 784, 1000, MK2, "fp16", tiles=MK2.tiles, rhs_resident=True, force=bad)
        assert forced.cycles > p.cycles, bad
    # one tile cannot hold the whole matmul's operands within the memory proportion
    one = plan_matmul("fc1", 128, 784, 1000, MK2, "fp16", force=(1, 1, 1))
    assert one.temp_bytes > AVAILABLE_MEMORY_PROPORTION * MK2.sram_per_tile
    # on one tile poplin time-slices it (a serial split) until the temporaries fit the proportion
    serial = plan_matmul("fc1", 128, 784, 1000, MK2, "fp16", tiles=1, rhs_resident=True)
    assert serial.tiles == 1 and serial.serial > 1 and min(serial.sK, serial.sN) == 1
    assert serial.temp_bytes <= AVAILABLE_MEMORY_PROPORTION * MK2.sram_per_tile
    # no split in time shrinks the field: 100,000 rows of 16 halves exceed a tile
    with pytest.raises(ConfigError, match=r"needs [\d,]+ B of temporaries per tile, more than a tile's 638,976 B"):
        plan_matmul("tall", 100_000, 16, 16, MK2, "fp16", tiles=1, rhs_resident=True)


def test_seed_first_layer_memory_per_tile_by_hand():
    """fc1 of the seed configuration in fp16: poplin's estimate picks pM x pK x pN = 4 x 10 x 32
    with blocks 32 x 80 x 32 (784 = 9 x 80 + 64; 1000 = 31 x 32 + 8), no serial split.

    Temporary memory of a tile (ConvModel.cpp addEstimates: the conv's temporaries and the
    reduction's, the larger): lhs 32 x 80 x 2 B = 5120, rhs 80 x 32 x 2 B = 5120, float partials
    32 x 32 x 4 B = 4096 -> 14,336 B, against the reduction's ceil(1024 / 10) x 10 x 4 = 4,120 B.

    Resident: the weight block 80 x 32 x 2 B = 5120 B on each of the 10 x 32 = 320 home tiles
    (iM = 0; the last K block holds 64 rows and the last N block 8 columns: 64 x 8 x 2 = 1024 B)
    and Adam's two moments, 10240 B. The input history T B n_in = 25 x 128 x 784 = 2,508,800
    values over 1472 tiles: ceil(2,508,800 / 1472) = 1705 per tile, 3410 B.
    """
    net = mimdsim.Network.build([784, 1000, 10], MODELS["leaky"], bias=True)
    prog = compile_program(net.sizes, net.capacities, mimdsim.system("ipu-mk2"), timesteps=25, batch_size=128,
                           structure=net.structure, precision="fp16", schedule="poptorch")
    fc1 = prog.plan.matmuls[0]
    assert (fc1.name, fc1.pM, fc1.pK, fc1.pN, fc1.m, fc1.k, fc1.n) == ("L1.fc", 4, 10, 32, 32, 80, 32)
    assert (fc1.sK, fc1.sN) == (1, 1)
    assert fc1.temp_bytes == 5120 + 5120 + 4096 == 14336
    by_name = {t.name: t for t in prog.tensors if t.layer == 1}
    w = by_name["L1.weights"]
    assert w.tiles.size == 320 and w.nbytes.max() == 5120 and w.nbytes.min() == 1024
    assert by_name["L1.adam_moments"].nbytes.max() == 10240
    assert by_name["L1.input_history"].nbytes.max() == 3410
    mimdsim.compiler.memory.check_fits(prog)


def test_real_valued_inputs_match_snntorch():
    pytest.importorskip("torch")
    pytest.importorskip("snntorch")
    from snntorch_reference import run_snntorch

    rng = np.random.default_rng(3)
    T, B = 20, 4
    for spec in (MODELS["leaky"], MODELS["rsynaptic-all-to-all"]):
        net = mimdsim.Network.build([16, 12, 6], spec, bias=True, seed=1, weight_scale=2.0)
        x = rng.random((T, B, 16)).astype(np.float32)  # pixels in [0, 1) at every step
        y = rng.integers(0, 6, B)
        run = mimdsim.simulate(net, mimdsim.chip("ipu-mk2", tiles=64), inputs=x, labels=y, schedule="poptorch")
        loss, grads, traces = run_snntorch(net, x, y)
        for mine, ref in zip(run.traces, traces):
            assert ref["spk"].sum() > 0
            np.testing.assert_array_equal(mine["spk"], ref["spk"])
        assert run.loss == pytest.approx(loss, rel=1e-5)
        for (l, key), g in grads.items():
            a, b = np.asarray(run.param_grads[l][key], np.float64), np.asarray(g, np.float64)
            assert np.linalg.norm(a - b) / np.linalg.norm(b) < 1e-5, (l, key)


def test_real_valued_inputs_need_the_dense_program():
    """The spike-list programs read 0/1 inputs; PopTorch's, an snnTorch model's default, reads real values."""
    net = mimdsim.Network.build([16, 12, 6], MODELS["leaky"])
    x = np.full((3, 2, 16), 0.5, dtype=np.float32)
    with pytest.raises(ConfigError, match="schedule='poptorch'"):
        mimdsim.simulate(net, mimdsim.chip("ipu-mk2", tiles=64), inputs=x, labels=np.array([0, 1]), schedule="fused")
    with pytest.warns(UserWarning, match="never spiked"):  # a constant 0.5 input is too weak to reach layer 2
        run = mimdsim.simulate(net, mimdsim.chip("ipu-mk2", tiles=64), inputs=x, labels=np.array([0, 1]))
    assert run.report.placement["schedule"] == "poptorch"


@pytest.mark.parametrize("chip", ["ipu-mk2", "bow"])
@pytest.mark.parametrize("precision", ["fp32", "fp16"])
@pytest.mark.parametrize("model", list(MODELS))
def test_seed_configuration_runs_dense_for_every_model(model, precision, chip):
    """784-1000-10, T = 25, B = 128, ce_count, Adam: the configuration the old dense path refused."""
    net = mimdsim.Network.build([784, 1000, 10], MODELS[model], bias=True, loss="ce_count")
    run = mimdsim.simulate(net, chip, timesteps=25, batch_size=128, activity=0.1, precision=precision,
                           schedule="poptorch")
    rep = run.report
    assert rep.placement["schedule"] == "poptorch"
    names = [m["matmul"] for m in rep.placement["matmul_plan"]]
    assert {"L1.fc", "L1.fc.wgrad", "L2.fc", "L2.fc.wgrad", "L2.fc.igrad"} <= set(names)
    assert rep.samples_per_second > 0
    if model.endswith("all-to-all"):
        assert any(m["matmul"] == "L1.recurrent" for m in rep.placement["matmul_plan"])


def test_population_code_runs_dense():
    net = mimdsim.Network.build([784, 1000, 100], MODELS["leaky"], bias=True, num_classes=10)
    run = mimdsim.simulate(net, "ipu-mk2", timesteps=25, batch_size=128, activity=0.1, precision="fp16",
                           schedule="poptorch")
    assert run.report.placement["matmul_plan"][2]["shape"] == [128, 1000, 100]


def test_seed_configuration_is_live_and_fp16_is_faster():
    """Execution-driven on digit-like pixels (reduced batch): every layer spikes; fp16 beats fp32."""
    net = mimdsim.Network.build([784, 1000, 10], MODELS["leaky"], bias=True, seed=0)
    rng = np.random.default_rng(0)
    T, B = 25, 16
    x = np.broadcast_to(rng.random((B, 784)).astype(np.float32), (T, B, 784)).copy()
    y = rng.integers(0, 10, B)
    r32 = mimdsim.simulate(net, "ipu-mk2", inputs=x, labels=y, schedule="poptorch")
    assert all(ly["spikes"] > 0 for ly in r32.report.layers[1:])
    r16 = mimdsim.simulate(net, "ipu-mk2", inputs=x, labels=y, schedule="poptorch", precision="fp16")
    assert r16.report.total_cycles < r32.report.total_cycles
    assert all(ly["spikes"] > 0 for ly in r16.report.layers[1:])
    assert abs(r16.loss - r32.loss) / r32.loss < 0.05


def test_dense_networks_the_old_program_refused_run_poptorch():
    net = mimdsim.Network.build([40, 30, 6], MODELS["rleaky-all-to-all"], dense=True)
    run = mimdsim.simulate(net, mimdsim.chip("ipu-mk2", tiles=64), timesteps=4, batch_size=3, activity=0.2)
    assert run.report.placement["schedule"] == "poptorch"


def test_sparse_capacities_are_refused_with_the_fix():
    net = mimdsim.Network.build([40, 30, 6], MODELS["leaky"], max_activity=0.2)
    with pytest.raises(ConfigError, match="capacity .* without max_activity"):
        mimdsim.simulate(net, mimdsim.chip("ipu-mk2", tiles=64), timesteps=4, batch_size=3, activity=0.1,
                         schedule="poptorch")


def test_static_input_streams_one_image_per_sample():
    net = mimdsim.Network.build([784, 1000, 10], MODELS["leaky"], bias=True)
    kw = dict(timesteps=25, batch_size=128, activity=0.1, schedule="poptorch", precision="fp16")
    per_step = mimdsim.simulate(net, "ipu-mk2", **kw).report
    once = mimdsim.simulate(net, "ipu-mk2", static_input=True, **kw).report
    # the same supersteps but the input stream: 25 x fewer bytes
    assert once.steps["io.inputs"]["host"] < per_step.steps["io.inputs"]["host"] / 10
    assert once.steps["fwd.matmul.L1"] == per_step.steps["fwd.matmul.L1"]
    with pytest.raises(ConfigError, match="only schedule='poptorch'"):
        mimdsim.simulate(net, "ipu-mk2", static_input=True, timesteps=2, batch_size=2, activity=0.1,
                         schedule="fused")
    x = np.random.default_rng(0).random((3, 2, 784)).astype(np.float32)
    with pytest.raises(ConfigError, match="inputs\\[t\\] differs"):
        mimdsim.simulate(net, "ipu-mk2", inputs=x, labels=np.array([0, 1]), static_input=True,
                         schedule="poptorch")


def test_poptorch_call_is_charged_once_per_step_and_moves_the_band():
    """PopTorch's host work per call (the named assumption poptorch_call_s, docs/cost-model.md §7.4):
    60 us on the host once per step, beside the engine run's launch (192 us); pinned to its range ends
    the step moves by exactly (250 - 10) us, and the band's re-cost of the driver equals those full
    re-runs. A program without PopTorch calls has no such driver."""
    net = mimdsim.Network.build([20, 16, 4], MODELS["leaky"], bias=True)
    kw = dict(timesteps=3, batch_size=2, activity=0.1, schedule="poptorch", static_input=True)
    base = mimdsim.simulate(net, "ipu-mk2", **kw).report
    clock = MK2.clock_hz
    call, launch = base.steps["poptorch.call"], base.steps["launch"]
    assert call["count"] == 1 and call["host"] == pytest.approx(60e-6 * clock, rel=1e-12)
    assert launch["host"] == pytest.approx(192e-6 * clock, rel=1e-12)
    lo = mimdsim.simulate(net, "ipu-mk2", assume={"poptorch_call_s": 10e-6}, band=False, **kw).report
    hi = mimdsim.simulate(net, "ipu-mk2", assume={"poptorch_call_s": 250e-6}, band=False, **kw).report
    assert hi.seconds_per_step - lo.seconds_per_step == pytest.approx(240e-6, rel=1e-9)
    assert base.seconds_per_step - lo.seconds_per_step == pytest.approx(50e-6, rel=1e-9)
    d = next(d for d in base.uncertainty["drivers"] if d["name"] == "poptorch_call_s")
    assert d["range"] == [10e-6, 250e-6]
    assert [d["at_low"], d["at_high"]] == pytest.approx([lo.seconds_per_step, hi.seconds_per_step], rel=1e-12)
    published = mimdsim.simulate(mimdsim.Network.feedforward([20, 16, 4], max_activity=0.5), "ipu-mk2",
                                 timesteps=3, batch_size=2, activity=0.1).report
    assert "poptorch_call_s" not in {d["name"] for d in published.uncertainty["drivers"]}


def test_the_chip_waits_for_the_host_at_the_three_unbuffered_stream_copies():
    """host_wait_s (docs/cost-model.md §7.4): at buffering depth 1, with PopART's input streams reconnected
    at every run, the data and the labels, each copied just before its first reader, and the Final anchors,
    copied together at the end, each stall the chip for one wait on the host; the waits move the step by exactly 3 x (high - low),
    the band's driver equals those full re-runs, and the published op (no PopTorch call) neither reads nor
    accepts it."""
    net = mimdsim.Network.build([20, 16, 4], MODELS["leaky"], bias=True)
    kw = dict(timesteps=3, batch_size=2, activity=0.1, schedule="poptorch", static_input=True)
    base = mimdsim.simulate(net, "ipu-mk2", **kw).report
    waits = [n for n in base.steps if n.startswith("io.host_wait.")]
    order = list(base.steps)
    assert waits == ["io.host_wait.inputs", "io.host_wait.labels", "io.host_wait.outputs"]
    assert order.index("io.host_wait.inputs") < order.index("io.inputs") < order.index("fwd.matmul.L1")
    assert order.index("fwd.neuron.L2") < order.index("io.host_wait.labels") < order.index("loss")
    assert order.index("update.optimizer") < order.index("io.host_wait.outputs") < order.index("io.outputs")
    for n in waits:
        s = base.steps[n]
        assert s["count"] == 1 and s["host"] == pytest.approx(92e-6 * MK2.clock_hz, rel=1e-12)
        assert s["compute"] == s["exchange"] == s["sync"] == 0
    lo = mimdsim.simulate(net, "ipu-mk2", assume={"host_wait_s": 42e-6}, band=False, **kw).report
    hi = mimdsim.simulate(net, "ipu-mk2", assume={"host_wait_s": 129e-6}, band=False, **kw).report
    assert hi.seconds_per_step - lo.seconds_per_step == pytest.approx(3 * 87e-6, rel=1e-9)
    none = mimdsim.simulate(net, "ipu-mk2", assume={"host_wait_s": 0.0}, band=False, **kw).report
    assert base.seconds_per_step - none.seconds_per_step == pytest.approx(3 * 92e-6, rel=1e-9)
    # the waits cost host time and nothing else: every other superstep is charged as without them
    assert {n: s for n, s in base.steps.items() if n not in waits} == \
        {n: s for n, s in none.steps.items() if n not in waits}
    d = next(d for d in base.uncertainty["drivers"] if d["name"] == "host_wait_s")
    assert d["range"] == [42e-6, 129e-6]
    assert [d["at_low"], d["at_high"]] == pytest.approx([lo.seconds_per_step, hi.seconds_per_step], rel=1e-12)
    published = dict(timesteps=3, batch_size=2, activity=0.1)
    small = mimdsim.Network.feedforward([20, 16, 4], max_activity=0.5)
    assert "host_wait_s" not in {d["name"] for d in mimdsim.simulate(small, "ipu-mk2", **published)
                                 .report.uncertainty["drivers"]}
    with pytest.raises(ConfigError, match=r"host_wait_s: this program \(published schedule\)"):
        mimdsim.simulate(small, "ipu-mk2", assume={"host_wait_s": 50e-6}, **published)


def test_outlined_calls_copy_their_inputs_in_and_outputs_out_every_step():
    """PopART's outlining with aliasZeroCopy off (docs/cost-model.md §7.4): each forward step's call copies
    the layer's weights, input and bias in and its current out; each backward step's copies the input and
    dL/dI in (and the weights for an input gradient) and the weight gradient's partial, the bias gradient's
    and the input gradient out; each on the tensor's own tiles (popops.copy, the one-slice DynamicSlice1D
    estimate). L1.fc is split 1 x 3 x 1: weight blocks of 8, 8 and 4 rows of 16 on tiles 0-2; tile 0 also
    holds one element of the input (40 over the chip), the bias (16) and the current (32), so a step costs it
    11 + 1 + 6 + 1 + 6 + 6 x (35 + 24 + 2 x (ceil(128 / 6) // 2)) = 511 for the weights and 25 + 6 x 59 = 379
    for each single element."""
    net = mimdsim.Network.build([20, 16, 4], MODELS["leaky"], bias=True)
    kw = dict(timesteps=3, batch_size=2, activity=0.1, schedule="poptorch", static_input=True)
    run = mimdsim.simulate(net, "ipu-mk2", **kw)
    r = run.report
    plan = {p["matmul"]: p for p in r.placement["matmul_plan"]}
    assert plan["L1.fc"]["split"] == [1, 3, 1] and plan["L1.fc"]["block"] == [2, 8, 16]
    steps = {s.name: s for s in run.program.supersteps()}
    sizes = lambda name: [int(np.sum(vs.geometry["elements"])) for vs in steps[name].compute]  # noqa: E731
    assert sizes("fwd.call_copies.L1") == [20 * 16, 2 * 20, 16, 2 * 16]  # W1, x, b1 in; the current out
    assert sizes("bwd.call_copies.L1") == [20 * 16, 2 * 20, 2 * 16, 16]  # dW1 out; x, dI in; db1 out
    assert sizes("bwd.call_copies.L2") == [16 * 4, 16 * 4, 2 * 16, 2 * 4, 4, 2 * 16]  # + W2 in, dS1 out
    fwd = r.steps["fwd.call_copies.L1"]
    assert fwd["count"] == 3 and fwd["compute"] == 3 * (25 + 6 * (59 + 2 * (-(-128 // 6) // 2)) + 3 * 379) == 4944
    assert fwd["exchange"] == fwd["sync"] == 0  # the clone lies on the tensor's own tiles
    assert r.steps["bwd.call_copies.L1"]["count"] == 3
    # the T partials of each weight gradient stay until PopART's one SumOp (decomposeGradSum false), at the
    # weight's type
    parts = {t.name: int(np.sum(t.nbytes)) for t in run.program.tensors if t.name.endswith("wgrad_partials")}
    assert parts == {"L1.fc.wgrad_partials": 3 * 20 * 16 * 4, "L2.fc.wgrad_partials": 3 * 16 * 4 * 4}
    half = mimdsim.simulate(net, "ipu-mk2", precision="fp16", **kw).program.tensors
    assert {t.name: int(np.sum(t.nbytes)) for t in half if t.name == "L1.fc.wgrad_partials"} == \
        {"L1.fc.wgrad_partials": 3 * 20 * 16 * 2}
    # one timestep repeats nothing: nothing is outlined, no SumOp
    one = mimdsim.simulate(net, "ipu-mk2", **{**kw, "timesteps": 1})
    assert not [n for n in one.report.steps if "call_copies" in n]
    assert not [t for t in one.program.tensors if t.name.endswith("partials")]


def test_resident_blocks_cover_every_serial_iteration():
    """[2048 x 512] . [512 x 8192] fp32 on a GC200 is split 7 x 4 x 52 with 5 serial output-channel
    iterations: the weights' home blocks (held, and copied into each outlined call, whole) add up to the
    weight matrix and the reduced shares (the gradient, its partials) to the output, not one iteration's."""
    from mimdsim.poplibs.matmul import MatmulLowering
    p = plan_matmul("w", 2048, 512, 8192, MK2, "fp32", tiles=MK2.tiles, fc_pass=True)
    assert (p.pM, p.pK, p.pN, p.sK, p.sN) == (7, 4, 52, 1, 5)
    low = MatmulLowering(p, 0, MK2.tiles)
    home = low.iM == 0
    assert int(np.sum(low.k_all[home] * low.n_all[home])) == 512 * 8192
    assert int(np.sum(low.share_all)) == 2048 * 8192
    assert int(np.sum(low.share)) < 2048 * 8192 / 4  # one iteration's share is a fifth of it


def test_all_to_all_recurrence_copies_v_into_both_calls():
    net = mimdsim.Network.build([12, 8, 4], MODELS["rleaky-all-to-all"], bias=True)
    run = mimdsim.simulate(net, "ipu-mk2", timesteps=3, batch_size=2, activity=0.1, schedule="poptorch",
                           static_input=True)
    plan = {p["matmul"]: p for p in run.report.placement["matmul_plan"]}
    steps = {s.name: s for s in run.program.supersteps()}
    sizes = lambda name: [int(np.sum(vs.geometry["elements"])) for vs in steps[name].compute]  # noqa: E731
    assert "L1.recurrent" in plan
    # forward: W1, V1, then the input, bias and current; backward: V1 for dS[t-1], dW1 and dV1 partials, ...
    assert sizes("fwd.call_copies.L1")[:2] == [12 * 8, 8 * 8]
    assert sizes("bwd.call_copies.L1")[:3] == [8 * 8, 12 * 8, 8 * 8]


def test_amp_matmul_numerics_and_neuron_map_cost_by_hand():
    from mimdsim.kernels.poplin.matmul import amp_matmul
    from mimdsim.kernels.popops.neuron_map import neuron_map_cycles
    rng = np.random.default_rng(1)
    A, B = rng.standard_normal((5, 7)).astype(np.float32), rng.standard_normal((7, 3)).astype(np.float32)
    # fp16 inputs, fp32 accumulation: the product of the rounded operands
    want = A.astype(np.float16).astype(np.float64) @ B.astype(np.float16).astype(np.float64)
    np.testing.assert_allclose(amp_matmul(A, B, "fp16"), want, rtol=1e-6)
    out = np.ones((5, 3), np.float32)
    amp_matmul(A, B, "fp32", out=out, accumulate=True)
    np.testing.assert_allclose(out, A @ B + 1, rtol=1e-6)
    # 100 elements, fp32 (2 lanes): 50 vectors -> 9 per worker, 17 elements per worker;
    # 6 x (2 + 20 + 9 x 13 + 17 x 5) + 11 = 1455
    assert neuron_map_cycles(np.array([100]), 13, 5, Tile.of(MK2))[0] == 6 * (2 + 20 + 9 * 13 + 17 * 5) + 11


def test_program_choice_through_nir_cli_and_sweep_settings(tmp_path):
    """A NIR graph runs on the PopTorch program from the command line, and the report says so."""
    nir = pytest.importorskip("nir")
    import json

    from mimdsim.cli import main
    net = mimdsim.Network.build([40, 30, 6], MODELS["leaky"], bias=True)
    nir.write(str(tmp_path / "n.nir"), mimdsim.to_nir(net))
    out = tmp_path / "r.json"
    assert main(["simulate", "--model", str(tmp_path / "n.nir"), "--schedule", "poptorch", "--timesteps", "4",
                 "--batch", "3", "--activity", "0.2", "--tiles", "64", "--quiet", "--json", str(out)]) == 0
    rep = json.loads(out.read_text())
    assert rep["placement"]["schedule"] == "poptorch"
    assert rep["placement"]["matmul_plan"][0]["matmul"] == "L1.fc"
    from mimdsim.workloads.snn.from_settings import build_run
    from mimdsim.config import FILE_KEYS
    v = {key: st.default for key, st in FILE_KEYS.items()}
    v.update({"model.layers": [40, 30, 6], "model.neuron": "rsynaptic", "run.schedule": "poptorch",
              "model.timesteps": 4, "model.batch": 3, "run.activity": [0.2]})
    net2, _, kw = build_run(v)
    assert kw["schedule"] == "poptorch" and net2.capacities == net2.sizes


def test_sweep_over_the_program_and_neuron_models(tmp_path, monkeypatch):
    """run.schedule and model.neuron are sweep axes like any setting."""
    monkeypatch.chdir(tmp_path)
    from mimdsim.sweep.runner import run_sweep
    from mimdsim.sweep.spec import load_sweep
    spec = tmp_path / "s.toml"
    spec.write_text("""
[model]
layers = [40, 30, 6]
neuron = "leaky"
timesteps = 4
batch = 3

[run]
schedule = "poptorch"
activity = 0.2

[chip]
preset = "ipu-mk2"
tiles = 64

[sweep]
mode = "grid"
results = "out.jsonl"

[sweep.axes]
"model.neuron" = ["leaky", "rsynaptic"]
"run.static_input" = [false, true]
""")
    import json
    assert run_sweep(load_sweep(spec), serial=True, out=lambda *a: None) == 4  # points run
    recs = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert len(recs) == 4 and all(r["status"] == "ok" for r in recs)
    by = {(r["params"]["model.neuron"], r["params"]["run.static_input"]): r for r in recs}
    assert by[("leaky", True)]["cycles"]["host"] < by[("leaky", False)]["cycles"]["host"]
    assert by[("rsynaptic", False)]["cycles"]["compute"] > by[("leaky", False)]["cycles"]["compute"]


def test_static_input_from_the_command_line_executes(capsys):
    """``--execute --static-input`` draws one input per sample and repeats it at every step (it
    drew a new one per step, which the static program refuses), and every layer spikes."""
    from mimdsim.cli import main
    assert main(["simulate", "--layers", "50,40,6", "--neuron", "leaky", "--schedule", "poptorch",
                 "--static-input", "--timesteps", "5", "--batch", "4", "--execute", "--input-activity", "0.3",
                 "--tiles", "64", "--quiet"]) == 0
    out = capsys.readouterr()
    assert "error" not in out.err and "never spiked" not in out.err
    rows = [ln.split() for ln in out.out.splitlines() if re.match(r"\s+[012]\s+\d", ln)]
    assert len(rows) == 3 and all(float(r[4].rstrip("%")) > 0 for r in rows)


def test_leaky_step_as_popart_builds_it():
    """Sun's seed (fp32, Leaky): every element-wise op of snnTorch's Leaky is its own compute set
    (8 forward, 3 backward per layer and step). The hidden layer's [128 x 1000] state on a linear
    mapping holds ceil(128,000 / 1472) = 87 elements on the fullest tile, 15 per worker:
    ``+ input_`` is BinaryOp1D 6 (29 + ceil(15 / 2) x 3) + 11 = 329 cycles, ``beta * mem``
    BroadcastScalar1D 6 (20 + 8 x 2) + 11 = 227; with nothing to exchange each runs without a barrier
    (docs/cost-model.md §1.4: sync 'local', local_sync_cycles = 0)."""
    from mimdsim.engine.run import run_program

    net = mimdsim.Network.build([784, 1000, 10], MODELS["leaky"], bias=True)
    prog = compile_program(net.sizes, net.capacities, mimdsim.system("ipu-mk2"), timesteps=25, batch_size=128,
                           structure=net.structure, schedule="poptorch")
    steps = run_program(prog).steps
    fwd = [k for k in steps if k.startswith("fwd.neuron") and k.endswith(".L1")]
    bwd = [k for k in steps if k.startswith("bwd.neuron") and k.endswith(".L1")]
    assert len(fwd) == 8 and len(bwd) == 3
    assert steps["fwd.neuron.op4.L1"]["compute"] == 25 * 329
    assert steps["fwd.neuron.op3.L1"]["compute"] == 25 * 227
    assert steps["fwd.neuron.op3.L1"]["sync"] == 0


def test_linear_bias_as_poptorch_builds_it():
    """nn.Linear's bias as PopTorch 2.5 builds it (linearHandler: matmul, then a separate add; its
    gradient PopART's AddArg1GradOp, a ReduceSum over the batch; docs/cost-model.md §7.4). The add:
    BinaryOp1D on the fullest tile's 87 elements, 6 (29 + 8 x 3) + 11 = 329 cycles a step. The
    gradient [128 x 1000] -> [1000], planned as popops's calculateSplit by hand: sqrt(128) = 11
    partials per output, min columns (250 // 11) x 4 = 88 -> 12 pieces of 84; ideal piece
    128,000 // 1472 = 86 elements -> N = 10,752 // 86 = 125, fewer than 2 rows a piece -> N = 64
    chunks of 2 rows (768 tiles); then 1000 outputs on 250 tiles, 4 each, of 64 partials, split
    between the 6 workers (11 rows each) and combined in a second on-tile stage (6 partials)."""
    from mimdsim.engine.run import run_program
    from mimdsim.kernels.popops.vertices import binary_op_cycles, reduce_cycles
    from mimdsim.poplibs.reduce import reduce_first_dim_stages

    assert reduce_first_dim_stages(128, 1000, 1472) == [(84, 2), (1000, 64)]
    assert reduce_first_dim_stages(128, 10, 1472) == [(4, 16), (10, 8)]
    assert reduce_first_dim_stages(64, 1000, 1472) == [(1000, 64)]  # 64 partials per output: one stage
    tile = Tile.of(MK2, "fp32")
    net = mimdsim.Network.build([784, 1000, 10], MODELS["leaky"], bias=True)
    prog = compile_program(net.sizes, net.capacities, mimdsim.system("ipu-mk2"), timesteps=25, batch_size=128,
                           structure=net.structure, schedule="poptorch")
    steps = run_program(prog).steps
    assert steps["fwd.bias.L1"]["compute"] == 25 * 329 == 25 * binary_op_cycles(87, "tensor", False, 4, tile)
    final = (reduce_cycles(24, 11, 6, 4, tile) + reduce_cycles(4, 6, 1, 4, tile)
             + binary_op_cycles(4, "tensor", True, 4, tile))
    assert steps["bwd.bgreduce.L1"]["compute"] == pytest.approx(25 * final)
    assert steps["bwd.bgreduce.L1"]["exchange"] > 0 and steps["bwd.bgrad.L1"]["exchange"] > 0
    # without a bias: no add, no reduction
    nobias = mimdsim.Network.build([784, 1000, 10], MODELS["leaky"], bias=False)
    prog = compile_program(nobias.sizes, nobias.capacities, mimdsim.system("ipu-mk2"), timesteps=25, batch_size=128,
                           structure=nobias.structure, schedule="poptorch")
    assert not [k for k in run_program(prog).steps if ".bias" in k or "bgr" in k]
