"""What a band costs: ``simulate`` with its uncertainty section against the same run without.

    python benchmarks/band_overhead.py [--repeats 7] [--execute]

The default model (2312-978-978-976-10, T = 100, B = 48, published program, ipu-mk2), rate-driven
(or execution-driven with ``--execute``), warm (compiled once before timing). The two runs alternate,
``band=True`` then ``band=False``, so the machine's load hits both alike; the ratio is taken per pair
and its median and range over the repeats printed, with CPU time beside wall time. The target is
a ratio under 2 (issue 25). Also checks that the band's point estimate is the plain run's.
"""
from __future__ import annotations

import argparse
import statistics
import time

from mimdsim.config import FILE_KEYS
from mimdsim.workloads.snn.from_settings import build_run
from mimdsim.workloads.snn.simulate import simulate


def timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w, time.process_time() - c, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--execute", action="store_true", help="execution-driven (random input spikes)")
    args = ap.parse_args()
    values = {k: s.default for k, s in FILE_KEYS.items()}
    values["run.execute"] = args.execute
    net, system, kw = build_run(values)
    first = simulate(net, system, **kw).report  # compile and warm every cache
    plain = simulate(net, system, band=False, **kw).report
    assert first.seconds_per_step == plain.seconds_per_step
    ratios, walls, cpus = [], {True: [], False: []}, {True: [], False: []}
    for _ in range(args.repeats):
        pair = {}
        for band in (True, False):
            w, c, _ = timed(lambda: simulate(net, system, band=band, **kw))
            walls[band].append(w)
            cpus[band].append(c)
            pair[band] = c
        ratios.append(pair[True] / pair[False])
    u = first.uncertainty
    print(f"{'execution' if args.execute else 'rate'}-driven default model, {args.repeats} pairs; band: "
          f"{1e3 * u['seconds_per_step'][0]:.3g}-{1e3 * u['seconds_per_step'][1]:.3g} ms/step from "
          f"{u['assumptions']} assumptions ({2 * u['assumptions'] + 2} re-costs)")
    for band in (True, False):
        print(f"  band={band!s:<5}  wall median {statistics.median(walls[band]):.3f} s "
              f"({min(walls[band]):.3f}-{max(walls[band]):.3f}), CPU median {statistics.median(cpus[band]):.3f} s")
    print(f"  CPU ratio with/without per pair: median {statistics.median(ratios):.3f} "
          f"({min(ratios):.3f}-{max(ratios):.3f}); target < 2")


if __name__ == "__main__":
    main()
