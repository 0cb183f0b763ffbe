"""Sweep results: the table the sweep command prints, and the figures ``--plot`` draws.

What is drawn fits the sweep: a zip sweep (or one axis) gets one point per swept point (a line over
a numeric axis, else bars), a 2-axis grid a heatmap per metric, a grid of more axes one heatmap per
value of the further axes (facets), a random sweep the metric against each axis. Every series has
one colour and one legend entry; failed points are marked (a black cross, or "failed" in a cell).
Where the points have energy (docs/energy.md), samples per joule (or, for comparisons, the energy
ratio) is plotted too: dashed on a second y axis, or as its own heatmap."""
from __future__ import annotations

import itertools
import os

import numpy as np

from ..report.plots import pyplot, save_figure


ENERGY = ("energy ratio", "samples/J")  # metric names plotted on the energy axis
ALL_ROWS = 20  # a sweep of at most this many points prints every point; a larger one its best and worst
BEST_WORST = 5  # rows of each end printed for a larger sweep
MAX_FACETS = 12  # heatmaps per figure of a grid of three or more axes


def metrics(rec) -> dict:
    """What a point is plotted by: speedup (and energy ratio) per strategy for comparisons, else
    samples/s (and samples/J)."""
    if rec.get("speedup"):
        return {**{f"speedup vs {k}": v for k, v in rec["speedup"].items()},
                **{f"energy ratio vs {k}": v for k, v in rec.get("energy_ratio", {}).items()}}
    return {"MIMD samples/s": rec["samples_per_second"],
            **({"MIMD samples/J": rec["samples_per_joule"]} if "samples_per_joule" in rec else {})}


def value_text(v) -> str:
    """An axis value or a metric as a reader takes it in: 3-4 significant digits, thousands separated."""
    if isinstance(v, bool) or not isinstance(v, (int, float, np.number)):
        return str(v)
    if isinstance(v, (int, np.integer)):
        return f"{v:,}"
    if v != 0 and (abs(v) >= 1e9 or abs(v) < 1e-3):
        return f"{v:.3g}"
    return f"{v:.3g}" if abs(v) < 1000 else f"{float(f'{v:.4g}'):,.0f}"  # 4 significant digits, thousands apart


def results_table(sweep, records) -> list[str]:
    """The sweep's points, one row each (every point when at most 20, else the best and the worst 5
    by the first metric, failed points counted): the axis values, the metrics, the status."""
    axes = list(sweep.axes)
    ok = [r for r in records if r.get("status") == "ok"]
    failed = [r for r in records if r.get("status") != "ok"]
    if not records:
        return []
    names = list(metrics(ok[0])) if ok else []
    head = [*axes, *names, "status"]
    if len(records) <= ALL_ROWS:
        shown, title = records, f"results ({len(records)} point(s), in sweep order):"
    else:
        key = names[0]
        ranked = sorted(ok, key=lambda r: metrics(r).get(key, np.nan), reverse=True)
        shown = ranked[:BEST_WORST] + [None] + ranked[-BEST_WORST:] if len(ranked) > 2 * BEST_WORST else ranked
        title = (f"results: the best and the worst {BEST_WORST} of {len(ok)} computed point(s) by {key}"
                 + (f"; {len(failed)} failed (listed below)" if failed else ""))

    def cells(r):
        if r is None:
            return ["..."] + [""] * (len(head) - 1)
        m = metrics(r) if r.get("status") == "ok" else {}
        return [value_text(r["params"].get(a, "")) for a in axes] + \
            [value_text(m[n]) if n in m else "-" for n in names] + [r.get("status", "?")]

    rows = [cells(r) for r in shown]
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(head)]
    return [title, "  " + "  ".join(f"{h:>{w}}" for h, w in zip(head, widths)),
            *("  " + "  ".join(f"{c:>{w}}" for c, w in zip(row, widths)) for row in rows)]


def plot_sweep(sweep, records, folder) -> list[str]:
    """Draw what fits the sweep (module docstring) into ``folder``; returns the files written."""
    plt = pyplot()
    os.makedirs(folder, exist_ok=True)
    ok = [r for r in records if r.get("status") == "ok"]
    if not ok:
        return []
    axes = list(sweep.axes)
    varied = [a for a in axes if len({_key(r["params"].get(a)) for r in records}) > 1] or axes[:1]
    if sweep.mode == "random":
        return _against_each_axis(plt, sweep, records, varied, folder)
    if sweep.mode == "zip" or len(varied) == 1:
        return _per_point(plt, sweep, records, varied, folder)
    return _heatmaps(plt, sweep, records, varied, folder)


def _key(v):
    return repr(v)


