"""The Kalman workload on a chip: the program's cost by hand, linear scaling while compute-bound,
the sync-bound many-superstep program, host-link limits, the report, and clear errors."""
import numpy as np
import pytest

import mimdsim
from mimdsim import ConfigError, OutOfTileMemory
from mimdsim.workloads import kalman, synthetic_tracks

NO_LAUNCH = dict(run_launch_s=0.0)


def test_resident_run_by_hand():
    # one superstep (fit) + sync, plus the launch: 408 tracks/tile, vectorised, shared covariance
    c = mimdsim.chip("ipu-mk1")
    r = kalman(408, 5, c, tiles=2, stream=False, schedule="fused").report
    fit = 6 * (8 + 388 + 68 * 110) + 11
    launch = 192e-6 * 1.6e9
    assert r.steps["fit"]["compute"] == fit and r.steps["fit"]["sync"] == 126
    assert r.steps["launch"]["host"] == pytest.approx(launch)
    assert r.total_cycles == pytest.approx(fit + 126 + launch)
    assert r.samples_per_second == pytest.approx(2 * 408 / ((fit + 126 + launch) / 1.6e9))
    assert r.cycles["forward"]["compute"] == fit and r.cycles["io"]["host"] == pytest.approx(launch)
    assert r.platform == "mimd" and r.timesteps == 5 and r.batch_size == 816
    assert r.placement["bound"] == "launch" and any("launch-bound" in n for n in r.notes)


def test_streamed_run_by_hand():
    c = mimdsim.chip("ipu-mk2")
    r = kalman(100, 5, c, tiles=4, schedule="fused").report
    # io.hits: each tile receives 100 x 5 x 2 x 4 B = 4000 B at 4 B/cycle; the host link carries 16,000 B
    hz = c.clock_hz
    host_in = 16000 / (c.host_bytes_per_second / hz) + 1.5e-6 * hz
    tile_in = 4000 / 4
    assert r.steps["io.hits"]["exchange"] + r.steps["io.hits"]["host"] == pytest.approx(
        max(tile_in, host_in) + 98)  # latency, no phase overhead (docs/cost-model.md §1.6)
    assert r.steps["io.hits"]["host"] == pytest.approx(max(0.0, host_in - tile_in))
    # io.states: 100 x 5 x 4 floats per tile + one shared covariance (5 x 6 floats) per tile
    out_tile = 4 * 5 * (100 * 4 + 6)
    host_out = 4 * out_tile / (c.host_bytes_per_second / hz) + 1.5e-6 * hz
    assert r.steps["io.states"]["exchange"] + r.steps["io.states"]["host"] == pytest.approx(
        max(out_tile / 4, host_out) + 98)  # latency, no phase overhead (docs/cost-model.md §1.6)
    assert r.steps["io.hits"]["sync"] == r.steps["io.states"]["sync"] == 126


@pytest.mark.parametrize("chip", ["ipu-mk1", "ipu-mk2"])
def test_throughput_linear_in_tiles_while_compute_bound(chip):
    c = mimdsim.chip(chip, **NO_LAUNCH)
    base = None
    for tiles in (2, 19, 152, c.tiles):
        r = kalman(400, 5, c, tiles=tiles, variant="scalar", stream=False)
        assert r.report.placement["bound"] == "compute"
        if base is None:
            base = r.tracks_per_second / tiles
        assert r.tracks_per_second == pytest.approx(base * tiles, rel=1e-12)
    # with the launch the run is still the same length on any tile count: still exactly linear
    one = kalman(408, 5, chip, tiles=2, stream=False).tracks_per_second
    assert kalman(408, 5, chip, tiles=152, stream=False).tracks_per_second == pytest.approx(76 * one, rel=1e-12)


def test_streaming_becomes_host_link_bound_and_sublinear():
    c = mimdsim.chip("ipu-mk1", **NO_LAUNCH)
    small = kalman(408, 5, c, tiles=2).report
    full = kalman(408, 5, c).report
    assert small.placement["bound"] == "compute"
    assert full.placement["bound"] == "host" and any("host-link-bound" in n for n in full.notes)
    assert full.samples_per_second < 0.2 * (1216 / 2) * small.samples_per_second
    # the host-link cap: bytes per track over the PCIe Gen3 x8 payload rate, in and out
    cap = c.host_bytes_per_second / (5 * 2 * 4 + 5 * 4 * 4)
    assert full.samples_per_second < cap


