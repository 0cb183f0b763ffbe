"""Scaling studies of Finkbeiner et al. 2024 (reference/algorithms.md §1) on ipu-mk2 against A100 models.

    python examples/scaling.py [--schedule fused|published] [--out DIR]

* hidden-layer sweep: 2942 hidden neurons in 2-5 layers (NMNIST, T = 100, B = 48, 1% max activity);
* neurons per tile on one chip: 2 ... 32 per tile, T = 10, B = 24, as many 976-neuron layers as fit
  (SHD input, 700 with K = 48); points whose memory plan does not fit are reported;
* multi-chip: 1 ... 16 chips, 12 layers of 976 neurons per chip at 8 per tile, T = 10, B = 24.
Rate-driven at activity = max activity / 2. Prints tables; writes scaling_*.png when matplotlib exists.
The chip runs mimdsim's hand-fused program (``--schedule fused``, the tables of docs/validation.md)
or the study's op as built (``--schedule published``, the default of ``mimdsim simulate``).
"""
from __future__ import annotations

import argparse
import os

import mimdsim

GPU = "a100-40gb"
SCHEDULE = "fused"  # --schedule


def speedups(net, system, T, B, npt, precision="tf32"):
    c = mimdsim.compare(net, system, GPU, timesteps=T, batch_size=B, activity=0.005, neurons_per_tile=npt,
                        strategies=["per-step", "fused"], precision=precision, schedule=SCHEDULE)
    return c.mimd.samples_per_second, c.speedup


def hidden_layer_sweep():
    rows = []
    for hidden in ([1466, 1466], [978, 978, 976], [734, 734, 732, 732], [588, 586, 586, 586, 586]):
        net = mimdsim.Network.feedforward([2312, *hidden, 10], max_activity=0.01, input_capacity=32)
        sps, sp = speedups(net, "ipu-mk2", 100, 48, 2)
        rows.append((len(hidden), sps, sp))
    print("hidden layers | MIMD samples/s | vs A100 per-step (tf32) | vs A100 fused (tf32)")
    for h, sps, sp in rows:
        print(f"{h} | {sps:,.0f} | {sp['per-step']:.1f}x | {sp['fused']:.1f}x")
    return rows


def neurons_per_tile_sweep():
    rows = []
    for npt in (2, 4, 8, 16, 32):
        layers = 1471 // -(-976 // npt) - 1  # leave room for the output layer
        net = mimdsim.Network.feedforward([700] + [976] * layers + [20], max_activity=0.01, input_capacity=48)
        try:
            sps, sp = speedups(net, "ipu-mk2", 10, 24, npt)
            rows.append((npt, net.num_neurons, sps, sp))
        except mimdsim.OutOfTileMemory as e:
            rows.append((npt, net.num_neurons, None, f"does not fit: tile {e.tile} needs {e.used:,} B "
                                                    f"(largest {max(e.breakdown, key=e.breakdown.get)})"))
    print("\nneurons/tile | neurons | MIMD samples/s | vs A100 per-step | vs A100 fused")
    for npt, n, sps, sp in rows:
        print(f"{npt} | {n:,} | " + (f"{sps:,.0f} | {sp['per-step']:.1f}x | {sp['fused']:.1f}x" if sps else sp))
    return rows


def multichip_sweep():
    rows = []
    for chips in (1, 2, 4, 8, 16):
        net = mimdsim.Network.feedforward([700] + [976] * (12 * chips) + [20], max_activity=0.01,
                                          input_capacity=48)
        sps, sp = speedups(net, mimdsim.system("ipu-mk2", chips=chips), 10, 24, 8)
        rows.append((chips, net.num_neurons, sps, sp))
    print("\nchips | neurons | MIMD samples/s | vs A100 per-step | vs A100 fused")
    for chips, n, sps, sp in rows:
        print(f"{chips} | {n:,} | {sps:,.0f} | {sp['per-step']:.1f}x | {sp['fused']:.1f}x")
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--schedule", default="fused", choices=("fused", "published"),
                    help="the chip's program (default: fused, as in docs/validation.md's tables)")
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    global SCHEDULE
    SCHEDULE = args.schedule
    hidden = hidden_layer_sweep()
    npt = neurons_per_tile_sweep()
    chips = multichip_sweep()
    try:
        from mimdsim.report.plots import speedup_curves
    except ImportError:
        return
    os.makedirs(args.out, exist_ok=True)
    try:
        for stem, x, rows, xlabel in (("scaling_hidden_layers", [r[0] for r in hidden], hidden, "hidden layers"),
                                      ("scaling_chips", [r[0] for r in chips], chips, "chips")):
            curves = {f"vs {GPU} {s} (tf32)": [r[-1][s] for r in rows] for s in ("per-step", "fused")}
            for p in speedup_curves(os.path.join(args.out, stem), x, curves, xlabel, stem.replace("_", " "),
                                    log=False)[:1]:
                print(f"wrote {p}")
        fits = [r for r in npt if r[2]]
        curves = {f"vs {GPU} {s} (tf32)": [r[-1][s] for r in fits] for s in ("per-step", "fused")}
        for p in speedup_curves(os.path.join(args.out, "scaling_neurons_per_tile"), [r[0] for r in fits], curves,
                                "neurons per tile", "neurons per tile (one chip)", log=True)[:1]:
            print(f"wrote {p}")
    except mimdsim.ConfigError as e:  # matplotlib missing
        print(e)


if __name__ == "__main__":
    main()