def _is_number(v) -> bool:
    return isinstance(v, (int, float, np.number)) and not isinstance(v, bool)


def _series(names):
    """``(name, colour, energy?)``: one colour per series, energy series dashed on the right axis."""
    return [(n, f"C{i}", n.startswith(ENERGY[0]) or n.endswith(ENERGY[1])) for i, n in enumerate(names)]


def _legend(fig, ax, right):
    """One legend entry per series (both y axes), below the plot where it covers no data."""
    handles, labels = ax.get_legend_handles_labels()
    if right is not None:
        more = right.get_legend_handles_labels()
        handles, labels = handles + more[0], labels + more[1]
    fig.legend(handles, labels, fontsize=8, loc="outside lower center", ncols=min(3, len(labels)))


def _round_ticks(ax, which="y"):
    from matplotlib.ticker import FuncFormatter, MaxNLocator
    axis = ax.yaxis if which == "y" else ax.xaxis
    axis.set_major_locator(MaxNLocator(nbins=6))
    axis.set_major_formatter(FuncFormatter(lambda v, _: value_text(float(v))))


def _per_point(plt, sweep, records, varied, folder) -> list[str]:
    """One point per swept point: a line over one numeric axis, else a bar per point (zip sweeps of
    several axes: each bar labelled with every axis value); failed points marked."""
    ok = [r for r in records if r.get("status") == "ok"]
    names = list(metrics(ok[0]))
    series = _series(names)
    line = len(varied) == 1 and all(_is_number(r["params"].get(varied[0])) for r in records)
    order = sorted(records, key=lambda r: r["params"][varied[0]]) if line else list(records)
    labels = [", ".join(f"{a}={value_text(r['params'].get(a))}" for a in varied) if len(varied) > 1
              else value_text(r["params"].get(varied[0])) for r in order]
    width = max(6.0, 0.9 * len(order)) if not line else 6.5
    fig, ax = plt.subplots(figsize=(min(width, 16.0), 4.2), layout="constrained")
    right = ax.twinx() if any(e for *_, e in series) else None
    main = [s for s in series if not s[2]]
    for j, (name, colour, energy) in enumerate(series):
        target = right if energy else ax
        ys = [metrics(r).get(name, np.nan) if r.get("status") == "ok" else np.nan for r in order]
        if line:
            xs = [r["params"][varied[0]] for r in order]
            target.plot(xs, ys, marker="s" if energy else "o", color=colour, label=name,
                        linestyle="--" if energy else "-")
        else:  # grouped bars: the main metrics side by side, energy as dashed markers on the right axis
            pos = np.arange(len(order))
            if energy:
                target.plot(pos, ys, marker="s", linestyle="--", color=colour, label=name)
            else:
                k, n = main.index((name, colour, energy)), len(main)
                target.bar(pos + (k - (n - 1) / 2) * 0.8 / n, ys, width=0.8 / n, color=colour, label=name)
    failed = [i for i, r in enumerate(order) if r.get("status") != "ok"]
    if failed:
        xs = [order[i]["params"][varied[0]] for i in failed] if line else failed
        ax.plot(xs, [0] * len(xs), linestyle="none", marker="X", markersize=11, color="black", clip_on=False,
                label=f"failed point ({len(failed)}; its error in the results file)")
    if line:
        ax.set_xlabel(varied[0])
        x = [r["params"][varied[0]] for r in order]
        if all(v > 0 for v in x) and max(x) / min(x) > 20:
            ax.set_xscale("log")
        ax.set_xticks(sorted(set(x)), [value_text(v) for v in sorted(set(x))], fontsize=8)
        ax.minorticks_off()
    else:
        ax.set_xticks(range(len(order)), labels, fontsize=8, rotation=30 if len(varied) > 1 or len(order) > 8 else 0,
                      ha="right" if len(varied) > 1 or len(order) > 8 else "center")
        ax.set_xlabel(" / ".join(varied) + (" (zipped)" if sweep.mode == "zip" and len(varied) > 1 else ""))
    ax.set_ylabel(", ".join(n for n, _, e in series if not e) if len(main) == 1 else "speedup (x)"
                  if all(n.startswith("speedup") for n, *_ in main) else "value")
    _round_ticks(ax)
    ax.set_ylim(bottom=0)
    if all(n.startswith("speedup") for n, *_ in main):  # where the chip and the other side are even
        ax.axhline(1.0, color="grey", linewidth=0.8, linestyle=":")
    if right is not None:
        energy = [n for n, _, e in series if e]
        right.set_ylabel(energy[0] if len(energy) == 1 else f"{energy[0].split(' vs ')[0]} (dashed)")
        _round_ticks(right)
        right.set_ylim(bottom=0)
    _legend(fig, ax, right)
    ax.set_title(f"{os.path.basename(sweep.path)}: {len(records)} {sweep.mode} point(s)", fontsize=10)
    paths = save_figure(fig, folder, "sweep")
    plt.close(fig)
    return paths


