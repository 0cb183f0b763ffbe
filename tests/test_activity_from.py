"""Rate-driven runs at rates measured from an executed step of the user's own network
(``--activity-from execute``, mimdsim/workloads/snn/activity.py): the rates reproduce the executed fills, the
report says which activity it used, and conflicting settings are refused."""
import numpy as np
import pytest

import mimdsim
from mimdsim.cli import main
from mimdsim.errors import ConfigError
from mimdsim.workloads.snn.activity import activity_from_execution, mean_fills


def _net_and_input():
    net = mimdsim.Network.feedforward([300, 128, 64, 10], max_activity=0.05, input_activity=0.05, seed=0)
    rng = np.random.default_rng(0)
    x = (rng.random((20, 8, 300)) < 0.05).astype(np.uint8)
    return net, x, rng.integers(0, 10, 8)


def test_measured_rates_reproduce_the_executed_list_fills():
    """The rate-driven run at the measured rates fills each list as the executed step did, on average (the
    binomial draws are solved for the truncated means; a 20 x 8 step leaves sampling noise)."""
    net, x, y = _net_and_input()
    executed = mimdsim.simulate(net, "ipu-mk2", inputs=x, labels=y, band=False)
    kept, listed = mean_fills(executed.stats, net.num_layers)
    rates = activity_from_execution(net, "ipu-mk2", x, y)
    assert rates["kept"] == pytest.approx(kept, abs=1e-4) and rates["listed"] == pytest.approx(listed, abs=1e-4)
    drawn = [mimdsim.simulate(net, "ipu-mk2", timesteps=20, batch_size=8, seed=s, band=False,
                              **{k: rates[k] for k in ("activity", "candidate_activity", "input_activity")})
             for s in range(8)]
    mean_kept = np.mean([mean_fills(r.stats, net.num_layers)[0] for r in drawn], axis=0)
    mean_listed = np.mean([mean_fills(r.stats, net.num_layers)[1] for r in drawn], axis=0)
    assert mean_kept == pytest.approx(kept, rel=0.15, abs=0.02)
    assert mean_listed == pytest.approx(listed, rel=0.15, abs=0.02)


def test_the_report_says_which_activity_it_used(capsys):
    net, x, y = _net_and_input()
    rates = activity_from_execution(net, "ipu-mk2", x, y)
    run = mimdsim.simulate(net, "ipu-mk2", timesteps=20, batch_size=8, activity_source=rates["source"],
                           **{k: rates[k] for k in ("activity", "candidate_activity", "input_activity")})
    assert run.report.mode == "rate-driven, measured rates"
    assert any("reproduce the mean list fills of one execution-driven step" in str(n) for n in run.report.notes)
    assumed = mimdsim.simulate(net, "ipu-mk2", timesteps=20, batch_size=8, activity=0.01)
    assert assumed.report.mode == "rate-driven" and any("assumed firing rates" in str(n) for n in assumed.report.notes)
    assert main(["compare", "--layers", "300,128,64,10", "--timesteps", "20", "--batch", "8", "--activity-from",
                 "execute", "--quiet"]) is not None
    assert "MIMD rate-driven, measured rates" in capsys.readouterr().out


def test_activity_from_execute_refuses_what_it_replaces(capsys):
    assert main(["simulate", "--layers", "300,128,10", "--activity-from", "execute", "--activity", "0.1"]) != 0
    assert "with --activity-from execute the rates come from the dynamics" in capsys.readouterr().err
    assert main(["simulate", "--layers", "300,128,10", "--activity-from", "execute", "--execute"]) != 0
    assert "--execute runs the numerics themselves" in capsys.readouterr().err
    net, x, y = _net_and_input()
    with pytest.raises(ConfigError, match="activity_source"):
        mimdsim.simulate(net, "ipu-mk2", inputs=x, labels=y, activity_source="a run")
