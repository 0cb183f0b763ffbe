"""A workload is a folder: each declares itself in ``mimdsim/workloads/<name>/workload.py`` and the
registry (``mimdsim/workloads/registry.py``) lists it once; the settings table, the command line's
``--workload``, the front door's dispatch and validation all read the declarations."""
import ast
import pathlib

import pytest

from mimdsim import config
from mimdsim.cli import main
from mimdsim.cli.parser import build_parser
from mimdsim.setting import Rows
from mimdsim.validation import SOURCES, DATA, run_source
from mimdsim.workloads.declaration import resolve
from mimdsim.workloads.registry import REGISTERED, WORKLOADS, validation_sources

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_each_registered_workload_is_the_folder_of_its_name():
    assert list(WORKLOADS) == list(REGISTERED)
    for name, w in WORKLOADS.items():
        assert w.name == name
        assert (ROOT / "mimdsim" / "workloads" / name / "workload.py").is_file()


def test_the_settings_table_is_the_core_rows_and_each_workloads_own():
    owned = [s.key for w in WORKLOADS.values() for s in w.rows]
    assert len(owned) == len(set(owned)), "a row declared by two workloads"
    assert not set(owned) & {s.key for s in config.CORE}, "a workload's row is also a core row"
    assert sorted(s.key for s in config.SETTINGS) == sorted([s.key for s in config.CORE] + owned)
    for w in WORKLOADS.values():
        assert set(w.bounds) <= {s.key for s in w.rows}, f"{w.name}: limits of rows it does not own"
        assert all(config.BOUNDS[k] == v for k, v in w.bounds.items())


@pytest.mark.parametrize("name", REGISTERED)
def test_a_workloads_rows_are_its_own(name):
    """The SNN step's rows are the network (model.*) and the run (run.*); another workload's are
    workload.* rows of compare only, whose help names the workload."""
    w = WORKLOADS[name]
    for s in w.rows:
        if name == "snn":
            assert s.key.startswith(("model.", "run.")), s.key
        else:
            assert s.key.startswith("workload.") and s.commands == ("compare",), s.key
            assert s.help.startswith(f"{name}: "), s.help


def test_each_group_of_rows_stands_next_to_a_core_row():
    core = {s.key for s in config.CORE}
    for w in WORKLOADS.values():
        for g in w.settings:
            assert not (g.after and g.before) and (g.after or g.before or "") in core | {""}
    with pytest.raises(ValueError, match="no row of the core table"):
        config.assemble(config.CORE, [Rows(WORKLOADS["mlp"].rows, after="workload.planes")])  # a Kalman row


def test_the_workload_choices_and_help_come_from_the_registry():
    row = config.BY_KEY["workload.name"]
    assert row.choices == tuple(REGISTERED) and row.default in WORKLOADS
    assert all(w.description in row.help for w in WORKLOADS.values())
    for name in REGISTERED:  # the command line takes every registered name, and no other
        assert build_parser().parse_args(["compare", "--workload", name]).workload_name == name
    with pytest.raises(SystemExit):
        build_parser().parse_args(["compare", "--workload", "unregistered"])


@pytest.mark.parametrize("name", REGISTERED)
def test_every_entry_point_resolves(name):
    w = WORKLOADS[name]
    for what in ("build", "run", "compare"):
        assert callable(w.entry(what)), f"{name}.{what} = {getattr(w, what)!r}"
    for key in w.reads:
        assert key in config.BY_KEY or any(k.startswith(key) for k in config.BY_KEY), key
    assert set(w.hints) <= set(config.BY_KEY) and set(w.outputs) <= set(config.BY_KEY)


def test_the_declarations_import_nothing_that_runs():
    """A declaration is data: it imports the settings row and the declaration's types only (the
    configuration, which sits low, reads it)."""
    for name in REGISTERED:
        path = ROOT / "mimdsim" / "workloads" / name / "workload.py"
        imported = {node.module for node in ast.walk(ast.parse(path.read_text()))
                    if isinstance(node, ast.ImportFrom)} | {a.name for node in ast.walk(ast.parse(path.read_text()))
                                                          if isinstance(node, ast.Import) for a in node.names}
        assert imported <= {"__future__", "setting", "declaration"}, (name, imported)


def test_each_validation_source_is_found_through_the_registry():
    declared = [s.name for w in WORKLOADS.values() for s in w.validation]
    assert sorted(declared) == sorted(SOURCES) == sorted(p.stem.replace("_", "-") for p in DATA.glob("*.json"))
    assert SOURCES == validation_sources()
    measures = [SOURCES[n].measures for n in SOURCES]
    assert measures == sorted(measures, key=("chip", "cpu", "gpu").index)  # chip first, then CPU, then GPU
    for source in SOURCES.values():
        assert callable(resolve(source.runner)), source


def test_a_source_runs_through_its_declared_runner():
    result = run_source("trackr-cpu")
    assert result.source == "trackr-cpu" and result.points and all(p.ratio > 0 for p in result.points)


def test_the_front_door_refuses_another_workloads_setting_naming_the_workload(capsys):
    assert main(["compare", "--workload", "mlp", "--planes", "3", "--quiet"]) != 0
    assert "--workload mlp does not use --planes (TOML: workload.planes)" in capsys.readouterr().err
    assert main(["compare", "--workload", "mlp", "--chip-precision", "fp16", "--quiet"]) != 0
    assert WORKLOADS["mlp"].hints["run.precision"] in capsys.readouterr().err
