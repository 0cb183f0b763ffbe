"""Speedup of the MIMD chip over GPU strategies against activity (Finkbeiner et al. 2024, Fig. activity sweep).

    python examples/activity_sweep.py [--timesteps 100] [--batch 48] [--precision fp32] [--schedule fused] [--out DIR]

Configurations of ``reference/algorithms.md`` §1: 2312 inputs (NMNIST, input K = 32), 2942
hidden neurons split into 2-5 layers, 10 outputs, 2 neurons per tile on ``ipu-mk2``, against
``a100-40gb`` under the ``per-step``, ``fused`` and ``sparse`` strategies. For each max activity
the chip is simulated rate-driven with lists half full of spikes (activity = max activity / 2, as
many candidates); the GPU sparse strategy sees the same activity. The chip runs mimdsim's
hand-fused program (``--schedule fused``, the tables of docs/validation.md) or the study's op as
built (``--schedule published``, the default of ``mimdsim simulate`` for this model). Points whose memory plan does not fit the tiles are reported as such. Writes
``activity_sweep.json`` and, if matplotlib is installed, ``activity_sweep.png`` into ``--out``.
"""
from __future__ import annotations

import argparse
import json
import os

import mimdsim

HIDDEN = {2: [1466, 1466], 3: [978, 978, 976], 4: [734, 734, 732, 732], 5: [588, 586, 586, 586, 586]}
MAX_ACTIVITY = [0.005, 0.01, 0.02, 0.025, 0.05, 0.1, 0.2, 0.25, 0.5]


STRATEGIES = ("per-step", "fused", "sparse")  # the table's columns (compare's default is compiled, eager, fused)


def sweep(timesteps, batch, precision, gpu="a100-40gb", schedule="fused"):
    rows = []
    for h, hidden in HIDDEN.items():
        for ma in MAX_ACTIVITY:
            net = mimdsim.Network.feedforward([2312] + hidden + [10], max_activity=ma, input_capacity=32)
            row = {"hidden_layers": h, "max_activity": ma}
            try:
                c = mimdsim.compare(net, "ipu-mk2", gpu, timesteps=timesteps, batch_size=batch,
                                    activity=ma / 2, neurons_per_tile=2, precision=precision,
                                    strategies=STRATEGIES, schedule=schedule)
            except mimdsim.OutOfTileMemory as e:
                row["does_not_fit"] = f"tile {e.tile} needs {e.used:,} B of {e.limit:,} B " \
                                      f"(largest: {max(e.breakdown, key=e.breakdown.get)})"
                rows.append(row)
                continue
            row["mimd_samples_per_second"] = c.mimd.samples_per_second
            row["gpu_samples_per_second"] = {s: r.samples_per_second for s, r in c.gpu.items()}
            row["speedup"] = c.speedup
            rows.append(row)
    return rows


def table(rows):
    lines = ["| hidden layers | max activity | MIMD samples/s | per-step | fused | sparse |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        if "does_not_fit" in r:
            lines.append(f"| {r['hidden_layers']} | {100 * r['max_activity']:g}% | does not fit: "
                         f"{r['does_not_fit']} | | | |")
        else:
            sp = r["speedup"]
            lines.append(f"| {r['hidden_layers']} | {100 * r['max_activity']:g}% | {r['mimd_samples_per_second']:,.0f} | "
                         f"{sp['per-step']:.1f}x | {sp['fused']:.1f}x | {sp['sparse']:.1f}x |")
    return "\n".join(lines)


def plot(rows, path, title):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError:
        print("matplotlib is not installed: pip install matplotlib (or the project's 'plot' extra) for the figure")
        return
    fig, axes = plt.subplots(1, 3, figsize=(13, 4), sharey=True)
    for ax, strategy in zip(axes, STRATEGIES):
        for h in HIDDEN:
            pts = [(100 * r["max_activity"], r["speedup"][strategy]) for r in rows
                   if r["hidden_layers"] == h and "speedup" in r]
            if pts:
                ax.plot(*zip(*pts), marker="o", label=f"{h} hidden layers")
        ax.axhspan(5, 10, color="grey", alpha=0.2, label="published 5-10x")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks([100 * a for a in MAX_ACTIVITY], [f"{100 * a:g}" for a in MAX_ACTIVITY], fontsize=7)
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel("max activity (%)")
        ax.set_title(f"A100 {strategy}")
    axes[0].set_ylabel("speedup, MIMD samples/s over GPU")
    axes[0].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--timesteps", type=int, default=100)
    ap.add_argument("--batch", type=int, default=48)
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--schedule", default="fused", choices=("fused", "published"),
                    help="the chip's program (default: fused, as in docs/validation.md's tables)")
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    rows = sweep(args.timesteps, args.batch, args.precision, schedule=args.schedule)
    print(table(rows))
    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, f"activity_sweep_T{args.timesteps}_B{args.batch}_{args.precision}"
                        + ("" if args.schedule == "fused" else f"_{args.schedule}"))
    with open(stem + ".json", "w") as f:
        json.dump(rows, f, indent=2)
    plot(rows, stem + ".png", f"ipu-mk2 ({args.schedule} program) vs a100-40gb ({args.precision}), "
                              f"T={args.timesteps}, B={args.batch}")


if __name__ == "__main__":
    main()
