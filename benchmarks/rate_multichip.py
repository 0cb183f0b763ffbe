"""Rate-driven step of the largest multi-chip configuration (16 chips, 187,392 neurons, T = 10, B = 24).

    python benchmarks/rate_multichip.py [--repeats 3]

The configuration of reference/algorithms.md §1 (12 layers of 976 per chip at 8 neurons per
tile, SHD input). Baseline in the same run: the 1-chip configuration (12 layers).
"""
from __future__ import annotations

import argparse
import statistics
import time

import mimdsim


def run(chips):
    net = mimdsim.Network.feedforward([700] + [976] * (12 * chips) + [20], max_activity=0.01, input_capacity=48)
    t0, c0 = time.perf_counter(), time.process_time()
    mimdsim.simulate(net, mimdsim.system("ipu-mk2", chips=chips), timesteps=10, batch_size=24, activity=0.005,
                     neurons_per_tile=8)
    return time.perf_counter() - t0, time.process_time() - c0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    first, first_cpu = run(16)
    r16 = [run(16) for _ in range(args.repeats)]
    r1 = [run(1) for _ in range(args.repeats)]
    t16, c16 = statistics.median(w for w, _ in r16), statistics.median(c for _, c in r16)
    t1 = statistics.median(w for w, _ in r1)
    print(f"16 chips (187,412 neurons): first call {first:.2f} s wall, {first_cpu:.2f} s CPU (includes compilation); "
          f"step median {t16:.2f} s wall (runs {', '.join(f'{w:.2f}' for w, _ in r16)}), {c16:.2f} s CPU; "
          f"1 chip: {t1:.3f} s; ratio {t16 / t1:.1f} for 16x the neurons")


if __name__ == "__main__":
    main()
