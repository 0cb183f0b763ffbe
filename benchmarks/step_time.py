"""Wall time of one execution-driven training step of the reference configuration.

    python benchmarks/step_time.py [--repeats 5]

Model 2312-978-978-976-10, T = 100, B = 48, max activity 1% (K = 22/8/8/8/2), on
``ipu-mk2``; inputs are random spikes at 0.5% and weights are scaled (x6) so that hidden
layers fire at about 1-1.5%. The baseline measured in the same run is a plain dense
NumPy BPTT of the same step (float32 matmuls: the work a dense CPU implementation does).
Prints the median of ``--repeats`` runs after one warm-up (numba compilation).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

import mimdsim  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    sizes, T, B = [2312, 978, 978, 976, 10], 100, 48
    net = mimdsim.Network.feedforward(sizes, max_activity=0.01, weight_scale=6.0)
    rng = np.random.default_rng(0)
    x = (rng.random((T, B, sizes[0])) < 0.005).astype(np.uint8)
    y = rng.integers(0, sizes[-1], B)

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


if __name__ == "__main__":
    main()
