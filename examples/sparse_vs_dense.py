"""Sparse versus dense BPTT on the simulated chip: convergence and time-to-accuracy.

    python examples/sparse_vs_dense.py [--epochs 40] [--seeds 0,1,2] [--jobs 2] [--out docs/figures]

The same network (64-512-512-10 LIF, scikit-learn's 8x8 digits rate-coded over T = 20
steps), the same initial weights and the same data order are trained on ``ipu-mk2`` with
dense gradients (every list holds the whole layer, theta2 = -inf) and with max activity
1%, 5% and 10% in the hidden layers (K = even floor(a * n); theta2 scheduled from -100
halfway towards 0.9 every step, as in Finkbeiner et al. 2024). The sparse runs keep the
readout layer dense (K = 10, theta2 = -inf; ``--output sparse`` gives it the capacity rule's
K = 2), as the published accuracy code's dense readout. Every run, dense included, adds an
L1 penalty of 2e-5 per hidden spike to the loss (``--activity-l1``), so the network learns
activity that fits its lists. Initial weights are calibrated per seed on the dense network
to a low activity (0.5% per hidden layer, 5% at the output) and copied into every run of
that seed. Adam at 2e-3, divided by 10 for the last quarter of the 40 epochs.

Per epoch it records loss, test accuracy and the simulated seconds on the chip and on the
GPU model (A100, fused strategy, fp32). Each seed (``--seeds``) changes the data split,
the initial weights and the batch order; the table gives mean and standard deviation over
the seeds of the final accuracy (the mean of the last 5 epochs) and of the gap to the dense
run of the same seed. It writes ``sparse_vs_dense.json``, ``sparse_vs_dense.md`` (the
tables) and, with matplotlib, ``sparse_vs_dense.png`` into ``--out`` (``--tag`` renames
them). ``--jobs 2`` runs two trainings at a time in separate processes. Wider networks
(``--hidden 1024,1024``) need ``--dense-program activations``: dense lists of that width do
not fit the tiles, the dense-activation program (the same numerics) does.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

import mimdsim
from mimdsim import data
from mimdsim.training import calibrate_activity, train

DENSE = "dense"
LAST = 5  # final accuracy: the mean of the last LAST epochs


def build(args, activity, seed):
    """The network of one run; ``activity`` is DENSE or a max activity."""
    sizes = [64] + args.hidden + [10]
    common = dict(overflow=args.overflow, seed=seed, weight_scale=1.0)
    if activity == DENSE:
        net = mimdsim.Network.feedforward(sizes, capacities=sizes, theta2=-np.inf, **common)
        if args.dense_program == "activations":  # the same numerics as a matmul program: fits wider layers
            net = dataclasses.replace(net, dense=(True,) * net.num_layers)
    else:
        net = mimdsim.Network.feedforward(sizes, max_activity=activity, input_capacity=64, theta2=args.theta2,
                                          dense_output=args.output == "dense", **common)
    net.readout = mimdsim.Readout(activity_l1=args.activity_l1)
    return net


def dataset(args, seed):
    return data.digits("rate", args.timesteps, max_rate=args.max_rate, seed=seed)


def initial_weights(args, seed):
    net = build(args, DENSE, seed)
    calibrate_activity(net, args.chip, dataset(args, seed), args.init_activity, batch_size=args.batch, seed=seed)
    return net.weights


def run_one(args, seed, activity, weights):
    net = build(args, activity, seed)
    net.weights = [w.copy() for w in weights]
    t0 = time.perf_counter()
    result = train(net, args.chip, dataset(args, seed), epochs=args.epochs, batch_size=args.batch,
                   optimizer=mimdsim.Adam(lr=args.lr), lr_schedule=args.lr_schedule, layerwise_lr=args.layerwise_lr,
                   theta2_schedule=None if activity == DENSE else "halfway", seed=seed,
                   gpu=args.gpu, gpu_strategy=args.gpu_strategy, progress=False)
    return {"run": label(activity), "seed": seed, "max_activity": activity,
            "capacities": list(net.capacities), "wall_seconds": time.perf_counter() - t0,
            "history": [e.to_dict() for e in result.history]}


def label(activity):
    return activity if activity == DENSE else f"{100 * activity:g}%"


def first_reaching(history, key, level):
    for e in history:
        if e["test_accuracy"] is not None and e["test_accuracy"] >= level:
            return e[key]
    return None


def final_accuracy(history, last=LAST):
    """Mean test accuracy of the last ``last`` epochs: one epoch's figure on 359 test images
    moves by 1-2 points from epoch to epoch."""
    return float(np.mean([e["test_accuracy"] for e in history[-last:]]))


def by_run(runs):
    groups = {}
    for r in runs:
        groups.setdefault(r["run"], []).append(r)
    return groups


def table(runs, level=0.9):
    """Per run kind, over the seeds: mean and standard deviation (the seeds change the data
    split, the initial weights and the batch order)."""
    groups = by_run(runs)
    dense = {r["seed"]: final_accuracy(r["history"]) for r in groups.get(DENSE, [])}
    fmt = lambda v, f: "-" if v is None else format(v, f)  # noqa: E731
    pm = lambda xs, scale=100: f"{scale * np.mean(xs):.1f} ± {scale * np.std(xs):.1f}"  # noqa: E731

    def mean_or_none(xs):
        xs = [x for x in xs if x is not None]
        return (float(np.mean(xs)), len(xs)) if xs else (None, 0)

    n_seeds = len(next(iter(groups.values())))
    lines = [f"| run | capacities K | final acc. (last {LAST} epochs) | gap to dense | last epoch | best epoch | "
             f"reached {100 * level:g}% | epochs to {100 * level:g}% | chip s to {100 * level:g}% | "
             f"GPU s to {100 * level:g}% | chip s (all) | GPU s (all) | wall s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, rs in groups.items():
        finals = [final_accuracy(r["history"]) for r in rs]
        gaps = [final_accuracy(r["history"]) - dense[r["seed"]] for r in rs if r["seed"] in dense]
        last = [r["history"][-1]["test_accuracy"] for r in rs]
        best = [max(e["test_accuracy"] for e in r["history"]) for r in rs]
        ep, n_reached = mean_or_none([first_reaching(r["history"], "epoch", level) for r in rs])
        chip90, _ = mean_or_none([first_reaching(r["history"], "chip_seconds_total", level) for r in rs])
        gpu90, _ = mean_or_none([first_reaching(r["history"], "gpu_seconds_total", level) for r in rs])
        chip, _ = mean_or_none([r["history"][-1]["chip_seconds_total"] for r in rs])
        gpu, _ = mean_or_none([r["history"][-1]["gpu_seconds_total"] for r in rs])
        wall, _ = mean_or_none([r["wall_seconds"] for r in rs])
        lines.append(f"| {name} | {','.join(map(str, rs[0]['capacities']))} | {pm(finals)}% | "
                     f"{pm(gaps) if gaps and name != DENSE else '-'} | {pm(last)}% | {pm(best)}% | {n_reached}/{len(rs)} | "
                     f"{fmt(ep, '.1f')} | {fmt(chip90, '.3f')} | {fmt(gpu90, '.3f')} | {fmt(chip, '.3f')} | "
                     f"{fmt(gpu, '.3f')} | {fmt(wall, '.0f')} |")
    lines.append("")
    lines.append(f"Mean ± standard deviation over {n_seeds} seed(s); 'epochs/seconds to {100 * level:g}%' average "
                 f"the seeds that got there; chip and GPU seconds count training steps only.")
    lines.append("")
    lines.append(f"| run | seed | final acc. (last {LAST}) | last epoch | best | dropped spikes per epoch (last) |")
    lines.append("|---|---|---|---|---|---|")
    for name, rs in groups.items():
        for r in rs:
            h = r["history"]
            lines.append(f"| {name} | {r['seed']} | {100 * final_accuracy(h):.2f}% | {100 * h[-1]['test_accuracy']:.2f}% | "
                         f"{100 * max(e['test_accuracy'] for e in h):.2f}% | "
                         f"{'/'.join(f'{d:,}' for d in h[-1]['dropped_spikes'][1:])} |")
    return "\n".join(lines)


def plot(runs, path, title):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError:
        print("matplotlib is not installed (pip install 'mimdsim[plot]'); skipping the figure")
        return False
    fig, axes = plt.subplots(2, 3, figsize=(15, 8), sharey="row")
    xs = [("epoch", "epoch"), ("chip_seconds_total", "simulated seconds on the chip"),
          ("gpu_seconds_total", "GPU-model seconds (same steps)")]
    for name, rs in by_run(runs).items():
        hs = [r["history"] for r in rs]
        n = min(len(h) for h in hs)
        loss = np.array([[e["loss"] for e in h[:n]] for h in hs])
        acc = 100 * np.array([[e["test_accuracy"] for e in h[:n]] for h in hs])
        for col, (key, xlabel) in enumerate(xs):
            if any(e[key] is None for h in hs for e in h[:n]):
                continue
            x = np.mean([[e[key] for e in h[:n]] for h in hs], axis=0)
            line, = axes[0, col].plot(x, loss.mean(axis=0), marker=".", label=name)
            axes[1, col].plot(x, acc.mean(axis=0), marker=".", color=line.get_color(), label=name)
            axes[1, col].fill_between(x, acc.min(axis=0), acc.max(axis=0), color=line.get_color(), alpha=0.15)
            axes[1, col].set_xlabel(xlabel)
            if key != "epoch":
                for ax in axes[:, col]:
                    ax.set_xscale("log")
                    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    axes[0, 0].set_ylabel("training loss (mean over seeds)")
    axes[1, 0].set_ylabel("test accuracy (%): mean, band = min-max over seeds")
    axes[1, 0].set_ylim(bottom=50)
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
    p.add_argument("--output", default="dense", choices=["dense", "sparse"],
                   help="sparse runs' readout layer: dense (K = 10, theta2 = -inf, as the published accuracy "
                        "code's dense readout) or sparse (K = 2 by the capacity rule, theta2 scheduled)")
    p.add_argument("--activity-l1", type=float, default=2e-5,
                   help="lambda of the L1 penalty on hidden spikes (every run, dense included)")
    p.add_argument("--overflow", default="random", choices=["random", "lowest-index"])
    p.add_argument("--init-activity", type=lambda s: [float(v) for v in s.split(",")], default=[0.005, 0.005, 0.05])
    p.add_argument("--activities", type=lambda s: [float(v) for v in s.split(",")], default=[0.01, 0.05, 0.1])
    p.add_argument("--dense-program", default="lists", choices=["lists", "activations"],
                   help="the dense run as spike lists with K = n, or as dense activations (a matmul program with "
                        "the same numerics whose memory fits wider layers, e.g. --hidden 1024,1024)")
    p.add_argument("--skip-dense", action="store_true", help="only the sparse runs (no gap to dense in the table)")
    p.add_argument("--chip", default="ipu-mk2")
    p.add_argument("--gpu", default="a100-40gb")
    p.add_argument("--gpu-strategy", default="fused")
    p.add_argument("--seeds", type=lambda s: [int(v) for v in s.split(",")], default=[0, 1, 2],
                   help="one study per seed (data split, initial weights, batch order)")
    p.add_argument("--jobs", type=int, default=2, help="trainings run in parallel (processes)")
    p.add_argument("--out", default="sparse_vs_dense_out")
    p.add_argument("--tag", default="sparse_vs_dense", help="file name of the outputs (TAG.json, TAG.md, TAG.png)")
    args = p.parse_args(argv)
    args.lr_schedule = None if args.lr_schedule == "none" else args.lr_schedule
    os.makedirs(args.out, exist_ok=True)
    t0 = time.perf_counter()
    weights = {seed: initial_weights(args, seed) for seed in args.seeds}
    print(f"initial weights calibrated to activity {args.init_activity} for seeds {args.seeds} in "
          f"{time.perf_counter() - t0:.1f} s")
    kinds = ([] if args.skip_dense else [DENSE]) + args.activities
    plan = [(seed, a) for seed in args.seeds for a in kinds]  # the long dense runs first
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(run_one, args, seed, a, weights[seed]) for seed, a in plan]
        runs = []
        for f in futures:
            runs.append(f.result())
            r = runs[-1]
            print(f"{r['run']:>6} seed {r['seed']}: test accuracy {100 * final_accuracy(r['history']):.2f}% "
                  f"(mean of the last {LAST} of {len(r['history'])} epochs), {r['wall_seconds']:.0f} s wall",
                  flush=True)
    tag = args.tag
    config = {k: v for k, v in vars(args).items() if k not in ("out", "tag")}
    with open(os.path.join(args.out, tag + ".json"), "w") as f:
        json.dump({"config": config, "runs": runs}, f, indent=1)
    md = table(runs)
    with open(os.path.join(args.out, tag + ".md"), "w") as f:
        f.write(md + "\n")
    print(md)
    title = (f"digits (rate, T={args.timesteps}), 64-{'-'.join(map(str, args.hidden))}-10 on {args.chip}, "
             f"batch {args.batch}, Adam {args.lr:g}" + (f" ({args.lr_schedule})" if args.lr_schedule else "")
             + (f", L1 {args.activity_l1:g}" if args.activity_l1 else "") + f", {len(args.seeds)} seed(s)"
             + (", dense run as dense activations" if args.dense_program == "activations" else ""))
    if plot(runs, os.path.join(args.out, tag + ".png"), title):
        print(f"wrote {os.path.join(args.out, tag + '.png')}")
    print(f"total wall time {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
