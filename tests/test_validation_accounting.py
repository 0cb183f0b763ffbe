"""Honest accounting in ``mimdsim validate`` (issue 38): every stored row counted as predicted, fitted, suspect,
not run or left out; the fitted labels checked against what each row's model reads; the stored summary, the docs
table and compare's validation line generated from one run; every named assumption names its evidence's version."""
import json
import pathlib

import pytest

from mimdsim import assumptions as A
from mimdsim.cli import main
from mimdsim.validation import FITS, accuracy, accuracy_line, load, run_source, summary_table
from mimdsim.validation import stored
from mimdsim.validation import traced_libraries

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_every_named_assumption_names_the_version_of_its_evidence():
    import mimdsim.energy.constants  # noqa: F401 (registers the energy entries)
    missing = [a.name for a in A.REGISTRY.values() if not a.evidence.strip()]
    assert not missing, f"give these entries an evidence= (the SDK, library or hardware version): {missing}"
    assert "SDK 2.6" in A.REGISTRY["local_sync_cycles"].reasoning  # the run's version, said where it differs


def test_the_docs_table_is_the_stored_summary():
    text = (ROOT / "docs" / "validation.md").read_text()
    summary = json.loads(stored.SUMMARY.read_text())
    assert stored.docs_section(text) == stored.docs_table(summary), f"regenerate: {stored.COMMAND}"
    assert set(summary["sources"]) == set(stored.KINDS)
    for name, s in summary["sources"].items():  # every stored row is in one count
        kinds = sum((s[k] or {}).get("rows", 0) for k in ("predicted", "fitted"))
        assert kinds + s["suspect"] + s["not_run"] + s["left_out"] == s["stored"] == len(load(name)["points"]), name


def test_the_validation_line_reads_predicted_rows_only():
    study = accuracy("published", "leaky")
    summary = json.loads(stored.SUMMARY.read_text())["sources"]
    assert study["source"] == "study-log" and study["median"] == summary["study-log"]["predicted"]["median"]
    assert f"{study['median']:.2f}" in accuracy_line("published", "leaky")
    sun = accuracy("poptorch", "leaky")  # every row reads TRACKR's fitted launch: no median is given
    assert sun["source"] == "sun-poptorch" and sun["median"] is None and sun["fitted_rows"] == 8
    assert "no predicted rows" in sun["line"]
    assert accuracy("fused", "leaky")["source"] is None
    assert accuracy_line("fused", "leaky").endswith("no measurement of this kind")


