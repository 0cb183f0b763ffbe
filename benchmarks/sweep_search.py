"""A what-if sweep, serial, start-up included: today's speed as a ratio to bfbd7d3, alternating.

    python benchmarks/sweep_search.py [--points N] [--pairs 3] [--grid issue41|issue27] [--order issue|shapes]
                                      [--cache off|warm] [--ref COMMIT | --ref-tree DIR | --pinned]

The workload is one cold ``python -m mimdsim sweep --serial --quiet FILE`` process (interpreter
start, imports, every shape compiled, with today's code its placement searched, bands and energy
costed, every point run and appended to a fresh results file), timed as a whole: what a user
waits for. Both trees read the same sweep file (the experiment keys and ``[sweep]`` table of
bfbd7d3, a ``zip`` of the grid's points in order), and every point must come back ``ok`` on both.

Grids (the default model, 2312-978-978-976-10, published program, rate-driven, max_activity 0.01):

- ``issue41`` (default): issue 41's 360 points, activity 0.001-0.01 in 10 linear steps x batch
  16, 24, 32, 40, 48, 64 x T 50, 100 x 1024, 1216, 1472 tiles (36 shapes);
- ``issue27``: issue 27's 360 points, 10 activities log-spaced 0.1-2% x batch 8-48 x T 50, 100
  x 1216, 1472, 2048 tiles.

``--order issue`` crosses the axes in the order issue 41 lists them (activity, batch, T, tiles;
the last varies fastest, so consecutive points change shape, and 36 shapes overflow the
16-program cache of both trees); ``--order shapes`` runs a shape's 10 activities one after the
other. ``--points N`` runs every k-th point of that list (k = 360 // N), the first N: the
subsample has fewer points per shape than the whole sweep, so it weighs the per-shape work
(compilation, placement search) more.

Placement searches kept on disk (today's code; bfbd7d3 had no search): ``--cache off`` (default) runs
today's sweeps with ``--no-cache``, every point searched in the run it is timed in; ``--cache warm``
gives today's runs one cache folder, filled by its warm-up run over the same points, so the timed
runs read every search from disk (a sweep run again, or another sweep over the same shapes and rates).

Series: the reference (``--ref``, default bfbd7d3, exported; ``--ref-tree DIR`` a checkout) against
today, alternating (``benchmarks/against_reference.py``). ``--pinned`` compares instead, within today's
code, the sweep with every point's placement pinned to the mapper's rule before the search (the
smallest even count that places) against the search: the search's own cost.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys

import numpy as np

from against_reference import HERE, Comparison, Side, add_arguments, compare, run_child, sides

GRIDS = {  # axis -> values, in the order issue 41 lists them
    "issue41": {"run.activity": [round(float(a), 6) for a in np.linspace(0.001, 0.01, 10)],
                "model.batch": [16, 24, 32, 40, 48, 64], "model.timesteps": [50, 100],
                "chip.tiles": [1024, 1216, 1472]},
    "issue27": {"run.activity": [float(a) for a in np.geomspace(0.001, 0.02, 10)],
                "model.batch": [8, 16, 24, 32, 40, 48], "model.timesteps": [50, 100],
                "chip.tiles": [1216, 1472, 2048]},
}
ORDERS = {"issue": ("run.activity", "model.batch", "model.timesteps", "chip.tiles"),
          "shapes": ("chip.tiles", "model.timesteps", "model.batch", "run.activity")}
BASE = """[model]
layers = [2312, 978, 978, 976, 10]
max_activity = {max_activity}
[sweep]
mode = "zip"
results = "{name}.jsonl"
[sweep.axes]
"""
WARM_POINT = {"chip.tiles": 1472, "model.timesteps": 10, "model.batch": 8, "run.activity": 0.005}  # another shape


def grid_points(grid: str, order: str, points: int | None = None) -> list:
    """The grid's points as dicts, the last axis of ``order`` fastest; every k-th of them if ``points``."""
    axes = GRIDS[grid]
    keys = ORDERS[order]
    every = [dict(zip(keys, vals)) for vals in itertools.product(*(axes[k] for k in keys))]
    if points is None or points >= len(every):
        return every
    step = max(1, len(every) // points)
    return every[::step][:points]


def sweep_file(folder: str, name: str, points: list, max_activity: float) -> str:
    text = BASE.format(name=name, max_activity=max_activity) + "".join(
        f'"{k}" = {[p[k] for p in points]}\n' for k in points[0])
    path = os.path.join(folder, name + ".toml")
    with open(path, "w") as f:
        f.write(text)
    return path


def pinned_rule(tiles) -> dict:
    """The mapper's placement before the search: the smallest even count (>= 2) that places."""
    sys.path.insert(0, HERE)
    from mimdsim.workloads.snn.mapping import map_network
    return {t: map_network([978, 978, 976, 10], chips=1, tiles_per_chip=t).neurons_per_tile for t in tiles}


def check_results(path: str, n: int, label: str) -> None:
    with open(path) as f:
        recs = [json.loads(line) for line in f if line.strip()]
    bad = [r.get("error") for r in recs if r.get("status") != "ok"]
    if len(recs) != n or bad:
        raise SystemExit(f"{label}: {len(recs)} of {n} points, errors: {bad[:3]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(ap)
    ap.add_argument("--grid", choices=sorted(GRIDS), default="issue41")
    ap.add_argument("--order", choices=sorted(ORDERS), default="issue")
    ap.add_argument("--points", type=int, default=None, help="every k-th point of the grid, N of them (default all)")
    ap.add_argument("--cache", choices=("off", "warm"), default="off",
                    help="today's placement searches: searched in each timed run (off), or read from a folder its "
                         "warm-up filled (warm)")
    ap.add_argument("--pinned", action="store_true",
                    help="today with the placement pinned to the pre-search rule against today with the search")
    args = ap.parse_args()
    points = grid_points(args.grid, args.order, args.points)
    n = len(points)
    max_activity = max(max(GRIDS[args.grid]["run.activity"]), 0.01)
    rule = pinned_rule(GRIDS[args.grid]["chip.tiles"]) if args.pinned else None
    cpu = {}

    with sides(args) as (ref, new, scratch):
        if args.pinned:
            ref = Side("today, placement pinned", new.tree)

        def run(side, index):
            name = f"{'ref' if side is ref else 'new'}{index if index >= 0 else 'warm'}"
            pts = [dict(p, **{"run.neurons_per_tile": rule[p["chip.tiles"]]}) for p in points] \
                if side is ref and rule else points
            today = side is new or args.pinned
            pts = [WARM_POINT] if index < 0 and not (today and args.cache == "warm") else pts
            path = sweep_file(scratch, name, pts, max_activity)
            flags = (["--no-cache"] if args.cache == "off" else []) if today else []
            os.environ["MIMDSIM_CACHE_DIR"] = os.path.join(scratch, "cache")  # the children's; never the user's
            timing = run_child(side.tree, [sys.executable, "-m", "mimdsim", "sweep", "--serial", "--quiet", *flags,
                                           path], scratch)
            check_results(path.replace(".toml", ".jsonl"), len(pts), side.label)
            if index >= 0:
                cpu.setdefault(side.label, []).append(timing.cpu)
            return timing.wall

        result = compare(ref, new, run, pairs=args.pairs)
    print(f"{n} of {len(grid_points(args.grid, args.order))} points of the {args.grid} grid ({args.order} order"
          f"{'' if args.points is None else f', every {len(grid_points(args.grid, args.order)) // n}th point'}; "
          f"today's placement searches {'in each timed run' if args.cache == 'off' else 'read from disk'}), "
          f"{len({(p['chip.tiles'], p['model.timesteps'], p['model.batch']) for p in points})} shapes; one cold "
          f"`mimdsim sweep --serial` process per run, start-up included; warmed on one point first"
          + (f"; pinned counts per tile count: {rule}" if rule else ""))
    print("\n".join(result.lines("wall s")))
    by_cpu = Comparison(ref, new, list(zip(cpu[ref.label], cpu[new.label])), result.order, result.load_before,
                        result.load_after)
    print("the same runs by CPU seconds (user + system, less sensitive to other load):")
    print("\n".join("  " + line for line in by_cpu.lines("CPU s")))
    for i, side in enumerate((ref, new)):
        print(f"{side.label}: points/s median {statistics.median(n / p[i] for p in result.pairs):.1f}")


if __name__ == "__main__":
    main()
