"""Sweep figures: the metric over one axis (lines) or two axes (heatmaps).

Where the points have energy (docs/energy.md), samples per joule (or, for comparisons, the
energy ratio) is plotted too: on a second y axis of a line plot, as its own heatmap."""
from __future__ import annotations

import os

import numpy as np

from ..report.plots import pyplot, save_figure


ENERGY = ("energy ratio", "samples/J")  # metric names plotted on the energy axis


def metrics(rec) -> dict:
    """What a point is plotted by: speedup (and energy ratio) per strategy for comparisons, else
    samples/s (and samples/J)."""
    if rec.get("speedup"):
        return {**{f"speedup vs {k}": v for k, v in rec["speedup"].items()},
                **{f"energy ratio vs {k}": v for k, v in rec.get("energy_ratio", {}).items()}}
    return {"MIMD samples/s": rec["samples_per_second"],
            **({"MIMD samples/J": rec["samples_per_joule"]} if "samples_per_joule" in rec else {})}


def plot_sweep(sweep, records, folder) -> list[str]:
    plt = pyplot()
    os.makedirs(folder, exist_ok=True)
    ok = [r for r in records if r.get("status") == "ok"]
    if not ok:
        return []
    axes = list(sweep.axes)
    names = list(metrics(ok[0]))
    paths = []
    note = f" (mean over {', '.join(axes[2:])})" if len(axes) > 2 else ""
    if len(axes) == 1 or len({r['params'][axes[1]] for r in ok}) == 1:
        x = sorted({r["params"][axes[0]] for r in ok})
        fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
        energy = [n for n in names if n.startswith(ENERGY[0]) or n.endswith(ENERGY[1])]
        right = ax.twinx() if energy else None
        for name in names:
            y = [np.mean([metrics(r)[name] for r in ok if r["params"][axes[0]] == v]) for v in x]
            (right if name in energy else ax).plot(x, y, marker="s" if name in energy else "o", label=name,
                                                   linestyle="--" if name in energy else "-")
        if all(isinstance(v, (int, float)) and v > 0 for v in x) and max(x) / min(x) > 20:
            ax.set_xscale("log")
        ax.set_xlabel(axes[0])
        if right is not None:
            right.set_ylabel(", ".join(energy) if len(energy) == 1 else "energy (dashed)")
            lines = ax.get_legend_handles_labels()
            more = right.get_legend_handles_labels()
            ax.legend(lines[0] + more[0], lines[1] + more[1], fontsize=8)
        else:
            ax.legend(fontsize=8)
        ax.set_title(os.path.basename(sweep.path) + note)
        paths += save_figure(fig, folder, "sweep")
        plt.close(fig)
        return paths
    xs = sorted({r["params"][axes[0]] for r in ok})
    ys = sorted({r["params"][axes[1]] for r in ok})
    for i, name in enumerate(names):
        grid = np.full((len(ys), len(xs)), np.nan)
        for a, xv in enumerate(xs):
            for b, yv in enumerate(ys):
                vals = [metrics(r)[name] for r in ok if r["params"][axes[0]] == xv and r["params"][axes[1]] == yv]
                if vals:
                    grid[b, a] = np.mean(vals)
        fig, ax = plt.subplots(figsize=(2.5 + 0.7 * len(xs), 1.8 + 0.5 * len(ys)), layout="constrained")
        im = ax.imshow(grid, origin="lower", aspect="auto", cmap="viridis")
        for b in range(len(ys)):
            for a in range(len(xs)):
                if not np.isnan(grid[b, a]):
                    ax.text(a, b, f"{grid[b, a]:.3g}", ha="center", va="center", fontsize=7, color="w")
        ax.set_xticks(range(len(xs)), [f"{v:g}" if isinstance(v, float) else str(v) for v in xs], fontsize=7)
        ax.set_yticks(range(len(ys)), [f"{v:g}" if isinstance(v, float) else str(v) for v in ys], fontsize=7)
        ax.set_xlabel(axes[0])
        ax.set_ylabel(axes[1])
        fig.colorbar(im, ax=ax).set_label(name)
        ax.set_title(name + note, fontsize=9)
        paths += save_figure(fig, folder, f"sweep_{i}")
        plt.close(fig)
    return paths
