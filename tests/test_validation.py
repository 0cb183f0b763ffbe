"""``mimdsim validate``: every stored measurement runs, with its provenance, and no source's ratio gets
worse than the figure recorded here (a regression guard, not a target; docs/validation.md's table holds today's)."""
import json

import pytest

from mimdsim.cli import main
from mimdsim.errors import ConfigError
from mimdsim.validation import SOURCES, Point, load, run_all, run_source

# The worst model ÷ measured (as times) per source over its compared (predicted and fitted) rows; a change that
# moves a ratio further from 1 than this fails here and must say why (docs/validation-history.md keeps the record).
RECORDED_WORST = {"study-log": 2.377, "sun-poptorch": 0.787, "trackr": 1.181, "trackr-cpu": 0.217, "snntorch-gpu": 0.617,
                  "snn-libraries-gpu": 0.515,
                  # 0.292: a 4-byte D2H round trip's median on a busy machine (kekzl/imp #1654), now compared with
                  # xla_loop_sync_s, whose value is the same source's unloaded minimum (its range reaches the median)
                  "gpu-microbenchmarks": 0.292,
                  # 2.345: the p150's smallest bfp8_b shape (640x832x832) eager: ttnn overlaps the dispatch the op adds on top
                  "tensix-matmul": 2.345}


def _factor(r):
    return max(r, 1 / r)


def test_every_source_has_its_provenance_and_points():
    counts = {"study-log": 12, "sun-poptorch": 16, "trackr": 75, "trackr-cpu": 19, "snntorch-gpu": 6, "snn-libraries-gpu": 60,
              "gpu-microbenchmarks": 38, "tensix-matmul": 156}
    for name in SOURCES:
        doc = load(name)
        assert doc["provenance"] and len(doc["points"]) == counts[name]
    log = load("study-log")
    assert "9e30597" in log["provenance"]["op_version"]
    # the log's medians: 6, 5, 5, 4 ms at 1 % (2-5 hidden layers), as docs/as-built/graphcore_snn.md section 9 reads it
    assert [p["measured_ms_per_step"] for p in log["points"] if p["max_activity"] == 0.01] == [6, 5, 5, 4]
    # Sun et al.: 59,434 samples/s is the mean of the eight step-250 rows
    assert round(load("sun-poptorch")["provenance"]["mean_of_used_rows"]) == 59434


def test_validate_runs_and_no_ratio_regresses():
    """Every source in full: each stored row counted, no worst ratio further from 1 than recorded, and, where every
    library is installed, the figures stored in mimdsim/validation/data/stored/summary.json (which docs/validation.md's
    table and compare's validation line read) equal to this run's."""
    from mimdsim.validation import stored

    results = run_all()
    assert [r.source for r in results] == list(SOURCES)
    if not any(r.not_run() for r in results):
        assert stored.summarise(results) == json.loads(stored.SUMMARY.read_text()), \
            f"the stored summary is stale: {stored.COMMAND}"
    for r in results:
        assert r.stored == len(load(r.source)["points"])
        assert len(r.points) >= 6
        assert _factor(r.worst) <= _factor(RECORDED_WORST[r.source]) + 0.005, (r.source, r.worst)
        for p in r.points:  # the ratio is a ratio of times, whatever the unit
            rate = p.unit in ("samples/s", "10^6 tracks/s")
            assert p.ratio == pytest.approx(p.measured / p.model if rate else p.model / p.measured)


def test_study_log_at_one_percent_keeps_the_logs_trend_with_depth():
    """A guard as recorded in docs/validation-history.md, not a target: at 1 % max activity the log falls from
    6 to 4 ms as the same 2,942 neurons go from 2 to 5 hidden layers; since the layers' local programs
    run without a barrier (local_sync_cycles 0) the model falls too (7.05 -> 5.01 ms with the executed
    lists), each point within x1.35 of the log."""
    pts = run_source("study-log", quick=True).points
    assert [p.label for p in pts] == [f"{h} hidden, 1%" for h in (2, 3, 4, 5)]
    assert pts[-1].model < pts[0].model
    assert all(_factor(p.ratio) <= 1.35 for p in pts), [p.ratio for p in pts]


def test_band_check_reads_the_measurement_at_its_printed_resolution():
    """Keras prints whole milliseconds (' %.0fms'), so a logged 4 ms is a time in [3.5, 4.5]: the band check
    is an overlap of intervals, and a measurement with no resolution is a point."""
    def point(band, resolution):
        return Point("p", 5.0, 4.0, "ms/step", 1.25, band=band, resolution=resolution)
    assert point([4.4, 6.0], 1.0).inside and not point([4.4, 6.0], 0.0).inside
    assert not point([4.6, 6.0], 1.0).inside and point([2.0, 3.5], 1.0).inside and not point([2.0, 3.4], 1.0).inside
    assert point(None, 1.0).inside is None
    assert load("study-log")["provenance"]["resolution_ms"] == 1.0
    pts = run_source("study-log", quick=True).points
    assert all(p.resolution == 1.0 for p in pts)
    assert [p.to_dict()["resolution"] for p in pts] == [1.0] * 4


def test_study_log_with_the_lists_full_states_it_and_runs_slower(capsys):
    """Issue 25's band check assumes the lists full (activity = max activity); the log prints no spike
    counts, so it is a stated assumption, chosen on the command line, never an input fitted to the log."""
    half = run_source("study-log", quick=True, lists="half").points
    full = run_source("study-log", quick=True, lists="full")
    assert full.assumption.startswith("lists full")
    assert all(f.model > h.model for f, h in zip(full.points, half))
    assert all(p.band[1] / p.band[0] <= 2 for p in full.points)  # issue 25: no wider than x2 at 1 %
    assert main(["validate", "--source", "study-log", "--quick", "--lists", "full"]) == 0
    assert "lists full" in capsys.readouterr().out
    with pytest.raises(ConfigError, match="lists='most'"):
        run_source("study-log", quick=True, lists="most")


def test_cli_validate(tmp_path, capsys):
    path = tmp_path / "v.json"
    assert main(["validate", "--source", "snntorch-gpu", "--points", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "snntorch-gpu" in out and "n = 16384, backward" in out
    doc = json.loads(path.read_text())[0]
    assert doc["source"] == "snntorch-gpu" and doc["stored"] == 6 and doc["predicted"]["rows"] == 6
    assert {p["kind"] for p in doc["points"]} == {"predicted"} and doc["left_out"] == []
    with pytest.raises(ConfigError, match="Did you mean 'trackr'"):
        run_source("trakr")


def test_run_all_reports_its_progress_source_by_source():
    from mimdsim.validation import run_all

    calls = []
    results = run_all(sources=["trackr-cpu", "sun-poptorch"], progress=lambda done, total: calls.append((done, total)))
    assert [r.source for r in results] == ["trackr-cpu", "sun-poptorch"]
    assert calls == [(0, 2), (1, 2), (2, 2)]
