"""The published program and the hand-fused one on the study's multi-layer configurations,
execution-driven, beside the one stored timing log of the real program.

    python examples/published_schedule.py [--out docs/figures] [--quick]

Configurations from ``mimdsim/workloads/snn/study.py`` (NMNIST-sized: 2312 inputs, input K = 32,
2-5 hidden layers of 2942 neurons at 2 per tile, T = 100, B = 48, Adam, ``ipu-mk2``). The
firing rates are not assumed: each step runs the numerics on NMNIST-like input (Poisson events,
``--input-rate`` per input per step) through the network, so every layer's activity comes from
the dynamics and is reported; a configuration with a silent layer is marked. Both schedules run
the same step (identical numerics). ``LOG ms/step`` is the study's own run log
(``benchmarking/log_multi_layer_weightMul4.0_statesPerIPU02.out``, Keras progress-bar means in
whole ms; docs/as-built/graphcore_snn.md §9), reported as it falls: nothing is fitted to it.
Writes ``published_schedule.md`` and ``.json`` into ``--out``.
"""
from __future__ import annotations

import argparse
import json
import os

import numpy as np

import mimdsim
from mimdsim.workloads.snn.study import multi_layer

# (hidden sizes, max activity) -> ms/step of the study's log (theta2 = 0.9 rows; §9)
LOG_MS = {((1466, 1466), 0.01): "6", ((978, 978, 976), 0.01): "5", ((734, 734, 732, 732), 0.01): "5",
          ((588, 586, 586, 586, 586), 0.01): "4", ((1466, 1466), 0.05): "8-9", ((978, 978, 976), 0.05): "7",
          ((734, 734, 732, 732), 0.05): "6", ((588, 586, 586, 586, 586), 0.05): "6", ((1466, 1466), 0.1): "10-11",
          ((978, 978, 976), 0.1): "8-9", ((734, 734, 732, 732), 0.1): "7-8"}


def run(config, input_rate, weight_scale, seed=0):
    net = mimdsim.Network.feedforward(list(config.sizes), max_activity=config.max_activity,
                                      input_capacity=config.input_capacity, weight_scale=weight_scale, seed=seed)
    rng = np.random.default_rng(seed)
    T, B = config.timesteps, config.batch_size
    x = (rng.random((T, B, config.sizes[0])) < input_rate).astype(np.uint8)
    y = rng.integers(0, config.sizes[-1], B)
    row = {"config": config.name, "hidden": list(config.sizes[1:-1]), "max_activity": config.max_activity,
           "capacities": list(net.capacities)}
    for schedule in ("published", "fused"):
        try:
            r = mimdsim.simulate(net, "ipu-mk2", inputs=x, labels=y, neurons_per_tile=config.neurons_per_tile,
                                 optimizer=None, schedule=schedule)
        except mimdsim.OutOfTileMemory as e:
            row[schedule] = {"refused": f"does not fit: tile {e.tile} needs {e.used:,} of {e.limit:,} B"}
            continue
        rep = r.report
        row["activity"] = [ly["activity"] for ly in rep.layers]
        row[schedule] = {"ms_per_step": rep.seconds_per_step * 1e3, "samples_per_second": rep.samples_per_second,
                         "max_tile_kib": rep.memory["max_tile_bytes"] / 1024,
                         "backward_share": rep.phase_seconds()["backward"] / rep.seconds_per_step}
    row["log_ms_per_step"] = LOG_MS.get((tuple(config.sizes[1:-1]), config.max_activity))
    return row


def table(rows) -> str:
    lines = ["| config | K (hidden) | activity per layer (measured) | published ms/step | fused ms/step | "
             "published / fused | LOG ms/step |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        def cell(s):
            v = r.get(s, {})
            return f"{v['ms_per_step']:.2f}" if "ms_per_step" in v else v.get("refused", "-")
        ratio = (f"{r['published']['ms_per_step'] / r['fused']['ms_per_step']:.1f}x"
                 if "ms_per_step" in r.get("published", {}) and "ms_per_step" in r.get("fused", {}) else "-")
        act = ", ".join(f"{100 * a:.2f}%" for a in r.get("activity", []))
        silent = " (a silent layer)" if any(a == 0 for a in r.get("activity", [1])) else ""
        lines.append(f"| {r['config']} | {', '.join(map(str, r['capacities'][1:-1]))} | {act}{silent} | "
                     f"{cell('published')} | {cell('fused')} | {ratio} | {r['log_ms_per_step'] or '-'} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=".", help="folder for published_schedule.md and .json")
    ap.add_argument("--input-rate", type=float, default=0.01, help="input events per input and step")
    ap.add_argument("--weight-scale", type=float, default=6.0, help="init std = scale / sqrt(fan-in)")
    ap.add_argument("--quick", action="store_true", help="1 % max activity only")
    args = ap.parse_args(argv)
    configs = [c for c in multi_layer() if not args.quick or c.max_activity == 0.01]
    rows = []
    for c in configs:
        rows.append(run(c, args.input_rate, args.weight_scale))
        print(table(rows[-1:]).splitlines()[-1], flush=True)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "published_schedule.json"), "w") as f:
        json.dump(rows, f, indent=1)
    with open(os.path.join(args.out, "published_schedule.md"), "w") as f:
        f.write(table(rows) + "\n")
    print(f"wrote {os.path.join(args.out, 'published_schedule.md')}")


if __name__ == "__main__":
    main()
