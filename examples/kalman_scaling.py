"""Kalman-filter track fitting: tracks/s against tiles and tracks per tile, on ipu-mk1 and ipu-mk2,
beside every TRACKR measurement (lohedges/trackr benchmark logs; docs/as-built/trackr.md §3, §4).

    python examples/kalman_scaling.py [--out DIR]

For TRACKR's tile counts (2 ... 1216) and all tiles, 100/200/400 tracks per tile with the scalar
codelet and 408 with the vectorised one, the chip runs TRACKR's program as built (schedule
"published": its codelet counted from source, its Copy programs, its launch in chip cycles) with
the hits resident in tile memory, as TRACKR timed it; for contrast the register-resident codelet
(schedule "fused") and the as-built program with hits and results streamed over the host link.
The CPU model of TRACKR's Eigen reference is set beside its single-thread and OpenMP logs.
Writes ``kalman_scaling.json`` and ``kalman_scaling.md`` and, if matplotlib is installed,
``kalman_scaling.png`` into ``--out``. Nothing is fitted: the table shows how the model falls.
"""
from __future__ import annotations

import argparse
import json
import os

import mimdsim
from mimdsim.workloads import kalman, trackr_cpu

TILES = [2, 4, 8, 19, 38, 76, 152, 192, 256, 304, 342, 456, 608, 912, 1216]  # TRACKR's (benchmark_ipu.sh L9)
CONFIGS = [("scalar", 100), ("scalar", 200), ("scalar", 400), ("vectorised", 408)]
# Measured 10^6 tracks/s, 6 workers, after warm-up (docs/as-built/trackr.md §3 (b), (c)): scalar =
# benchmark_ipu_{100,200,400}_threaded_warm_clang.txt (@89a1521, build V_b); vectorised =
# benchmark_ipu_mk{1,2}_408_threaded_warm_vector_manual_clang.txt (@483c0f9, build V_e)
MEASURED = {
    ("ipu-mk1", "scalar", 100): [0.5720, 1.145, 2.290, 5.439, 10.89, 21.79, 43.51, 54.97, 73.28, 86.94, 97.84,
                                 130.5, 173.9, 260.7, 347.6],
    ("ipu-mk1", "scalar", 200): [0.7922, 1.585, 3.170, 7.532, 15.07, 30.16, 60.24, 76.11, 101.4, 120.4, 135.5,
                                 179.9, 240.7, 361.1, 481.4],
    ("ipu-mk1", "scalar", 400): [0.9724, 1.945, 3.891, 9.243, 18.49, 36.98, 73.93, 93.37, 124.5, 147.8, 166.3,
                                 221.7, 295.6, 443.1, 591.1],
    ("ipu-mk1", "vectorised", 408): [3.223, 6.403, 12.73, 30.55, 61.14, 121.4, 226.3, 270.9, 367.0, 470.0, 490.0,
                                     683.5, 881.9, 1424, 1940.9],
    ("ipu-mk2", "vectorised", 408): [2.570, 5.194, 10.34, 24.50, 48.88, 97.11, 185.2, 221.5, 284.7, 352.0, 393.0,
                                     481.1, 746.1, 1061, 1516.5],
}
MEASURED = {k: dict(zip(TILES, v)) for k, v in MEASURED.items()}
# TRACKR's CPU reference, clang build (docs/as-built/trackr.md §4): one thread, N tracks per call
# (benchmark_weetabix_clang.txt @2f6378b), and OpenMP over b batches of 500 (…_omp_clang.txt @7a6fa90)
CPU_ONE_THREAD = {2: 0.2789, 4: 0.5344, 8: 0.9694, 16: 1.655, 32: 2.651, 64: 3.559, 128: 4.406, 256: 5.036,
                  512: 5.403, 1024: 4.838}
CPU_OPENMP = {1: 3.599, 2: 6.906, 4: 12.35, 6: 13.64, 12: 25.58, 13: 16.97, 24: 25.87, 25: 20.10, 30: 22.19}


def sweep():
    rows = []
    for chip in ("ipu-mk1", "ipu-mk2"):
        all_tiles = mimdsim.chip(chip).tiles
        for variant, tpt in CONFIGS:
            for tiles in sorted(set(TILES + [all_tiles])):
                row = {"chip": chip, "variant": variant, "tracks_per_tile": tpt, "tiles": tiles}
                for key, kw in (("as_built", {}), ("register_resident", {"schedule": "fused"}),
                                ("streamed", {"stream": True})):
                    r = kalman(tpt, 5, chip, tiles=tiles, variant=variant, **{"stream": False, **kw}).report
                    row[key] = r.samples_per_second / 1e6
                    row[key + "_bound"] = r.placement["bound"]
                row["measured"] = MEASURED.get((chip, variant, tpt), {}).get(tiles)
                rows.append(row)
    return rows


def cpu_rows():
    out = [{"threads": 1, "tracks": n, "simulated": trackr_cpu(n, threads=1).samples_per_second / 1e6,
            "measured": m} for n, m in CPU_ONE_THREAD.items()]
    out += [{"threads": 12, "tracks": 500 * b, "simulated": trackr_cpu(500 * b).samples_per_second / 1e6,
             "measured": m} for b, m in CPU_OPENMP.items()]
    return out


def tables(rows, cpu):
    lines = ["| chip | code | tracks/tile | tiles | measured 10^6 tracks/s | as built (resident) | as built ÷ measured | "
             "register-resident | streamed, as built |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["measured"] is None:
            continue
        lines.append(f"| {r['chip']} | {r['variant']} | {r['tracks_per_tile']} | {r['tiles']} | {r['measured']:,.4g} | "
                     f"{r['as_built']:,.4g} | {r['as_built'] / r['measured']:.2f} | {r['register_resident']:,.4g} | "
                     f"{r['streamed']:,.4g} ({r['streamed_bound']}-bound) |")
    lines += ["", "| CPU (i7-9750H), TRACKR's Eigen reference | tracks per run | model 10^6 tracks/s | "
              "measured (clang) | model ÷ measured |", "|---|---|---|---|---|"]
    for c in cpu:
        what = "1 thread" if c["threads"] == 1 else f"OpenMP, {c['tracks'] // 500} batch(es) of 500, 12 threads"
        lines.append(f"| {what} | {c['tracks']:,} | {c['simulated']:,.3g} | {c['measured']:g} | "
                     f"{c['simulated'] / c['measured']:.2f} |")
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
            ax.plot(x, [r["as_built"] for r in pts], color=colour, marker=".", label=f"{variant}, {tpt}/tile")
            ax.plot(x, [r["register_resident"] for r in pts], color=colour, ls="--", lw=1)
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
    fig.suptitle("Kalman track fitting, 5 planes: TRACKR's program as built, hits resident (solid) or streamed "
                 "(dotted); register-resident codelet (dashed); measured, TRACKR (squares)", fontsize=10)
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
