"""Issue 39: the program a model's own software builds runs by default, and every answer says which
program ran, why, and which others the network could run; the Python API and the command line share
their defaults."""
import json

import numpy as np
import pytest

import mimdsim
from mimdsim.cli import main
from mimdsim.snn.neurons import NeuronSpec
from mimdsim.snn.zoo import ZOO

CHIP = mimdsim.chip("ipu-mk2", tiles=64)


def _placement(net, **kw):
    kw.setdefault("timesteps", 4)
    kw.setdefault("batch_size", 2)
    return mimdsim.simulate(net, CHIP, band=False, **kw).report.placement


def test_each_model_runs_what_its_software_builds_and_says_why():
    zoo = mimdsim.Network.build([40, 30, 10], ZOO["leaky"], bias=True)
    p = _placement(zoo)
    assert (p["schedule"], p["schedule_reason"]) == ("poptorch", "default for snnTorch Leaky: what PopTorch builds")
    assert [o["schedule"] for o in p["other_programs"]] == ["fused"]
    rec = mimdsim.Network.build([40, 30, 10], ZOO["rsynaptic"], bias=True)
    assert _placement(rec)["schedule_reason"] == "default for snnTorch RSynaptic: what PopTorch builds"
    lif = mimdsim.Network.feedforward([40, 30, 10])
    p = _placement(lif)
    assert (p["schedule"], p["schedule_reason"]) == ("published",
                                                    "default for the study's sparse LIF: the study's op as built")
    assert [o["schedule"] for o in p["other_programs"]] == ["fused"]


def test_a_program_another_setting_forces_is_named_with_that_setting():
    lif = mimdsim.Network.feedforward([40, 30, 10])
    p = _placement(lif, precision="fp16")
    assert (p["schedule"], p["schedule_reason"]) == ("fused", "forced by precision='fp16': the published op is fp32 only")
    lif.overflow = "random"
    p = _placement(lif)
    assert p["schedule"] == "fused" and p["schedule_reason"].startswith("forced by overflow='random'")
    assert p["other_programs"] == []  # the published op cannot drop a random subset
    sparse = mimdsim.Network.build([40, 30, 10], ZOO["leaky"], bias=True, max_activity=0.2)
    p = _placement(sparse)
    assert p["schedule"] == "fused" and p["schedule_reason"].startswith("forced by max_activity or input_capacity")
    p = _placement(mimdsim.Network.build([40, 30, 10], ZOO["leaky"]), schedule="fused")
    assert p["schedule_reason"] == "asked with schedule='fused'"
    assert [o["schedule"] for o in p["other_programs"]] == ["poptorch"]


# the five commands, at a size that runs in a second: each says which program ran and why
FIVE = [([], "poptorch", "default for snnTorch Leaky: what PopTorch builds"),
        (["--execute"], "poptorch", "default for snnTorch Leaky: what PopTorch builds"),
        (["--schedule", "poptorch"], "poptorch", "asked with --schedule poptorch"),
        (["--schedule", "poptorch", "--static-input"], "poptorch", "asked with --schedule poptorch"),
        (["--neuron", "published"], "published", "default for the study's sparse LIF: the study's op as built")]


@pytest.mark.parametrize("extra,schedule,why", FIVE)
def test_the_five_commands_say_which_program_ran_and_why(extra, schedule, why, tmp_path, capsys):
    out = tmp_path / "c.json"
    argv = ["compare", "--layers", "64,32,10", "--neuron", "leaky", "--timesteps", "5", "--batch", "8",
            "--strategy", "fused", "--quiet", "--json", str(out), *extra]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert f"  program: {schedule}, fp32 ({why})" in text
    assert "also runs (--schedule NAME):" in text
    d = json.loads(out.read_text())
    assert d["mimd"]["placement"]["schedule"] == schedule
    assert d["mimd"]["placement"]["schedule_reason"].startswith(why.split(" --")[0])


