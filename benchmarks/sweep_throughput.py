"""Sweep throughput: a serial rate-driven sweep of the default model, today against bfbd7d3, alternating.

    python benchmarks/sweep_throughput.py [--pairs 3] [--ref COMMIT | --ref-tree DIR] [--per-iteration] [--dask 2]

60 points over activity (5, log-spaced 0.1%..2%), batch (16, 32, 48) and timesteps (25, 50,
75, 100) of the default model (2312-978-978-976-10, published program, ipu-mk2), run with
``run_serial`` (the API both trees have) as ``mimdsim sweep --serial`` runs them: each point
appended to the results file as it completes. Each run is a child process on one tree
(``benchmarks/against_reference.py``: the reference exported, PYTHONPATH per side, one run of each side
per pair, alternating, each side warmed once first): the child runs a one-point sweep of another
shape untimed (numba's cache load, as a worker does once), then times the 60 points twice, the
first pass compiling every one of the 12 shapes, the second (a fresh results file) with the
programs cached. Printed: today's speed relative to the reference for each pass (median and
range of the per-pair ratios) with the load average.

``--per-iteration`` adds, with today's code in this process, the same sweep's first 12 points
with the engine asking the source iteration by iteration (the path before whole-loop work:
``loop_work`` switched off), whose results must be identical. ``--dask N`` adds today's sweep on a
LocalCluster of N workers.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

from against_reference import HERE, Comparison, add_arguments, compare, run_child, sides

SWEEP = """
[model]
layers = [2312, 978, 978, 976, 10]
timesteps = 100
batch = 48
max_activity = 0.02
[sweep]
results = "{results}"
[sweep.axes]
"model.timesteps" = [25, 50, 75, 100]
"model.batch" = [16, 32, 48]
"run.activity" = {{logrange = [0.001, 0.02, 5]}}
"""

WARM = SWEEP.replace("[25, 50, 75, 100]", "[10]").replace("[16, 32, 48]", "[8]").replace("0.02, 5]", "0.02, 1]")


def make(folder, name, text=SWEEP):
    from mimdsim.sweep import load_sweep
    path = os.path.join(folder, name + ".toml")
    with open(path, "w") as f:
        f.write(text.format(results=name + ".jsonl"))
    return load_sweep(path)


def child(folder):
    """One run on the tree on PYTHONPATH: warm on another shape, then the sweep twice; JSON on stdout."""
    import numba  # noqa: F401  (a sweep process loads it: the compiled whole-loop paths run)

    import mimdsim
    from mimdsim.sweep import run_serial
    os.chdir(folder)
    tag = f"{os.getpid()}"
    run_serial(make(folder, f"warm{tag}", WARM))
    passes = []
    for k in range(2):
        sw = make(folder, f"pass{k}_{tag}")
        t0, c0 = time.perf_counter(), time.process_time()
        run_serial(sw)
        passes.append((time.perf_counter() - t0, time.process_time() - c0))
    print(json.dumps({"mimdsim": os.path.realpath(mimdsim.__file__), "points": len(sw.points),
                      "seconds": passes[0][0], "cpu": passes[0][1],
                      "cached_seconds": passes[1][0], "cached_cpu": passes[1][1]}))


def summaries(path):
    from mimdsim.sweep import load_results
    return {r["id"]: {k: r[k] for k in ("samples_per_second", "cycles", "activity", "dropped_spikes", "status")}
            for r in load_results(path)}


def per_iteration(d):
    """Today's whole-loop path against the engine asking per iteration, 12 points, in this process."""
    sys.path.insert(0, HERE)
    from mimdsim.sweep import run_serial
    from mimdsim.workloads.snn.sources import RateSource

    os.chdir(d)
    run_serial(make(d, "warm", WARM))
    sub = make(d, "whole12")
    run_serial(sub, limit=12)
    whole_loop = RateSource.loop_work
    RateSource.loop_work = lambda self, vertex_sets, ts: None
    base = make(d, "per_iteration12")
    t0 = time.perf_counter()
    run_serial(base, limit=12)
    t_base = (time.perf_counter() - t0) / 12
    RateSource.loop_work = whole_loop
    same = summaries(sub.results) == summaries(base.results)
    t0 = time.perf_counter()
    run_serial(make(d, "whole12b"), limit=12)
    t_whole = (time.perf_counter() - t0) / 12
    print(f"today, 12 points, programs cached: whole-loop {t_whole * 1e3:.1f} ms/point, per-iteration "
          f"{t_base * 1e3:.1f} ms/point: ratio {t_whole / t_base:.2f}; identical results: {same}")
    if not same:
        raise SystemExit("whole-loop and per-iteration results differ")


def dask(d, workers):
    sys.path.insert(0, HERE)
    from distributed import Client, LocalCluster

    from mimdsim.sweep import run_dask
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        sw = make(d, "dask")
        t0 = time.perf_counter()
        run_dask(sw, client)
        print(f"today on dask, {workers} workers: {len(sw.points) / (time.perf_counter() - t0):.1f} points/s "
              f"(workers compile every shape and load numba themselves)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(ap)
    ap.add_argument("--child", metavar="DIR", help=argparse.SUPPRESS)  # one timed run, on PYTHONPATH's tree
    ap.add_argument("--per-iteration", action="store_true", help="also today's whole-loop vs per-iteration path")
    ap.add_argument("--dask", type=int, default=0, help="also run today's sweep on a LocalCluster of this many workers")
    args = ap.parse_args()
    if args.child:
        return child(args.child)
    cached, got = {}, {}
    with sides(args) as (ref, new, scratch):
        def run(side, index):
            argv = [sys.executable, os.path.abspath(__file__), "--child", scratch]
            rep = run_child(side.tree, argv, scratch).reported
            if not rep["mimdsim"].startswith(os.path.realpath(side.tree) + os.sep):
                raise SystemExit(f"{side.label}: the child imported {rep['mimdsim']}")
            if index >= 0:  # not the warm-up
                got.setdefault(side.label, []).append(rep)
                cached.setdefault(side.label, []).append(rep["cached_seconds"])
            return rep["seconds"]
        first = compare(ref, new, run, pairs=args.pairs)
    n = got[new.label][0]["points"]
    again = Comparison(ref, new, list(zip(cached[ref.label], cached[new.label])), first.order,
                       first.load_before, first.load_after)
    print(f"{n} points (default model, rate-driven, timesteps x batch x activity, 12 shapes), serial, "
          f"`run_serial` in a child process per run (warmed on another shape in it)")
    print("first pass (compiles every shape):")
    print("\n".join("  " + line for line in first.lines("s")))
    print("second pass (programs cached):")
    print("\n".join("  " + line for line in again.lines("s")))
    for side in (ref, new):
        runs = got[side.label]
        print(f"{side.label}: points/s median, first pass {statistics.median(n / r['seconds'] for r in runs):.1f}, "
              f"cached {statistics.median(n / r['cached_seconds'] for r in runs):.1f}")
    if args.per_iteration or args.dask:
        with tempfile.TemporaryDirectory() as d:
            if args.per_iteration:
                per_iteration(d)
            if args.dask:
                dask(d, args.dask)


if __name__ == "__main__":
    main()
