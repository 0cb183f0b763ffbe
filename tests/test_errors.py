"""Bad input gets a clear error naming the value, the limit and the fix — never a deep traceback."""
import os
import re

import numpy as np
import pytest

import mimdsim
from mimdsim import ConfigError, OutOfTileMemory
from mimdsim.cli import main
from mimdsim.workloads.registry import REGISTERED


class _Tee:
    """A stream that writes to ``stream`` and keeps a copy."""

    def __init__(self, stream):
        self.stream, self.kept = stream, []

    def write(self, text):
        self.kept.append(text)
        return self.stream.write(text)

    def flush(self):
        self.stream.flush()

    def isatty(self):
        return False


@pytest.fixture(autouse=True)
def _every_command_line_without_a_traceback(monkeypatch):
    """Every command line this file runs (``main(argv)``, each case of every test) is checked here too: its
    stderr holds no traceback and its exit status is one the docs name (0, 1, 2, 130), with MIMDSIM_DEBUG unset."""
    import contextlib
    import sys

    from mimdsim.cli import main as cli_main

    monkeypatch.delenv("MIMDSIM_DEBUG", raising=False)

    def main_without_traceback(argv=None):
        tee = _Tee(sys.stderr)
        with contextlib.redirect_stderr(tee):
            rc = cli_main(argv)
        err = "".join(tee.kept)
        if not os.environ.get("MIMDSIM_DEBUG"):  # a test that asks for the traceback gets it
            assert "Traceback" not in err and 'File "' not in err, (argv, err)
        assert rc in (0, 1, 2, 130), (argv, rc, err)
        return rc

    monkeypatch.setattr(sys.modules[__name__], "main", main_without_traceback)


def test_the_command_lines_here_are_checked_for_tracebacks():
    assert main.__name__ == "main_without_traceback"


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
    with pytest.raises(ConfigError, match=r"theta2=2.0 must be a number <= 1; candidates lie below the spike threshold \(1.0\)"):
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
    # 2942 neurons do not fit 1215 usable MK1 tiles at 2 per tile; 3 places them (327 + 327 + 326 + 4 tiles),
    # the first count the search tries, and does not fit: the error is its
    assert err.breakdown["L1.grad_copies"] == 6 * 2312 * 3 * 4
    msg = str(err)
    assert f"tile {err.tile} needs" in msg and "262,144 B" in msg and "L1.input_list_history" in msg
    # no chip count (up to one per layer), tile count (to 4x) or batch fits: it says so, and what is left,
    # in Python's words here and in flags on the command line
    from mimdsim.cli.terms import cli_text
    assert "Checked and still over: up to 4 chips (one layer per chip); up to tiles=4864; batch_size=1" in msg
    assert "Not checked: a lower max_activity" in msg
    assert "Checked and still over: up to 4 chips (one layer per chip); up to --tiles 4864; --batch 1" in cli_text(err)
    assert "Not checked: a lower --max-activity" in cli_text(err)


def test_layers_that_do_not_fit_on_the_chips():
    net = mimdsim.Network.feedforward([100, 3000, 10])
    with pytest.raises(ConfigError, match="layer 1 \\(3000 neurons\\) needs 1500 tiles.*what places: 1 chip\\(s\\) at "
                       "3-3000 neurons per tile; raise neurons_per_tile to at least 3"):
        mimdsim.simulate(net, "ipu-mk2", timesteps=5, batch_size=2, activity=0.01, neurons_per_tile=2)


def test_rate_driven_arguments():
    net = mimdsim.Network.feedforward([20, 10, 4])
    with pytest.raises(ConfigError, match=r"needs timesteps= and batch_size= \(activity= defaults to half the network's max activity, else 0.005"):
        mimdsim.simulate(net, "ipu-mk2", timesteps=5)
    # activity= left out: the command line's default rate, the same answer as --activity 0.005
    assert mimdsim.simulate(net, "ipu-mk2", timesteps=5, batch_size=2, band=False).report.to_dict() == \
        mimdsim.simulate(net, "ipu-mk2", timesteps=5, batch_size=2, activity=0.005, band=False).report.to_dict()
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
    # the published program fits MK1 at 3 neurons per tile (the even-count rule tried 4 and refused); fused does not
    (["simulate", "--chip", "ipu-mk1", "--schedule", "fused"], "tile .* needs .* B but has 262,144 B"),
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


# ---------------------------------------------------------------------------------------------
# Issue 18: a newcomer's bad inputs over every command, each a one-line error naming the value,
# the limit and the fix (or a correct result), never a traceback, a silent clamp or a crash.
# ---------------------------------------------------------------------------------------------
import time  # noqa: E402
import tracemalloc  # noqa: E402

SIM = ["simulate", "--layers", "300,200,10", "--timesteps", "5", "--batch", "4", "--quiet"]
CMP = ["compare", "--layers", "300,200,10", "--timesteps", "5", "--batch", "4", "--quiet"]
WL = ["compare", "--quiet"]  # a workload comparison: the SNN step's flags would be refused
TRAIN = ["train", "--data", "randman", "--classes", "3", "--inputs", "12", "--samples-per-class", "16",
         "--timesteps", "8", "--hidden", "16,8", "--max-activity", "0.25", "--batch", "8", "--tiles", "64",
         "--epochs", "1", "--quiet", "--no-gpu"]
EXPERIMENT = '[model]\nlayers = [300, 200, 10]\ntimesteps = 5\nbatch = 4\n'


def _one_line_error(argv, capsys):
    """Run the CLI; return its single stderr line (and check: exit 2, one line, no traceback, in the
    command line's own words: no Python spelling, and every flag it suggests exists)."""
    capsys.readouterr()
    rc = main(argv)
    err = capsys.readouterr().err
    lines = [l for l in err.splitlines() if l.strip()]
    assert rc == 2, (rc, err)
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("mimdsim"), err
    assert_cli_words(lines[0], typed=argv)
    return lines[0]


# Python's spellings that a command-line user cannot type: name=value (but --set FIELD=VALUE, --assume NAME=VALUE and
# TOML's key = value are the command line's), Network./mimdsim. calls, simulate(...).
API_SPELLING = re.compile(r"(?<![\w.\-'\"])(?<!--set )(?<!--assume )(?<!\[)([a-z][a-z0-9_]*)=(?![=\s])|\bNetwork\.|"
                          r"\bmimdsim\.[a-z_]+\(|\bsimulate\(|\bfrom_nir\(")


def all_flags() -> set:
    """Every flag of every command, read from the parser."""
    from mimdsim.cli import build_parser

    found, todo = set(), [build_parser()]
    while todo:
        parser = todo.pop()
        for action in parser._actions:
            found.update(action.option_strings)
            if isinstance(getattr(action, "choices", None), dict):
                todo.extend(action.choices.values())
    return found


