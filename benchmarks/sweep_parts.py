"""Where a what-if sweep's time goes, point by point: today's code alone, in this process.

    python benchmarks/sweep_parts.py [--points N] [--grid issue41|issue27] [--order issue|shapes]

Runs ``benchmarks/sweep_search.py``'s sweep (issue 41's 360 points by default; ``--points N``
every k-th of them) serially through ``mimdsim.sweep.run_serial`` with every placement searched
in the run (no disk cache), and times each stage of every point with wall clocks wrapped around
the pipeline's own functions (no profiler, so no profiler overhead):

- the placement search: ``workloads.snn.simulate._choose_program`` (candidates compiled, each
  fitting one scored by ``placement.score``, itself timed and counted);
- the point's run: ``engine.run_program`` called from ``_run_and_band``, every iteration;
- the band: ``engine.band.chip_band`` (the re-costs of the recorded supersteps and fields);
- energy: ``simulate._add_energy``;
- the rest of the point (resolving the settings, the report's sections, the record written).

It then projects what the sweep would cost per point if a part were free, against a reference
time per point given with ``--ref-ms`` (e.g. bfbd7d3's, from ``sweep_search.py`` in the same
session): what each part weighs against issue 41's 3x. Timings are this machine's; the shares
and the projection are the reading, not the absolute figures.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

from sweep_search import GRIDS, ORDERS, grid_points, sweep_file


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", choices=sorted(GRIDS), default="issue41")
    ap.add_argument("--order", choices=sorted(ORDERS), default="issue")
    ap.add_argument("--points", type=int, default=None)
    ap.add_argument("--ref-ms", type=float, default=None,
                    help="the reference's milliseconds per point (wall, start-up included), for the projection")
    args = ap.parse_args()
    t_start = time.perf_counter()
    import mimdsim  # noqa: F401  (imports timed as start-up)
    from mimdsim.engine import band as band_module
    from mimdsim.sweep import load_sweep, run_serial
    from mimdsim.workloads.snn import placement, simulate
    t_imported = time.perf_counter()

    spent = {"search": 0.0, "score": 0.0, "run": 0.0, "band": 0.0, "energy": 0.0, "points": 0.0}
    counts = {"scores": 0, "points": 0}

    def timed(name, fn, count=None):
        def wrapper(*a, **kw):
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                spent[name] += time.perf_counter() - t0
                if count:
                    counts[count] += 1
        return wrapper

    run_and_band = simulate._run_and_band
    chip_band = simulate.chip_band

    def run_only(call, program, source, *, timeline, progress, band):
        t0 = time.perf_counter()
        out = run_and_band(call, program, source, timeline=timeline, progress=progress, band=band)
        spent["run"] += time.perf_counter() - t0  # the band's share is taken out below
        return out

    def band_timed(*a, **kw):
        t0 = time.perf_counter()
        try:
            return chip_band(*a, **kw)
        finally:
            dt = time.perf_counter() - t0
            spent["band"] += dt
            spent["run"] -= dt

    simulate._choose_program = timed("search", simulate._choose_program)
    placement.score = timed("score", placement.score, "scores")
    simulate._run_and_band = run_only
    simulate.chip_band = band_timed
    simulate._add_energy = timed("energy", simulate._add_energy)
    simulate.simulate = timed("points", simulate.simulate, "points")
    assert band_module.chip_band is chip_band

    points = grid_points(args.grid, args.order, args.points)
    max_activity = max(max(GRIDS[args.grid]["run.activity"]), 0.01)
    with tempfile.TemporaryDirectory() as scratch:
        path = sweep_file(scratch, "parts", points, max_activity)
        sweep = load_sweep(path)
        t0 = time.perf_counter()
        done = run_serial(sweep, cache=False)
        t_sweep = time.perf_counter() - t0
    n = counts["points"]
    if done != len(points) or n != len(points):
        raise SystemExit(f"{done} of {len(points)} points computed ({n} simulated)")
    ms = lambda s: 1e3 * s / n  # noqa: E731  per point
    start = t_imported - t_start
    rest = spent["points"] - spent["search"] - spent["run"] - spent["band"] - spent["energy"]
    outside = t_sweep - spent["points"]
    total = start + t_sweep
    print(f"{n} points ({args.grid} grid, {args.order} order), serial, every placement searched in this run; "
          f"{os.cpu_count()} cores, load average {'/'.join(f'{v:.1f}' for v in os.getloadavg())}")
    print(f"{'part':<58}{'s':>8}{'ms/point':>10}{'share':>8}")
    rows = [("import mimdsim (its lazy imports fall in the first point)", start),
            (f"placement search ({counts['scores'] / n:.2f} candidates scored a point)", spent["search"]),
            (f"  of which scoring ({1e3 * spent['score'] / max(counts['scores'], 1):.1f} ms a candidate)",
             spent["score"]),
            ("the point's run", spent["run"]), ("the band", spent["band"]), ("energy", spent["energy"]),
            ("the rest of simulate (settings, report sections)", rest),
            ("the sweep around simulate (records, table)", outside)]
    for label, s in rows:
        print(f"{label:<58}{s:8.2f}{ms(s):10.1f}{100 * s / total:7.0f}%")
    print(f"{'total':<58}{total:8.2f}{ms(total):10.1f}")
    if args.ref_ms:
        target = args.ref_ms / 3
        print(f"reference {args.ref_ms:.1f} ms a point: issue 41's 3x is {target:.1f} ms a point here; today "
              f"{ms(total):.1f} ({args.ref_ms / ms(total):.2f}x)")
        for label, free in (("with the search free", spent["search"]),
                            ("with the search and the band free", spent["search"] + spent["band"]),
                            ("with the search, band and energy free", spent["search"] + spent["band"] + spent["energy"])):
            left = total - free
            print(f"  {label}: {ms(left):.1f} ms a point, {args.ref_ms / ms(left):.2f}x")


if __name__ == "__main__":
    sys.exit(main())
