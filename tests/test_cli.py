"""The command line: the README's main job, `chips`, and the JSON report schema."""
import json
import subprocess
import sys

import pytest

import mimdsim
from mimdsim.cli import main


def test_readme_main_job_runs_as_written():
    # `mimdsim simulate` with no arguments: the built-in default model on ipu-mk2
    out = subprocess.run([sys.executable, "-m", "mimdsim", "simulate"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "2312-978-978-976-10 on ipu-mk2" in out.stdout
    assert "samples/s" in out.stdout and "fwd.state_update" in out.stdout and "bwd.reduce2" in out.stdout
    assert "published schedule" in out.stdout  # the study's program is the default for its model
    assert "6 weight-gradient copies per tile" in out.stdout  # as the user guide says the line shows


def test_chips_lists_presets(capsys):
    assert main(["chips"]) == 0
    out = capsys.readouterr().out
    for name in mimdsim.PRESETS:
        assert name in out
    assert "1472" in out and "624 KiB" in out


def test_simulate_json(tmp_path, capsys):
    path = tmp_path / "r.json"
    assert main(["simulate", "--layers", "700,300,20", "--timesteps", "20", "--batch", "16",
                 "--tiles", "256", "--json", str(path)]) == 0
    d = json.loads(path.read_text())
    assert d["samples_per_second"] > 0 and d["seconds_per_step"] > 0
    assert set(d["cycles"]) >= {"compute", "exchange", "sync", "total"}
    assert d["cycles"]["total"] >= d["cycles"]["compute"] + d["cycles"]["exchange"] + d["cycles"]["sync"]
    assert d["memory"]["tile_bytes_limit"] == 638_976 and 0 < d["memory"]["max_tile_bytes"] <= 638_976
    assert len(d["tiles"]["compute_cycles"]) == 256
    assert "wrote" in capsys.readouterr().out


def test_simulate_execute_and_overrides(capsys):
    assert main(["simulate", "--layers", "200,100,10", "--timesteps", "10", "--batch", "4", "--execute",
                 "--input-activity", "0.1", "--weight-scale", "5", "--chip", "bow", "--chips", "2",
                 "--set", "sram_per_tile=1248000"]) == 0
    out = capsys.readouterr().out
    assert "execution-driven" in out and "loss" in out and "1,248,000 B" in out


def test_simulate_takes_the_optimizer_and_the_schedule(tmp_path):
    out = tmp_path / "r.json"
    assert main(["simulate", "--layers", "100,60,10", "--timesteps", "5", "--batch", "6", "--optimizer", "sgd",
                 "--schedule", "fused", "--json", str(out), "--quiet"]) == 0
    import json
    pl = json.loads(out.read_text())["placement"]
    assert pl["optimizer"] == "sgd" and pl["schedule"] == "fused"
    assert main(["simulate", "--layers", "100,60,10", "--timesteps", "5", "--batch", "6", "--json", str(out),
                 "--quiet"]) == 0
    pl = json.loads(out.read_text())["placement"]
    assert pl["optimizer"] == "adam" and pl["schedule"] == "published"  # the defaults for the published LIF


SMALL = ["--layers", "300,200,10", "--timesteps", "5", "--batch", "4", "--quiet"]


def test_output_paths_are_checked_before_the_run(tmp_path, capsys, monkeypatch):
    import mimdsim.workloads.snn.simulate as sim

    def never(*a, **k):
        raise AssertionError("the run started although an output path cannot be written")
    monkeypatch.setattr(sim, "simulate", never)
    good = tmp_path / "r.json"
    for flag, bad in [("--json", tmp_path / "no" / "r.json"), ("--csv", tmp_path), ("--trace", tmp_path / "no" / "t"),
                      ("--plot", good)]:
        if flag == "--plot":
            good.write_text("{}")  # a file where a folder is wanted
        assert main(["simulate", *SMALL, flag, str(bad)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(f"mimdsim: error: {flag} ")


def test_outputs_are_written_before_the_report_is_printed(tmp_path):
    from mimdsim.cli.execute import execute
    from mimdsim.config import FILE_KEYS

    values = {k: s.default for k, s in FILE_KEYS.items()}
    values.update({"model.layers": [300, 200, 10], "model.timesteps": 5, "model.batch": 4, "output.quiet": True,
                   "output.json": str(tmp_path / "r.json"), "output.csv": str(tmp_path / "r.csv")})
    seen = []

    def out(text):
        seen.append((text, (tmp_path / "r.json").exists() and (tmp_path / "r.csv").exists()))
    execute(values, "simulate", out=out)
    assert seen[0][0].startswith("mimdsim report") and all(written for _, written in seen)


def test_a_closed_pipe_loses_no_output(tmp_path):
    # `mimdsim simulate --json r.json | head -1`: the reader is gone before the report is printed
    path = tmp_path / "r.json"
    p = subprocess.Popen([sys.executable, "-m", "mimdsim", "simulate", *SMALL, "--json", str(path)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=300) == 0, err
    assert "Traceback" not in err and "BrokenPipeError" not in err and err == ""
    assert json.loads(path.read_text())["samples_per_second"] > 0


def test_ctrl_c_ends_in_one_line_saying_what_was_kept(tmp_path, capsys, monkeypatch):
    import mimdsim.workloads.snn.simulate as sim

    def interrupted(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(sim, "simulate", interrupted)
    assert main(["simulate", *SMALL, "--json", str(tmp_path / "r.json")]) == 130
    err = capsys.readouterr().err.strip()
    assert err == "mimdsim: interrupted; nothing was written (outputs are written when the run finishes)"
    assert not (tmp_path / "r.json").exists()


def test_ctrl_c_in_a_sweep_keeps_the_finished_points(tmp_path, capsys, monkeypatch):
    import mimdsim.sweep.runner as runner

    path = tmp_path / "s.toml"
    path.write_text('[model]\nlayers = [300, 200, 10]\ntimesteps = 5\nbatch = 4\n[sweep]\nresults = "r.jsonl"\n'
                    '[sweep.axes]\n"chip.tiles" = [64, 128, 256]\n')
    real, calls = runner.run_point, []

    def second_interrupts(*a, **k):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*a, **k)
    monkeypatch.setattr(runner, "run_point", second_interrupts)
    assert main(["sweep", str(path), "--serial", "--quiet"]) == 130
    err = capsys.readouterr().err
    assert "mimdsim: interrupted; 1 of 3 points are kept in" in err and "run the same command again" in err
    assert "Traceback" not in err
    monkeypatch.setattr(runner, "run_point", real)
    assert main(["sweep", str(path), "--serial", "--quiet"]) == 0  # resumes: the other two
    assert "computed 2 new point(s); 3 point(s) in" in capsys.readouterr().out


def test_run_file_takes_overrides_of_its_keys(tmp_path, capsys):
    exp = tmp_path / "e.toml"
    exp.write_text('[model]\nlayers = [300, 200, 10]\ntimesteps = 5\nbatch = 4\n[output]\njson = "from_file.json"\n')
    out = tmp_path / "r.json"
    assert main(["run", str(exp), "--tiles", "64", "--set", "model.batch=6", "--set", "sram_per_tile=700000",
                 "--json", str(out), "--quiet"]) == 0
    d = json.loads(out.read_text())
    assert len(d["tiles"]["compute_cycles"]) == 64 and d["batch_size"] == 6
    assert d["memory"]["tile_bytes_limit"] == 700_000
    assert not (tmp_path / "from_file.json").exists()  # the flag replaced the file's output
    capsys.readouterr()
    assert main(["run", str(exp), "--set", "model.batch=0", "--quiet"]) == 2
    assert "--set: model.batch = 0 must be an integer >= 1" in capsys.readouterr().err
    assert main(["run", str(exp), "--gpu", "a100-40gb", "--strategy", "fused", "--quiet"]) == 0  # now a comparison
    assert "mimdsim compare" in capsys.readouterr().out


def test_progress_is_tqdms_bar_and_says_what_it_counts():
    import io

    pytest.importorskip("tqdm")
    from mimdsim.report.progress import Progress
    s = io.StringIO()
    p = Progress("simulating (timesteps of the forward, then backward loop)", "timestep", stream=s, delay=0.0,
                 every=0.0)
    for i in range(1, 5):
        p(i, 4)
    p.note("a note above the bar")
    p.close()
    text = s.getvalue()
    assert "simulating (timesteps of the forward, then backward loop)" in text and "4/4" in text
    assert "timestep" in text and "a note above the bar" in text
    quiet = io.StringIO()
    q = Progress("simulating", stream=quiet)  # a run shorter than the delay prints nothing
    q(1, 2), q(2, 2), q.close()
    assert quiet.getvalue() == ""


def test_without_tqdm_a_plain_line_counts_and_notes_still_print(monkeypatch):
    import io
    import sys

    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm -> ImportError
    from mimdsim.report.progress import Progress
    s = io.StringIO()
    p = Progress("sweep", "point", stream=s, delay=0.0, every=0.0)
    p(1, 2), p.note("starting a Dask LocalCluster"), p(2, 2), p.close()
    assert s.getvalue() == "sweep: 1/2 point\nsweep: starting a Dask LocalCluster\nsweep: 2/2 point\n"
    quiet = io.StringIO()
    q = Progress("sweep", "point", stream=quiet)  # within the delay: silent, as the bar
    q(1, 2), q.stage("costing"), q.close()
    assert quiet.getvalue() == ""


def test_a_stage_without_a_count_is_said_once_the_run_is_slow(monkeypatch):
    import io

    from mimdsim.report.progress import Progress
    s = io.StringIO()
    p = Progress("comparing", stream=s, delay=0.0, every=0.0)
    p.stage("GPU column eager and its band")
    p.close()
    assert "GPU column eager and its band" in s.getvalue()
