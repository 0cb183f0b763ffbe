"""The energy model (mimdsim/energy/, docs/energy.md): its constants, the bytes the engine counts,
a chip step worked by hand, and the power limits every preset must respect."""
from __future__ import annotations

import numpy as np
import pytest

import mimdsim
from mimdsim.arch.chip import PRESETS as CHIP_PRESETS
from mimdsim.arch.gpu import PRESETS as GPU_PRESETS, gpu
from mimdsim.arch.systolic import SYSTOLIC_PRESETS, systolic
from mimdsim.energy import CONSTANTS, constant, gemm_sram_bytes, gpu_energy, kernel_activity, power_limits
from mimdsim.engine.fabric import traffic
from mimdsim.gpu.model import gemm, workload_estimate
from mimdsim.program import Transfer
from mimdsim.workloads.snn.baselines.gpu_kernels import estimate
from mimdsim.workloads.snn.baselines.systolic import systolic_estimate
from mimdsim.workloads.snn.study import multi_layer


def test_every_constant_has_a_source_a_range_and_a_row_in_the_docs():
    import pathlib
    doc = (pathlib.Path(__file__).parent.parent / "docs" / "energy.md").read_text()
    for c in CONSTANTS.values():
        assert c.source and c.unit and c.low <= c.value <= c.high, c
        assert f"`{c.name}`" in doc, f"docs/energy.md does not list {c.name}"
    for p in (*CHIP_PRESETS, *GPU_PRESETS, *SYSTOLIC_PRESETS):
        idle, peak = power_limits(p)
        assert 0 < idle < peak, p


def test_gpu_tensor_energy_derived_from_board_power_by_hand():
    # A100: (0.95 - 0.25) x 400 W / (0.95 x 312e12 FLOP/s) = 280 / 296.4e12 J = 0.9447 pJ/FLOP
    assert constant("a100-40gb.tensor_pj_per_flop") == pytest.approx(0.94467, rel=1e-4)
    # fp32 CUDA cores: (0.85 - 0.25) x 400 / (0.95 x 19.5e12) = 12.955 pJ/FLOP
    assert constant("a100-40gb.cuda_fp32_pj_per_flop") == pytest.approx(12.955, rel=1e-4)


def test_traffic_counts_each_delivered_copy_host_streams_once_and_no_self_copy():
    system = mimdsim.system(mimdsim.chip("ipu-mk2", tiles=4), chips=2)  # tiles 0-3 chip 0, 4-7 chip 1
    a = lambda *v: np.array(v, dtype=np.int64)  # noqa: E731
    tr = [Transfer("multicast", src=a(0, 0, 0, 2), dst=a(1, 5, 6, 2), nbytes=a(100, 100, 100, 7), group=a(0, 0, 0, 1)),
          Transfer("in", src=a(-1, -1), dst=a(1, 2), nbytes=a(64, 64), group=a(0, 0)),
          Transfer("out", src=a(3), dst=a(-1), nbytes=a(16), group=a(0))]
    on_chip, link, host = traffic(tr, system)
    assert on_chip == 300  # three copies of the multicast delivered; the self-copy of tile 2 moves nothing
    assert link == 100  # the group crosses to chip 1 once
    assert host == 64 + 16  # one host stream (a multicast read once) and one stream out


def test_systolic_sram_bytes_by_hand():
    # ws, 4x4 array, C[8,6] = A[8,5] B[5,6]: B read once (30), A once per column fold (40 x 2),
    # partial C written once per row fold of k (48 x 2): 206 elements
    assert gemm_sram_bytes(8, 6, 5, 4, 4, "ws", 1) == 30 + 80 + 96
    # os: A per column fold (40 x 2), B per row fold (30 x 2), C once (48)
    assert gemm_sram_bytes(8, 6, 5, 4, 4, "os", 2) == 2 * (80 + 60 + 48)


