"""Every command in the user guide runs as written (a new user's path through the docs)."""
import os
import re
import shutil
import subprocess

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


@pytest.mark.parametrize("cmd", guide_commands())
def test_guide_command_runs_as_written(cmd, tmp_path):
    if shutil.which("mimdsim") is None:
        pytest.skip("the mimdsim command is installed by `pip install .` (the README's first command)")
    shutil.copytree(os.path.join(ROOT, "examples"), tmp_path / "examples")
    out = subprocess.run(cmd, shell=True, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, f"{cmd}\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}"
    assert out.stdout.strip()
