"""Properties of the timing model that must hold whatever the constants are."""
import numpy as np
import pytest

import mimdsim


def _data(sizes, T, B, rate, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.random((T, B, sizes[0])) < rate).astype(np.uint8), rng.integers(0, sizes[-1], B)


def _measured_activity(report):
    """Per-layer spike and candidate fractions of a run, over the steps a layer can be active."""
    T, B = report.timesteps, report.batch_size
    act, cand = [], []
    for ly in report.layers:
        n = ly["neurons"]
        live = T * B * (1 - max(ly["layer"] - 1, 0) / T)  # one-step delay: layer l silent for t < l-1
        candidates = ly["listed_fraction"] * n * T * B - ly["kept_spikes"] + ly["dropped_candidates"]
        act.append(ly["spikes"] / (n * live))
        cand.append(candidates / (n * live - ly["spikes"]))
    return act, cand


def test_more_tiles_never_slower_in_compute():
    sizes = [300, 200, 160, 10]
    x, y = _data(sizes, 30, 12, 0.04)
    net = mimdsim.Network.feedforward(sizes, max_activity=0.05, weight_scale=5.0)
    compute = []
    for tiles in (48, 64, 96, 128, 192, 256, 400):
        rep = mimdsim.simulate(net, mimdsim.chip("ipu-mk2", tiles=tiles), inputs=x, labels=y).report
        compute.append(rep.kind_totals()["compute"])
    assert all(b <= a for a, b in zip(compute, compute[1:])), compute
    assert compute[-1] < 0.8 * compute[0], compute


def test_low_activity_costs_far_less_compute():
    net = mimdsim.Network.feedforward([2312, 978, 978, 976, 10], max_activity=0.1, input_capacity=32)
    def compute(a):
        return mimdsim.simulate(net, "ipu-mk2", timesteps=20, batch_size=24, activity=a,
                                input_activity=0.01).report.kind_totals()["compute"]
    low, high = compute(0.01), compute(0.10)
    assert low < 0.5 * high, (low, high)


@pytest.mark.parametrize("sizes,T,B,tiles,scale,rate", [
    ([200, 120, 120, 10], 40, 12, 128, 5.0, 0.05),
    ([700, 400, 20], 50, 24, 256, 5.0, 0.03),
])
def test_execution_and_rate_driven_agree_at_the_measured_activity(sizes, T, B, tiles, scale, rate):
    net = mimdsim.Network.feedforward(sizes, max_activity=0.05, weight_scale=scale)
    x, y = _data(sizes, T, B, rate)
    chip = mimdsim.chip("ipu-mk2", tiles=tiles)
    ex = mimdsim.simulate(net, chip, inputs=x, labels=y).report
    act, cand = _measured_activity(ex)
    assert min(act[1:]) > 0.005, "the network must be active for the comparison to mean anything"
    rt = mimdsim.simulate(net, chip, timesteps=T, batch_size=B, activity=act[1:], candidate_activity=cand[1:],
                          input_activity=act[0]).report
    assert rt.total_cycles == pytest.approx(ex.total_cycles, rel=0.10)
    assert rt.kind_totals()["compute"] == pytest.approx(ex.kind_totals()["compute"], rel=0.10)


def test_rate_driven_is_deterministic_for_a_seed():
    net = mimdsim.Network.feedforward([500, 300, 10])
    a = mimdsim.simulate(net, "ipu-mk2", timesteps=20, batch_size=8, activity=0.02, seed=3).report.to_dict()
    b = mimdsim.simulate(net, "ipu-mk2", timesteps=20, batch_size=8, activity=0.02, seed=3).report.to_dict()
    c = mimdsim.simulate(net, "ipu-mk2", timesteps=20, batch_size=8, activity=0.02, seed=4).report.to_dict()
    assert a == b
    assert a["layers"] != c["layers"]


def test_phases_and_kinds_add_up():
    net = mimdsim.Network.feedforward([500, 300, 200, 10])
    rep = mimdsim.simulate(net, "ipu-mk2", timesteps=10, batch_size=8, activity=0.02).report
    d = rep.to_dict()
    c = d["cycles"]
    assert c["total"] == pytest.approx(c["compute"] + c["exchange"] + c["sync"] + c["host"])
    per_step = sum(s["compute"] + s["exchange"] + s["sync"] + s["host"] for s in d["supersteps"].values())
    assert per_step == pytest.approx(c["total"])
    assert d["seconds_per_step"] == pytest.approx(c["total"] / rep.clock_hz)
    assert d["samples_per_second"] == pytest.approx(8 / d["seconds_per_step"])
    assert d["supersteps"]["fwd.state_update"]["count"] == 10 and d["supersteps"]["bwd.surrogate"]["count"] == 10
    assert set(c["by_phase"]) == {"io", "forward", "backward", "update"}
    assert len(d["tiles"]["compute_cycles"]) == 1472 and d["memory"]["max_tile_bytes"] <= 638_976


def test_multi_chip_places_whole_layers_and_pays_for_links():
    sizes = [1000] + [1400] * 4 + [10]
    net = mimdsim.Network.feedforward(sizes)
    one = mimdsim.simulate(net, mimdsim.system("ipu-mk2", chips=4), timesteps=10, batch_size=8, activity=0.02,
                           neurons_per_tile=2)
    rep = one.report
    chips = [ly["chip"] for ly in rep.layers[1:]]
    assert chips == sorted(chips) and len(set(chips)) > 1
    for ly in rep.layers[1:]:  # whole layers per chip
        first, last = ly["first_tile"], ly["first_tile"] + ly["tiles"] - 1
        assert first // 1472 == last // 1472 == ly["chip"]
    # crossing chips makes every barrier global and adds link time
    same = mimdsim.simulate(net, mimdsim.system("ipu-mk2", chips=4, tiles=4 * 1472), timesteps=10,
                            batch_size=8, activity=0.02, neurons_per_tile=2).report
    assert rep.kind_totals()["sync"] > same.kind_totals()["sync"]
    assert rep.kind_totals()["exchange"] > same.kind_totals()["exchange"]