def test_chip_step_energy_by_hand():
    """A small rate-driven step on a 64-tile ipu-mk2: energy = the constants times the engine's counts, the
    static power the chip's own (the tile array's share of GC200's, scaled to 64 of its 1472 tiles)."""
    net = mimdsim.Network.feedforward([100, 64, 10], max_activity=0.1)
    rep = mimdsim.simulate(net, mimdsim.chip("ipu-mk2", tiles=64), timesteps=5, batch_size=4, activity=0.05).report
    a, e, t = rep.activity, rep.energy, rep.seconds_per_step
    assert a["tile_compute_cycles"] == rep.tile_compute_cycles.sum() > 0
    assert a["exchange_bytes"] > 0 and a["link_bytes"] == 0 and a["host_bytes"] > 0
    die = 1 + 0.8 * (64 / 1472 - 1)  # ipu.tile_static_share 0.8 of the power follows the tiles: 0.2348
    # 60 W idle x die (clock unchanged); 6 pJ per busy tile cycle; 4 B x 0.25 pJ/B SRAM per cycle; 3 pJ/B
    # exchange; 10 pJ/bit host
    hand = (60 * die * t + a["tile_compute_cycles"] * (6 + 4 * 0.25) * 1e-12 + a["exchange_bytes"] * 3e-12
            + a["host_bytes"] * 8 * 10e-12)
    assert e["joules_per_step"] == pytest.approx(hand, rel=1e-12)
    assert e["watts"] == pytest.approx(hand / t) and e["samples_per_joule"] == pytest.approx(4 / hand)
    assert e["power_limits_w"] == pytest.approx({"idle": 60 * die, "max": 300 * die})
    lo, hi = e["band"]["joules_per_step"]
    assert lo < hand < hi
    assert rep.to_dict()["joules_per_step"] == e["joules_per_step"] and "joules/step" in rep.format()


def test_chip_static_power_follows_the_clock():
    net = mimdsim.Network.feedforward([100, 64, 10], max_activity=0.1)
    kw = dict(timesteps=5, batch_size=4, activity=0.05)
    slow = mimdsim.simulate(net, mimdsim.chip("ipu-mk2", tiles=64, clock_hz=0.5e9), **kw).report
    # leakage 0.15 x 300 W = 45 W stays; the clock tree's 15 W scales with 0.5 GHz / 1.3268 GHz; both with the tiles
    f = 0.5e9 / mimdsim.chip("ipu-mk2").clock_hz
    die = 1 + 0.8 * (64 / 1472 - 1)
    assert slow.energy["by_component"]["static"] == pytest.approx(die * (45 + 15 * f) * slow.seconds_per_step)


NET = dict(sizes=[100, 64, 10], max_activity=0.1)
RUN = dict(timesteps=5, batch_size=4, activity=0.05)


def _chip_run(spec, chips=1, sizes=NET["sizes"], **kw):
    net = mimdsim.Network.feedforward(sizes, max_activity=NET["max_activity"])
    return mimdsim.simulate(net, mimdsim.system(spec, chips=chips), **RUN, **kw).report


