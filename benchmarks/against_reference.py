"""Speed as a ratio against a pinned reference commit, measured in the same run, alternating.

    python benchmarks/against_reference.py [--ref bfbd7d3 | --ref-tree DIR] [--pairs 3] -- ARGV...

Absolute times do not carry from one machine to another (the project's machines differ ~3x, and
a shared 2-core machine swings 2x with its load), so a speed claim here is a ratio: the same
workload run with today's code and with a reference (commit ``bfbd7d3`` unless told otherwise,
exported with ``git archive`` into a temporary folder), each in a child ``python`` process whose
``PYTHONPATH`` is its own tree (the two packages never mix: each side's ``import mimdsim`` is
checked to come from its tree), one run of each side per pair, alternating (ref, today, ref,
today, ...). Each side is run once untimed first (its bytecode and numba's on-disk cache are
written, as an installed package has them). Reported: each pair's times, the speed ratio per pair
(reference seconds / today's seconds: above 1, today is faster), its median and range over the
pairs, and the load average before and after.

As a command, ``ARGV`` is run on each side from a scratch folder (``{tree}`` in it is replaced
by that side's tree), e.g. ``-- python -m mimdsim simulate --quiet``. The benchmarks import
``compare``/``run_child``/``exported`` (sweep_search.py, sweep_throughput.py, step_time.py,
simulate_cold.py, compare_cold.py).
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Callable, Sequence

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFERENCE = "bfbd7d3"  # main on 2026-11-30, before the placement search, bands and energy (issue 41)


@dataclasses.dataclass
class Side:
    """One side of a comparison: a label and the source tree its child processes import."""
    label: str
    tree: str


@dataclasses.dataclass
class Timing:
    wall: float  # the child's wall seconds, interpreter start included
    cpu: float  # its user + system seconds
    reported: dict  # the JSON object on the child's last stdout line, if it printed one (e.g. {"seconds": ...})


@dataclasses.dataclass
class Comparison:
    reference: Side
    today: Side
    pairs: list  # [(reference seconds, today seconds)] in the order run
    order: list  # [(side label, run index)] in the order run, warm-up runs included
    load_before: tuple
    load_after: tuple

    @property
    def ratios(self) -> list:
        """Today's speed relative to the reference, per pair: reference seconds / today's seconds."""
        return [r / t for r, t in self.pairs]

    @property
    def median(self) -> float:
        return statistics.median(self.ratios)

    @property
    def spread(self) -> tuple:
        return min(self.ratios), max(self.ratios)

    def lines(self, what: str = "seconds") -> list:
        ref = [r for r, _ in self.pairs]
        new = [t for _, t in self.pairs]
        lo, hi = self.spread
        return [f"{self.reference.label}: {what} {_series(ref)}",
                f"{self.today.label}: {what} {_series(new)}",
                f"speed today / {self.reference.label}: median {self.median:.2f} ({lo:.2f}-{hi:.2f}) over "
                f"{len(self.pairs)} alternating pairs (per pair {', '.join(f'{x:.2f}' for x in self.ratios)}; "
                f"above 1: today faster); each side warmed once first; load average "
                f"{_load(self.load_before)} before, {_load(self.load_after)} after, {os.cpu_count()} cores"]


def _series(xs):
    return f"median {statistics.median(xs):.3g} (runs {', '.join(f'{x:.3g}' for x in xs)})"


def _load(avg):
    return "/".join(f"{x:.1f}" for x in avg)


def compare(reference: Side, today: Side, run: Callable[[Side, int], float], *, pairs: int = 3,
            warm: bool = True) -> Comparison:
    """Run ``run(side, index)`` (it returns seconds) alternately: warm-ups, then ref, today per pair.

    ``index`` counts the runs of that side (-1 for the warm-up), so a workload can use a fresh
    results file per run."""
    if pairs < 1:
        raise ValueError(f"pairs = {pairs}: at least one pair is needed")
    order = []
    if warm:
        for side in (reference, today):
            order.append((side.label, -1))
            run(side, -1)
    load_before = os.getloadavg()
    got = []
    for i in range(pairs):
        timed = []
        for side in (reference, today):
            order.append((side.label, i))
            timed.append(float(run(side, i)))
        got.append(tuple(timed))
    return Comparison(reference, today, got, order, load_before, os.getloadavg())


def child_env(tree: str) -> dict:
    """The environment of a child on ``tree``: its PYTHONPATH only, and bytecode written (this
    machine's shells set PYTHONDONTWRITEBYTECODE, which would recompile every module each run)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    env["PYTHONPATH"] = tree
    return env


def run_child(tree: str, argv: Sequence[str], cwd: str) -> Timing:
    """Run ``argv`` (``{tree}`` replaced) with ``tree`` on PYTHONPATH, from ``cwd`` (not a source
    tree: ``python -m`` puts the folder it starts in first on the path)."""
    argv = [a.replace("{tree}", tree) for a in argv]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(argv, env=child_env(tree), cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode:
        raise SystemExit(f"{' '.join(argv)} on {tree} failed ({out.returncode}):\n{out.stderr[-3000:]}")
    last = out.stdout.strip().splitlines()[-1:] or [""]
    try:
        reported = json.loads(last[0])
    except ValueError:
        reported = {}
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Timing(wall, cpu, reported if isinstance(reported, dict) else {})


def check_imports(side: Side, cwd: str, package: str = "mimdsim") -> str:
    """Where ``side``'s children import ``package`` from; refuses a side that would import another tree's."""
    got = run_child(side.tree, [sys.executable, "-c", f"import json, {package}; print(json.dumps("
                                f"{{'file': {package}.__file__}}))"], cwd).reported["file"]
    if not os.path.realpath(got).startswith(os.path.realpath(side.tree) + os.sep):
        raise SystemExit(f"{side.label}: `import {package}` came from {got}, not from {side.tree}")
    return got


@contextlib.contextmanager
def exported(commit: str = REFERENCE, repo: str = HERE):
    """A temporary folder holding ``commit``'s tree (``git archive | tar -x``), removed afterwards."""
    folder = tempfile.mkdtemp(prefix=f"mimdsim-{commit}-")
    try:
        archive = subprocess.Popen(["git", "-C", repo, "archive", commit], stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", folder], stdin=archive.stdout, check=True)
        archive.stdout.close()
        if archive.wait():
            raise SystemExit(f"git archive {commit} in {repo} failed")
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def add_arguments(ap: argparse.ArgumentParser, pairs: int = 3) -> None:
    ap.add_argument("--pairs", type=int, default=pairs, help="alternating (reference, today) pairs (median taken)")
    ap.add_argument("--ref", default=REFERENCE, help="reference commit, exported into a temporary folder")
    ap.add_argument("--ref-tree", default=None, metavar="DIR", help="a checkout to use as the reference instead")


@contextlib.contextmanager
def sides(args):
    """(reference, today) from ``add_arguments``' options, the reference exported for the duration."""
    with contextlib.ExitStack() as stack:
        tree = args.ref_tree or stack.enter_context(exported(args.ref))
        ref = Side(os.path.basename(os.path.normpath(args.ref_tree)) if args.ref_tree else args.ref, tree)
        new = Side("today", HERE)
        scratch = stack.enter_context(tempfile.TemporaryDirectory(prefix="mimdsim-bench-"))
        for side in (ref, new):
            check_imports(side, scratch)
        yield ref, new, scratch


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(ap)
    ap.add_argument("--cpu", action="store_true", help="compare CPU seconds instead of wall seconds")
    ap.add_argument("argv", nargs=argparse.REMAINDER, help="-- then the command (python is this interpreter)")
    args = ap.parse_args()
    argv = [a for a in args.argv if a != "--"] or ["python", "-m", "mimdsim", "simulate", "--quiet"]
    argv = [sys.executable if a == "python" else a for a in argv]
    with sides(args) as (ref, new, scratch):
        def run(side, index):
            timing = run_child(side.tree, argv, scratch)
            return timing.cpu if args.cpu else timing.wall
        result = compare(ref, new, run, pairs=args.pairs)
    print(f"`{' '.join(argv)}`, a fresh process per run ({'CPU' if args.cpu else 'wall'} seconds)")
    print("\n".join(result.lines()))


if __name__ == "__main__":
    main()