def _heatmaps(plt, sweep, records, varied, folder) -> list[str]:
    """A 2-axis grid: one heatmap per metric; more axes: one heatmap per value of the further axes."""
    ok = [r for r in records if r.get("status") == "ok"]
    names = list(metrics(ok[0]))
    xa, ya, rest = varied[0], varied[1], varied[2:]
    xs = sorted({r["params"][xa] for r in records}, key=_sort_key)
    ys = sorted({r["params"][ya] for r in records}, key=_sort_key)
    facets = list(itertools.product(*(sorted({r["params"][a] for r in records}, key=_sort_key) for a in rest)))
    shown = facets[:MAX_FACETS]
    cols = min(len(shown), 3)
    rows = -(-len(shown) // cols)
    paths = []
    for i, name in enumerate(names):
        fig, axs = plt.subplots(rows, cols, squeeze=False, layout="constrained",
                                figsize=(cols * (2.5 + 0.75 * len(xs)), rows * (1.8 + 0.5 * len(ys))))
        values = [metrics(r)[name] for r in ok if name in metrics(r)]
        lo, hi = (min(values), max(values)) if values else (0, 1)
        for f, facet in enumerate(shown):
            ax = axs[f // cols][f % cols]
            here = [r for r in records if all(r["params"][a] == v for a, v in zip(rest, facet))]
            grid = np.full((len(ys), len(xs)), np.nan)
            fail = np.zeros_like(grid, dtype=bool)
            for r in here:
                b, a = ys.index(r["params"][ya]), xs.index(r["params"][xa])
                if r.get("status") == "ok":
                    grid[b, a] = metrics(r).get(name, np.nan)
                else:
                    fail[b, a] = True
            im = ax.imshow(grid, origin="lower", aspect="auto", cmap="viridis", vmin=lo, vmax=hi)
            for b in range(len(ys)):
                for a in range(len(xs)):
                    text = "failed" if fail[b, a] else value_text(grid[b, a]) if not np.isnan(grid[b, a]) else ""
                    ax.text(a, b, text, ha="center", va="center", fontsize=7, color="red" if fail[b, a] else "w")
            ax.set_xticks(range(len(xs)), [value_text(v) for v in xs], fontsize=7)
            ax.set_yticks(range(len(ys)), [value_text(v) for v in ys], fontsize=7)
            ax.set_xlabel(xa, fontsize=8)
            ax.set_ylabel(ya, fontsize=8)
            if rest:
                ax.set_title(", ".join(f"{a}={value_text(v)}" for a, v in zip(rest, facet)), fontsize=8)
        for f in range(len(shown), rows * cols):
            axs[f // cols][f % cols].set_visible(False)
        fig.colorbar(im, ax=axs, shrink=0.9).set_label(name)
        more = f" (first {MAX_FACETS} of {len(facets)} facets)" if len(facets) > MAX_FACETS else ""
        fig.suptitle(f"{name}: {os.path.basename(sweep.path)}{more}", fontsize=9)
        paths += save_figure(fig, folder, f"sweep_{i}")
        plt.close(fig)
    return paths


def _sort_key(v):
    return (0, v, "") if _is_number(v) else (1, 0, str(v))


def _against_each_axis(plt, sweep, records, varied, folder) -> list[str]:
    """A random sweep: each metric against each axis (one panel per axis), failed draws marked."""
    ok = [r for r in records if r.get("status") == "ok"]
    series = [s for s in _series(list(metrics(ok[0]))) if not s[2]]
    fig, axs = plt.subplots(1, len(varied), squeeze=False, layout="constrained", figsize=(4.2 * len(varied), 3.8))
    for ax, a in zip(axs[0], varied):
        for name, colour, _ in series:
            pts = [(r["params"][a], metrics(r)[name]) for r in ok if name in metrics(r)]
            ax.scatter(*zip(*pts), s=14, color=colour, label=name)
        bad = [r["params"][a] for r in records if r.get("status") != "ok"]
        if bad:
            ax.plot(bad, [0] * len(bad), linestyle="none", marker="X", color="black", clip_on=False,
                    label=f"failed point ({len(bad)})")
        ax.set_xlabel(a)
        _round_ticks(ax)
        ax.set_ylim(bottom=0)
    _legend(fig, axs[0][0], None)
    fig.suptitle(f"{os.path.basename(sweep.path)}: {len(records)} random point(s)", fontsize=10)
    paths = save_figure(fig, folder, "sweep")
    plt.close(fig)
    return paths