def test_an_overridden_chip_is_priced_from_its_own_tiles_clock_and_chips():
    """A sixteenth of a GC200's tiles (92) at 1 GHz on two chips, by hand: 0.15 x 300 W = 45 W leakage, the rest of
    idle (15 W) and of max (255 W) at 1 GHz / 1.3268 GHz, all times 1 + 0.8 x (92 / 1472 - 1) = 0.25
    (ipu.tile_static_share), times two chips; the per-event energies are ipu-mk2's."""
    rep = _chip_run(mimdsim.chip("ipu-mk2", tiles=92, clock_hz=1e9), chips=2, sizes=[100, 64, 64, 10], chips_used=2)
    a, e, t = rep.activity, rep.energy, rep.seconds_per_step
    f = 1e9 / (62.5e12 / (1472 * 32))
    idle, peak = 2 * 0.25 * (45 + 15 * f), 2 * 0.25 * (45 + 255 * f)
    assert e["power_limits_w"] == pytest.approx({"idle": idle, "max": peak}, rel=1e-12)
    assert e["by_component"]["static"] == pytest.approx(idle * t, rel=1e-12)
    hand = (idle * t + a["tile_compute_cycles"] * (6 + 4 * 0.25) * 1e-12 + a["exchange_bytes"] * 3e-12
            + 8e-12 * (a["link_bytes"] * 5 + a["host_bytes"] * 10))
    assert a["link_bytes"] > 0 and e["joules_per_step"] == pytest.approx(hand, rel=1e-12)
    share = next(d for d in e["band"]["drivers"] if d["name"] == "ipu.tile_static_share")
    assert share["at_high"] < e["joules_per_step"] < share["at_low"]  # a larger share: less of a smaller chip
    assert e["constants"] == "ipu-mk2"


def test_a_preset_at_its_own_fields_is_priced_as_before():
    """The tile share is read only off the preset's tile count: a preset's power limits are its registry values
    and its band has no tile-share driver; fields energy does not read change nothing per second."""
    for name in CHIP_PRESETS:
        e = _chip_run(mimdsim.chip(name)).energy
        assert e["power_limits_w"] == dict(zip(("idle", "max"), power_limits(name))), name
        assert "ipu.tile_static_share" not in {d["name"] for d in e["band"]["drivers"]}, name
    rep, synced = _chip_run(mimdsim.chip("ipu-mk2")), _chip_run(mimdsim.chip("ipu-mk2", sync_cycles=300))
    assert synced.seconds_per_step > rep.seconds_per_step
    for r in (rep, synced):
        assert r.energy["by_component"]["static"] == pytest.approx(60 * r.seconds_per_step, rel=1e-12)


def test_a_spec_renamed_away_from_its_preset_gets_no_energy():
    """The constants are per preset and a renamed spec's preset is unknown: no energy section, for a chip, a GPU
    and a systolic array alike; the same spec under its preset's name is priced."""
    import dataclasses
    spec = mimdsim.chip("ipu-mk2", tiles=64)
    assert _chip_run(dataclasses.replace(spec, name="my-ipu")).energy is None
    assert _chip_run(spec).energy is not None
    net = mimdsim.Network.feedforward(NET["sizes"])
    g = dataclasses.replace(gpu("a100-40gb"), name="my-gpu")
    assert estimate(net, g, timesteps=5, batch_size=4, strategy="fused").energy is None
    s = dataclasses.replace(systolic("tpu-v1"), name="my-array")
    assert systolic_estimate(net, s, timesteps=5, batch_size=4).energy is None


def test_an_overridden_gpu_is_charged_its_board_power_at_its_own_peak():
    """tensor_pj_per_flop is the board's power over its modelled GEMM rate (0.95 x the fp16 peak): an A100 with
    twice the tensor peak is charged half as much per tensor FLOP, 0.94467 / 2 pJ, so its large GEMM (at twice the
    rate) still draws the board's power, within its 52-400 W."""
    ks = [gemm("gemm", "forward", 16384, 16384, 16384, 2, 1)]
    fast = gpu("a100-40gb", fp16_flops=624e12, bf16_flops=624e12, tf32_flops=312e12)
    watts = {}
    for spec in (gpu("a100-40gb"), fast):
        rep = workload_estimate(ks, spec, "fp16", model="gemm", mode="fp16", batch_size=1, timesteps=1)
        rep.activity = kernel_activity(ks, "fp16")
        e = gpu_energy(rep, spec)
        tensor = e["by_component"]["compute"] - 1e-12 * rep.activity["cuda_flops"] * 12.955 / 4  # fp16 CUDA-core x1/4
        watts[spec.fp16_flops] = e["watts"]
        assert tensor == pytest.approx(rep.activity["tensor_flops"] * 0.94467e-12 * 312e12 / spec.fp16_flops, rel=1e-4)
        assert e["power_limits_w"] == {"idle": 52.0, "max": 400.0}
    assert 0.7 * 400 <= watts[624e12] <= 400 and watts[624e12] == pytest.approx(watts[312e12], rel=0.05)


