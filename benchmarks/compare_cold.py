"""`mimdsim compare` with no arguments, cold (fresh process, numba cache warm) and warm.

    python benchmarks/compare_cold.py [--repeats 3] [--pairs 3] [--ref COMMIT | --ref-tree DIR | --no-ref]

Cold: wall time of `python -m mimdsim compare` in a new process (imports, numba functions
loaded from the on-disk cache, compilation of the program, simulation, GPU estimates), three ways,
alternating within each repeat: a fresh machine (an empty trace cache, so the eager column's
snnTorch trace comes from the shipped seed where the versions match), the same without the seed
(MIMDSIM_TRACE_SEED=0: torch imported, the step traced at T = 3-6 and built for T = 100), and a
trace cache already filled. Warm: the same comparison called again inside one process.
Baseline in the same run: a bare `python -c "import numpy"` process start.

Then (unless ``--no-ref``) the same cold `python -m mimdsim compare` with today's code against the
reference commit (``benchmarks/against_reference.py``: bfbd7d3 exported, PYTHONPATH per side,
alternating pairs, each side warmed once, so with the trace cache the warm-up left): today's
speed relative to the reference, median, range, load. The command is the same; what it computes
is each tree's default comparison (today's has more GPU columns and bands).
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from against_reference import add_arguments


def wall(cmd, **env):
    import os

    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env={**os.environ, **env})
    return time.perf_counter() - t0


def main():
    import shutil
    import tempfile

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    add_arguments(ap)
    ap.add_argument("--no-ref", action="store_true", help="skip the comparison with the reference")
    args = ap.parse_args()
    cmd = [sys.executable, "-m", "mimdsim", "compare"]
    wall(cmd)  # fills the numba cache if it is empty
    cold = {"fresh": [], "no seed": [], "cached": []}
    for _ in range(args.repeats):
        fresh, bare = tempfile.mkdtemp(), tempfile.mkdtemp()
        cold["fresh"].append(wall(cmd, MIMDSIM_CACHE_DIR=fresh))
        cold["no seed"].append(wall(cmd, MIMDSIM_CACHE_DIR=bare, MIMDSIM_TRACE_SEED="0"))
        cold["cached"].append(wall(cmd, MIMDSIM_CACHE_DIR=fresh))
        shutil.rmtree(fresh), shutil.rmtree(bare)
    base = statistics.median(wall([sys.executable, "-c", "import numpy"]) for _ in range(args.repeats))
    import mimdsim
    net = mimdsim.Network.feedforward([2312, 978, 978, 976, 10])
    kw = dict(timesteps=100, batch_size=48, activity=0.005)
    mimdsim.compare(net, "ipu-mk2", "a100-40gb", **kw)
    t0 = time.perf_counter()
    for _ in range(args.repeats):
        mimdsim.compare(net, "ipu-mk2", "a100-40gb", **kw)
    warm = (time.perf_counter() - t0) / args.repeats
    spread = {k: f"{statistics.median(v):.2f} s ({min(v):.2f}-{max(v):.2f})" for k, v in cold.items()}
    print(f"mimdsim compare, cold process, median (range) of {args.repeats}: fresh trace cache {spread['fresh']}, "
          f"fresh without the seed {spread['no seed']}, trace cached {spread['cached']} "
          f"(python + numpy start alone: {base:.2f} s); warm call: {warm:.3f} s")
    if not args.no_ref:
        against(args)


def against(args):
    """The cold command, today against the reference, alternating."""
    from against_reference import compare, run_child, sides

    with sides(args) as (ref, new, scratch):
        result = compare(ref, new, lambda side, i: run_child(
            side.tree, [sys.executable, "-m", "mimdsim", "compare"], scratch).wall, pairs=args.pairs)
    print("`python -m mimdsim compare`, a cold process per run, wall:")
    print("\n".join(result.lines("wall s")))


if __name__ == "__main__":
    main()
