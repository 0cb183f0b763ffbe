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


def _outputs():
    sys.path.insert(0, os.path.join(ROOT, "docs"))
    import generate_outputs
    return generate_outputs


@pytest.mark.parametrize("page", ["README.md", "docs/user-guide.md", "docs/gpu-model.md", "docs/cost-model.md",
                                  "docs/tensix.md"])
def test_every_command_output_shown_is_what_the_command_prints(page):
    """docs/generate_outputs.py writes each marked output block; regenerated now, none may differ."""
    gen = _outputs()
    assert page in gen.PAGES
    stale = gen.regenerate(page, check=True)
    assert not stale, f"{page}: run `python docs/generate_outputs.py`; these outputs drifted: {stale}"


def test_the_docs_have_output_blocks_and_cite_no_file_outside_the_repository():
    gen = _outputs()
    assert sum(len(list(gen.blocks(open(os.path.join(ROOT, p)).read()))) for p in gen.PAGES) >= 4
    pages = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(ROOT, "docs")) for f in fs if f.endswith(".md")]
    for path in pages + [os.path.join(ROOT, "README.md")]:
        cited = re.findall(r"(?<![\w/.])reference/[\w./-]+", open(path).read())
        assert not cited, f"{path} cites {cited}: the shared reference/ folder is not part of the repository"


def test_every_quoted_section_of_a_doc_exists():
    """A reference such as ``docs/validation.md, "Hosts of the GPU rows"`` names a heading (or a bold paragraph
    lead) the page has: a renamed section otherwise leaves its readers pointing nowhere (the path test cannot
    see it). The history page quotes sections as they were named then, and is not checked."""
    import pathlib
    import re

    root = pathlib.Path(__file__).resolve().parents[1]
    quoted = re.compile(r'(docs/[\w\-./]+\.md)`?`?,? ["“]([^"”]{3,80})["”]')

    def norm(s):
        return re.sub(r"\s+", " ", re.sub(r"[`*]|\n\s*#\s*", " ", s)).strip().lower()

    sections, missing = {}, []
    files = [*root.glob("docs/**/*.md"), *root.glob("mimdsim/**/*.py"), *root.glob("tests/*.py"),
             *root.glob("examples/*"), root / "README.md"]
    for f in files:
        if not f.is_file() or f.name == "validation-history.md":
            continue
        for m in quoted.finditer(f.read_text(errors="ignore")):
            page = root / m.group(1)
            if not page.exists():
                continue
            if page not in sections:
                text = page.read_text()
                sections[page] = [norm(h) for h in re.findall(r"^#+ (.*)$", text, re.M)
                                  + re.findall(r"^\*\*(.+?)\*\*", text, re.M)]
            s = norm(m.group(2))
            if not any(s in h for h in sections[page]):
                missing.append(f"{f.relative_to(root)} quotes {m.group(1)}, \"{m.group(2)}\"")
    assert not missing, missing