def test_a_smaller_systolic_array_is_priced_from_its_own_size():
    """tpu-v1 with a 128 x 128 array: idle and max power 1 + 0.25 x (1/4 - 1) = 0.8125 of TPU v1's 28 and 75 W
    (systolic.array_static_share), the per-MAC and per-byte energies unchanged."""
    net = mimdsim.Network.feedforward([100, 64, 10])
    rep = systolic_estimate(net, systolic("tpu-v1", rows=128, cols=128), timesteps=5, batch_size=4)
    e = rep.energy
    assert e["power_limits_w"] == pytest.approx({"idle": 0.8125 * 28, "max": 0.8125 * 75}, rel=1e-12)
    assert e["by_component"]["static"] == pytest.approx(0.8125 * 28 * rep.seconds_per_step, rel=1e-12)
    preset = systolic_estimate(net, "tpu-v1", timesteps=5, batch_size=4).energy
    assert preset["power_limits_w"] == {"idle": 28.0, "max": 75.0}


MODELS = [([100, 64, 10], 0.02), ([700, 256, 256, 20], 0.1), ([2312, 512, 512, 10], 0.01)]


@pytest.mark.parametrize("name", list(CHIP_PRESETS))
def test_chip_power_within_idle_and_max_for_every_preset(name):
    idle, peak = power_limits(name)
    for sizes, act in MODELS:
        net = mimdsim.Network.feedforward(sizes, max_activity=max(2 * act, 0.05))
        for T, B in ((5, 4), (20, 16)):
            w = mimdsim.simulate(net, name, timesteps=T, batch_size=B, activity=act).report.energy["watts"]
            assert idle <= w <= peak, (name, sizes, T, B, w)


@pytest.mark.parametrize("name", list(GPU_PRESETS))
def test_gpu_power_within_idle_and_max_for_every_preset(name):
    idle, peak = power_limits(name)
    for sizes, act in MODELS:
        net = mimdsim.Network.feedforward(sizes, max_activity=max(2 * act, 0.05))
        for strategy in ("per-step", "fused", "sparse", "eager", "compiled"):
            for T, B in ((5, 4), (100, 256)):
                w = estimate(net, name, timesteps=T, batch_size=B, strategy=strategy,
                             activity=act).energy["watts"]
                assert idle <= w <= peak, (name, sizes, strategy, T, B, w)


@pytest.mark.parametrize("name", list(SYSTOLIC_PRESETS))
def test_systolic_power_within_idle_and_max_for_every_preset(name):
    idle, peak = power_limits(name)
    for sizes, _ in MODELS:
        net = mimdsim.Network.feedforward(sizes)
        for T, B in ((5, 4), (100, 256)):
            w = systolic_estimate(net, name, timesteps=T, batch_size=B).energy["watts"]
            assert idle <= w <= peak, (name, sizes, T, B, w)


@pytest.mark.parametrize("name", list(GPU_PRESETS))
def test_large_dense_fp16_matmul_draws_at_least_70_percent_of_board_max(name):
    spec = gpu(name)
    ks = [gemm("gemm", "forward", 16384, 16384, 16384, 2, 1)]
    rep = workload_estimate(ks, spec, "fp16", model="gemm", mode="fp16", batch_size=1, timesteps=1)
    rep.activity = kernel_activity(ks, "fp16")
    w = gpu_energy(rep, spec)["watts"]
    assert 0.7 * power_limits(name)[1] <= w <= power_limits(name)[1], (name, w)


