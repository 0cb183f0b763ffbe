"""A newcomer's first hour: every command and Python snippet of the README and the user guide
runs as written, and every execution-driven run among them is alive — every spiking layer
spikes and the gradients are not all zero.

Shell commands run in-process through ``mimdsim.cli.main`` (what ``python -m mimdsim`` runs),
in a scratch folder holding a copy of ``examples/``; installing and the test suite itself are
left out. The Python snippets of one document run in order in one namespace, as a reader
would paste them into one session. A silent layer or an all-zero gradient in any run fails
the test: ``simulate`` warns about both, naming the layer, and the snippets' runs are
checked layer by layer.
"""
import os
import re
import shlex
import shutil
import warnings

import numpy as np
import pytest

import mimdsim
from mimdsim.cli import main

ROOT = os.path.join(os.path.dirname(__file__), "..")
DOCS = ("README.md", os.path.join("docs", "user-guide.md"))
DEAD = ("never spiked", "every weight gradient is zero")
SLOW = ()  # commands that take minutes on 2 cores (none now): marked slow


def _blocks(doc, lang):
    return re.findall(rf"```{lang}\n(.*?)```", open(os.path.join(ROOT, doc)).read(), flags=re.S)


def shell_commands():
    cmds = []
    for doc in DOCS:
        for block in _blocks(doc, "sh"):
            for line in block.splitlines():
                line = line.split("  #")[0].strip()
                for part in line.split("&&"):
                    part = part.strip()
                    if part and not part.startswith("pip install") and part != "python -m pytest":
                        marks = [pytest.mark.slow] if any(s in part for s in SLOW) else []
                        cmds.append(pytest.param(doc, part, marks=marks, id=f"{os.path.basename(doc)}: {part}"))
    return cmds


def test_the_docs_have_commands_and_snippets():
    cmds = [p.values[1] for p in shell_commands()]
    assert "mimdsim simulate" in cmds and any("--execute" in c for c in cmds)
    assert all(_blocks(doc, "python") for doc in DOCS)


def _dead(caught):
    return [str(w.message) for w in caught if any(d in str(w.message) for d in DEAD)]


@pytest.mark.parametrize("doc, cmd", shell_commands())
def test_doc_command_runs_alive(doc, cmd, tmp_path, monkeypatch, capsys):
    argv = shlex.split(cmd)
    assert argv[0] == "mimdsim", f"{doc}: {cmd!r} is not a mimdsim command"
    shutil.copytree(os.path.join(ROOT, "examples"), tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            rc = main(argv[1:])
        except SystemExit as e:  # --help
            rc = e.code
    out = capsys.readouterr()
    assert rc in (0, None), f"{cmd}\n{out.out[-2000:]}\n{out.err[-2000:]}"
    assert out.out.strip()
    assert not _dead(caught), f"{cmd}: {_dead(caught)}"
    if cmd == "mimdsim simulate":  # the README's main job: no warning on its very first run
        assert not caught and "warning" not in out.err, (out.err, [str(w.message) for w in caught])
        assert "overflowed" not in out.out or "raise --max-activity" in out.out  # a drop says how many, and the flag
    if argv[1] == "sweep":  # no point may fail
        from mimdsim.sweep import load_results, load_sweep
        failed = [r for r in load_results(load_sweep(argv[2]).results) if r.get("error")]
        assert not failed, f"{cmd}: {len(failed)} points in error, e.g. {failed[0]['error']}"


@pytest.mark.parametrize("doc", DOCS)
def test_doc_snippets_run_alive(doc, monkeypatch, capsys, tmp_path):
    runs = []
    real = mimdsim.simulate

    def recording(net, *a, **kw):
        run = real(net, *a, **kw)
        runs.append((net, kw, run))
        return run
    monkeypatch.setattr(mimdsim, "simulate", recording)
    monkeypatch.chdir(tmp_path)
    namespace = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for code in _blocks(doc, "python"):
            exec(compile(code, doc, "exec"), namespace)
    assert not _dead(caught), f"{doc}: {_dead(caught)}"
    executed = [(net, kw, run) for net, kw, run in runs if kw.get("inputs") is not None]
    assert executed, f"{doc} has no execution-driven run"
    for net, kw, run in executed:
        for ly in run.report.layers[1:]:
            if net.specs[ly["layer"] - 1].spiking:
                assert ly["spikes"] > 0, f"{doc}: layer {ly['layer']} of {net.describe()} never spiked"
        if kw.get("training", True):
            for l, g in enumerate(run.grads):
                assert np.any(g != 0), f"{doc}: every gradient of layer {l + 1} of {net.describe()} is zero"


EXAMPLE_FILES = sorted(f for f in os.listdir(os.path.join(ROOT, "examples")) if f.endswith(".toml"))


@pytest.mark.parametrize("name", EXAMPLE_FILES)
def test_every_example_file_runs_clean(name, tmp_path, monkeypatch, capsys):
    """Every shipped experiment and sweep file runs with no error point, and every layer of its
    run spikes or the report says why not (a layer that no input reaches within T)."""
    from mimdsim.cli.execute import execute
    from mimdsim.config import load_experiment

    shutil.copytree(os.path.join(ROOT, "examples"), tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    path = os.path.join("examples", name)
    if "[sweep]" in open(path).read():
        from mimdsim.sweep import load_results, load_sweep
        assert main(["sweep", path, "--serial", "--quiet"]) == 0
        failed = [r for r in load_results(load_sweep(path).results) if r.get("error")]
        assert not failed, f"{name}: {len(failed)} points in error, e.g. {failed[0]['error']}"
        return
    values, command = load_experiment(path)
    for key in ("output.plot", "output.json", "output.csv", "output.trace"):
        values[key] = None
    values["output.quiet"] = True
    result = execute(values, command, out=lambda *a: None)
    run = getattr(result, "run", result)
    m = re.search(r"layer\(s\) ([\d, ]+) receive no input within", " ".join(run.report.notes))
    unreachable = {int(v) for v in m.group(1).split(",")} if m else set()
    for ly in run.report.layers[1:]:
        assert ly["spikes"] > 0 or ly["layer"] in unreachable, f"{name}: layer {ly['layer']} is silent, no note says why"
