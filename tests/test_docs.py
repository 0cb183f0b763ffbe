"""Every command in the user guide runs as written (a new user's path through the docs)."""
import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..")
GUIDE = os.path.join(ROOT, "docs", "user-guide.md")


def guide_commands():
    text = open(GUIDE).read()
    cmds = []
    for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            line = line.split("  #")[0].strip()
            for part in line.split("&&"):
                part = part.strip()
                # installing and the test suite itself are what CI does before running this
                if part and not part.startswith("pip install") and part != "python -m pytest":
                    cmds.append(part)
    return cmds


def test_guide_has_commands():
    cmds = guide_commands()
    assert any(c == "mimdsim simulate" for c in cmds) and any(c.startswith("mimdsim run") for c in cmds)


def command_env() -> dict:
    """The environment a user's shell would have after `pip install .`: the mimdsim command on PATH.
    A virtual environment used without activating it still has the command beside its interpreter,
    so the installed command is tested there too, never skipped."""
    env = dict(os.environ)
    if shutil.which("mimdsim") is None:
        beside = os.path.dirname(sys.executable)
        assert os.path.exists(os.path.join(beside, "mimdsim")), (
            f"the mimdsim command is neither on PATH nor beside {sys.executable}: install the package with "
            f"`pip install .` (the README's first command)")
        env["PATH"] = beside + os.pathsep + env.get("PATH", "")
    return env


def test_the_command_is_found_beside_an_unactivated_interpreter(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    assert shutil.which("mimdsim", path=command_env()["PATH"]) is not None


@pytest.mark.parametrize("cmd", guide_commands())
def test_guide_command_runs_as_written(cmd, tmp_path):
    shutil.copytree(os.path.join(ROOT, "examples"), tmp_path / "examples")
    out = subprocess.run(cmd, shell=True, cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env=command_env())
    assert out.returncode == 0, f"{cmd}\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}"
    assert out.stdout.strip()