@pytest.mark.parametrize("name", list(GPU_PRESETS))
def test_a_large_strict_fp32_gemm_draws_the_vector_power_share_of_board_max(name):
    """cuda_fp32_pj_per_flop is derived as (0.85 - 0.25) x max / (0.95 x the quoted FP32 peak); a strict-FP32
    GEMM runs at fp32_gemm_share of that peak on GA102/AD102 at the same power, so its FLOPs cost 1 / share:
    every preset's sustained SGEMM then draws about 0.85 x max (busy static 0.25 + dynamic 0.60 + DRAM)."""
    spec = gpu(name)
    ks = [gemm("gemm", "forward", 16384, 16384, 16384, 4, 1)]
    rep = workload_estimate(ks, spec, "fp32", model="gemm", mode="fp32", batch_size=1, timesteps=1)
    rep.activity = kernel_activity(ks, "fp32")
    assert rep.activity["cuda_gemm_flops"] == rep.activity["cuda_flops"] == 2 * 16384 ** 3
    w = gpu_energy(rep, spec)["watts"]
    assert 0.84 <= w / power_limits(name)[1] <= 0.87, (name, w)


STUDY_1PCT = [c for c in multi_layer() if c.max_activity == 0.01]


def test_the_study_models_at_1_percent_stay_within_the_chip_and_a100_limits():
    assert [len(c.sizes) - 2 for c in STUDY_1PCT] == [2, 3, 4, 5]
    for c in STUDY_1PCT:
        net = mimdsim.Network.feedforward(list(c.sizes), max_activity=c.max_activity, input_capacity=c.input_capacity)
        cmp = mimdsim.compare(net, "ipu-mk2", "a100-40gb", timesteps=c.timesteps, batch_size=c.batch_size,
                              activity=c.max_activity, strategies=("compiled", "eager", "fused", "sparse"))
        idle, peak = power_limits("ipu-mk2")
        assert idle <= cmp.mimd.energy["watts"] <= peak, c.name
        idle, peak = power_limits("a100-40gb")
        for k, r in cmp.gpu.items():
            assert idle <= r.energy["watts"] <= peak, (c.name, k)
        assert set(cmp.to_dict()["energy_ratio"]) == set(cmp.gpu)


def test_plot_writes_energy_by_component(tmp_path):
    """`--plot` draws where the energy goes: a stacked bar per column by component, its band and watts."""
    pytest.importorskip("matplotlib")
    from mimdsim.cli import main

    assert main(["compare", "--layers", "300,200,10", "--timesteps", "5", "--batch", "4", "--quiet",
                 "--plot", str(tmp_path / "fig")]) == 0
    assert (tmp_path / "fig" / "energy.png").exists() and (tmp_path / "fig" / "energy.svg").exists()
    svg = (tmp_path / "fig" / "energy.svg").read_text()
    assert "static" in svg and " W" in svg


def test_the_docs_energy_tables_are_the_registry():
    """docs/energy.md's table of energy assumptions is generated from mimdsim/assumptions.py (kind "energy",
    the same shape as docs/cost-model.md §9's), and its table of stated constants from mimdsim/energy/constants.py."""
    import pathlib
    from mimdsim import assumptions as A
    from mimdsim.energy import constants as C
    text = (pathlib.Path(__file__).parent.parent / "docs" / "energy.md").read_text()
    for start, end, table in (("<!-- energy assumptions table: generated from mimdsim/assumptions.py -->",
                               "<!-- end of energy assumptions table -->", A.markdown_table(energy=True)),
                              ("<!-- energy stated constants: generated from mimdsim/energy/constants.py -->",
                               "<!-- end of energy stated constants -->", C.markdown_table())):
        assert text[text.index(start):text.index(end)].split("\n", 1)[1].strip() == table
    assert "| `ipu-mk2.idle_w` | 60 | 36 | 105 | W | `energy.ipu-mk2.idle_w` | ipu-mk2 |" in A.markdown_table(energy=True)