def assert_cli_words(text: str, typed=()) -> None:
    """``text`` speaks the command line: flags that exist (or that the user typed), no Python."""
    spelled = [m.group(0) for m in API_SPELLING.finditer(text)
               if not text[:m.start()].rstrip().endswith(("--set", "--assume"))]
    assert not spelled, f"Python spelling {spelled} in: {text}"
    flags = all_flags()
    unknown = [f for f in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", text) if f not in flags and f not in typed]
    assert not unknown, f"suggests flags that do not exist {unknown}: {text}"
    from mimdsim.config import FILE_KEYS
    keys = [k for k in re.findall(r"\bTOML: ([a-z_]+\.[a-z0-9_.]*[a-z0-9_])", text) if k not in FILE_KEYS]
    assert not keys, f"names experiment-file keys that do not exist {keys}: {text}"


@pytest.fixture
def files(tmp_path):
    (tmp_path / "e.toml").write_text(EXPERIMENT)
    (tmp_path / "afile").write_text("x")
    (tmp_path / "bad.toml").write_text("not toml [[[\n")
    for name, axes in {"big": '"model.batch" = {range = [1, 100000, 1]}\n"run.seed" = {range = [0, 99999, 1]}\n',
                       "rev": '"chip.tiles" = {range = [1472, 256, 128]}\n',
                       "ok": '"chip.tiles" = [64, 128]\n',
                       "revu": '"run.activity" = {uniform = [0.05, 0.001]}\n',
                       "huge_axis": '"run.seed" = {range = [0, 10000000000, 1]}\n',
                       "logr": '"run.activity" = {logrange = [0, 0.01, 4]}\n',
                       "logn": '"run.activity" = {logrange = [0.001, 0.01, 2.5]}\n',
                       "logu": '"run.activity" = {loguniform = [0, 0.01]}\n'}.items():
        mode = 'mode = "random"\nsamples = 3\n' if name in ("revu", "logu") else ""
        (tmp_path / f"{name}.toml").write_text(EXPERIMENT + f'[sweep]\n{mode}results = "{name}.jsonl"\n'
                                               f'[sweep.axes]\n{axes}')
    return tmp_path


# (argv, pattern of the one-line error). "{d}" is the test's folder (see ``files``).
BAD_INPUTS = [
    # numbers: negative, zero, huge, not a number (each names the flag, the value and the limit)
    (SIM + ["--seed", "-1"], r"--seed: -1 must be an integer >= 0 \(numpy seeds are non-negative\)"),
    (SIM + ["--seed", "abc"], r"--seed: 'abc' is not an integer"),
    (SIM + ["--timesteps", "0"], r"--timesteps: 0 must be an integer >= 1"),
    (SIM + ["--timesteps", "-5"], r"--timesteps: -5 must be an integer >= 1"),
    (SIM + ["--timesteps", "2.5"], r"--timesteps: '2.5' is not an integer; give a whole number, e.g. 2"),
    (SIM + ["--timesteps", "1000000000"], r"T=1,000,000,000 x B=4 would take .* GiB of this machine's memory; "
                                          r"the limit is .*lower --timesteps or --batch"),
    (SIM + ["--batch", "0"], r"--batch: 0 must be an integer >= 1"),
    (SIM + ["--batch", "100000"], r"tile 1 needs 2,000,000 B but has 638,976 B.*lower --timesteps or --batch"),
    (SIM + ["--max-activity", "0"], r"--max-activity: 0.0 must be a number in \(0, 1\]"),
    (SIM + ["--max-activity", "2"], r"--max-activity: 2.0 must be a number in \(0, 1\]"),
    (SIM + ["--max-activity", "nan"], r"--max-activity: 'nan' is not a finite number"),
    (SIM + ["--activity", "1.5"], r"--activity: 1.5 must be a number in \[0, 1\]"),
    (SIM + ["--activity", "-0.1"], r"--activity: -0.1 must be a number in \[0, 1\]"),
    (SIM + ["--activity", "0.1,0.1,0.1"], r"activity has 3 entries; give one number or 2"),
    (SIM + ["--candidate-activity", "2"], r"--candidate-activity: 2.0 must be a number in \[0, 1\]"),
    (SIM + ["--input-activity", "-1"], r"--input-activity: -1.0 must be a number in \[0, 1\]"),
    (SIM + ["--input-capacity", "0"], r"--input-capacity: 0 must be an integer >= 1"),
    (SIM + ["--input-capacity", "100000"], r"--input-capacity 100000 must be an integer between 1 and 300"),
    (SIM + ["--execute", "--theta2", "5"], r"--theta2 5.0 must be a number <= 1"),
    # a setting the rate-driven mode does not read is refused, not ignored
    (SIM + ["--theta2", "0.5"], r"--theta2 \(TOML: model.theta2\) sets the gradient-candidate threshold .* a "
                                r"rate-driven run does not read .* add --execute, or drop --theta2"),
    (SIM + ["--weight-scale", "5"], r"--weight-scale \(TOML: model.weight_scale\) sets the initial weights, which a "
                                    r"rate-driven run does not read"),
    (SIM + ["--schedule", "poptorch", "--neuron", "leaky", "--neurons-per-tile", "4"],
     r"--neurons-per-tile places the spike-list programs' neurons; .* drop --neurons-per-tile"),
    (SIM + ["--weight-scale", "0"], r"--weight-scale: 0.0 must be a number > 0"),
    (SIM + ["--weight-scale", "-1"], r"--weight-scale: -1.0 must be a number > 0"),
    (SIM + ["--neurons-per-tile", "0"], r"--neurons-per-tile: 0 must be an integer >= 1"),
    (SIM + ["--neurons-per-tile", "1000000"], r"tile 1 needs [\d,]+ B but has 638,976 B"),
    (SIM + ["--tiles", "0"], r"--tiles: 0 must be an integer between 1 and 1048576"),
    (SIM + ["--tiles", "5000000000"], r"--tiles: 5000000000 must be an integer between 1 and 1048576"),
    (SIM + ["--tiles", "2"], r"layer 1 \(300 -> 200 neurons\) needs at least 938 KiB of SRAM.*more tiles \(--tiles: at least 3, the weights. bound\).*--set sram_per_tile=N"),
    (SIM + ["--tiles", "1"], r"has 0 B for layers \(1 tile\(s\) x 638,976 B, tile 0 kept free\).*--tiles: at least"),
    (SIM + ["--chips", "0"], r"--chips: 0 must be an integer >= 1"),
    (SIM + ["--chips", "-1"], r"--chips: -1 must be an integer >= 1"),
    # sizes
    (SIM[:1] + ["--layers", "300"], r"--layers: '300': give at least an input and an output size"),
    (SIM[:1] + ["--layers", "300,,10"], r"--layers: '300,,10' has an empty entry"),
    (SIM[:1] + ["--layers", "300,-2,10"], r"sizes\[1\]=-2 must be an integer >= 1"),
    (SIM[:1] + ["--layers", "a,b"], r"not a comma-separated list of integers"),
    (SIM[:1] + ["--layers", "2312,20000,20000,10"], r"layer 2 \(20000 -> 20000 neurons\) needs at least 5.96 GiB"),
    # unknown names (with the closest one)
    (SIM + ["--chip", "ipu-mk"], r"unknown chip 'ipu-mk'.*Did you mean 'ipu-mk1' or 'ipu-mk2'\?"),
    (SIM + ["--overflow", "bogus"], r"--overflow: invalid choice: 'bogus'"),
    (SIM + ["--set", "foo=1"], r"unknown chip field\(s\) \['foo'\]"),
    (SIM + ["--set", "sram_per_tile=abc"], r"--set sram_per_tile: 'abc' is not a number"),
    (SIM + ["--set", "noequals"], r"--set takes FIELD=VALUE"),
    (SIM + ["--set", "tiles=0"], r"--set tiles=0 must be an integer >= 1; pass e.g. --set tiles=1472"),
    (SIM + ["--set", "clock_hz=-1"], r"--set clock_hz=-1 must be a positive finite number"),
    (SIM + ["--schedule", "per-op"], r"--schedule per-op is the Kalman fit's"),
    (SIM + ["--optimizer", "sgd", "--inference"], r"--optimizer given with --inference"),
    (SIM + ["--model", "/nonexistent.nir"], r"--layers \[300, 200, 10\] with --model /nonexistent.nir: the graph gives the "
                                            r"layer sizes; drop --layers"),
    (["simulate", "--quiet", "--model", "/nonexistent.nir"], r"NIR file '/nonexistent.nir' does not exist"),
    (CMP + ["--gpu", "a100"], r"unknown GPU 'a100'.*Did you mean 'a100-40gb' or 'a100-80gb'\?"),
    (CMP + ["--strategy", "magic"], r"--strategy: unknown value \['magic'\]; choose from"),
    (CMP + ["--strategy", ""], r"--strategy: unknown value ''"),
    (CMP + ["--precision", "fp64"], r"--precision: invalid choice: 'fp64'"),
    # the dense PopTorch program: --max-activity was ignored, the published LIF got an API-terms fix
    (SIM + ["--neuron", "leaky", "--schedule", "poptorch", "--max-activity", "0.01"],
     r"--max-activity 0.01 with --schedule poptorch: the dense program lists every neuron"),
    (SIM + ["--schedule", "poptorch"], r"--schedule poptorch runs the dense program .* pick a model with --neuron"),
    (SIM + ["--static-input"], r"error: --static-input streams one input for every step, which only --schedule poptorch"),
    # the chip's number format is --chip-precision in a library message's CLI terms (it said --precision)
    (SIM + ["--chip-precision", "fp16", "--schedule", "published"], r"--chip-precision fp16 is not available there"),
    (CMP + ["--systolic", "foo"], r"unknown systolic array 'foo'; presets are tpu-v1"),
    (WL + ["--workload", "kalman", "--tracks-per-tile", "0"], r"--tracks-per-tile: 0 must be an integer >= 1"),
    (WL + ["--workload", "kalman", "--planes", "1"], r"--planes 1 must be an integer >= 2; a straight-line track fit needs at least 2 planes"),
    (WL + ["--workload", "kalman", "--cpu-cores", "0"], r"--cpu-cores: 0 must be an integer >= 1"),
    (WL + ["--workload", "kalman", "--chips", "1000000"], r"per-tile arrays of 1,000,000 chip\(s\).*use fewer chips"),
    (WL + ["--workload", "kalman", "--schedule", "poptorch"], r"--schedule poptorch is not one of 'published', 'fused', 'per-op'"),
    (WL + ["--workload", "mlp", "--batches", "0"], r"--batches: 0 must be an integer >= 1"),
    # a flag the workload would ignore is refused (--chip-precision fp16 ran the MLP in fp32)
    (WL + ["--workload", "mlp", "--chip-precision", "fp16"], r"--workload mlp does not use --chip-precision .*"
                                                            r"the chip and the GPU in --precision's format"),
    (WL + ["--workload", "kalman", "--execute"], r"--workload kalman does not use --execute \(TOML: run.execute\)"),
    (WL + ["--workload", "kalman", "--batch", "8"], r"--workload kalman does not use --batch"),
    (WL + ["--workload", "mlp", "--tracks-per-tile", "8"], r"--workload mlp does not use --tracks-per-tile"),
    (WL + ["--workload", "mlp", "--schedule", "fused"], r"--workload mlp does not use --schedule"),
    (WL + ["--planes", "3"], r"--workload snn does not use --planes \(TOML: workload.planes\)"),
    # unwritable outputs, refused before the run
    (SIM + ["--json", "/nonexistent/dir/r.json"], r"--json '/nonexistent/dir/r.json': the folder '/nonexistent/dir' does "
                                                  r"not exist"),
    (SIM + ["--json", "{d}"], r"--json '.*' is a folder; give a file name"),
    (SIM + ["--csv", "{d}/afile/x.csv"], r"--csv .*afile/x.csv': the folder .*afile' is not a folder"),
    (SIM + ["--plot", "{d}/afile"], r"--plot '.*afile' is a file; give a folder"),
    (SIM + ["--trace", "/nonexistent/t.json"], r"--trace '/nonexistent/t.json'"),
    (SIM + ["--json", "{d}/same.json", "--trace", "{d}/same.json"], r"--json and --trace both write"),
    (WL + ["--workload", "mlp", "--json", "/nonexistent/m.json"], r"--json '/nonexistent/m.json'"),
    # run FILE
    (["run", "/nonexistent.toml"], r"experiment file '/nonexistent.toml' does not exist"),
    (["run", "{d}/bad.toml"], r"bad.toml: not valid TOML"),
    (["run", "{d}"], r"experiment file '.*' is a folder; give the file itself \(a TOML file"),
    (["simulate", "--quiet", "--model", "{d}"], r"NIR file '.*' is a folder; give the file itself"),
    (TRAIN + ["--data", "events", "--events", "{d}"], r"event file '.*' is a folder; give the file itself"),
    (["run", "{d}/e.toml", "--tiles", "0"], r"--tiles: 0 must be an integer between 1"),
    (["run", "{d}/e.toml", "--set", "model.batch=0"], r"--set: model.batch = 0 must be an integer >= 1"),
    (["run", "{d}/e.toml", "--set", "model.nope=1"], r"unknown key 'model.nope'.*Did you mean 'model.nir'\?"),
    (["run", "{d}/e.toml", "--set", "model.layers=abc"], r"--set: model.layers must be a list of integers"),
    (["run", "{d}/e.toml", "--json", "/nonexistent/x.json"], r"--json '/nonexistent/x.json'"),
    # train: degenerate data sets and bad numbers
    (TRAIN + ["--classes", "1"], r"--classes: 1 must be an integer >= 2 \(a classifier needs at least two classes"),
    (TRAIN + ["--classes", "0"], r"--classes: 0 must be an integer >= 2"),
    (TRAIN + ["--epochs", "0"], r"--epochs: 0 must be an integer >= 1"),
    (TRAIN + ["--lr", "0"], r"--lr: 0.0 must be a number > 0"),
    (TRAIN + ["--lr", "-1"], r"--lr: -1.0 must be a number > 0"),
    (TRAIN + ["--hidden", "0"], r"--hidden: '0' is not a comma-separated list of positive sizes"),
    (TRAIN + ["--inputs", "0"], r"--inputs: 0 must be an integer >= 1"),
    (TRAIN + ["--samples-per-class", "0"], r"--samples-per-class: 0 must be an integer >= 1"),
    (TRAIN + ["--max-rate", "2"], r"--max-rate: 2.0 must be a number in \[0, 1\]"),
    (TRAIN + ["--init-activity", "2"], r"--init-activity: 2.0 must be a number in \(0, 1\]"),
    (TRAIN + ["--seed", "-1"], r"--seed: -1 must be an integer >= 0"),
    (TRAIN + ["--data-seed", "-3"], r"--data-seed: -3 must be an integer >= 0"),
    (TRAIN + ["--duration", "0"], r"--duration: 0.0 must be a number > 0"),
    (TRAIN + ["--checkpoint-every", "0"], r"--checkpoint-every: 0 must be an integer >= 1"),
    (TRAIN + ["--data", "events"], r"--data events needs --events FILE.npz"),
    (TRAIN + ["--resume"], r"--resume needs --checkpoint"),
    (TRAIN + ["--resume", "--checkpoint", "/nonexistent.npz"], r"nothing to resume"),
    (TRAIN + ["--checkpoint", "/nonexistent/dir/c.npz"], r"--checkpoint '/nonexistent/dir/c.npz': the folder"),
    (TRAIN + ["--json", "/nonexistent/dir/h.json"], r"--json '/nonexistent/dir/h.json': the folder"),
    # chips, gpus, unknown commands
    (["chips", "--foo"], r"unrecognized arguments: --foo"),
    (["gpus", "extra"], r"unrecognized arguments: extra"),
    (["nonsense"], r"invalid choice: 'nonsense'"),
    # sweeps: workers, an unreachable scheduler, absurd and reversed ranges, unwritable outputs
    (["sweep", "/nonexistent.toml"], r"experiment file '/nonexistent.toml' does not exist"),
    (["sweep", "{d}/e.toml"], r"a sweep file needs a \[sweep.axes\] table"),
    (["sweep", "{d}/ok.toml", "--workers", "0"], r"--workers: 0 must be an integer >= 1"),
    (["sweep", "{d}/ok.toml", "--workers", "-3"], r"--workers: -3 must be an integer >= 1"),
    (["sweep", "{d}/ok.toml", "--scheduler", "tcp://127.0.0.1:1"], r"--scheduler 'tcp://127.0.0.1:1': no Dask "
                                                                  r"scheduler answers.*drop --scheduler"),
    (["sweep", "{d}/ok.toml", "--scheduler", "://bad"], r"--scheduler '://bad' is not an address like tcp://host:8786"),
    (["sweep", "{d}/ok.toml", "--plot", "{d}/afile"], r"--plot '.*afile' is a file"),
    (["sweep", "{d}/big.toml"], r"the grid of 100,000 x 100,000 axis values is 10,000,000,000 points; the limit of a "
                                r"sweep is 1,000,000"),
    (["sweep", "{d}/huge_axis.toml"], r"has 10,000,000,001 values; the limit of a sweep is 1,000,000"),
    (["sweep", "{d}/rev.toml"], r"runs from 1472 to 256 with step 128.*swap start and stop, or give step -128"),
    (["sweep", "{d}/revu.toml"], r"the low end 0.05 is above the high end 0.001; swap them"),
    (["sweep", "{d}/logr.toml"], r"a log range needs start > 0 and stop > 0.*e.g. \{logrange = \[0.0001, 0.01, 4\]\}"),
    (["sweep", "{d}/logn.toml"], r"the count 2.5 must be an integer >= 1 \(a log range is \[start, stop, count\]\)"),
    (["sweep", "{d}/logu.toml"], r"a log-uniform draw needs a low end > 0.*or \{uniform = \[0, 0.01\]\}"),
    # a setting the chosen mode does not read is refused, not ignored
    (SIM + ["--execute", "--activity", "0.02"], r"--activity \(TOML: run.activity\) sets the firing rates a "
                                                r"rate-driven run assumes; with --execute .* drop --activity"),
    (SIM + ["--execute", "--candidate-activity", "0.02"], r"--candidate-activity .* drop --candidate-activity"),
    # output paths: empty, a folder where a file is expected (existing, or by its trailing slash), a file
    # where a folder is expected; each refused before the run with its own message
    (SIM + ["--json", ""], r"--json is empty: give a file name \(e.g. --json out.json\)"),
    (SIM + ["--csv", ""], r"--csv is empty"),
    (SIM + ["--plot", ""], r"--plot is empty: give a folder"),
    (SIM + ["--trace", "{d}"], r"--trace '.*' is a folder; give a file name"),
    (SIM + ["--json", "{d}/new/"], r"--json '.*new/' ends with a path separator, so it names a folder"),
    (SIM + ["--plot", "{d}/afile"], r"--plot '.*afile' is a file; give a folder"),
    (TRAIN + ["--json", ""], r"--json is empty"),
    (TRAIN + ["--checkpoint", ""], r"--checkpoint is empty"),
]


@pytest.mark.parametrize("argv,match", BAD_INPUTS, ids=[" ".join(a[len(SIM) if a[:len(SIM)] == SIM else
                                                                   len(CMP) if a[:len(CMP)] == CMP else
                                                                   len(TRAIN) if a[:len(TRAIN)] == TRAIN else 0:])
                                                        or a[0] for a, _ in BAD_INPUTS])
def test_bad_input_is_one_clear_line(argv, match, files, capsys):
    line = _one_line_error([a.replace("{d}", str(files)) for a in argv], capsys)
    assert re.search(match, line), line


def test_cli_errors_use_flags_not_python_keywords(capsys):
    """An error names its parameters as data: Python keywords by default, flags on the command line."""
    from mimdsim.cli.terms import cli_text
    from mimdsim.errors import Param

    def both(*parts, **data):
        e = ConfigError(*parts, **data)
        return str(e), cli_text(e)

    assert both(Param("batch_size", 0), " must be an integer >= 1") == \
        ("batch_size=0 must be an integer >= 1", "--batch 0 must be an integer >= 1")
    assert both("use ", Param("schedule", "fused"), " or ", Param("overflow", "lowest-index")) == \
        ("use schedule='fused' or overflow='lowest-index'", "use --schedule fused or --overflow lowest-index")
    assert both("pass e.g. ", Param("chips", 2, python="system('ipu-mk2', chips=2)"))[1] == "pass e.g. --chips 2"
    assert both(Param("optimizer", python="optimizer="), " given with ",
                Param("training", False, key="run.inference", setting_value=True)) == \
        ("optimizer= given with training=False", "--optimizer given with --inference")
    assert both("raise ", Param("sram_per_tile", key="chip.set.sram_per_tile", shown="N"))[1] == \
        "raise --set sram_per_tile=N"
    assert both("pin ", Param("x", 4, key="assume.x")) == ("pin assume={'x': 4}", "pin --assume x=4")
    precision = Param("precision", "tf32", key="gpu.precision")  # the GPU's, by its key; alone, the chip's
    assert both(precision)[1] == "--precision tf32" and both(Param("precision", "fp16"))[1] == "--chip-precision fp16"
    e = ConfigError(Param("tiles", 0), " must be >= 1; ", Param("tiles", 64), param=Param("tiles", 0), limit=1)
    assert e.param.value == 0 and e.limit == 1 and e.remedies == (Param("tiles", 64),)
    line = _one_line_error(SIM + ["--set", "tiles=0"], capsys)
    assert "chip(" not in line and "=1472)" not in line


def test_an_error_carries_its_parameter_limit_and_remedies():
    """What to change is data the caller can read, and survives a trip to another process (a sweep's
    worker): the parameter, its value, the limit and each remedy with its suggested value."""
    import pickle

    from mimdsim.cli.terms import cli_text
    from mimdsim.errors import Param

    with pytest.raises(ConfigError) as info:
        mimdsim.system("ipu-mk2", chips=0)
    e = info.value
    assert e.param == Param("chips", 0) and e.value == 0 and e.limit == "an integer >= 1"
    assert [(r.name, r.value) for r in e.remedies] == [("chips", 2)]
    assert str(e).endswith("pass e.g. system('ipu-mk2', chips=2)") and cli_text(e).endswith("pass e.g. --chips 2")
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is ConfigError and back.remedies == e.remedies and cli_text(back) == cli_text(e)
    net = mimdsim.Network.feedforward([100, 300, 300, 10])
    with pytest.raises(ConfigError) as info:
        mimdsim.simulate(net, mimdsim.system("ipu-mk2", chips=2, tiles=64), timesteps=3, batch_size=2,
                         activity=0.02, chips_used=3)
    assert info.value.param == Param("chips_used", 3) and info.value.limit == 2
    assert {r.name: r.action for r in info.value.remedies} == {"chips": "raise", "chips_used": "lower"}


# The front door (its package) and the settings table (each setting's flag: the core rows and each
# workload's, in its declaration) are the only modules that spell a command-line flag; every other
# module names its parameters as Params.
FLAG_SPELLERS = ("mimdsim/cli/", "mimdsim/config.py", *(f"mimdsim/workloads/{name}/workload.py" for name in REGISTERED))


def flag_text_in_library() -> list[str]:
    """``file:line: text`` of every string constant (f-strings included, docstrings not: they
    document, they are never printed) outside the front door that spells a flag."""
    import ast
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[1]
    found = []
    for path in sorted([*(root / "mimdsim").rglob("*.py"), *(root / "kernels").rglob("*.py")]):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(FLAG_SPELLERS) or rel.startswith("mimdsim/kernels/"):
            continue
        tree = ast.parse(path.read_text(), rel)
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                      and node.body and isinstance(node.body[0], ast.Expr)
                      and isinstance(node.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings \
                    and re.search(r"(?<![\w-])--[a-z]", node.value):
                found.append(f"{rel}:{node.lineno}: {node.value.strip()[:80]!r}")
    return found


def test_no_flag_text_in_library_modules():
    found = flag_text_in_library()
    assert not found, "flags spelled outside the front door (name the parameter as a Param):\n" + "\n".join(found)


def test_a_million_chips_answer_at_once_with_a_note(capsys):
    # idle chips are not simulated: no per-tile array for them, the report says why
    net = mimdsim.Network.feedforward([300, 200, 10])
    run = mimdsim.simulate(net, mimdsim.system("ipu-mk2", chips=10**6), timesteps=5, batch_size=4, activity=0.02)
    assert run.program.system.chips == 1 and len(run.report.tile_compute_cycles) == 1472
    note = [n for n in run.report.notes if "chips asked for" in n]
    assert note and "1000000 chips asked for, 1 used" in note[0] and "whole layers per chip" in note[0]
    tracemalloc.start()
    t0 = time.perf_counter()
    assert main(SIM + ["--chips", "1000000"]) == 0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 500 * 2**20 and time.perf_counter() - t0 < 120  # generous: ~1 s and tens of MB
    assert "1000000 chips asked for, 1 used" in capsys.readouterr().out


def test_chips_that_are_used_are_simulated_and_no_note():
    # layers that fill a chip move to the next: both chips run, no idle-chip note
    net = mimdsim.Network.feedforward([100, 300, 300, 10])
    run = mimdsim.simulate(net, mimdsim.system("ipu-mk2", chips=2, tiles=64), timesteps=3, batch_size=2,
                           activity=0.02, neurons_per_tile=8)
    assert run.program.system.chips == 2 and run.report.placement["chips_used"] == 2
    assert not any("chips asked for" in n for n in run.report.notes)
    assert "3 chips asked for, 2 used" in " ".join(mimdsim.simulate(
        net, mimdsim.system("ipu-mk2", chips=3, tiles=64), timesteps=3, batch_size=2, activity=0.02,
        neurons_per_tile=8).report.notes)


@pytest.mark.parametrize("argv", [
    ["simulate", "--layers", "2312,20000,20000,10", "--quiet"],
    ["simulate", "--layers", "100,1000000,10", "--chips", "100", "--quiet"],
    ["simulate", "--timesteps", "1000000000", "--quiet"],
    ["simulate", "--timesteps", "100000", "--batch", "100000", "--execute", "--quiet"],
    ["compare", "--workload", "kalman", "--chips", "1000000"],
])
def test_absurd_sizes_are_refused_before_any_large_allocation(argv, capsys):
    tracemalloc.start()
    rc = main(argv)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert rc == 2 and "Traceback" not in capsys.readouterr().err
    assert peak < 200 * 2**20, f"{peak / 2**20:.0f} MiB allocated before refusing"


def test_a_ten_billion_point_sweep_is_refused_at_once(files, capsys):
    tracemalloc.start()
    line = _one_line_error(["sweep", str(files / "big.toml")], capsys)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert "10,000,000,000 points" in line and peak < 50 * 2**20
    assert not (files / "big.jsonl").exists()


def test_help_reads_well(capsys):
    assert main(["simulate", "--help"]) == 0
    text = capsys.readouterr().out
    assert "--layers SIZES" in text and "--timesteps N" in text and "--json FILE" in text and "--chip PRESET" in text
    assert "MODEL_LAYERS" not in text and "TIMESTEPS" not in text
    assert "comma-separated" in text
    flat = " ".join(text.split())
    assert flat.count("(default: 100)") == 1 and "(default: None)" not in flat and "(default: False)" not in flat
    assert "(default: max activity / 2) (default" not in flat
    assert "one or per layer" not in flat and "(default " not in flat and "input_activity" not in flat
    assert "execution-driven with --execute" in flat  # a description under the usage line
    assert main(["compare", "--help"]) == 0
    flat = " ".join(capsys.readouterr().out.split())
    assert "comma-separated) (comma-separated" not in flat and "train:" not in flat and "(default " not in flat
    assert main(["run", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--tiles N" in text and "--set KEY=VALUE" in text and "FILE" in text
    assert main(["sweep", "--help"]) == 0
    text = capsys.readouterr().out
    assert "--workers N" in text and "computes only the missing points" in " ".join(text.split())


def test_warnings_are_one_line_in_cli_terms(capsys):
    assert main(["simulate", "--layers", "200,100,10", "--timesteps", "10", "--batch", "4", "--execute",
                 "--input-activity", "0.1", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert re.search(r"^mimdsim: warning: layer\(s\) [\d, ]+ never spiked.*--weight-scale", err, re.M)
    assert "Network.feedforward(" not in err
    assert "UserWarning" not in err and "run = simulate(" not in err


def test_negative_seeds_are_refused_in_the_api_too():
    with pytest.raises(ConfigError, match=r"seed=-1 must be an integer >= 0"):
        mimdsim.Network.feedforward([30, 20, 4], seed=-1)
    net = mimdsim.Network.feedforward([30, 20, 4])
    with pytest.raises(ConfigError, match=r"seed=-1 must be an integer >= 0"):
        mimdsim.simulate(net, "ipu-mk2", timesteps=3, batch_size=2, activity=0.1, seed=-1)


def test_file_values_outside_their_limits_name_file_line_and_key(tmp_path, capsys):
    exp = tmp_path / "e.toml"
    exp.write_text('[model]\nlayers = [300, 200, 10]\ntimesteps = 5\nbatch = 0\n[run]\nseed = -2\n')
    line = _one_line_error(["run", str(exp)], capsys)
    assert re.search(r"e.toml:4: model.batch = 0 must be an integer >= 1 \(a step trains at least one sample\)", line)


def test_a_checkpoint_from_another_T_is_explained_as_such(tmp_path, capsys):
    ck = str(tmp_path / "c.npz")
    assert main(TRAIN + ["--checkpoint", ck]) == 0
    argv = [a if a != "8" or TRAIN[i - 1] != "--timesteps" else "10" for i, a in enumerate(TRAIN)]
    line = _one_line_error(argv + ["--checkpoint", ck, "--resume", "--epochs", "2"], capsys)
    assert "T8" in line and "T10" in line and "timesteps" in line and "capacit" not in line.split("Resume")[0]


@pytest.mark.parametrize("argv", [
    ["simulate"],  # the README's main job: rate-driven and overflow notes
    ["simulate", "--layers", "20,10,10,10,4", "--timesteps", "2", "--batch", "2", "--execute"],  # late layers
    ["simulate", "--layers", "300,200,10", "--timesteps", "5", "--batch", "4", "--execute", "--input-activity",
     "0.001"],  # silent layers
    ["compare", "--layers", "300,200,10", "--timesteps", "5", "--batch", "4"],
    ["compare", "--workload", "kalman"],
], ids=lambda a: " ".join(a))
def test_notes_and_warnings_speak_the_command_line(argv, capsys):
    """Every note and warning a run prints names flags that exist, never a Python argument."""
    assert main(argv + ["--quiet"]) == 0
    captured = capsys.readouterr()
    lines = [l for l in (captured.out + captured.err).splitlines() if "note:" in l or "warning:" in l]
    for line in lines:
        assert_cli_words(line)


@pytest.mark.parametrize("command", ["simulate", "compare", "run", "sweep", "train", "chips", "gpus"])
def test_every_flag_a_help_names_is_one_of_its_command(command, capsys):
    """A command's --help suggests only its own flags (train's help spoke of a --model it lacks)."""
    from mimdsim.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(getattr(a, "choices", None), dict)).choices[command]
    own = {o for a in sub._actions for o in a.option_strings}
    named = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", sub.format_help()))
    assert named <= own, sorted(named - own)


def test_a_setting_that_changes_the_program_says_so(capsys):
    """fp16 runs the fused program (the published op is fp32 only): the headline names the setting that forced
    it and a note the settings that hold the program fixed; a program given explicitly says so."""
    assert main(SIM + ["--chip-precision", "fp16"]) == 0
    out = capsys.readouterr().out
    assert "program          fused, fp16 (forced by --chip-precision fp16: the published op is fp32 only)" in out
    assert "--schedule fused, --chip-precision fp32 holds the program fixed" in out
    assert main(SIM + ["--chip-precision", "fp16", "--schedule", "fused"]) == 0
    out = capsys.readouterr().out
    assert "program          fused, fp16 (asked with --schedule fused)\n" in out and "holds the program fixed" not in out


# ---------------------------------------------------------------------------------------------
# Issue 40: exit statuses. Bad input 2, an interrupt 130, a file the system refused 1 (named), an
# internal error 1: one line saying what failed and how to report it, its traceback only with
# MIMDSIM_DEBUG=1.
# ---------------------------------------------------------------------------------------------
def _failing_command(monkeypatch, error):
    from mimdsim.cli import commands

    def fail(args):
        raise error
    monkeypatch.setattr(commands, "cmd_chips", fail)


def test_an_internal_error_is_one_line_exit_1_with_its_traceback_on_request(monkeypatch, capsys):
    _failing_command(monkeypatch, KeyError("layer_sizes"))
    monkeypatch.delenv("MIMDSIM_DEBUG", raising=False)
    assert main(["chips"]) == 1
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert "KeyError: 'layer_sizes'" in lines[0] and "bug in mimdsim" in lines[0] and "MIMDSIM_DEBUG=1" in lines[0]
    monkeypatch.setenv("MIMDSIM_DEBUG", "1")
    assert main(["chips"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and err.strip().splitlines()[-1].startswith("mimdsim: internal error: KeyError")


def test_an_interrupt_exits_130_and_a_refused_file_exits_1_naming_it(monkeypatch, capsys):
    _failing_command(monkeypatch, KeyboardInterrupt())
    assert main(["chips"]) == 130
    err = capsys.readouterr().err
    assert "mimdsim: interrupted;" in err and "Traceback" not in err
    _failing_command(monkeypatch, OSError(28, "No space left on device", "/data/r.json"))
    assert main(["chips"]) == 1
    err = capsys.readouterr().err.strip()
    assert err == ("mimdsim: error: '/data/r.json': No space left on device; check the path, its permissions and "
                   "free disk space, then run again")


@pytest.mark.parametrize("argv,status", [(["simulate", "--batch", "0"], 2), (["chips"], 0), (["nonsense"], 2)])
def test_the_exit_status_reaches_the_shell(argv, status):
    """``python -m mimdsim`` passes main's status to the shell (bad input 2), stderr without a traceback."""
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-m", "mimdsim", *argv], capture_output=True, text=True, timeout=120)
    assert done.returncode == status and "Traceback" not in done.stderr, done.stderr


# Every output of every command is tried before any work: a path the system refuses (here a
# read-only or virtual file system, which a permission check passes for root) is one line naming the
# flag, and nothing runs, nothing is written.
READ_ONLY = "/proc/mimdsim-out"  # Linux: /proc takes no new files, for root too


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
@pytest.mark.parametrize("argv,flag", [
    (SIM + ["--json", READ_ONLY + ".json"], "--json"),
    (SIM + ["--json", "{d}/kept.json", "--plot", READ_ONLY + "/figs"], "--plot"),
    (CMP + ["--csv", READ_ONLY + ".csv"], "--csv"),
    (SIM + ["--trace", READ_ONLY + ".json"], "--trace"),
    (["run", "{d}/e.toml", "--json", READ_ONLY + ".json"], "--json"),
    (WL + ["--workload", "mlp", "--json", READ_ONLY + ".json"], "--json"),
    (["op", "matmul", "--m", "64", "--k", "64", "--n", "64", "--json", READ_ONLY + ".json"], "--json"),
    (["validate", "--json", READ_ONLY + ".json"], "--json"),
    (TRAIN + ["--json", READ_ONLY + ".json"], "--json"),
    (TRAIN + ["--checkpoint", READ_ONLY + ".npz"], "--checkpoint"),
    (["sweep", "{d}/ok.toml", "--plot", READ_ONLY], "--plot"),
    (["sweep", "{d}/ro_results.toml"], "sweep.results"),
])
def test_every_output_is_tried_before_any_work(argv, flag, files, capsys):
    (files / "ro_results.toml").write_text(EXPERIMENT + f'[sweep]\nresults = "{READ_ONLY}.jsonl"\n'
                                           '[sweep.axes]\n"chip.tiles" = [64, 128]\n')
    t0 = time.perf_counter()
    line = _one_line_error([a.replace("{d}", str(files)) for a in argv], capsys)
    assert f"{flag} '{READ_ONLY}" in line and "cannot be" in line and "choose another" in line, line
    assert time.perf_counter() - t0 < 10, "refused only after the work"
    assert not (files / "kept.json").exists() and not (files / "ro_results.jsonl").exists()


def test_the_write_check_changes_nothing(tmp_path):
    from mimdsim.report.outputs import check_file_path, check_folder_path, output

    existing = tmp_path / "r.json"
    existing.write_text("{}")
    before = existing.stat().st_mtime_ns
    check_file_path(existing, output("output.json"))
    check_file_path(tmp_path / "new.json", output("output.json"))
    check_folder_path(tmp_path / "figs" / "deep", output("output.plot"))
    assert existing.read_text() == "{}" and existing.stat().st_mtime_ns == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_write_that_fails_after_the_run_names_the_output_and_what_was_written(tmp_path, capsys):
    kept = str(tmp_path / "r.json")
    line = _one_line_error(SIM + ["--json", kept, "--csv", "/dev/full"], capsys)
    assert f"could not write --csv '/dev/full': No space left on device (found after the run; written before it: " \
           f"{kept!r})" in line and "free disk space" in line


# Integers are parsed with limits: every integer setting has a ceiling (its own, or INT_LIMIT), so a
# size too large for the arrays it sizes is refused as it is parsed, naming the value, the limit and
# the fix; the sizes below the ceiling are checked from the shapes before any array is allocated.
def test_every_integer_setting_has_a_ceiling():
    from mimdsim.config import INT_KINDS, INT_LIMIT, SETTINGS, bound_error, bounds

    for s in SETTINGS:
        if s.kind in INT_KINDS:
            assert bounds(s)[1] is not None, s.key
            too_big = INT_LIMIT + 1 if s.kind == "int" else [1, INT_LIMIT + 1]
            assert bound_error(s, too_big) is not None, s.key
            assert bound_error(s, 2 if s.kind == "int" else [2, 2]) is None, s.key


@pytest.mark.parametrize("argv,match", [
    (SIM + ["--seed", "100000000000000000000000"], r"--seed: 100000000000000000000000 must be an integer <= "
                                                   r"2,147,483,647 \(.*64-bit integer\); give a smaller value"),
    (SIM + ["--execute", "--seed", "99999999999"], r"--seed: 99999999999 must be an integer <= 2,147,483,647"),
    (SIM + ["--neurons-per-tile", "99999999999999999999"], r"--neurons-per-tile: 99999999999999999999 must be an "
                                                           r"integer <= 2,147,483,647"),
    (SIM[:1] + ["--layers", "300,99999999999999999999,10"], r"--layers: 99999999999999999999 must be an integer <= "),
    (TRAIN + ["--epochs", "1000000000000000000000"], r"--epochs: 1000000000000000000000 must be an integer <= "),
    (TRAIN + ["--chips", "100000000000000000000000"], r"--chips: 100000000000000000000000 must be an integer <= "),
    (TRAIN + ["--classes", "1000000000"], r"the Randman data set of 1,000,000,000 classes .* would take [\d,.]+ GiB "
                                          r"of this machine's memory; the limit is .*; lower --classes, "
                                          r"--samples-per-class, --inputs, --manifold-dim or --timesteps"),
    (TRAIN + ["--timesteps", "1000000000"], r"the Randman data set of .* x 1,000,000,000 steps"),
    (TRAIN + ["--manifold-dim", "1000000000"], r"manifold dimension 1000000000\) would take"),
    (TRAIN + ["--hidden", "1000000000,8"], r"the weights of 12-1000000000-8-3 \(float32, drawn in float64\) would "
                                           r"take .*make the layers narrower"),
    (WL + ["--workload", "kalman", "--planes", "1000000000"], r"--planes 1000000000: one track's hits alone take "
                                                              r"8,000,000,000 B .* give at most 79,872 planes"),
    (WL + ["--workload", "mlp", "--batches", "1000000000000"], r"--batches: 1000000000000 must be an integer <= "),
])
def test_sizes_too_large_for_their_arrays_are_refused_before_allocation(argv, match, capsys):
    tracemalloc.start()
    line = _one_line_error(argv, capsys)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert re.search(match, line), line
    assert peak < 200 * 2**20, f"{peak / 2**20:.0f} MiB allocated before refusing"


def test_a_billion_batches_of_a_static_program_cost_no_memory(capsys):
    tracemalloc.start()
    assert main(WL + ["--workload", "kalman", "--batches", "2000000000"]) == 0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 200 * 2**20, f"{peak / 2**20:.0f} MiB for a loop whose every iteration costs the same"


def test_a_seed_beyond_32_bits_runs_the_executed_program():
    net = mimdsim.Network.feedforward([20, 10, 4])
    x, y = _xy()
    big = mimdsim.simulate(net, "ipu-mk2", inputs=x, labels=y, seed=2**70)
    assert big.loss == mimdsim.simulate(net, "ipu-mk2", inputs=x, labels=y, seed=2**70 % 2**32).loss


# A placement pin that no placement meets: one line naming the pin, why, and the counts that place.
PIN = ["simulate", "--timesteps", "3", "--batch", "2", "--quiet"]


@pytest.mark.parametrize("argv,match", [
    (PIN + ["--layers", "100,300,300,10", "--neurons-per-tile", "8", "--chips-used", "1", "--chips", "4", "--tiles",
            "64"], r"--neurons-per-tile 8: layer 2 \(300 neurons\) needs 38 tiles, and the layers do not fit on 1 "
                   r"chip\(s\) of 64 tiles .*what places: 1 chip\(s\) at 10-300 neurons per tile; raise "
                   r"--neurons-per-tile to at least 10, or raise --chips-used"),
    (PIN + ["--layers", "100,300,300,10", "--neurons-per-tile", "2", "--chips", "4", "--tiles", "64"],
     r"layer 1 \(300 neurons\) needs 150 tiles.*what places: 1 chip\(s\) at 10-300 neurons per tile, 2 chip\(s\) at "
     r"5-9 neurons per tile; raise --neurons-per-tile to at least 5$"),
    (PIN + ["--layers", "100,300,300,10", "--neurons-per-tile", "8", "--chips-used", "3", "--chips", "4", "--tiles",
            "64"], r"--neurons-per-tile 8 places the layers on 2 chip\(s\), not --chips-used 3 .*none places them on 3 "
                   r"chip\(s\); what places: 1 chip\(s\) at 10-300 neurons per tile, 2 chip\(s\) at 5-9"),
    (PIN + ["--layers", "100,300,300,10", "--chips-used", "3", "--chips", "4", "--tiles", "64"],
     r"--chips-used 3: no neurons-per-tile count places the layers on exactly 3 chip\(s\).*what places: 1 chip\(s\) at "
     r"10-300 neurons per tile, 2 chip\(s\) at 5-9 neurons per tile; give one of those --chips-used or drop it"),
])
def test_a_pin_no_placement_meets_names_it_and_what_places(argv, match, capsys):
    line = _one_line_error(argv, capsys)
    assert re.search(match, line), line


def test_the_counts_that_place_on_each_chip_count_agree_with_trying_every_count():
    from mimdsim.workloads.snn.placement import counts_on_chips, placing_counts

    rng = np.random.default_rng(0)
    for _ in range(30):
        sizes = [int(v) for v in rng.integers(1, 400, rng.integers(1, 5))]
        tiles, chips, reserve = int(rng.integers(4, 200)), int(rng.integers(1, 5)), bool(rng.integers(2))
        for k in range(1, chips + 1):
            every = [n for n, _, _ in placing_counts(sizes, k, tiles, reserve, k)]
            span = counts_on_chips(sizes, k, tiles, reserve)
            assert (span is None and not every) or span == (min(every), max(every)) and \
                every == list(range(span[0], span[1] + 1)), (sizes, tiles, k, reserve, every, span)


# A named assumption from a file is refused in the file's terms (the entry as written, not --assume),
# a wrongly typed [assume] value is named as such (not "must be a table"), and a name given twice on
# the command line is refused (the later value silently won).
@pytest.mark.parametrize("argv,match", [
    (["run", "{d}/assume_text.toml"], r"assume_text.toml:7: \[assume\] surrogate_arithmetic_instructions = 'abc': not "
                                      r"a number; give instructions per listed id, e.g. "
                                      r"surrogate_arithmetic_instructions = \d+$"),
    (["run", "{d}/assume_list.toml"], r"assume_list.toml:7: \[assume\] surrogate_arithmetic_instructions = \[1\]: not a "
                                      r"number"),
    (["run", "{d}/assume_far.toml"], r"assume_far.toml:7: \[assume\] surrogate_arithmetic_instructions = "
                                     r"1000000000.0: outside 4-100000 .*give a value in that domain$"),
    (["sweep", "{d}/assume_axis.toml"], r"assume_axis.toml:8: axis 'assume.surrogate_arithmetic_instructions': value "
                                        r"'x': not a number; give instructions per listed id, e.g. \d+$"),
    (SIM + ["--assume", "surrogate_arithmetic_instructions=4", "--assume", "surrogate_arithmetic_instructions=5"],
     r"--assume surrogate_arithmetic_instructions is given twice \(--assume surrogate_arithmetic_instructions=4 and "
     r"--assume surrogate_arithmetic_instructions=5\); give it once"),
    (SIM + ["--set", "sram_per_tile=700000", "--set", "sram_per_tile=1248000"],
     r"--set sram_per_tile is given twice \(--set sram_per_tile=700000 and --set sram_per_tile=1248000\)"),
    (["run", "{d}/e.toml", "--set", "model.batch=2", "--set", "model.batch=3"], r"--set model.batch is given twice"),
    (["run", "{d}/e.toml", "--set", "sram_per_tile=700000", "--set", "sram_per_tile=800000"],
     r"--set sram_per_tile is given twice \(--set sram_per_tile=700000 and --set sram_per_tile=800000\)"),
])
def test_assumptions_from_files_and_names_given_twice(argv, match, files, capsys):
    for name, value in {"assume_text": '"abc"', "assume_list": "[1]", "assume_far": "1e9"}.items():
        (files / f"{name}.toml").write_text(EXPERIMENT + f"\n[assume]\nsurrogate_arithmetic_instructions = {value}\n")
    (files / "assume_axis.toml").write_text(EXPERIMENT + '[sweep]\nresults = "a.jsonl"\n[sweep.axes]\n'
                                            '"assume.surrogate_arithmetic_instructions" = ["x", 5]\n')
    line = _one_line_error([a.replace("{d}", str(files)) for a in argv], capsys)
    assert re.search(match, line), line


# Pinned constants that break a relation no single range states: an idle power above the maximum,
# pinned alone or with the maximum, is refused naming the one pinned, the bound and the fix.
@pytest.mark.parametrize("argv,match", [
    (CMP + ["--assume", "ipu-mk2.idle_w=140", "--assume", "ipu-mk2.max_w=60"],
     r"--assume ipu-mk2.idle_w=140 is above ipu-mk2.max_w \(60 W; a device draws at least its idle power at work\): "
     r"lower --assume ipu-mk2.idle_w or raise --assume ipu-mk2.max_w"),
    (CMP + ["--assume", "ipu-mk2.max_w=30"], r"--assume ipu-mk2.max_w=30 is below ipu-mk2.idle_w \(\d+ W; .*\): raise "
                                             r"--assume ipu-mk2.max_w or lower --assume ipu-mk2.idle_w"),
    (CMP + ["--assume", "a100-40gb.idle_w=500"], r"--assume a100-40gb.idle_w=500 is above a100-40gb.max_w \(400 W"),
])
def test_an_idle_power_above_the_maximum_is_refused(argv, match, capsys):
    line = _one_line_error(argv, capsys)
    assert re.search(match, line), line


def test_no_idle_range_reaches_its_maximum():
    """The band moves every assumption over its range unchecked: no corner may break a relation."""
    import mimdsim.energy.constants as constants
    from mimdsim import assumptions as A

    assert len(A.AT_MOST) >= 10
    for name, bound, bound_value, _ in A.AT_MOST:
        top = A.REGISTRY[name].high if name in A.REGISTRY else constants.CONSTANTS[name].value
        assert top <= (A.REGISTRY[bound].low if bound in A.REGISTRY else bound_value), name


# A damaged results file keeps every good record and reports each damaged line; a damaged lock is
# named with its fix. Neither blocks a re-run (a JSON line that was no record raised AttributeError).
def test_a_damaged_results_file_or_lock_does_not_block_a_rerun(tmp_path, capsys):
    sweep = tmp_path / "d.toml"
    sweep.write_text('[model]\nlayers = [30, 20, 10]\ntimesteps = 3\nbatch = 2\n[sweep]\nresults = "d.jsonl"\n'
                     '[sweep.axes]\n"chip.tiles" = [64, 128, 256]\n')
    argv = ["sweep", str(sweep), "--serial", "--quiet"]
    assert main(argv) == 0
    results = tmp_path / "d.jsonl"
    good = results.read_text().splitlines()
    results.write_text("\n".join([good[0], '{"id": "torn', good[2], "[1]", '"text"']) + "\n")
    capsys.readouterr()
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "computed 1 new point(s); 3 point(s)" in out
    assert "3 damaged line(s) in" in out and "line 2 (not JSON), 4 (JSON but not a record" in out and ", 5 (" in out
    from mimdsim.sweep import load_results
    assert [r["params"]["chip.tiles"] for r in load_results(results)] == [64, 256, 128]
    (tmp_path / "d.jsonl.lock").unlink()
    (tmp_path / "d.jsonl.lock").mkdir()
    sweep.write_text(sweep.read_text().replace("256]", "256, 512]"))
    line = _one_line_error(argv, capsys)
    assert f"the sweep's lock file '{results}.lock' cannot be opened (Is a directory)" in line and \
        "when no other sweep runs, remove it and run again" in line


# `op`: integer shape flags have the same ceiling, and a matmul or elementwise op whose tensors alone
# exceed the SRAM of its tiles is refused from the shape before any plan is searched (a 2e9-row
# matmul searched for a minute, then ran out of memory; a barrier over 2e9 chips asked for 21 TiB).
@pytest.mark.parametrize("argv,match", [
    (["op", "matmul", "--m", "100000000000", "--k", "64", "--n", "64"], r"--m: 100000000000 must be an integer <= "
                                                                       r"2,147,483,647"),
    (["op", "matmul", "--m", "2000000000", "--k", "64", "--n", "64"],
     r"matmul \[2000000000 x 64\] . \[64 x 64\] \(fp16\): its operands and result alone take 512,000,008,192 B, more "
     r"than the 1,472 tiles' 940,572,672 B of SRAM on ipu-mk2 \(638,976 B each\); lower --m, --k or --n"),
    (["op", "elementwise", "--elements", "2000000000"], r"elementwise over 2,000,000,000 float elements: the tensor "
                                                        r"alone takes 8,000,000,000 B, .*; lower --elements"),
    (["op", "sync", "--chips", "2000000000", "--scope", "global"], r"the per-tile arrays of 2,000,000,000 chip\(s\) x "
                                                                   r"1,472 tiles would take .*; lower --chips"),
])
def test_op_shapes_beyond_the_chip_are_refused_from_the_shape(argv, match, capsys):
    tracemalloc.start()
    t0 = time.perf_counter()
    line = _one_line_error(argv, capsys)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert re.search(match, line), line
    assert peak < 200 * 2**20 and time.perf_counter() - t0 < 10


# A --gpu-trace file runs in a child process with a time limit: its exceptions are one line with the user's
# file and line, a file that ends its process is named as such, a step that never returns is stopped (it hung
# silently), and the sizes it declares are checked like flags.
TRACE_FILES = {
    "raises.py": ("import torch\n\ndef step():\n    x = torch.ones(3)\n    return x / undefined_name\n",
                  r"--gpu-trace '?.*raises.py'?, line 5: tracing step\(\) raised NameError: name 'undefined_name' is "
                  r"not defined"),
    "top.py": ("x = 1\ny = [x][3]\n\ndef step():\n    pass\n",
               r"--gpu-trace '?.*top.py'?, line 2: running the file raised IndexError: list index out of range"),
    "exits.py": ("import sys\nsys.exit(3)\n", r"exits.py'?, line 2: the file called sys.exit\(3\) while running the "
                                              r"file; a step file must not end its process"),
    "osexit.py": ("import os\n\ndef step():\n    os._exit(4)\n",
                  r"osexit.py'?: the process running the file ended with exit status 4 while running step\(\) once "
                  r"untraced, then once traced, before its step was traced; a step file must not end its process"),
    "hangs.py": ("import time\n\ndef step():\n    while True:\n        time.sleep(0.1)\n",
                 r"hangs.py'?: the traced step did not finish in 3 s \(it was running step\(\) once untraced, then "
                 r"once traced\) and was stopped; .* or allow it more time with --gpu-trace-timeout 6"),
    "sizes.py": ("BATCH_SIZE = 10**12\n\ndef step():\n    pass\n",
                 r"sizes.py'? sets BATCH_SIZE = 1000000000000: the samples of a step must be a whole number between 1 "
                 r"and 2,147,483,647"),
}


@pytest.mark.parametrize("name", list(TRACE_FILES))
def test_a_gpu_trace_file_that_fails_exits_or_hangs_is_one_line(name, tmp_path, capsys):
    pytest.importorskip("torch")
    text, match = TRACE_FILES[name]
    (tmp_path / name).write_text(text)
    t0 = time.perf_counter()
    line = _one_line_error(["compare", "--layers", "20,10,4", "--timesteps", "3", "--batch", "2", "--strategy",
                            "fused", "--quiet", "--gpu-trace", str(tmp_path / name), "--gpu-trace-timeout",
                            "3" if name == "hangs.py" else "120"], capsys)  # a file's torch import takes seconds
    assert re.search(match, line), line
    assert time.perf_counter() - t0 < 90


@pytest.mark.parametrize("argv,match", [
    (["--gpu-trace-timeout", "5"], r"--gpu-trace-timeout 5.0 limits the time of the --gpu-trace step, and no "
                                   r"--gpu-trace FILE.py is given: add one, or drop --gpu-trace-timeout"),
    (["--gpu-trace", "examples/custom_lif_step.py", "--gpu-trace-timeout", "0"],
     r"--gpu-trace-timeout 0(\.0)? must be a positive finite number of seconds"),
])
def test_the_gpu_trace_timeout_is_checked(argv, match, capsys):
    line = _one_line_error(["compare", "--layers", "20,10,4", "--timesteps", "3", "--batch", "2", "--quiet", *argv],
                           capsys)
    assert re.search(match, line), line


def test_a_gpu_trace_says_what_it_is_doing():
    """The child's stages reach note(): a long trace is never silent."""
    pytest.importorskip("torch")
    from mimdsim.gpu.trace_file import trace_file

    heard = []
    tr = trace_file("examples/custom_lif_step.py", note=heard.append)
    assert tr.batch_size == 48 and len(tr) > 0
    stages = [h.split(": ", 1)[1] for h in heard if "still running" not in h]  # a loaded machine adds those
    assert stages == ["starting", "running the file", "running step() once untraced, then once traced"]


# `run FILE --set assume.NAME=VALUE` pins a named assumption as the file's [assume] table does (run has no
# --assume flag); a bad name or value is refused in --set's terms.
def test_run_set_pins_a_named_assumption(tmp_path, capsys):
    import json

    exp = tmp_path / "e.toml"
    exp.write_text('[model]\nlayers = [40, 20, 10]\ntimesteps = 3\nbatch = 2\n[assume]\n"ipu-mk2.max_w" = 280\n')
    out = tmp_path / "r.json"
    assert main(["run", str(exp), "--set", "assume.ipu-mk2.idle_w=50", "--json", str(out), "--quiet"]) == 0
    report = json.loads(out.read_text())
    assert report["energy"]["power_limits_w"] == {"idle": 50.0, "max": 280.0}
    assert "ipu-mk2.idle_w" not in {d["name"] for d in report["energy"]["band"]["drivers"]}
    for pin, match in [("assume.no_such_thing=3", r"argument --set: assume.no_such_thing: no assumption of that name"),
                       ("assume.surrogate_arithmetic_instructions=1e9",
                        r"argument --set: assume.surrogate_arithmetic_instructions=1e9: outside 4-100000")]:
        line = _one_line_error(["run", str(exp), "--set", pin, "--quiet"], capsys)
        assert re.search(match, line), line


# ---------------------------------------------------------------------------------------------
# Issue 39: what-ifs that mean what they say, and a flag or preset name given in another command's or
# vendor's words.
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("field", ["load_bytes", "sram_bank_bytes"])
def test_a_chip_field_no_cost_reads_is_refused(field, capsys):
    assert main(SIM + ["--set", f"{field}=32"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"--set {field}=32: no cost reads the chip field {field}" in err
    assert "drop it" in err


def test_the_refused_chip_fields_indeed_move_no_figure():
    """Each field the settings refuse as unread leaves the whole report unchanged (so refusing loses nothing)."""
    from mimdsim.arch.chip import UNREAD_FIELDS
    base = mimdsim.chip("ipu-mk2", tiles=32)
    for net, precision in [(mimdsim.Network.feedforward([60, 40, 10]), "fp32"),  # the published op
                           (mimdsim.Network.build([60, 40, 10], "leaky", beta=0.9, bias=True), "fp16")]:  # poptorch
        run = dict(timesteps=4, batch_size=2, band=False, precision=precision)
        ref = mimdsim.simulate(net, base, **run).report.to_dict()
        for field in UNREAD_FIELDS:
            moved = base.replace(**{field: 2 * getattr(base, field)})
            assert mimdsim.simulate(net, moved, **run).report.to_dict() == ref, field


def test_more_workers_are_explained_in_the_report(capsys):
    assert main(SIM + ["--set", "workers=12"]) == 0
    out = capsys.readouterr().out
    assert "note: workers = 12 (ipu-mk2: 6): a tile issues one instruction per cycle" in out
    assert main(SIM) == 0 and "workers =" not in capsys.readouterr().out


@pytest.mark.parametrize("argv,owner", [(["simulate", "--gpu", "a100-40gb"], "`mimdsim compare`"),
                                        (["compare", "--epochs", "2"], "`mimdsim train`")])
def test_a_flag_of_another_subcommand_names_that_subcommand(argv, owner, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    flag = argv[1]
    assert err.count("\n") == 0 and f"{flag} is a flag of {owner}" in err
    assert f"not of `mimdsim {argv[0]}`: run `mimdsim {owner[9:-1]} ... {flag} ...`" in err


def test_a_processor_name_suggests_its_preset(capsys):
    assert main(["simulate", "--chip", "gc200"]) == 2
    err = capsys.readouterr().err
    assert "unknown chip 'gc200'" in err and "gc200 is the processor of preset 'ipu-mk2': give 'ipu-mk2'" in err
    with pytest.raises(ConfigError, match="GC2 is the processor of preset 'ipu-mk1'"):
        mimdsim.chip("GC2")


def test_out_of_memory_lists_every_program_that_fits(capsys):
    """PopTorch's program (an snnTorch model's default) does not fit 6 tiles; the fused one does: said."""
    net = mimdsim.Network.build([200, 100, 10], "leaky", beta=0.9, bias=True)
    with pytest.raises(OutOfTileMemory, match=r"That is the poptorch program; the other programs that fit: "
                                               r"schedule='fused'"):
        mimdsim.simulate(net, mimdsim.chip("ipu-mk2", tiles=6), timesteps=20, batch_size=32, band=False)
    with pytest.raises(OutOfTileMemory, match="That is the fused program; no other program of this network fits"):
        mimdsim.simulate(net, mimdsim.chip("ipu-mk2", tiles=4), timesteps=20, batch_size=32, band=False,
                         schedule="fused")
    assert main(["simulate", "--layers", "200,100,10", "--neuron", "leaky", "--timesteps", "20", "--batch", "32",
                 "--tiles", "6", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.endswith("That is the poptorch program; the other programs that fit: "
                                                  "--schedule fused")
