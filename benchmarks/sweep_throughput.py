"""Sweep throughput: points per second of a serial rate-driven sweep of the default model.

    python benchmarks/sweep_throughput.py [--repeats 3] [--dask 2]

60 points over activity (5, log-spaced 0.1%..2%), batch (16, 32, 48) and timesteps (25, 50,
75, 100) of the default model (2312-978-978-976-10, published program, ipu-mk2), run with
``run_serial`` as ``mimdsim sweep --serial`` runs them: each point appended to the results file
(fsync) as it completes, every one of the 12 shapes compiled in the timed run (the process is
warmed once on another shape: numba's cache load, as a worker does once).

Baseline in the same run: the same sweep's first 12 points with the engine asking the source
iteration by iteration (the path before whole-loop work: ``loop_work`` switched off), whose
results must be identical. Repeats: the sweep is run ``--repeats`` times (fresh results files,
the programs cached after the first: the first is the cold-cache figure) and the spread printed.
``--dask N`` adds a LocalCluster of N workers for comparison.
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numba  # noqa: F401  (a sweep process loads it: the compiled whole-loop paths run)

from mimdsim.sweep import load_sweep, load_results, run_serial

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
    path = os.path.join(folder, name + ".toml")
    with open(path, "w") as f:
        f.write(text.format(results=name + ".jsonl"))
    return load_sweep(path)


def summaries(path):
    return {r["id"]: {k: r[k] for k in ("samples_per_second", "cycles", "activity", "dropped_spikes", "status")}
            for r in load_results(path)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dask", type=int, default=0, help="also run on a LocalCluster of this many workers")
    args = ap.parse_args()
    from mimdsim.workloads.snn.sources import RateSource

    with tempfile.TemporaryDirectory() as d:
        os.chdir(d)
        run_serial(make(d, "warm", WARM))  # numba cache load on another shape
        rates, cpu_rates = [], []
        for r in range(args.repeats):
            sw = make(d, f"serial{r}")
            t0, c0 = time.perf_counter(), time.process_time()
            run_serial(sw)
            rates.append(len(sw.points) / (time.perf_counter() - t0))
            cpu_rates.append(len(sw.points) / (time.process_time() - c0))
        n = len(sw.points)
        sub = make(d, "whole12")
        run_serial(sub, limit=12)
        # the baseline: the same points, the engine asking iteration by iteration
        whole_loop = RateSource.loop_work
        RateSource.loop_work = lambda self, vertex_sets, ts: None
        base = make(d, "per_iteration12")
        t0 = time.perf_counter()
        run_serial(base, limit=12)
        t_base = (time.perf_counter() - t0) / 12
        RateSource.loop_work = whole_loop
        whole, per = summaries(sub.results), summaries(base.results)
        same = whole == per
        t0 = time.perf_counter()
        run_serial(make(d, "whole12b"), limit=12)
        t_whole = (time.perf_counter() - t0) / 12
        print(f"{n} points (default model, rate-driven, timesteps x batch x activity, 12 shapes), "
              f"{os.cpu_count()} cores, serial")
        print(f"serial sweep: {statistics.median(rates):.1f} points/s median of {args.repeats} "
              f"(runs: {', '.join(f'{x:.1f}' for x in rates)}; the first compiles every shape); per CPU second "
              f"{statistics.median(cpu_rates):.1f} (runs: {', '.join(f'{x:.1f}' for x in cpu_rates)})")
        print(f"12 points, programs cached: whole-loop {t_whole * 1e3:.1f} ms/point, per-iteration "
              f"{t_base * 1e3:.1f} ms/point: ratio {t_whole / t_base:.2f}; identical results: {same}")
        if not same:
            raise SystemExit("whole-loop and per-iteration results differ")
        if args.dask:
            from distributed import Client, LocalCluster

            from mimdsim.sweep import run_dask
            with LocalCluster(n_workers=args.dask, threads_per_worker=1, processes=True,
                              dashboard_address=None) as cluster, Client(cluster) as client:
                sw = make(d, "dask")
                t0 = time.perf_counter()
                run_dask(sw, client)
                print(f"dask, {args.dask} workers: {n / (time.perf_counter() - t0):.1f} points/s "
                      f"(workers compile every shape and load numba themselves)")


if __name__ == "__main__":
    main()