def test_many_tiny_supersteps_are_sync_bound_and_the_report_says_so():
    c = mimdsim.chip("ipu-mk2", **NO_LAUNCH)
    tiny = kalman(1, 5, c, schedule="per-op", stream=False, batches=50).report
    assert tiny.placement["supersteps_per_run"] == 50 * 69
    totals = tiny.kind_totals()
    assert totals["sync"] > totals["compute"]
    assert tiny.placement["bound"] == "sync"
    assert any(n.startswith("sync-bound") for n in tiny.notes)
    # the same work fused into one codelet is compute-bound and faster
    fused = kalman(1, 5, c, stream=False, batches=50, schedule="fused").report
    assert fused.placement["bound"] == "compute" and fused.placement["supersteps_per_run"] == 50
    assert fused.samples_per_second > 3 * tiny.samples_per_second
    # per-op steps by name, smoother supersteps in the backward phase
    assert tiny.steps["update.r=m-u"]["count"] == 50 * 5
    assert tiny.cycles["backward"]["sync"] == 50 * 4 * 8 * 126


def test_per_op_with_many_tracks_is_compute_bound():
    r = kalman(400, 5, mimdsim.chip("ipu-mk2", **NO_LAUNCH), tiles=4, schedule="per-op", variant="scalar",
               stream=False).report
    assert r.placement["bound"] == "compute"


def test_batches_amortise_the_launch():
    one = kalman(100, 5, "ipu-mk1", stream=False, schedule="fused")
    many = kalman(100, 5, "ipu-mk1", stream=False, batches=20, schedule="fused")
    assert many.report.batch_size == 20 * one.report.batch_size
    assert many.tracks_per_second > 5 * one.tracks_per_second
    assert many.report.steps["launch"]["count"] == 1 and many.report.steps["fit"]["count"] == 20


def test_multi_chip_system_uses_global_sync():
    r = kalman(100, 5, mimdsim.system("ipu-mk2", chips=2), stream=False, schedule="fused").report
    assert r.steps["fit"]["sync"] == 600 and r.placement["chips"] == 2 and r.batch_size == 2 * 1472 * 100


def test_per_track_covariance_costs_more_and_takes_per_hit_sigma():
    shared = kalman(100, 5, "ipu-mk2", stream=False, schedule="fused")
    per = kalman(100, 5, "ipu-mk2", stream=False, covariance="per-track", schedule="fused")
    assert per.tracks_per_second < shared.tracks_per_second
    hits, _ = synthetic_tracks(20, 5, seed=0)
    sig = np.full((20, 5, 2), 0.1)
    r = kalman(10, 5, mimdsim.chip("ipu-mk2", tiles=2), hits=hits, sigma=sig, covariance="per-track",
               schedule="fused")
    assert r.report.memory["fullest_tile_by_category"]["hit_variances"] == 10 * 5 * 2 * 4
    assert r.covariances.shape == (20, 5, 4, 4)


def test_report_json_and_memory():
    r = kalman(408, 5, "ipu-mk1", schedule="fused").report
    d = r.to_dict()
    assert d["platform"] == "mimd" and d["samples_per_second"] > 0
    assert set(d["cycles"]) >= {"compute", "exchange", "sync", "host", "total"}
    assert set(d["supersteps"]) == {"launch", "io.hits", "fit", "io.states"}
    m = d["memory"]
    assert m["tile_bytes_limit"] == 262144 and 0 < m["max_tile_bytes"] <= 262144
    assert len(d["tiles"]["compute_cycles"]) == 1216
    assert "kalman 5 planes" in r.format() and "tracks per run" in r.format()


def test_out_of_tile_memory_names_the_fit():
    with pytest.raises(OutOfTileMemory, match=r"tile 0 needs .* fit on a tile") as e:
        kalman(1200, 5, "ipu-mk1", variant="scalar", covariance="per-track", schedule="fused")
    assert "covariances" in e.value.breakdown and e.value.limit == 262144
    fits = int(str(e.value).split("tracks_per_tile (")[1].split(" fit")[0])
    kalman(fits, 5, "ipu-mk1", variant="scalar", covariance="per-track", schedule="fused")  # the suggestion fits
    with pytest.raises(OutOfTileMemory):
        kalman(fits + 1, 5, "ipu-mk1", variant="scalar", covariance="per-track", schedule="fused")


