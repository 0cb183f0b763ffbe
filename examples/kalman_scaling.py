"""Kalman-filter track fitting: tracks/s against tiles and tracks per tile, on ipu-mk1 and ipu-mk2
(the shape of Mohan et al. 2021 / the TRACKR benchmark, reference/hardware.md "Calibration data").

    python examples/kalman_scaling.py [--out DIR]

For 2 ... all tiles, 100/200/400 tracks per tile with the scalar codelet and 408 with the
vectorised one, the chip is simulated with the hits resident in tile memory (as in the TRACKR
benchmark, which timed engine.run with its hits as graph constants) and, for contrast, with
hits and results streamed over the host link. Prints the simulated beside the measured
figures, and the CPU model beside TRACKR's CPU reference; writes ``kalman_scaling.json`` and
``kalman_scaling.md`` and, if matplotlib is installed, ``kalman_scaling.png`` into ``--out``.
"""
from __future__ import annotations

import argparse
import json
import os

import mimdsim
from mimdsim.workloads import cpu_kalman, kalman

TILES = [2, 4, 8, 19, 38, 76, 152, 192, 256, 304, 342, 456, 608, 912]  # TRACKR's; then 1216 and all
CONFIGS = [("scalar", 100), ("scalar", 200), ("scalar", 400), ("vectorised", 408)]
# Measured 10^6 tracks/s (reference/hardware.md, TRACKR, 6 threads, after warm-up): (chip, variant, tracks/tile) -> tiles -> value
MEASURED = {
    ("ipu-mk1", "scalar", 100): {2: 0.572, 152: 43.5, 1216: 347.6},
    ("ipu-mk1", "scalar", 400): {2: 0.972, 152: 73.9, 1216: 591.1},
    ("ipu-mk1", "vectorised", 408): {2: 3.22, 152: 226, 1216: 1940.9},
    ("ipu-mk2", "vectorised", 408): {2: 2.57, 152: 185, 1216: 1516.5},
}
CPU_MEASURED = {1: 5.4, 6: 26.0}  # i7-9750H: one thread; 12 threads on 6 cores (hardware.md)


def sweep():
    rows = []
    for chip in ("ipu-mk1", "ipu-mk2"):
        all_tiles = mimdsim.chip(chip).tiles
        for variant, tpt in CONFIGS:
            for tiles in sorted(set(TILES + [1216, all_tiles])):
                row = {"chip": chip, "variant": variant, "tracks_per_tile": tpt, "tiles": tiles}
                for stream in (False, True):
                    r = kalman(tpt, 5, chip, tiles=tiles, variant=variant, stream=stream).report
                    key = "streamed" if stream else "resident"
                    row[key] = r.samples_per_second / 1e6
                    row[key + "_bound"] = r.placement["bound"]
                row["measured"] = MEASURED.get((chip, variant, tpt), {}).get(tiles)
                rows.append(row)
    return rows


def cpu_rows(n=500):
    out = []
    for cores in (1, 6):
        for variant in ("scalar", "vectorised"):
            r = cpu_kalman(n * cores, 5, "i7-9750h", variant=variant, cores=cores)
            out.append({"cores": cores, "variant": variant, "tracks": n * cores,
                        "simulated": r.samples_per_second / 1e6, "measured": CPU_MEASURED[cores]})
    return out


def tables(rows, cpu):
    lines = ["| chip | code | tracks/tile | tiles | measured 10^6 tracks/s | simulated, resident | ratio | "
             "simulated, streamed |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["measured"] is None:
            continue
        lines.append(f"| {r['chip']} | {r['variant']} | {r['tracks_per_tile']} | {r['tiles']} | {r['measured']:,.3g} | "
                     f"{r['resident']:,.3g} | {r['resident'] / r['measured']:.2f} | {r['streamed']:,.3g} "
                     f"({r['streamed_bound']}-bound) |")
    lines += ["", "| CPU (i7-9750H) | code | simulated 10^6 tracks/s | measured (TRACKR, Eigen) | ratio |",
              "|---|---|---|---|---|"]
    for c in cpu:
        lines.append(f"| {c['cores']} core(s), {c['tracks']} tracks | {c['variant']} | {c['simulated']:,.3g} | "
                     f"{c['measured']:g} | {c['simulated'] / c['measured']:.2f} |")
    return "\n".join(lines)


def plot(rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: pip install matplotlib (or the project's 'plot' extra) for the figure")
        return
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
    colours = {("scalar", 100): "C0", ("scalar", 200): "C1", ("scalar", 400): "C2", ("vectorised", 408): "C3"}
    for ax, chip in zip(axes, ("ipu-mk1", "ipu-mk2")):
        for (variant, tpt), colour in colours.items():
            pts = [r for r in rows if r["chip"] == chip and r["variant"] == variant and r["tracks_per_tile"] == tpt]
            x = [r["tiles"] for r in pts]
            ax.plot(x, [r["resident"] for r in pts], color=colour, marker=".", label=f"{variant}, {tpt}/tile")
            ax.plot(x, [r["streamed"] for r in pts], color=colour, ls=":", lw=1)
            m = MEASURED.get((chip, variant, tpt))
            if m:
                ax.plot(list(m), list(m.values()), color=colour, marker="s", ls="none", mfc="none", ms=8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("tiles")
        ax.set_title(chip)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("10^6 tracks/s")
    axes[0].legend(fontsize=8)
    fig.suptitle("Kalman track fitting, 5 planes: simulated with hits resident (solid) or streamed over the "
                 "host link (dotted); measured, TRACKR (squares)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "docs", "figures"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rows, cpu = sweep(), cpu_rows()
    text = tables(rows, cpu)
    print(text)
    with open(os.path.join(args.out, "kalman_scaling.json"), "w") as f:
        json.dump({"rows": rows, "cpu": cpu}, f, indent=1)
    with open(os.path.join(args.out, "kalman_scaling.md"), "w") as f:
        f.write(text + "\n")
    plot(rows, os.path.join(args.out, "kalman_scaling.png"))


if __name__ == "__main__":
    main()
