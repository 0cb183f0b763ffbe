"""A sweep of short points on this machine's cores: the default local run against --serial, alternating.

    python benchmarks/sweep_cores.py [--points 48] [--pairs 3] [--workers N] [--dask]

The workload is one cold ``python -m mimdsim sweep --quiet --no-cache FILE`` process (start-up
included, every placement searched in the run) over short points of the default model
(2312-978-978-976-10, published program, rate-driven): T 10, 15, 20, 25 x batch 8, 16 x tiles
1024, 1216, 1472 x activities 0.002-0.01, the first ``--points`` of them, shapes in turn. Each pair
runs ``--serial`` and the default local run (worker processes, one per core, or ``--workers N``),
alternately, each writing a fresh results file; the ratio per pair is serial seconds / default
seconds (above 1: the default is faster), with the load average, as
``benchmarks/against_reference.py`` reports a comparison. Both must write the same records
(seconds per step and cycles, point by point). ``--dask`` adds a third series, the same points on a
Dask ``LocalCluster`` of as many workers (``run_dask``, cluster start included), in its own pairs
against ``--serial``. Last, what two processes could get from the machine meanwhile: a pure-CPU loop
run twice in one process against once in each of two, alternating (on an idle 2-core machine near
2; on this shared one the other sessions' load sets it).
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import tempfile

import numpy as np

from against_reference import HERE, Comparison, Side, check_imports, compare, run_child
from sweep_search import sweep_file  # the same zip sweep file of the default model

AXES = {"model.timesteps": [10, 15, 20, 25], "model.batch": [8, 16], "chip.tiles": [1024, 1216, 1472],
        "run.activity": [round(float(a), 6) for a in np.linspace(0.002, 0.01, 5)]}
DASK = """import sys
from distributed import Client, LocalCluster
from mimdsim.sweep import load_sweep, run_dask
if __name__ == "__main__":  # the cluster's worker processes import this file again
    with LocalCluster(n_workers={workers}, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \\
            Client(cluster) as client:
        run_dask(load_sweep(sys.argv[1]), client, cache=False)
"""


def points(n: int) -> list:
    keys = list(AXES)
    grid = [dict(zip(keys, vals)) for vals in itertools.product(*AXES.values())]
    step = max(1, len(grid) // n)
    return grid[::step][:n]


def records(path: str) -> dict:
    with open(path.replace(".toml", ".jsonl")) as f:
        recs = [json.loads(line) for line in f if line.strip()]
    bad = [r.get("error") for r in recs if r.get("status") != "ok"]
    if bad:
        raise SystemExit(f"{path}: errors {bad[:3]}")
    return {r["id"]: (r["seconds_per_step"], r["cycles"]) for r in recs}


def _spin(_=None) -> int:
    total = 0
    for i in range(10_000_000):
        total += i
    return total


def busy(side, index) -> float:
    """Seconds for two units of pure-Python work: in this process, or one in each of two forked processes."""
    import multiprocessing
    import time
    t0 = time.perf_counter()
    if side.label == "one process":
        _spin(), _spin()
    else:
        with multiprocessing.get_context("fork").Pool(2) as pool:
            pool.map(_spin, [0, 1])
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=48)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--workers", type=int, default=None, help="worker processes (default: one per core)")
    ap.add_argument("--dask", action="store_true", help="also the same points on a Dask LocalCluster")
    args = ap.parse_args()
    pts = points(args.points)
    workers = args.workers or len(os.sched_getaffinity(0))
    with tempfile.TemporaryDirectory(prefix="mimdsim-cores-") as scratch:
        serial, local = Side("--serial", HERE), Side(f"default local ({workers} workers)", HERE)
        dask = Side(f"Dask LocalCluster ({workers} workers)", HERE)
        check_imports(local, scratch)
        got = {}

        runs = itertools.count()

        def run(side, index):
            name = f"run{next(runs)}"
            path = sweep_file(scratch, name, pts if index >= 0 else pts[:2], max_activity=0.01)
            if side is dask:
                with open(os.path.join(scratch, "dask_run.py"), "w") as f:
                    f.write(DASK.format(workers=workers))
                argv = [sys.executable, os.path.join(scratch, "dask_run.py"), path]
            else:
                argv = [sys.executable, "-m", "mimdsim", "sweep", "--quiet", "--no-cache", path] + \
                    (["--serial"] if side is serial else [] if args.workers is None else ["--workers", str(workers)])
            timing = run_child(side.tree, argv, scratch)
            if index >= 0:
                got.setdefault(side.label, []).append(records(path))
            return timing.wall

        result = compare(serial, local, run, pairs=args.pairs)
        print(f"{len(pts)} short points ({len({(p['model.timesteps'], p['model.batch'], p['chip.tiles']) for p in pts})} "
              f"shapes), one cold `mimdsim sweep --no-cache` process per run, start-up included")
        print("\n".join(result.lines("wall s")).replace("speed today / --serial", f"speed {local.label} / --serial"))
        if args.dask:
            by_dask = compare(serial, dask, run, pairs=args.pairs, warm=False)
            print("\n".join(by_dask.lines("wall s")).replace("speed today / --serial", f"speed {dask.label} / --serial"))
        ceiling = compare(Side("one process", HERE), Side("two processes", HERE), busy, pairs=args.pairs, warm=False)
        print("what the machine gave two processes meanwhile: a pure-CPU loop, twice in one process against once in "
              "each of two (the most a second core could give now):")
        print("  " + ceiling.lines("wall s")[-1].replace("speed today / one process", "speed two processes / one"))
        first = got[serial.label][0]
        assert all(r == first for runs in got.values() for r in runs), "the runs disagree on a point"
        print("every run wrote the same seconds per step and cycles for every point")


if __name__ == "__main__":
    main()
