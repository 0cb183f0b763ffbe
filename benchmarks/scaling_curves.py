"""Simulator wall time against tiles, timesteps, neurons and activity (execution-driven).

    python benchmarks/scaling_curves.py [--out docs/figures]

Each curve varies one parameter of a base run (700-512-512-20, T = 50, B = 16, ipu-mk2 with
512 tiles, input activity 2%) and records the simulator's wall time beside the chip's work:
the spikes sent (kept spikes summed over layers) and the tile-vertex count. The simulator's
cost should grow like the chip's work — linearly in spikes and timesteps, not in neurons
squared. Prints a table per curve; writes simulator_scaling.png when matplotlib is installed.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

import mimdsim

BASE = dict(hidden=512, T=50, B=16, tiles=512, rate=0.02)


def measure(hidden, T, B, tiles, rate, repeats=2):
    sizes = [700, hidden, hidden, 20]
    net = mimdsim.Network.feedforward(sizes, max_activity=min(1.0, 2.5 * rate + 0.01), weight_scale=5.0)
    rng = np.random.default_rng(0)
    x = (rng.random((T, B, 700)) < rate).astype(np.uint8)
    y = rng.integers(0, 20, B)
    chip = mimdsim.chip("ipu-mk2", tiles=tiles)
    first = mimdsim.simulate(net, chip, inputs=x, labels=y)  # compile once
    if first.report.silent_layers():  # a silent network times nothing
        raise SystemExit(f"{sizes}: layers {first.report.silent_layers()} never spiked "
                         f"({first.report.activity_line()}); not timing a silent network")
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        run = mimdsim.simulate(net, chip, inputs=x, labels=y)
        times.append(time.perf_counter() - t0)
    spikes = sum(ly["kept_spikes"] for ly in run.report.layers)
    return statistics.median(times), spikes, run.report.placement["tiles_used"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="docs/figures")
    args = ap.parse_args()
    curves = {
        "tiles": ("tiles", [64, 128, 256, 512, 1024]),
        "timesteps": ("T", [25, 50, 100, 200]),
        "neurons per hidden layer": ("hidden", [256, 512, 1024, 2048]),
        "input activity": ("rate", [0.005, 0.01, 0.02, 0.04, 0.08]),
    }
    results = {}
    for title, (key, values) in curves.items():
        rows = []
        for v in values:
            kw = dict(BASE, **{key: v})
            if key == "hidden":  # keep neurons per tile at 2 when the layers grow
                kw["tiles"] = min(1472, v + 32)
            wall, spikes, tiles_used = measure(**kw)
            rows.append((v, wall, spikes, tiles_used))
        results[title] = rows
        print(f"\n{title}: value | wall s | spikes sent | tiles used | wall per 1k spikes (ms)")
        for v, wall, spikes, tu in rows:
            print(f"{v} | {wall:.3f} | {spikes:,} | {tu} | {1e3 * wall / max(spikes, 1) * 1e3:.3f}")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no figure")
        return
    fig, axes = plt.subplots(1, 4, figsize=(15, 3.4))
    for ax, (title, rows) in zip(axes, results.items()):
        v = np.array([r[0] for r in rows], float)
        wall = np.array([r[1] for r in rows])
        spikes = np.array([r[2] for r in rows], float)
        ax.loglog(v, wall, "o-", label="simulator wall time (s)")
        ax.loglog(v, wall[0] * spikes / spikes[0], "k--", lw=0.8, label="∝ spikes sent")
        ax.loglog(v, wall[0] * v / v[0], ":", color="grey", lw=0.8, label="∝ parameter")
        ax.set_xlabel(title)
        ax.legend(fontsize=7)
    axes[0].set_ylabel("seconds per simulated step")
    fig.suptitle("mimdsim execution-driven step: simulator cost against the chip's work")
    fig.tight_layout()
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "simulator_scaling.png")
    fig.savefig(path, dpi=110)
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