@pytest.mark.parametrize("kw,match", [
    (dict(planes=0), r"planes=0 must be an integer >= 2; a straight-line track fit needs at least 2 planes"),
    (dict(planes=1), r"planes=1 must be an integer >= 2; a straight-line track fit needs at least 2 planes"),
    (dict(planes=2.5), r"planes=2.5"),
    (dict(tracks_per_tile=0), r"tracks_per_tile=0 must be an integer >= 1"),
    (dict(tracks_per_tile=None), r"give tracks_per_tile="),
    (dict(tiles=5000), r"tiles=5000 must be an integer between 1 and 1472; ipu-mk2 has 1472 tiles"),
    (dict(variant="vector"), r"variant='vector' is not one of .* Did you mean 'vectorised'"),
    (dict(covariance="pertrack"), r"covariance='pertrack' .* Did you mean 'per-track'"),
    (dict(schedule="perop"), r"schedule='perop'"),
    (dict(batches=0), r"batches=0 must be an integer >= 1"),
    (dict(sigma=0.0), r"sigma=0.0 must be a positive finite number; give hit resolutions > 0"),
    (dict(sigma=np.full((4, 5), 0.1)), r"sigma differs per track.*covariance='per-track'"),
    (dict(z=[0, 1, 1, 2, 3]), r"must increase strictly"),
    (dict(z=[0, 1, 2]), r"must be 5 finite plane positions"),
    (dict(prior_var=(1.0, -1.0)), r"prior_var=-1.0 must be a positive finite number; give two variances > 0"),
    (dict(theta0=float("nan")), r"theta0=nan must be a finite number >= 0; pass the rms scattering angle"),
])
def test_bad_input_clear_errors(kw, match):
    args = dict(tracks_per_tile=2, planes=5, chip="ipu-mk2")
    args.update(kw)
    with pytest.raises(ConfigError, match=match):
        kalman(args.pop("tracks_per_tile"), args.pop("planes"), args.pop("chip"), tiles=2 if "tiles" not in args else
               args.pop("tiles"), **args)


def test_non_finite_hits_are_refused():
    hits, _ = synthetic_tracks(8, 5, seed=0)
    hits[5, 2, 1] = np.nan
    hits[6, 0, 0] = np.inf
    with pytest.raises(ConfigError, match=r"hits contain 2 non-finite value\(s\) \(first at track 5, plane 2"):
        kalman(4, 5, mimdsim.chip("ipu-mk2", tiles=2), hits=hits)
    with pytest.raises(ConfigError, match=r"hits have shape \(8, 5\)"):
        kalman(4, 5, mimdsim.chip("ipu-mk2", tiles=2), hits=hits[..., 0])
    with pytest.raises(ConfigError, match=r"hits have 5 planes but planes=4"):
        kalman(4, 4, mimdsim.chip("ipu-mk2", tiles=2), hits=np.zeros((8, 5, 2)))
    with pytest.raises(ConfigError, match=r"planes=1"):
        kalman(4, None, mimdsim.chip("ipu-mk2", tiles=2), hits=np.zeros((8, 1, 2)))
    with pytest.raises(ConfigError, match=r"8 tracks do not fit 2 tiles x tracks_per_tile=3"):
        kalman(3, 5, mimdsim.chip("ipu-mk2", tiles=2), hits=np.zeros((8, 5, 2)))
    with pytest.raises(ConfigError, match=r"numeric array"):
        kalman(4, 5, mimdsim.chip("ipu-mk2", tiles=2), hits="hits")


def test_chip_run_launch_is_a_validated_chip_parameter():
    assert mimdsim.chip("ipu-mk1").run_launch_s == 192e-6
    assert mimdsim.chip("ipu-mk2").run_launch_cycles == pytest.approx(192e-6 * mimdsim.chip("ipu-mk2").clock_hz)
    with pytest.raises(ConfigError, match=r"run_launch_s=-1 must be a finite number of seconds >= 0"):
        mimdsim.chip("ipu-mk2", run_launch_s=-1)
    fast = kalman(408, 5, mimdsim.chip("ipu-mk1", run_launch_s=0.0), tiles=2, stream=False, schedule="fused")
    assert fast.report.steps["launch"]["host"] == 0
