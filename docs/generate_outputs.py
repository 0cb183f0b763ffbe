"""Regenerate every command output the docs show, so that none can drift from what the command prints.

An output block in a page is a fenced block right after a marker line::

    <!-- output: mimdsim compare --schedule fused --strategy per-step,fused,sparse -->
    <!-- output: mimdsim simulate --layers ... | grep placement -->
    <!-- output: python -c "..." -->

The block becomes ``$ COMMAND`` and what the command prints on stdout (``| grep REGEX`` keeps the lines
that match). ``mimdsim`` commands run in this process from this checkout (``mimdsim.cli.main``, progress
off); ``python`` commands run from the repository root. tests/test_docs.py regenerates every block and
fails on any difference.

    python docs/generate_outputs.py            # rewrite the blocks in place
    python docs/generate_outputs.py --check    # exit 1 listing the blocks that differ
"""
from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = ("README.md", "docs/user-guide.md", "docs/gpu-model.md", "docs/cost-model.md", "docs/tensix.md")
MARKER = re.compile(r"^<!-- output: (.*?) -->\n```\n(.*?)```\n", re.S | re.M)


def blocks(text: str):
    """``(command, shown, span)`` of every marked output block of a page."""
    for m in MARKER.finditer(text):
        yield m.group(1), m.group(2), m.span(2)


def output(command: str) -> str:
    """What ``command`` (a marker's text) prints, filtered by its ``| grep REGEX``, as the block shows it."""
    command, _, keep = command.partition(" | grep ")
    if command.startswith("mimdsim "):
        sys.path.insert(0, ROOT)
        from mimdsim.cli import main

        out = io.StringIO()
        cwd = os.getcwd()
        try:
            os.chdir(ROOT)
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
                status = main(shlex.split(command)[1:] + ["--quiet"])
        finally:
            os.chdir(cwd)
        text = out.getvalue()
    else:
        run = subprocess.run(command, shell=True, cwd=ROOT, capture_output=True, text=True,
                             env=dict(os.environ, PYTHONPATH=ROOT))
        status, text = run.returncode, run.stdout
    if status != 0:
        raise RuntimeError(f"{command!r} exited {status}")
    lines = text.rstrip("\n").splitlines()
    if keep:
        lines = [line for line in lines if re.search(keep, line)]
    return "".join(f"{line.rstrip()}\n" for line in [f"$ {command}", *lines])


def regenerate(page: str, check: bool = False) -> list[str]:
    """Rewrite (or, ``check``, only compare) the page's output blocks; returns the commands that differed."""
    path = os.path.join(ROOT, page)
    text = open(path).read()
    differ, parts, last = [], [], 0
    for command, shown, (start, end) in blocks(text):
        fresh = output(command)
        if fresh != shown:
            differ.append(command)
        parts += [text[last:start], fresh]
        last = end
    if differ and not check:
        with open(path, "w") as f:
            f.write("".join(parts) + text[last:])
    return differ


if __name__ == "__main__":
    check = "--check" in sys.argv[1:]
    stale = {page: d for page in PAGES if (d := regenerate(page, check))}
    for page, commands in stale.items():
        print(f"{page}: {'differs' if check else 'rewrote'}: " + "; ".join(commands))
    sys.exit(1 if check and stale else 0)
