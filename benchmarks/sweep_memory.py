"""Peak memory of a long sweep: every process of a 10,000-point ``mimdsim sweep`` stays under 1 GB.

    python benchmarks/sweep_memory.py [--points 10000] [--serial] [--workers N] [--limit-mb 1024]

The sweep: the default model (2312-978-978-976-10, published program, rate-driven) over tiles 1024-1472
(10 values) x batch 8, 24 x T 10, 25 x as many activities in 0.001-0.01 as make ``--points`` points (250
for 10,000): 40 shapes of 250 points, each point's placement searched at its own rates (nothing read
from disk: ``--no-cache``), written to a fresh results file. It runs as
one child ``python -m mimdsim sweep`` process (``--serial``, or the default local run with its worker
processes); the peak resident set of the largest of them (``getrusage(RUSAGE_CHILDREN).ru_maxrss``:
the sweep process and its workers, each waited for) is printed beside the limit, with the wall time and
the records written. The caches that a sweep fills (compiled programs, placement candidates and
searches, loop scores, exchange phases, deal plans) are bounded in entries or bytes, so the peak is
reached within the first few dozen shapes and does not grow with the number of points.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

from against_reference import HERE, child_env

BASE = """[model]
layers = [2312, 978, 978, 976, 10]
max_activity = 0.01
[sweep]
mode = "grid"
results = "memory.jsonl"
[sweep.axes]
"run.activity" = {activities}
"model.batch" = [8, 24]
"model.timesteps" = [10, 25]
"chip.tiles" = {tiles}
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=10_000)
    ap.add_argument("--serial", action="store_true", help="one process (default: the default local run)")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--limit-mb", type=float, default=1024.0)
    args = ap.parse_args()
    tiles = [int(t) for t in np.linspace(1024, 1472, 10).round()]
    count = max(1, args.points // (len(tiles) * 4))
    activities = [round(float(a), 7) for a in np.linspace(0.001, 0.01, count)]
    with tempfile.TemporaryDirectory(prefix="mimdsim-memory-") as scratch:
        path = os.path.join(scratch, "memory.toml")
        with open(path, "w") as f:
            f.write(BASE.format(activities=activities, tiles=tiles))
        argv = [sys.executable, "-m", "mimdsim", "sweep", "--quiet", "--no-cache", path]
        argv += ["--serial"] if args.serial else [] if args.workers is None else ["--workers", str(args.workers)]
        env = dict(child_env(HERE), MIMDSIM_CACHE_DIR=os.path.join(scratch, "cache"))
        load = os.getloadavg()
        t0 = time.perf_counter()
        out = subprocess.run(argv, env=env, cwd=scratch, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if out.returncode:
            raise SystemExit(f"the sweep failed ({out.returncode}):\n{out.stderr[-3000:]}")
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        with open(os.path.join(scratch, "memory.jsonl")) as f:
            recs = [json.loads(line) for line in f if line.strip()]
    ok = sum(r.get("status") == "ok" for r in recs)
    print(f"{len(recs)} points ({ok} ok; {len(activities)} activities x 2 batches x 2 T x {len(tiles)} tiles), "
          f"{'serial' if args.serial else 'default local run'}, every placement searched: {wall:.0f} s wall "
          f"(load {load[0]:.1f} at the start, {os.cpu_count()} cores)")
    print(f"peak resident set of the largest process: {peak_mb:.0f} MB (limit {args.limit_mb:.0f} MB: "
          f"{'under' if peak_mb < args.limit_mb else 'OVER'})")
    print(json.dumps({"points": len(recs), "peak_mb": round(peak_mb, 1), "wall_s": round(wall, 1)}))
    if peak_mb >= args.limit_mb:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
