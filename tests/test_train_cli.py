"""`mimdsim train`: a tiny run, JSON, checkpoint and resume, event files, clean errors."""
import json

import numpy as np

from mimdsim import data
from mimdsim.cli import main

TINY = ["--data", "randman", "--classes", "3", "--inputs", "12", "--samples-per-class", "16", "--timesteps", "8",
        "--hidden", "16,8", "--max-activity", "0.25", "--batch", "8", "--tiles", "64"]


def test_train_command_writes_history(tmp_path, capsys):
    out = tmp_path / "h.json"
    assert main(["train", *TINY, "--epochs", "2", "--json", str(out), "--init-activity", "0.05"]) == 0
    text = capsys.readouterr().out
    assert "randman-3c-12in-T8" in text and "final test accuracy" in text and "a100-40gb" in text
    assert "initial weights scaled" in text
    d = json.loads(out.read_text())
    assert len(d["history"]) == 2 and d["config"]["network"] == "12-16-8-3"
    assert d["history"][-1]["chip_seconds_total"] > 0


def test_train_quiet_resume_equals_uninterrupted(tmp_path, capsys):
    ck, a, b = tmp_path / "ck.npz", tmp_path / "a.json", tmp_path / "b.json"
    assert main(["train", *TINY, "--epochs", "3", "--quiet", "--json", str(a)]) == 0
    quiet = capsys.readouterr().out
    assert quiet.splitlines()[0].startswith("final test accuracy") and len(quiet.splitlines()) == 2  # + "wrote"
    assert main(["train", *TINY, "--epochs", "1", "--quiet", "--checkpoint", str(ck)]) == 0
    assert main(["train", *TINY, "--epochs", "3", "--quiet", "--checkpoint", str(ck), "--resume",
                 "--json", str(b)]) == 0
    ha, hb = json.loads(a.read_text())["history"], json.loads(b.read_text())["history"]
    for ea, eb in zip(ha, hb):
        ea.pop("wall_seconds"), eb.pop("wall_seconds")
    assert ha == hb


def test_train_refuses_a_foreign_checkpoint(tmp_path, capsys):
    ck = tmp_path / "ck.npz"
    assert main(["train", *TINY, "--epochs", "1", "--quiet", "--checkpoint", str(ck)]) == 0
    other = [v if v != "16,8" else "16,6" for v in TINY]
    assert main(["train", *other, "--epochs", "2", "--quiet", "--checkpoint", str(ck), "--resume"]) == 2
    err = capsys.readouterr().err
    assert "mimdsim: error: checkpoint" in err and str(ck) in err and "12-16-8-3" in err


def test_train_on_an_event_file(tmp_path, capsys):
    rng = np.random.default_rng(0)
    n, per = 40, 30
    sample = np.repeat(np.arange(n), per)
    labels = rng.integers(0, 2, n)
    ids = rng.integers(0, 10, n * per) + 10 * labels[sample]  # class 1 uses inputs 10..19
    path = tmp_path / "ev.npz"
    data.save_events(path, times=rng.random(n * per) * 0.1, ids=ids, sample=sample, labels=labels, n_inputs=20)
    assert main(["train", "--data", "events", "--events", str(path), "--timesteps", "10", "--hidden", "8",
                 "--max-activity", "0.25", "--input-capacity", "4", "--batch", "8", "--epochs", "1",
                 "--tiles", "64", "--dense", "--no-gpu", "--quiet"]) == 0
    assert "final test accuracy" in capsys.readouterr().out
    bad = tmp_path / "bad.npz"
    np.savez(bad, times=np.array([-1.0]), ids=np.array([0]), sample=np.array([0]), labels=np.array([0]))
    assert main(["train", "--data", "events", "--events", str(bad), "--quiet"]) == 2
    assert "negative" in capsys.readouterr().err


def test_train_dense_output_and_activity_l1(tmp_path, capsys):
    out = tmp_path / "h.json"
    assert main(["train", *TINY, "--epochs", "1", "--quiet", "--dense-output", "--activity-l1", "1e-3",
                 "--json", str(out)]) == 0
    cfg = json.loads(out.read_text())["config"]
    assert cfg["capacities"][-1] == 3  # the readout list holds every output neuron
    h = json.loads(out.read_text())["history"]
    assert h[0]["listed_fraction"][-1] == 1.0
    assert main(["train", *TINY, "--epochs", "1", "--quiet", "--activity-l1", "-1"]) == 2
    assert "--activity-l1: -1.0 must be a number >= 0" in capsys.readouterr().err  # in CLI terms


def test_train_settings_choices_match_the_models():
    from mimdsim.optim import OPTIMIZERS
    from mimdsim.config import BY_KEY
    from mimdsim.workloads.snn.baselines.gpu_kernels import STRATEGIES
    assert BY_KEY["train.optimizer"].choices == OPTIMIZERS
    assert BY_KEY["train.gpu_strategy"].choices == BY_KEY["gpu.strategies"].choices == STRATEGIES


def test_train_with_no_flags_learns_the_digits(tmp_path, capsys):
    """The defaults live and learn: `mimdsim train` with no flags but --epochs 5 (its first 5 of
    10 epochs: a constant learning rate) passes 85% test accuracy on the digits, every layer
    spiking in every epoch (about 92%, 15 s on one core)."""
    import pytest
    pytest.importorskip("sklearn")
    out = tmp_path / "h.json"
    assert main(["train", "--epochs", "5", "--no-gpu", "--quiet", "--json", str(out)]) == 0
    h = json.loads(out.read_text())["history"]
    assert all(min(e["activity"][1:]) > 0 for e in h), [e["activity"] for e in h]
    assert h[-1]["test_accuracy"] >= 0.85, [e["test_accuracy"] for e in h]
