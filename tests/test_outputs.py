"""Outputs: CSV rows, figures that are valid images, traces in the trace-event schema."""
import csv
import json
import xml.etree.ElementTree as ET
from collections import defaultdict

import pytest

import mimdsim
from mimdsim.cli import main
from mimdsim.report.perfetto import build_trace

pytest.importorskip("matplotlib")


def _png_ok(path):
    import matplotlib.image as mpimg
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    img = mpimg.imread(path)
    assert img.ndim == 3 and img.shape[0] > 50 and img.shape[1] > 50


def test_every_plot_renders_as_valid_images(tmp_path, capsys):
    d = tmp_path / "fig"
    assert main(["compare", "--layers", "300,200,10", "--timesteps", "8", "--batch", "8", "--tiles", "128",
                 "--chips", "2", "--plot", str(d), "--quiet"]) == 0
    names = {"tile_compute_cycles", "tile_memory_bytes", "phases"}
    for n in names:
        _png_ok(d / f"{n}.png")
        assert ET.parse(d / f"{n}.svg").getroot().tag.endswith("svg")
    from mimdsim.report.plots import speedup_curves
    paths = speedup_curves(str(tmp_path / "speedup"), [0.01, 0.1], {"fused": [3.0, 1.0]}, "activity", "t")
    _png_ok(paths[0])


def test_csv_has_a_row_per_superstep_kind_and_phase(tmp_path):
    p = tmp_path / "r.csv"
    assert main(["compare", "--layers", "300,200,10", "--timesteps", "8", "--batch", "8", "--strategy", "fused",
                 "--csv", str(p), "--quiet"]) == 0
    rows = list(csv.DictReader(open(p)))
    mimd = [r for r in rows if r["platform"] == "mimd"]
    assert {r["step"] for r in mimd} >= {"io.inputs", "fwd.state_update", "bwd.surrogate", "update.optimizer"}
    assert {r["phase"] for r in mimd} == {"io", "forward", "backward", "update"}
    fwd = [r for r in mimd if r["step"] == "fwd.state_update"][0]
    assert int(fwd["count"]) == 8
    assert float(fwd["total_cycles"]) == pytest.approx(float(fwd["compute"]) + float(fwd["exchange"])
                                                       + float(fwd["sync"]) + float(fwd["host"]))
    assert any(r["platform"] == "gpu" for r in rows)


def _check_trace(trace):
    assert isinstance(trace["traceEvents"], list)
    slices = defaultdict(list)
    for e in trace["traceEvents"]:
        assert e["ph"] in ("X", "M", "C")
        assert isinstance(e["pid"], int)
        if e["ph"] == "X":
            assert e["dur"] >= 0 and e["ts"] >= 0 and isinstance(e["name"], str)
            # whole nanoseconds at both ends, as a trace viewer reads them: nesting is exact
            start, dur = round(e["ts"] * 1000), round(e["dur"] * 1000)
            assert start == pytest.approx(e["ts"] * 1000, abs=1e-6) and dur == pytest.approx(e["dur"] * 1000, abs=1e-6)
            slices[(e["pid"], e["tid"])].append((start, start + dur, e["name"]))
        if e["ph"] == "C":
            assert all(isinstance(v, (int, float)) for v in e["args"].values())
    eps = 0  # children never end after their parents, not even by a rounding
    for track, ss in slices.items():
        ss.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for start, end, name in ss:
            while stack and stack[-1][1] <= start + eps:
                stack.pop()
            if stack:  # must nest inside the enclosing slice
                assert end <= stack[-1][1] + eps, f"{name} overlaps {stack[-1][2]} on {track}"
            stack.append((start, end, name))
    return slices


def test_trace_is_valid_and_nested(tmp_path):
    p = tmp_path / "t.json"
    assert main(["simulate", "--layers", "300,200,100,10", "--timesteps", "6", "--batch", "8", "--tiles", "128",
                 "--execute", "--input-activity", "0.1", "--weight-scale", "5", "--trace", str(p), "--quiet"]) == 0
    trace = json.load(open(p))
    slices = _check_trace(trace)
    names = {n for ss in slices.values() for *_, n in ss}
    assert {"forward", "backward", "sync", "exchange", "host", "compute"} <= names
    # the host's input stream is a host slice, as the report keeps it apart from exchange
    io = next(s for s in slices[(0, 0)] if s[-1] == "io.inputs")
    inside = [s for s in slices[(0, 0)] if io[0] <= s[0] and s[1] <= io[1] and s[-1] != "io.inputs"]
    assert "host" in {s[-1] for s in inside}
    assert any(e["ph"] == "C" and e["name"] == "kept spikes" for e in trace["traceEvents"])
    assert len({pid for pid, _ in slices}) >= 2  # system track + chip tile groups
    assert trace["otherData"]["aggregated"] == "none"


def test_long_runs_are_aggregated_and_bounded():
    net = mimdsim.Network.feedforward([300, 200, 10])
    timeline = []
    run = mimdsim.simulate(net, mimdsim.chip("ipu-mk2", tiles=64), timesteps=400, batch_size=4, activity=0.02,
                           timeline=timeline)
    full = build_trace(run.program, timeline, run, keep=10**6)
    small = build_trace(run.program, timeline, run, keep=5)
    _check_trace(small)
    assert len(small["traceEvents"]) < len(full["traceEvents"]) / 10
    assert "390" in " ".join(small["otherData"]["aggregated"])
    total = lambda tr: max(e["ts"] + e.get("dur", 0) for e in tr["traceEvents"] if e["ph"] == "X")  # noqa: E731
    assert total(small) == pytest.approx(total(full), rel=1e-6)
    assert total(full) == pytest.approx(run.report.seconds_per_step * 1e6, rel=1e-6)


