"""Bad input gets a clear error naming the value, the limit and the fix — never a deep traceback."""
import numpy as np
import pytest

import mimdsim
from mimdsim import ConfigError, OutOfTileMemory
from mimdsim.cli import main


def _xy(T=5, B=3, n=20, n_out=4):
    rng = np.random.default_rng(0)
    return (rng.random((T, B, n)) < 0.2).astype(np.uint8), rng.integers(0, n_out, B)


@pytest.mark.parametrize("sizes,match", [
    ([20, 0, 4], r"sizes\[1\]=0 must be an integer >= 1"),
    ([20, -3, 4], r"sizes\[1\]=-3"),
    ([20], "at least an input and an output"),
    ([20, 2.5, 4], r"sizes\[1\]=2.5"),
])
def test_bad_sizes(sizes, match):
    with pytest.raises(ConfigError, match=match):
        mimdsim.Network.feedforward(sizes)


def test_bad_capacity():
    with pytest.raises(ConfigError, match=r"capacities\[1\]=0 must be an integer between 1 and 10; give layer 1 a list capacity K"):
        mimdsim.Network.feedforward([20, 10, 4], capacities=[4, 0, 2])
    with pytest.raises(ConfigError, match=r"capacities\[2\]=9 must be an integer between 1 and 4"):
        mimdsim.Network.feedforward([20, 10, 4], capacities=[4, 2, 9])
    with pytest.raises(ConfigError, match="3 capacities for 4 layers"):
        mimdsim.Network.feedforward([20, 10, 8, 4], capacities=[4, 2, 2])
    with pytest.raises(ConfigError, match="max_activity=0"):
        mimdsim.Network.feedforward([20, 10, 4], max_activity=0)


def test_bad_neuron_parameters():
    with pytest.raises(ConfigError, match=r"alpha=1.5 must be a finite number in \[0, 1\]; a decay factor"):
        mimdsim.Network.feedforward([20, 10, 4], alpha=1.5)
    with pytest.raises(ConfigError, match=r"theta2=2.0 must be a number <= 1; candidates lie below the spike threshold theta1=1.0"):
        mimdsim.Network.feedforward([20, 10, 4], theta2=2.0)
    with pytest.raises(ConfigError, match="overflow='newest'"):
        mimdsim.Network.feedforward([20, 10, 4], overflow="newest")


def test_non_binary_inputs():
    net = mimdsim.Network.feedforward([20, 10, 4])
    x, y = _xy()
    x = x.astype(float)
    x[0, 0, 0] = 0.5
    with pytest.raises(ConfigError, match=r"binary spikes \(0 or 1\); found 1 other value\(s\), e.g. 0.5"):
        mimdsim.simulate(net, "ipu-mk2", inputs=x, labels=y)


@pytest.mark.parametrize("shape,match", [
    ((5, 3, 19), r"inputs have shape \(5, 3, 19\); expected \[timesteps, batch, 20\]"),
    ((5, 20), r"inputs have shape \(5, 20\)"),
    ((0, 3, 20), "timesteps and batch must be at least 1"),
])
def test_input_shape_mismatch(shape, match):
    net = mimdsim.Network.feedforward([20, 10, 4])
    with pytest.raises(ConfigError, match=match):
        mimdsim.simulate(net, "ipu-mk2", inputs=np.zeros(shape, np.uint8), labels=np.zeros(3, int))


def test_bad_labels():
    net = mimdsim.Network.feedforward([20, 10, 4])
    x, _ = _xy()
    with pytest.raises(ConfigError, match=r"labels have shape \(2,\); expected \(3,\)"):
        mimdsim.simulate(net, "ipu-mk2", inputs=x, labels=np.zeros(2, int))
    with pytest.raises(ConfigError, match=r"labels must lie in \[0, 4\)"):
        mimdsim.simulate(net, "ipu-mk2", inputs=x, labels=np.array([0, 1, 4]))
    with pytest.raises(ConfigError, match="needs labels"):
        mimdsim.simulate(net, "ipu-mk2", inputs=x)


def test_nan_and_misshaped_weights():
    net = mimdsim.Network.feedforward([20, 10, 4])
    x, y = _xy()
    net.weights[1][2, 3] = np.nan
    with pytest.raises(ConfigError, match=r"net.weights\[1\] holds 1 non-finite value"):
        mimdsim.simulate(net, "ipu-mk2", inputs=x, labels=y)
    net.weights[1] = np.zeros((4, 10), np.float32)
    with pytest.raises(ConfigError, match=r"net.weights\[1\] has shape \(4, 10\); layer 1 -> 2 needs \(10, 4\)"):
        mimdsim.simulate(net, "ipu-mk2", inputs=x, labels=y)


