"""Experiment files: every flag has its key, errors name file/line/key, examples run."""
import glob
import os

import pytest

from mimdsim.cli import build_parser, main
from mimdsim.errors import ConfigError
from mimdsim.cli.execute import execute
from mimdsim.config import key_lines, load_experiment
from mimdsim.config import SETTINGS

HERE = os.path.dirname(__file__)
EXAMPLES = sorted(glob.glob(os.path.join(HERE, "..", "examples", "*.toml")))


def _write(tmp_path, text, name="exp.toml"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_every_cli_flag_has_a_toml_key_and_back():
    parser = build_parser()
    for command in ("simulate", "compare", "train"):
        sub = {a.dest: a for a in parser._subparsers._group_actions[0].choices[command]._actions}
        dests = {s.dest for s in SETTINGS if command in s.commands}
        flags = {d for d in sub if d not in ("help",)}
        assert flags == dests, (command, flags ^ dests)


def test_train_only_flags_are_not_file_keys(tmp_path):
    with pytest.raises(ConfigError, match=r"exp.toml:2: unknown key 'train.epochs'"):
        load_experiment(_write(tmp_path, '[train]\nepochs = 3\n'))
    assert "model.timesteps" in load_experiment(_write(tmp_path, '[model]\ntimesteps = 3\n', "ok.toml"))[0]


def test_minimal_file_uses_defaults_and_runs(tmp_path, capsys):
    path = _write(tmp_path, '[model]\nlayers = [200, 100, 10]\ntimesteps = 10\nbatch = 8\n'
                            '[output]\njson = "out.json"\nquiet = true\n')
    values, command = load_experiment(path)
    assert command == "simulate" and values["model.layers"] == [200, 100, 10]
    assert values["chip.preset"] == "ipu-mk2" and values["output.json"] == str(tmp_path / "out.json")
    assert main(["run", path]) == 0
    assert (tmp_path / "out.json").exists()
    assert "200-100-10 on ipu-mk2" in capsys.readouterr().out


def test_gpu_table_makes_a_comparison(tmp_path):
    path = _write(tmp_path, '[model]\nlayers = [200, 100, 10]\ntimesteps = 5\nbatch = 4\n[gpu]\npreset = "h100"\n'
                            'strategies = ["fused"]\n[output]\nquiet = true\n')
    values, command = load_experiment(path)
    assert command == "compare"
    result = execute(values, command, out=lambda *_: None)
    assert set(result.gpu) == {"fused"} and result.gpu["fused"].architecture == "h100"


@pytest.mark.parametrize("text,match", [
    ('[model]\nlayer = [1, 2]\n', r"exp.toml:2: unknown key 'model.layer'. Did you mean 'model.layers'\?"),
    ('[model]\ntimesteps = 10\n\n[run]\nseeds = 3\n', r"exp.toml:5: unknown key 'run.seeds'. Did you mean 'run.seed'\?"),
    ('[model]\ntimesteps = "ten"\n', r"exp.toml:2: model.timesteps must be an integer, got 'ten'"),
    ('[model]\nlayers = [2312, 10.5]\n', r"exp.toml:2: model.layers must be a list of integers"),
    ('[model]\noverflow = "lowest"\n', r"exp.toml:2: model.overflow='lowest' is not one of .* Did you mean 'lowest-index'\?"),
    ('[gpu]\nstrategies = ["fusd"]\n', r"exp.toml:2: gpu.strategies='fusd' is not one of .* Did you mean 'fused'\?"),
    ('[chip]\nset.tiles = "many"\n', r"exp.toml:2: chip.set must be a table of field = value"),
    ('[model\nlayers = 3\n', r"exp.toml: not valid TOML"),
])
def test_bad_files_name_file_line_and_key(tmp_path, text, match):
    with pytest.raises(ConfigError, match=match):
        load_experiment(_write(tmp_path, text))


def test_missing_file_and_preset_typos(tmp_path, capsys):
    with pytest.raises(ConfigError, match="experiment file 'nope.toml' does not exist"):
        load_experiment("nope.toml")
    path = _write(tmp_path, '[model]\ntimesteps = 5\nbatch = 4\n[chip]\npreset = "ipu-mk3"\n[output]\nquiet = true\n')
    assert main(["run", path]) == 2
    err = capsys.readouterr().err
    assert "exp.toml:5: unknown chip 'ipu-mk3'" in err and "Did you mean 'ipu-mk2'" in err
    assert len(err.strip().splitlines()) == 1
    path = _write(tmp_path, '[model]\ntimesteps = 5\n[gpu]\npreset = "a10"\n', "g.toml")
    assert main(["run", path]) == 2
    assert "g.toml:4: unknown GPU 'a10'" in capsys.readouterr().err
    path = _write(tmp_path, '[chip.set]\nsram_per_tyle = 5\n', "s.toml")
    assert main(["run", path]) == 2
    err = capsys.readouterr().err
    assert "s.toml:2: unknown chip field(s) ['sram_per_tyle']; valid fields: " in err
    assert "Did you mean 'sram_per_tyle' -> 'sram_per_tile'?" in err


def test_key_lines_handles_tables_and_dotted_keys():
    text = '# c\n[model]\nlayers = [1, 2]\n\n[chip]\npreset = "x"\nset.tiles = 4\n[chip.set]\nclock_hz = 1\n'
    lines = key_lines(text)
    assert lines["model.layers"] == 3 and lines["chip.preset"] == 6
    assert lines["chip.set.tiles"] == 7 and lines["chip.set.clock_hz"] == 9 and lines["chip.set"] == 8


@pytest.mark.parametrize("path", EXAMPLES, ids=os.path.basename)
def test_example_experiment_files_load(path):
    if "[sweep]" in open(path).read():
        from mimdsim.sweep import load_sweep
        sw = load_sweep(path)
        assert sw.points and sw.base["model.layers"][0] > 0
        with pytest.raises(ConfigError, match="run it with `mimdsim sweep"):
            load_experiment(path)
        return
    values, command = load_experiment(path)
    assert values["model.layers"][0] > 0 and command in ("simulate", "compare")


def test_reference_doc_lists_every_setting():
    from mimdsim.config import reference_markdown
    doc = open(os.path.join(HERE, "..", "docs", "reference.md")).read()
    assert reference_markdown() in doc, "docs/reference.md is stale: regenerate with python -m mimdsim.config --write"
