"""A what-if sweep with the placement search on: 360 points, start-up included, points/s.

    python benchmarks/sweep_search.py [--repeats 3] [--tree /path/to/other/checkout]

The issue-27 sweep: the default model (2312-978-978-976-10, published program, rate-driven) over
10 activities (log-spaced 0.1%..2%) x 6 batches (8..48) x 2 timestep counts (50, 100) x 3 tile
counts (1216, 1472, 2048 tiles per chip): 360 points, 36 shapes, every shape a new placement
search. Each run is a cold ``python -m mimdsim sweep --serial --quiet FILE`` process (interpreter
start, imports, every shape compiled and searched, every point run and appended to the results
file): points/s = 360 / the process's wall time, start-up included; CPU seconds printed beside.

Baseline in the same run, alternating with it (a ratio per pair): the same 360 points with the
placement pinned (``run.neurons_per_tile`` per point) to what the mapper's rule before the search
chose, the smallest even count that places (4 on 1216 tiles, 2 on 1472 and 2048): the sweep
without the search. ``--tree DIR`` adds a third series, the search-on sweep run with another
checkout's code (``PYTHONPATH=DIR``, e.g. the main branch), also alternating.
"""
from __future__ import annotations

import argparse
import itertools
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ACTIVITIES = [float(a) for a in np.geomspace(0.001, 0.02, 10)]
BATCHES = [8, 16, 24, 32, 40, 48]
TIMESTEPS = [50, 100]
TILES = [1216, 1472, 2048]
BASE = """[model]
layers = [2312, 978, 978, 976, 10]
max_activity = 0.01
[sweep]
results = "{name}.jsonl"
"""


def grid_file(folder, name):
    """The search-on sweep: a grid over the four axes."""
    text = BASE.format(name=name) + (
        f'mode = "grid"\n[sweep.axes]\n"chip.tiles" = {TILES}\n"model.timesteps" = {TIMESTEPS}\n'
        f'"model.batch" = {BATCHES}\n"run.activity" = {ACTIVITIES}\n')
    return _write(folder, name, text)


def pinned_file(folder, name):
    """The baseline: the same points (zip mode), each with the old rule's neurons per tile pinned."""
    from mimdsim.workloads.snn.mapping import map_network

    # map_network's rule, the placement before the search: the smallest even count (>= 2) that places
    rule = {t: map_network([978, 978, 976, 10], chips=1, tiles_per_chip=t).neurons_per_tile for t in TILES}
    pts = list(itertools.product(TILES, TIMESTEPS, BATCHES, ACTIVITIES))
    cols = {"chip.tiles": [p[0] for p in pts], "model.timesteps": [p[1] for p in pts],
            "model.batch": [p[2] for p in pts], "run.activity": [p[3] for p in pts],
            "run.neurons_per_tile": [rule[p[0]] for p in pts]}
    text = BASE.format(name=name) + 'mode = "zip"\n[sweep.axes]\n' + "".join(f'"{k}" = {v}\n' for k, v in cols.items())
    return _write(folder, name, text), rule


def _write(folder, name, text):
    path = os.path.join(folder, name + ".toml")
    with open(path, "w") as f:
        f.write(text)
    return path


def run(path, tree):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = tree
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mimdsim", "sweep", "--serial", "--quiet", path], check=True, env=env,
                   cwd=os.path.dirname(path), capture_output=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def errors(path):
    from mimdsim.sweep import load_results
    recs = load_results(path.replace(".toml", ".jsonl"))
    return len(recs), [r["error"] for r in recs if r["status"] != "ok"]


def fmt(rates):
    return f"{statistics.median(rates):.1f} points/s (runs {', '.join(f'{r:.1f}' for r in rates)})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tree", help="also time the search-on sweep with this checkout's code (e.g. /work/main)")
    args = ap.parse_args()
    n = len(TILES) * len(TIMESTEPS) * len(BATCHES) * len(ACTIVITIES)
    series = {"search": ([], []), "pinned (old rule)": ([], [])}
    if args.tree:
        series[f"search, {args.tree}"] = ([], [])
    with tempfile.TemporaryDirectory() as d:
        run(grid_file(d, "warm"), HERE)  # bytecode and the numba cache, as an installed package has them
        os.remove(os.path.join(d, "warm.jsonl"))
        rule = None
        for r in range(args.repeats):
            for label in series:
                if label.startswith("pinned"):
                    path, rule = pinned_file(d, f"pinned{r}")
                else:
                    path = grid_file(d, f"{'tree' if ',' in label else 'search'}{r}")
                wall, cpu = run(path, args.tree if "," in label else HERE)
                done, bad = errors(path)
                if done != n or bad:
                    raise SystemExit(f"{label}: {done} of {n} points, errors: {bad[:3]}")
                series[label][0].append(n / wall)
                series[label][1].append(cpu)
    print(f"{n} points (default model, rate-driven, {len(ACTIVITIES)} activities x {len(BATCHES)} batches x "
          f"{len(TIMESTEPS)} timestep counts x {len(TILES)} tile counts = 36 shapes), one cold `mimdsim sweep "
          f"--serial` process each, start-up included; {os.cpu_count()} cores; {args.repeats} repeats, alternating")
    for label, (rates, cpus) in series.items():
        print(f"  {label:<26} {fmt(rates)}; CPU {statistics.median(cpus):.1f} s")
    s, p = series["search"][0], series["pinned (old rule)"][0]
    print(f"  search / pinned per pair: {', '.join(f'{a / b:.2f}' for a, b in zip(s, p))}"
          f" (pinned counts per tile count: {rule})")


if __name__ == "__main__":
    main()