def test_unknown_chip_and_bad_fields():
    with pytest.raises(ConfigError, match="unknown chip 'ipu-mk3'.*Did you mean 'ipu-mk2'"):
        mimdsim.chip("ipu-mk3")
    with pytest.raises(ConfigError, match="tiles=0 must be an integer >= 1"):
        mimdsim.chip("ipu-mk2", tiles=0)
    with pytest.raises(ConfigError, match="clock_hz=-1"):
        mimdsim.chip("ipu-mk2", clock_hz=-1)
    with pytest.raises(ConfigError, match=r"unknown chip field\(s\) \['tile_count'\]"):
        mimdsim.chip("ipu-mk2", tile_count=4)
    with pytest.raises(ConfigError, match="chips=0 must be an integer >= 1"):
        mimdsim.system("ipu-mk2", chips=0)


def test_model_that_does_not_fit_names_tile_and_tensors():
    net = mimdsim.Network.feedforward([2312, 978, 978, 976, 10], max_activity=0.01)
    with pytest.raises(OutOfTileMemory) as info:
        mimdsim.simulate(net, "ipu-mk1", timesteps=100, batch_size=48, activity=0.005, schedule="fused")
    err = info.value
    assert err.used > err.limit == 256 * 1024
    assert err.breakdown["L1.input_list_history"] == 100 * 48 * (22 + 2) * 2
    # 2952 neurons do not fit 1215 usable MK1 tiles at 2 per tile: the mapper picks 4
    assert err.breakdown["L1.grad_copies"] == 6 * 2312 * 4 * 4
    msg = str(err)
    assert f"tile {err.tile} needs" in msg and "262,144 B" in msg and "L1.input_list_history" in msg
    assert "lower" in msg  # says what to change


def test_layers_that_do_not_fit_on_the_chips():
    net = mimdsim.Network.feedforward([100, 3000, 10])
    with pytest.raises(ConfigError, match="layer 1 \\(3000 neurons\\) needs 1500 tiles.*Raise neurons_per_tile"):
        mimdsim.simulate(net, "ipu-mk2", timesteps=5, batch_size=2, activity=0.01, neurons_per_tile=2)


def test_rate_driven_arguments():
    net = mimdsim.Network.feedforward([20, 10, 4])
    with pytest.raises(ConfigError, match="needs timesteps=, batch_size= and activity="):
        mimdsim.simulate(net, "ipu-mk2", timesteps=5, batch_size=2)
    with pytest.raises(ConfigError, match=r"activity=1.5 must be a finite number in \[0, 1\]"):
        mimdsim.simulate(net, "ipu-mk2", timesteps=5, batch_size=2, activity=1.5)
    with pytest.raises(ConfigError, match="activity has 3 entries; give one number or 2"):
        mimdsim.simulate(net, "ipu-mk2", timesteps=5, batch_size=2, activity=[0.1, 0.1, 0.1])
    with pytest.raises(ConfigError, match="batch_size=0 must be an integer >= 1; a step trains at least one sample"):
        mimdsim.simulate(net, "ipu-mk2", timesteps=5, batch_size=0, activity=0.1)


def test_strict_mode_raises_on_overflow():
    net = mimdsim.Network.feedforward([20, 10, 4], capacities=[2, 2, 2])
    with pytest.raises(mimdsim.CapacityOverflow, match="layer 0: .* spikes dropped"):
        mimdsim.simulate(net, "ipu-mk2", timesteps=10, batch_size=4, activity=0.5, strict=True)


@pytest.mark.parametrize("argv,match", [
    (["simulate", "--chip", "ipu-mk3"], "unknown chip 'ipu-mk3'"),
    (["simulate", "--layers", "20,0,4"], r"sizes\[1\]=0 must be an integer >= 1"),
    (["simulate", "--chip", "ipu-mk1"], "tile .* needs .* B but has 262,144 B"),
])
def test_cli_errors_are_one_line(argv, match, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("mimdsim: error:") and "Traceback" not in err
    import re
    assert re.search(match, err)


def test_cli_rejects_bad_flags(capsys):
    assert main(["simulate", "--layers", "a,b"]) == 2
    assert "not a comma-separated list of integers" in capsys.readouterr().err
    assert main(["simulate", "--set", "tile_count=3"]) == 2
    assert "unknown chip field(s) ['tile_count']; valid fields: " in capsys.readouterr().err
