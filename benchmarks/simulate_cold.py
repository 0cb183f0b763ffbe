"""`mimdsim simulate` with its defaults as a cold process: wall and CPU time, and what it imports.

    python benchmarks/simulate_cold.py [--repeats 5] [--pairs 3] [--ref COMMIT | --ref-tree DIR | --no-ref]

Cold: a new ``python -m mimdsim simulate --quiet`` process (the default model, 2312-978-978-976-10,
T = 100, B = 48, rate-driven, published program, ipu-mk2): interpreter start, imports,
compilation of the program, the run, the report. Bytecode is cached as an installed package
caches it (this machine's shells set PYTHONDONTWRITEBYTECODE=1, which recompiles every module
in every process: reported too). Baseline in the same run: ``python -c "import numpy"``.
Prints the median and the range over the repeats, wall (what a user waits, sensitive to other
load on a shared machine) and CPU (user + system of the child).

Then (unless ``--no-ref``) the same cold process with today's code against the reference commit
(``benchmarks/against_reference.py``: bfbd7d3 exported, PYTHONPATH per side, alternating pairs,
each side warmed once): today's speed relative to the reference, median, range, load.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

from against_reference import add_arguments

HEAVY = ("numba", "matplotlib", "networkx", "dask", "distributed", "torch", "scipy", "pandas")
PROBE = ("import sys; from mimdsim.cli import main; main(['simulate', '--quiet']); "
         f"print('imported:', [m for m in {HEAVY!r} if m in sys.modules], file=sys.stderr)")


def run(cmd, env):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, env=env, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), out


def series(cmd, env, repeats):
    got = [run(cmd, env)[:2] for _ in range(repeats)]
    return [w for w, _ in got], [c for _, c in got]


def fmt(xs):
    return f"{statistics.median(xs):.2f} s (range {min(xs):.2f}-{max(xs):.2f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    add_arguments(ap)
    ap.add_argument("--no-ref", action="store_true", help="skip the comparison with the reference")
    args = ap.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    import tempfile
    nocache = dict(env, PYTHONDONTWRITEBYTECODE="1", PYTHONPYCACHEPREFIX=tempfile.mkdtemp())  # no bytecode found
    sim = [sys.executable, "-m", "mimdsim", "simulate", "--quiet"]
    run(sim, env)  # writes bytecode and fills the numba cache if either is empty
    imported = run([sys.executable, "-c", PROBE], env)[2].stderr.strip().splitlines()[-1]
    wall, cpu = series(sim, env, args.repeats)
    base_wall, base_cpu = series([sys.executable, "-c", "import numpy"], env, args.repeats)
    nc_wall, nc_cpu = series(sim, nocache, max(1, args.repeats // 2))
    print(f"mimdsim simulate (defaults), cold process, {args.repeats} runs, {os.cpu_count()} cores:")
    print(f"  wall {fmt(wall)}; CPU {fmt(cpu)}")
    print(f"  baseline python -c 'import numpy': wall {fmt(base_wall)}; CPU {fmt(base_cpu)}")
    print(f"  ratio to the baseline (median wall): {statistics.median(wall) / statistics.median(base_wall):.1f}")
    print(f"  without cached bytecode (PYTHONDONTWRITEBYTECODE=1): wall {fmt(nc_wall)}; CPU {fmt(nc_cpu)}")
    print(f"  heavy modules the default run {imported}")
    if not args.no_ref:
        against(args)


def against(args):
    """The cold command, today against the reference, alternating."""
    from against_reference import compare, run_child, sides

    with sides(args) as (ref, new, scratch):
        result = compare(ref, new, lambda side, i: run_child(
            side.tree, [sys.executable, "-m", "mimdsim", "simulate", "--quiet"], scratch).wall, pairs=args.pairs)
    print("`python -m mimdsim simulate --quiet`, a cold process per run, wall:")
    print("\n".join(result.lines("wall s")))


if __name__ == "__main__":
    main()
