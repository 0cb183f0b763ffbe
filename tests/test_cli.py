"""The command line: the README's main job, `chips`, and the JSON report schema."""
import json
import subprocess
import sys

import mimdsim
from mimdsim.cli import main


def test_readme_main_job_runs_as_written():
    # `mimdsim simulate` with no arguments: the built-in default model on ipu-mk2
    out = subprocess.run([sys.executable, "-m", "mimdsim", "simulate"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "2312-978-978-976-10 on ipu-mk2" in out.stdout
    assert "samples/s" in out.stdout and "fwd.state_update" in out.stdout and "bwd.reduce2" in out.stdout
    assert "published schedule" in out.stdout  # the study's program is the default for its model


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
