"""Sparse versus dense BPTT on the simulated chip: convergence and time-to-accuracy.

    python examples/sparse_vs_dense.py [--epochs 40] [--jobs 2] [--out docs/figures]

The same network (64-512-512-10 LIF, scikit-learn's 8x8 digits rate-coded over T = 20
steps), the same initial weights and the same data order are trained four times on
``ipu-mk2``: with dense gradients (every list holds the whole layer, theta2 = -inf) and
with max activity 1%, 5% and 10% (K = even floor(a * n), at least 2; theta2 scheduled from
-100 halfway towards 0.9 every step, as in Finkbeiner et al. 2024). The initial weights are
calibrated once on the dense network to a low activity (0.5% per hidden layer, 5% at the
output; ``mimdsim.training.calibrate_activity``) and copied into every run. Per epoch it
records loss, test accuracy and the simulated seconds on the chip and on the GPU model
(A100, fused strategy, fp32); Adam at 2e-3, divided by 10 for the last quarter of the 40
epochs. It writes ``sparse_vs_dense.json``, ``sparse_vs_dense.md``
(a table) and, with matplotlib, ``sparse_vs_dense.png`` into ``--out``. ``--jobs 2`` runs
two trainings at a time in separate processes.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

import mimdsim
from mimdsim import data
from mimdsim.training import calibrate_activity, train

DENSE = "dense"


def build(args, activity):
    """The network of one run; ``activity`` is DENSE or a max activity."""
    sizes = [64] + args.hidden + [10]
    common = dict(overflow=args.overflow, seed=args.seed, weight_scale=1.0)
    if activity == DENSE:
        return mimdsim.Network.feedforward(sizes, capacities=sizes, theta2=-np.inf, **common)
    return mimdsim.Network.feedforward(sizes, max_activity=activity, input_capacity=64, theta2=args.theta2, **common)


def dataset(args):
    return data.digits("rate", args.timesteps, max_rate=args.max_rate, seed=args.seed)


def initial_weights(args):
    net = build(args, DENSE)
    calibrate_activity(net, args.chip, dataset(args), args.init_activity, batch_size=args.batch, seed=args.seed)
    return net.weights


def run_one(args, activity, weights):
    net = build(args, activity)
    net.weights = [w.copy() for w in weights]
    t0 = time.perf_counter()
    result = train(net, args.chip, dataset(args), epochs=args.epochs, batch_size=args.batch,
                   optimizer=mimdsim.Adam(lr=args.lr), lr_schedule=args.lr_schedule, layerwise_lr=args.layerwise_lr,
                   theta2_schedule=None if activity == DENSE else "halfway", seed=args.seed,
                   gpu=args.gpu, gpu_strategy=args.gpu_strategy, progress=False)
    return {"run": activity if activity == DENSE else f"{100 * activity:g}%", "max_activity": activity,
            "capacities": list(net.capacities), "wall_seconds": time.perf_counter() - t0,
            "history": [e.to_dict() for e in result.history]}


def first_reaching(history, key, level):
    for e in history:
        if e["test_accuracy"] is not None and e["test_accuracy"] >= level:
            return e[key]
    return None


def table(runs, level=0.9):
    lines = [f"| run | capacities K | final test acc. | best | chip s (all epochs) | GPU s (all epochs) | "
             f"epochs to {100 * level:g}% | chip s to {100 * level:g}% | GPU s to {100 * level:g}% | wall s |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    fmt = lambda v, f: "-" if v is None else format(v, f)  # noqa: E731
    for r in runs:
        h = r["history"]
        last = h[-1]
        best = max(e["test_accuracy"] for e in h)
        lines.append(f"| {r['run']} | {','.join(map(str, r['capacities']))} | {100 * last['test_accuracy']:.2f}% | "
                     f"{100 * best:.2f}% | {last['chip_seconds_total']:.3f} | {fmt(last['gpu_seconds_total'], '.3f')} | "
                     f"{fmt(first_reaching(h, 'epoch', level), 'd')} | "
                     f"{fmt(first_reaching(h, 'chip_seconds_total', level), '.3f')} | "
                     f"{fmt(first_reaching(h, 'gpu_seconds_total', level), '.3f')} | {r['wall_seconds']:.0f} |")
    return "\n".join(lines)


def plot(runs, path, title):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (pip install 'mimdsim[plot]'); skipping the figure")
        return False
    fig, axes = plt.subplots(2, 3, figsize=(15, 8), sharey="row")
    xs = [("epoch", "epoch"), ("chip_seconds_total", "simulated seconds on the chip"),
          ("gpu_seconds_total", "GPU-model seconds (same steps)")]
    for r in runs:
        h = r["history"]
        for col, (key, label) in enumerate(xs):
            x = [e[key] for e in h]
            if any(v is None for v in x):
                continue
            axes[0, col].plot(x, [e["loss"] for e in h], marker=".", label=r["run"])
            axes[1, col].plot(x, [100 * e["test_accuracy"] for e in h], marker=".", label=r["run"])
            axes[1, col].set_xlabel(label)
            if key != "epoch":
                axes[0, col].set_xscale("log")
                axes[1, col].set_xscale("log")
    axes[0, 0].set_ylabel("training loss")
    axes[1, 0].set_ylabel("test accuracy (%)")
    for ax in axes.flat:
        ax.grid(alpha=0.3)
    axes[0, 0].legend(title="gradients")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=40)
    p.add_argument("--hidden", type=lambda s: [int(v) for v in s.split(",")], default=[512, 512])
    p.add_argument("--timesteps", type=int, default=20)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--max-rate", type=float, default=0.5, help="rate code: spike probability of a white pixel")
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--lr-schedule", default="step", choices=["step", "cosine", "none"])
    p.add_argument("--layerwise-lr", action="store_true", help="lr relative to each layer's initial weight RMS")
    p.add_argument("--theta2", type=float, default=0.9, help="target of the theta2 schedule (sparse runs)")
    p.add_argument("--overflow", default="random", choices=["random", "lowest-index"])
    p.add_argument("--init-activity", type=lambda s: [float(v) for v in s.split(",")], default=[0.005, 0.005, 0.05])
    p.add_argument("--activities", type=lambda s: [float(v) for v in s.split(",")], default=[0.01, 0.05, 0.1])
    p.add_argument("--chip", default="ipu-mk2")
    p.add_argument("--gpu", default="a100-40gb")
    p.add_argument("--gpu-strategy", default="fused")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=2, help="trainings run in parallel (processes)")
    p.add_argument("--out", default="sparse_vs_dense_out")
    args = p.parse_args(argv)
    args.lr_schedule = None if args.lr_schedule == "none" else args.lr_schedule
    os.makedirs(args.out, exist_ok=True)
    t0 = time.perf_counter()
    weights = initial_weights(args)
    print(f"initial weights calibrated to activity {args.init_activity} in {time.perf_counter() - t0:.1f} s")
    plan = [DENSE] + args.activities
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(run_one, args, a, weights) for a in plan]
        runs = []
        for f in futures:
            runs.append(f.result())
            r = runs[-1]
            print(f"{r['run']:>6}: test accuracy {100 * r['history'][-1]['test_accuracy']:.2f}% after "
                  f"{len(r['history'])} epochs, {r['wall_seconds']:.0f} s wall", flush=True)
    tag = "sparse_vs_dense"
    config = {k: v for k, v in vars(args).items() if k != "out"}
    with open(os.path.join(args.out, tag + ".json"), "w") as f:
        json.dump({"config": config, "runs": runs}, f, indent=1)
    md = table(runs)
    with open(os.path.join(args.out, tag + ".md"), "w") as f:
        f.write(md + "\n")
    print(md)
    title = (f"digits (rate, T={args.timesteps}), 64-{'-'.join(map(str, args.hidden))}-10 on {args.chip}, "
             f"batch {args.batch}, Adam {args.lr:g}" + (f" ({args.lr_schedule})" if args.lr_schedule else ""))
    if plot(runs, os.path.join(args.out, tag + ".png"), title):
        print(f"wrote {os.path.join(args.out, tag + '.png')}")
    print(f"total wall time {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