def test_compare_prints_the_validation_line_and_its_json_carries_it(tmp_path, capsys):
    path = tmp_path / "c.json"
    assert main(["compare", "--layers", "40,20,4", "--timesteps", "4", "--batch", "4", "--activity", "0.1",
                 "--strategy", "fused", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    got = json.loads(path.read_text())["validation"]
    assert got["line"] in out and "measured: " in out
    assert got == accuracy(got["program"], got["neuron"])


def test_the_fitted_labels_follow_what_each_row_reads():
    """TRACKR's launch is read by every TRACKR row and by Sun et al.'s PopTorch step, never by the study's op: moving
    it moves exactly the rows labelled fitted."""
    from mimdsim.snn import Network
    from mimdsim.snn.zoo import ZOO
    from mimdsim.workloads import kalman
    from mimdsim.workloads.snn.simulate import simulate

    launch = next(f for f in FITS if f.name == "trackr-launch")
    assert launch.source == "trackr" and set(launch.readers) == {"trackr", "sun-poptorch"}
    net = Network.build([784, 1000, 10], ZOO["leaky"], bias=True, loss="ce_count")
    sun = dict(timesteps=25, batch_size=128, activity=0.1, precision="fp32", schedule="poptorch", static_input=True,
               band=False)
    assert simulate(net, "ipu-mk2", **sun).report.seconds_per_step != \
        simulate(net, "ipu-mk2", assume={"run_launch_s": 50e-6}, **sun).report.seconds_per_step
    study = Network.feedforward([2312, 1466, 1466, 10], max_activity=0.01, capacities=[32, 14, 14, 2])
    rate = dict(timesteps=100, batch_size=48, activity=0.005, band=False)
    assert simulate(study, "ipu-mk2", **rate).report.seconds_per_step == \
        simulate(study, "ipu-mk2", assume={"run_launch_s": 50e-6}, **rate).report.seconds_per_step
    assert kalman(100, 5, "ipu-mk1", tiles=2, variant="scalar", stream=False).report.seconds_per_step != \
        kalman(100, 5, "ipu-mk1", tiles=2, variant="scalar", stream=False, launch_cycles=0).report.seconds_per_step
    sun_rows = run_source("sun-poptorch")
    assert sun_rows.points and all(p.kind == "fitted" and "trackr" in p.fitted for p in sun_rows.points)
    assert sun_rows.summary("predicted") is None and sun_rows.summary("fitted")["rows"] == 8
    assert len(sun_rows.left_out) == 8 and all("step 0" in x.reason for x in sun_rows.left_out)


def test_a_microbenchmark_row_is_fitted_where_its_own_source_set_a_value_it_reads():
    result = run_source("gpu-microbenchmarks")
    fitted = {p.label: p.fitted for p in result.of_kind("fitted")}
    assert set(fitted) == {"d2h-4B-pageable-rtx5090", "d2h-4B-pinned-rtx5090"}
    assert all("xla_loop_sync_s" in f for f in fitted.values())
    assert result.stored == len(load("gpu-microbenchmarks")["points"])
    assert {x.label for x in result.left_out} == {"host-sync-cudajl-profile", "gemm-fp32-256-gemmkernels",
                                                  "h2d-gtx1080m-4MB-pageable"}


def test_a_library_that_is_not_installed_leaves_its_rows_counted_with_the_install_line(monkeypatch, capsys):
    monkeypatch.setattr(traced_libraries, "version", lambda program: None)
    result = run_source("snn-libraries-gpu", quick=True)
    assert result.stored == len(load("snn-libraries-gpu")["points"])
    not_run = result.not_run()
    assert not_run and all(x.install.startswith('pip install "mimdsim[torch]" ') for x in not_run)
    specs = {spec for x in not_run for spec in x.install.split()[3:]}
    assert specs == {"sinabs==1.2.10", "pbr==7.1.3", "spikingjelly==0.0.0.0.14", "norse==1.0.0", "rockpool==2.7"}
    assert set(traced_libraries.PIP_SPECS) == set(traced_libraries.PROGRAMS)
    text = summary_table([result])
    assert "not run (" in text and "pip install" in text
    with pytest.raises(Exception, match="could not run"):
        stored.write([result], summary_path="/nonexistent/summary.json", docs_path="/nonexistent/validation.md")


def test_suspect_rows_are_shown_and_counted_never_summarised():
    result = run_source("snn-libraries-gpu", quick=True)
    suspect = result.of_kind("suspect")
    assert suspect and all("faster than its GEMMs" in p.suspect for p in suspect)
    assert len(result.ratios) == len(result.points) - len(suspect)
    d = result.to_dict()
    assert d["suspect"]["rows"] == len(suspect) and {p["kind"] for p in d["points"]} == {"predicted", "suspect"}


def test_the_header_says_exactly_what_was_fitted(capsys):
    assert main(["validate", "--source", "trackr-cpu", "--source", "sun-poptorch", "--quick"]) == 0
    out = capsys.readouterr().out
    assert "Nothing fitted." not in out and "trackr-launch" in out and "run_launch_s 192 us" in out
    assert main(["validate", "--source", "trackr-cpu"]) == 0
    out = capsys.readouterr().out
    assert "Nothing fitted." in out and "costed from its parts" in out


def test_the_snntorch_rows_say_when_they_fall_back_to_the_census(monkeypatch):
    from mimdsim.workloads.snn.baselines import eager_trace

    assert "hand census" not in run_source("snntorch-gpu").assumption
    monkeypatch.setattr(eager_trace, "versions", lambda: None)
    assert 'pip install "mimdsim[torch]"' in run_source("snntorch-gpu").assumption