def test_compare_shows_the_chips_band_beside_its_time_and_the_json_carries_it(tmp_path, capsys):
    out = tmp_path / "c.json"
    assert main(["compare", "--layers", "64,32,10", "--timesteps", "5", "--batch", "8", "--strategy", "fused",
                 "--quiet", "--json", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    i = next(i for i, line in enumerate(lines) if line.lstrip().startswith("samples/s"))
    assert lines[i + 1].lstrip().startswith("band") and lines[i + 1].count("-") >= 2
    d = json.loads(out.read_text())
    lo, hi = d["uncertainty"]["samples_per_second"]["mimd"]
    assert lo <= d["mimd"]["samples_per_second"] <= hi
    assert set(d["uncertainty"]["samples_per_second"]) == {"mimd", "fused"}


def test_the_api_and_the_command_line_share_their_defaults(tmp_path):
    # the surrogate: NeuronSpec("leaky") is --neuron leaky's model
    assert NeuronSpec("leaky", beta=0.9) == ZOO["leaky"]
    # the rate: activity= left out is what the command line fills in
    out = tmp_path / "s.json"
    assert main(["simulate", "--layers", "60,40,10", "--timesteps", "4", "--batch", "2", "--tiles", "64", "--quiet",
                 "--json", str(out)]) == 0
    cli = json.loads(out.read_text())
    api = mimdsim.simulate(mimdsim.Network.feedforward([60, 40, 10]), CHIP, timesteps=4, batch_size=2).report
    assert api.samples_per_second == pytest.approx(cli["samples_per_second"], rel=1e-12)
    # the program: a zoo network built as the command line builds it runs the same default
    assert main(["simulate", "--layers", "60,40,10", "--neuron", "leaky", "--timesteps", "4", "--batch", "2",
                 "--tiles", "64", "--quiet", "--json", str(out)]) == 0
    net = mimdsim.Network.build([60, 40, 10], "leaky", beta=0.9, bias=True)
    api = mimdsim.simulate(net, CHIP, timesteps=4, batch_size=2).report
    assert api.placement["schedule"] == json.loads(out.read_text())["placement"]["schedule"] == "poptorch"


def test_repr_of_a_network_is_one_line():
    r = repr(mimdsim.Network.build([784, 1000, 10], ZOO["rleaky"], bias=True))
    assert r == "Network(784-1000-10, leaky+all-to-all recurrence, every neuron listed, delay 0, loss ce_count, float32)"
    r = repr(mimdsim.Network.feedforward([784, 1000, 10]))
    assert "\n" not in r and "published sparse LIF, list capacities 6-10-2" in r and len(r) < 120


def test_op_prints_achieved_flops_and_the_share_of_peak(capsys):
    assert main(["op", "matmul", "--m", "256", "--k", "256", "--n", "256"]) == 0
    out = capsys.readouterr().out
    r = mimdsim.op("matmul", "ipu-mk2", m=256, k=256, n=256)
    assert r.flops == 2 * 256 ** 3 and r.peak_flops == mimdsim.chip("ipu-mk2").peak_fp16_flops
    assert f"{100 * r.flops_per_second / r.peak_flops:.1f}% of the chip's fp16 peak 250.0 TFLOP/s" in out
    from mimdsim.cli.parser import build_parser
    sub = next(a for a in build_parser()._actions if hasattr(a, "choices") and a.choices and "op" in a.choices)
    assert "OP_" not in sub.choices["op"].format_help()  # the flags' metavars, not the internal names


@pytest.mark.parametrize("neuron", ["leaky", "synaptic"])
def test_an_executed_snntorch_model_on_its_default_program_spikes_in_every_layer(neuron, tmp_path, capsys):
    """The zoo's weights are set for the input rate the executed step draws (its output layer fell silent
    when they were set for the 5 % default input instead)."""
    out = tmp_path / "run.json"
    assert main(["simulate", "--layers", "784,1000,10", "--neuron", neuron, "--timesteps", "25", "--batch", "32",
                 "--execute", "--quiet", "--json", str(out)]) == 0
    assert "never spiked" not in capsys.readouterr().err
    layers = json.loads(out.read_text())["layers"]
    assert all(ly["spikes"] > 0 for ly in layers), [ly["spikes"] for ly in layers]


def test_the_api_s_default_activity_is_the_command_line_s_for_any_max_activity(tmp_path):
    """Half the max activity the network was built with, as --max-activity's default rate."""
    net = mimdsim.Network.feedforward([200, 100, 10], max_activity=0.05)
    api = mimdsim.simulate(net, CHIP, timesteps=10, batch_size=4, band=False).report
    out = tmp_path / "run.json"
    assert main(["simulate", "--layers", "200,100,10", "--max-activity", "0.05", "--timesteps", "10", "--batch", "4",
                 "--tiles", "64", "--quiet", "--json", str(out)]) == 0
    cli = json.loads(out.read_text())
    assert [ly["activity"] for ly in api.layers] == [ly["activity"] for ly in cli["layers"]]
    assert abs(api.layers[1]["activity"] - 0.025) < 0.005
