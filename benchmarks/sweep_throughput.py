"""Sweep throughput: points per second, rate-driven, default model, serially and on Dask.

    python benchmarks/sweep_throughput.py [--points 24] [--workers 2]

The sweep varies activity over the default model (2312-978-978-976-10, T = 100, B = 48,
ipu-mk2). The serial run is the baseline measured in the same process; the Dask run uses a
LocalCluster of --workers processes, each warmed once like the serial baseline (numba cache
load, first compile); start-up and warm-up are reported separately and excluded from points/s,
and a second figure includes them.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time

from mimdsim.sweep import load_sweep, point_values, run_dask, run_point, run_serial

SWEEP = """
[model]
layers = [2312, 978, 978, 976, 10]
timesteps = 100
batch = 48
max_activity = 0.02
[sweep]
results = "{results}"
[sweep.axes]
"run.activity" = {{logrange = [0.001, 0.02, {n}]}}
"""


def make(folder, name, n):
    path = os.path.join(folder, name + ".toml")
    with open(path, "w") as f:
        f.write(SWEEP.format(results=name + ".jsonl", n=n))
    return load_sweep(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=24)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    from distributed import Client, LocalCluster

    with tempfile.TemporaryDirectory() as d:
        run_serial(make(d, "warm", 1))  # numba cache load and first compile, as a worker would do once
        sw = make(d, "serial", args.points)
        t0 = time.perf_counter()
        run_serial(sw)
        serial = time.perf_counter() - t0
        sw = make(d, "dask", args.points)
        t0 = time.perf_counter()
        with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            started = time.perf_counter()
            # warm every worker the way the serial baseline was warmed: numba cache load, first compile
            warm = make(d, "warm2", 1)
            client.run(run_point, point_values(warm, warm.points[0]), warm.command, warm.points[0])
            t1 = time.perf_counter()
            run_dask(sw, client)
            parallel = time.perf_counter() - t1
        total = time.perf_counter() - t0
    print(f"{args.points} points, default model, rate-driven, {os.cpu_count()} cores")
    print(f"serial:            {args.points / serial:6.2f} points/s ({serial:.2f} s)")
    print(f"dask, {args.workers} workers:  {args.points / parallel:6.2f} points/s ({parallel:.2f} s; cluster start "
          f"{started - t0:.2f} s, worker warm-up {t1 - started:.2f} s; with start-up {args.points / total:.2f} points/s)")
    print(f"ratio dask/serial: {serial / parallel:.2f}")


if __name__ == "__main__":
    main()
