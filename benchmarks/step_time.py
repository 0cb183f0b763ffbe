"""One execution-driven training step of the reference configuration, and today against bfbd7d3.

    python benchmarks/step_time.py [--repeats 5] [--pairs 3] [--ref COMMIT | --ref-tree DIR | --no-ref]

Model 2312-978-978-976-10, T = 100, B = 48, max activity 1% (K = 22/8/8/8/2), on
``ipu-mk2``; inputs are random spikes at 0.5% and weights are scaled (x6) so that hidden
layers fire at about 1-1.5%. The baseline measured in the same run is a plain dense
NumPy BPTT of the same step (float32 matmuls: the work a dense CPU implementation does).
Prints the median of ``--repeats`` runs after one warm-up (numba compilation).

Then (unless ``--no-ref``) the same step with today's code against the reference commit
(``benchmarks/against_reference.py``: bfbd7d3 exported, a child process per run on its own tree,
one run of each side per pair, alternating, each side warmed once): each child makes the same
network and inputs, calls the step once (numba's cache load) and reports the median of
``--repeats`` steps; printed: today's speed relative to the reference per pair, median, range
and load. Both trees' numerics are the same step's (loss compared).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

from against_reference import HERE, add_arguments, compare, run_child, sides

SIZES, T, B = [2312, 978, 978, 976, 10], 100, 48


def workload():
    import mimdsim
    net = mimdsim.Network.feedforward(SIZES, max_activity=0.01, weight_scale=6.0)
    rng = np.random.default_rng(0)
    x = (rng.random((T, B, SIZES[0])) < 0.005).astype(np.uint8)
    y = rng.integers(0, SIZES[-1], B)
    return mimdsim, net, x, y


def child(repeats):
    """One run on the tree on PYTHONPATH: a first call, then the median of ``repeats`` steps; JSON on stdout."""
    mimdsim, net, x, y = workload()
    run = mimdsim.simulate(net, "ipu-mk2", inputs=x, labels=y)
    steps = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        mimdsim.simulate(net, "ipu-mk2", inputs=x, labels=y)
        steps.append(time.perf_counter() - t0)
    print(json.dumps({"mimdsim": os.path.realpath(mimdsim.__file__), "seconds": statistics.median(steps),
                      "loss": float(run.loss), "silent": run.report.silent_layers()}))


def against(args):
    losses = {}
    with sides(args) as (ref, new, scratch):
        def run(side, index):
            rep = run_child(side.tree, [sys.executable, os.path.abspath(__file__), "--child",
                                        "--repeats", str(args.repeats)], scratch).reported
            if not rep["mimdsim"].startswith(os.path.realpath(side.tree) + os.sep) or rep["silent"]:
                raise SystemExit(f"{side.label}: imported {rep['mimdsim']}, silent layers {rep['silent']}")
            losses[side.label] = rep["loss"]
            return rep["seconds"]
        result = compare(ref, new, run, pairs=args.pairs)
    print(f"the same step, a child process per run, median of {args.repeats} steps after a first call; "
          f"loss {', '.join(f'{k} {v:.6g}' for k, v in losses.items())}")
    print("\n".join(result.lines("step s")))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    add_arguments(ap)
    ap.add_argument("--no-ref", action="store_true", help="skip the comparison with the reference")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.repeats)
    sys.path[:0] = [HERE, os.path.join(HERE, "tests")]  # today's package; tests/reference.py's dense BPTT
    mimdsim, net, x, y = workload()
    sizes = SIZES

    t0 = time.perf_counter()
    run = mimdsim.simulate(net, "ipu-mk2", inputs=x, labels=y)
    first = time.perf_counter() - t0
    if run.report.silent_layers():  # a silent network times nothing: refuse to report a speed for it
        raise SystemExit(f"layers {run.report.silent_layers()} never spiked ({run.report.activity_line()}); "
                         f"not timing a silent network")
    sim = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        mimdsim.simulate(net, "ipu-mk2", inputs=x, labels=y)
        sim.append(time.perf_counter() - t0)

    from reference import dense_bptt_numpy  # independent dense BPTT, the baseline
    dense = []
    for _ in range(max(1, args.repeats // 2)):
        t0 = time.perf_counter()
        dense_bptt_numpy(net.weights, x, y, alpha=0.95, c=10.0, theta1=1.0, beta=10.0, dtype=np.float32)
        dense.append(time.perf_counter() - t0)

    rep = run.report
    act = ", ".join(f"{100 * ly['activity']:.2f}%" for ly in rep.layers[1:])
    print(f"model {rep.model}, T={T}, B={B}, ipu-mk2, activity per layer {act}")
    print(f"simulated chip: {rep.samples_per_second:,.0f} samples/s ({rep.seconds_per_step * 1e3:.3f} ms/step)")
    print(f"first call (incl. numba cache load/compile): {first:.3f} s")
    print(f"execution-driven step, median of {args.repeats}: {statistics.median(sim):.3f} s")
    print(f"dense NumPy BPTT (float32) baseline, median: {statistics.median(dense):.3f} s")
    print(f"ratio simulator / dense NumPy: {statistics.median(sim) / statistics.median(dense):.2f}")
    if not args.no_ref:
        against(args)


if __name__ == "__main__":
    main()