def test_compare_figures_show_every_column_readably(tmp_path, monkeypatch):
    """The systolic array beside the GPU strategies, a log scale where the bars span decades,
    labels inside the frame, chip boundaries on a multi-chip heatmap."""
    from mimdsim.report import plots
    drawn = {}
    real_save = plots.save_figure

    def keep(fig, folder, stem):
        ax = fig.axes[0]
        drawn[stem] = {"yscale": ax.get_yscale(), "xticks": [t.get_text() for t in ax.get_xticklabels()],
                       "yticks": [t.get_text() for t in ax.get_yticklabels()], "layout": fig.get_layout_engine(),
                       "texts": [t.get_text() for t in ax.texts]}
        fig.canvas.draw()
        frame = fig.bbox
        lo, hi = sorted(ax.get_xlim())
        ticks = [t for t in ax.get_xticklabels() if lo <= t.get_position()[0] <= hi]
        for text in [ax.title, ax.xaxis.label, ax.yaxis.label, *ticks]:
            if text.get_text():
                box = text.get_window_extent()
                assert frame.x0 - 1 <= box.x0 and box.x1 <= frame.x1 + 1 and box.y0 >= frame.y0 - 1 \
                    and box.y1 <= frame.y1 + 1, f"{stem}: {text.get_text()!r} is outside the figure"
        return real_save(fig, folder, stem)
    monkeypatch.setattr(plots, "save_figure", keep)
    d = tmp_path / "fig"
    assert main(["compare", "--layers", "300,200,200,10", "--timesteps", "8", "--batch", "8", "--tiles", "128",
                 "--chips", "2", "--neurons-per-tile", "2", "--strategy", "per-step,fused", "--systolic", "tpu-v1",
                 "--plot", str(d), "--quiet"]) == 0
    bars = drawn["phases"]
    assert any("tpu-v1" in t for t in bars["xticks"]) and sum("a100" in t for t in bars["xticks"]) == 2
    assert bars["yscale"] == "log" and bars["layout"] is not None
    heat = drawn["tile_compute_cycles"]
    assert heat["yticks"] == ["chip 0", "chip 1"] and {"L1", "L2", "L3"} <= set(heat["texts"])
    _png_ok(d / "phases.png")


def test_the_report_is_a_summary_at_any_size_and_full_on_request(capsys):
    """The 193-layer multi-chip example: the default report stays under 80 lines (the slowest superstep
    kinds summed over layers, first and last layers, repeated notes once); --full prints every row."""
    import os

    from mimdsim.cli import main

    example = os.path.join(os.path.dirname(__file__), "..", "examples", "finkbeiner2024_multichip.toml")
    assert main(["run", example, "--quiet"]) == 0
    summary = capsys.readouterr().out.splitlines()
    assert len(summary) < 80, len(summary)
    text = "\n".join(summary)
    assert "more layers (activity" in text and "--full lists every layer" in text
    assert "bwd.replicate_ids.L*" in text and "3,304 supersteps in all" in text
    assert "layer(s) 11-193 receive no input" in text and "0.5% (x192)" in text
    assert main(["run", example, "--quiet", "--full"]) == 0
    full = capsys.readouterr().out.splitlines()
    assert len(full) > 3300 and any(l.startswith("  bwd.decay.L192 ") for l in full)


def test_collapse_repeats_and_ranges():
    from mimdsim.report.report import collapse_repeats

    assert collapse_repeats("K = 48, 8, 8, 8, 8, 2") == "K = 48, 8 (x4), 2"
    assert collapse_repeats("layer(s) 3, 4, 5, 6, 9, 11") == "layer(s) 3-6, 9, 11"
    assert collapse_repeats("rates 0.5%, 0.6%, 0.5%") == "rates 0.5%, 0.6%, 0.5%"
    assert collapse_repeats("1.5, 2.5, 3.5, 4.5") == "1.5, 2.5, 3.5, 4.5"  # decimals are not integers


def test_phase_bars_carry_whole_phase_names(tmp_path, monkeypatch):
    """phases.png labels each bar with its phase's whole name (it cut them to "for", "bac", "upd")."""
    pytest.importorskip("matplotlib")
    import mimdsim
    from mimdsim.report import plots

    texts = []
    real = plots.save_figure
    monkeypatch.setattr(plots, "save_figure", lambda fig, folder, stem: texts.extend(
        t.get_text() for t in fig.axes[0].texts) or real(fig, folder, stem))
    run = mimdsim.simulate(mimdsim.Network.feedforward([300, 200, 10], max_activity=0.05), "ipu-mk2",
                           timesteps=5, batch_size=4, activity=0.02)
    plots.phase_bars(str(tmp_path), "phases", [run.report], "where the time goes")
    assert {"forward", "backward", "update"} <= set(texts) and not {"for", "bac", "upd"} & set(texts)
