"""Figures with matplotlib (the ``plot`` extra): where the time goes and where memory sits.

* per-tile heatmaps of compute cycles and SRAM bytes on the chip's tile grid (64 tile
  columns: the C600 layout of 23 rows x 64 columns, RE in docs/cost-model.md; MK1's 1216
  tiles make 19 rows); several chips are stacked top to bottom;
* a stacked bar of cycles by kind for each phase, the MIMD chip beside each GPU strategy;
* speedup curves for sweeps.
Each figure is written as PNG and SVG.
"""
from __future__ import annotations

import os

import numpy as np

from ..errors import ConfigError

TILE_COLUMNS = 64
KIND_COLOURS = {"compute": "#4c72b0", "exchange": "#dd8452", "sync": "#55a868", "host": "#c44e52",
                "launch": "#8172b3", "array": "#4c72b0", "vector": "#64b5cd", "dram": "#937860"}


def pyplot():
    """matplotlib.pyplot on the file-only Agg backend (a ConfigError naming the install if it is missing)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigError("plots need matplotlib: pip install 'mimdsim[plot]' (or pip install matplotlib)")
    return plt


def tile_grid(values: np.ndarray, tiles_per_chip: int) -> np.ndarray:
    """Per-tile values laid out as [chips * rows, 64] (NaN where no tile exists)."""
    chips = values.size // tiles_per_chip
    rows = -(-tiles_per_chip // TILE_COLUMNS)
    grid = np.full((chips, rows * TILE_COLUMNS), np.nan)
    grid[:, :tiles_per_chip] = values.reshape(chips, tiles_per_chip)
    return grid.reshape(chips * rows, TILE_COLUMNS)


def save_figure(fig, folder, stem) -> list[str]:
    """Write ``fig`` as ``folder/stem.png`` and ``.svg``; return the paths."""
    paths = []
    for ext in ("png", "svg"):
        p = os.path.join(folder, f"{stem}.{ext}")
        fig.savefig(p, dpi=110, bbox_inches="tight")
        paths.append(p)
    return paths


def heatmap(folder, stem, values, tiles_per_chip, title, label, limit=None, layers=()) -> list[str]:
    """Per-tile values on the tile grid, chips top to bottom, with a line between chips and a
    mark where each layer's tile range starts (``layers``: the mapping's LayerPlacements)."""
    plt = pyplot()
    grid = tile_grid(np.asarray(values, dtype=float), tiles_per_chip)
    rows = -(-tiles_per_chip // TILE_COLUMNS)
    chips = grid.shape[0] // rows
    fig, ax = plt.subplots(figsize=(9, 1.6 + 0.22 * grid.shape[0]), layout="constrained")
    im = ax.imshow(grid, cmap="viridis", aspect="auto", interpolation="nearest",
                   vmin=0, vmax=limit if limit else None)
    cb = fig.colorbar(im, ax=ax)
    cb.set_label(label)
    for c in range(1, chips):  # chip boundaries
        ax.axhline(c * rows - 0.5, color="white", lw=2)
    if chips > 1:
        ax.set_yticks([c * rows + (rows - 1) / 2 for c in range(chips)], [f"chip {c}" for c in range(chips)])
        ax.set_ylabel("chips top to bottom")
    else:
        ax.set_ylabel("tile row")
    ends = [p.first_tile + p.tiles for p in layers]
    for p, end in zip(layers, ends):  # a layer's first tile: a bar on its left edge and its name
        for t, text in ((p.first_tile, f"L{p.layer}"), (end, None)):
            if text is None and end in [q.first_tile for q in layers]:
                continue  # the next layer's mark is drawn there
            chip, local = divmod(int(t), tiles_per_chip)
            if local >= tiles_per_chip:
                continue
            row, col = chip * rows + local // TILE_COLUMNS, local % TILE_COLUMNS
            ax.plot([col - 0.5, col - 0.5], [row - 0.5, row + 0.5], color="white", lw=2)
            if text:
                ax.text(col + 0.2, row, text, color="white", fontsize=7, va="center", ha="left", fontweight="bold")
    ax.set_xlabel(f"tile column (white bars: layer starts{'; lines: chip boundaries' if chips > 1 else ''})")
    ax.set_title(title, fontsize=10)
    paths = save_figure(fig, folder, stem)
    plt.close(fig)
    return paths


def phase_bars(folder, stem, reports, title) -> list[str]:
    """Stacked milliseconds by kind for each phase; one group of bars per report (the MIMD chip,
    each GPU strategy, the systolic array). A log scale when the bars span more than 30x, so a
    fast column stays visible beside a slow one."""
    plt = pyplot()
    phases = ["io", "forward", "backward", "update"]
    fig, ax = plt.subplots(figsize=(3.2 + 1.6 * len(reports), 4.4), layout="constrained")
    width = 0.8 / len(phases)
    seen, tops = set(), []
    for i, r in enumerate(reports):
        for j, phase in enumerate(phases):
            x = i + (j - (len(phases) - 1) / 2) * width
            bottom = 0.0
            for kind, cyc in r.cycles.get(phase, {}).items():
                ms = cyc / r.clock_hz * 1e3
                if ms <= 0:
                    continue
                ax.bar(x, ms, width * 0.9, bottom=bottom, color=KIND_COLOURS.get(kind, "grey"),
                       label=kind if kind not in seen else None)
                seen.add(kind)
                bottom += ms
            if bottom > 0:
                tops.append(bottom)
                ax.annotate(phase, (x, bottom), xytext=(0, 2), textcoords="offset points", ha="center", va="bottom",
                            fontsize=7, rotation=90, annotation_clip=False)  # whole names (was "for", "bac")
    log = bool(tops) and max(tops) / min(tops) > 30
    if log:
        ax.set_yscale("log")
        ax.set_ylim(min(tops) / 3, max(tops) * 12)  # room for the phase names above the tallest bar
        ax.set_ylabel("ms per training step (log scale)")
    else:
        ax.set_ylim(0, (max(tops) if tops else 1) * 1.5)
        ax.set_ylabel("ms per training step")
    return _columns_figure(plt, fig, ax, reports, title, "kind", folder, stem)


ENERGY_COLOURS = {"static": "#8c8c8c", "compute": "#4c72b0", "memory": "#937860", "exchange": "#dd8452",
                  "host": "#c44e52"}


def _columns_figure(plt, fig, ax, reports, title, legend, folder, stem) -> list[str]:
    """Finish a figure with one group of bars per report: a column label per report (the chip, each
    GPU strategy, the systolic array), the title, the legend beside the frame; save and close it."""
    import textwrap

    labels = [f"{r.architecture}\n{r.placement.get('strategy') or r.mode}" if r.platform == "gpu"
              else f"{'MIMD ' if r.platform == 'mimd' else ''}{r.architecture}\n{r.platform if r.platform != 'mimd' else r.mode}"
              for r in reports]
    ax.set_xticks(range(len(reports)), labels, fontsize=8)
    ax.set_title(textwrap.fill(title, 60), fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), title=legend, title_fontsize=8)
    paths = save_figure(fig, folder, stem)
    plt.close(fig)
    return paths


def energy_bars(folder, stem, reports, title) -> list[str]:
    """Joules per training step by component (static, compute, memory, exchange, host), one stacked
    bar per report that has an energy section, with the band of the energy constants as an error
    bar and the average watts above; a log scale when the bars span more than 30x."""
    reports = [r for r in reports if r.energy]
    if not reports:
        return []
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(3.2 + 1.4 * len(reports), 4.4), layout="constrained")
    seen, tops = set(), []
    for i, r in enumerate(reports):
        bottom = 0.0
        for comp, joules in r.energy["by_component"].items():
            if joules <= 0:
                continue
            ax.bar(i, joules, 0.6, bottom=bottom, color=ENERGY_COLOURS.get(comp, "grey"),
                   label=comp if comp not in seen else None)
            seen.add(comp)
            bottom += joules
        lo, hi = r.energy["band"]["joules_per_step"]
        ax.errorbar(i, bottom, yerr=[[bottom - lo], [hi - bottom]], color="black", capsize=4, lw=1)
        ax.annotate(f"{r.energy['watts']:,.0f} W", (i, hi), xytext=(0, 3), textcoords="offset points", ha="center",
                    va="bottom", fontsize=8, annotation_clip=False)
        tops.append(hi)
    if max(tops) / max(min(r.energy["joules_per_step"] for r in reports), 1e-30) > 30:
        ax.set_yscale("log")
        ax.set_ylabel("joules per training step (log scale)")
    else:
        ax.set_ylim(0, max(tops) * 1.2)
        ax.set_ylabel("joules per training step")
    return _columns_figure(plt, fig, ax, reports, title, "component", folder, stem)


def plot_run(folder, run, gpu_reports=()) -> list[str]:
    """The figures of one run (and its comparison: GPU strategies, a systolic array): heatmaps
    with chip and layer boundaries, and phase bars."""
    os.makedirs(folder, exist_ok=True)
    r = run.report
    tpc = run.program.system.chip.tiles
    layers = getattr(run.program.mapping, "layers", ())
    paths = heatmap(folder, "tile_compute_cycles", r.tile_compute_cycles, tpc,
                    f"compute cycles per tile, {r.model} on {r.architecture}", "cycles per training step",
                    layers=layers)
    paths += heatmap(folder, "tile_memory_bytes", r.tile_memory_bytes, tpc,
                     f"SRAM per tile, {r.model} on {r.architecture}", "bytes", limit=r.memory["tile_bytes_limit"],
                     layers=layers)
    paths += phase_bars(folder, "phases", [r, *gpu_reports], f"where the time goes: {r.model}")
    paths += energy_bars(folder, "energy", [r, *gpu_reports], f"where the energy goes: {r.model} (bars: the band "
                         f"of the energy constants)")
    if r.uncertainty and r.uncertainty["drivers"]:
        paths += tornado(folder, "assumptions", r, f"ms/step when each named assumption moves: {r.model} on "
                                                   f"{r.architecture}")
    return paths


def tornado(folder, stem, report, title) -> list[str]:
    """Each named assumption's one-at-a-time swing of ms/step around the point estimate, largest
    first, and the corners (every assumption at once) as the top bar."""
    import textwrap

    plt = pyplot()
    u = report.uncertainty
    base = report.seconds_per_step * 1e3
    rows = [("all at once", *(1e3 * x for x in u["seconds_per_step"]))] + \
        [(d["name"], *(1e3 * x for x in d["seconds_per_step"])) for d in u["drivers"]]
    fig, ax = plt.subplots(figsize=(7.5, 1.2 + 0.35 * len(rows)), layout="constrained")
    for i, (name, lo, hi) in enumerate(rows):
        ax.barh(i, hi - lo, left=lo, color="#4c72b0" if i else "#999999", height=0.6)
    ax.axvline(base, color="black", linewidth=1, label=f"point estimate {base:,.3g} ms")
    ax.set_yticks(range(len(rows)), [r[0] for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("ms per training step")
    ax.set_title(textwrap.fill(title, 50), fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    paths = save_figure(fig, folder, stem)
    plt.close(fig)
    return paths


def speedup_curves(path_stem, x, curves: dict, xlabel, title, log=True) -> list[str]:
    """``curves``: label -> y values over ``x`` (e.g. speedup per strategy over activity)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
    for label, y in curves.items():
        ax.plot(x, y, marker="o", label=label)
    if log:
        ax.set_xscale("log")
        ax.set_yscale("log")
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("speedup")
    ax.set_title(title)
    ax.legend(fontsize=8)
    folder, stem = os.path.split(path_stem)
    paths = save_figure(fig, folder or ".", stem)
    plt.close(fig)
    return paths
