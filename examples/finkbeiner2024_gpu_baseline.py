"""The sparse-BPTT study's 12 configurations against its own GPU program (issue 36; docs/validation.md).

    python examples/finkbeiner2024_gpu_baseline.py [--gpu a100-40gb,rtx-3090] [--lists executed|half] [--json FILE]

For each configuration of the study's run log (2-5 hidden layers x max activity 1, 5, 10 %; NMNIST sizes and
list capacities as the log's script built them; mimdsim/validation/data/study_log.json) this runs
``mimdsim compare`` with the chip as ``mimdsim validate`` runs it (the study's op as built, rate-driven, its lists
as full as the study's executed network fills them; ``--lists half``: half full, the assumption before issue 37)
and two GPU columns: ``keras-rnn-xla``, the study's own program (graphcore_snn train_gpu under
TensorFlow 2.8-2.10 + XLA; docs/gpu-model.md) and ``compiled``, the generic compiled time loop. Each of the 12
is one command, e.g. for 2 hidden layers at 1 %::

    mimdsim compare --layers 2312,1466,1466,10 --max-activity 0.01 --input-capacity 32 \\
        --strategy keras-rnn-xla,compiled --gpu a100-40gb

The study's GPU (an A100 in the paper, an RTX 3090 in the code that prepared the runs) is not settled, so both
are run. Prints per configuration the chip's ms/step (and the log's), the study program's ms/step by phase,
its kernels and host waits per step, and both speedups with their bands.
"""
from __future__ import annotations

import argparse
import json

from mimdsim import Network, compare
from mimdsim.validation import load, study_activity

STRATEGIES = ("keras-rnn-xla", "compiled")


def chip_activity(point: dict, lists: str = "executed") -> dict:
    """The chip's activities as ``mimdsim validate`` runs the point: the rates that give the lists' fills of the
    study's executed network (issue 37; mimdsim/validation/study_activity.py), or, ``lists="half"``, every list
    at half its max activity (the assumption before it)."""
    if lists == "half":
        return {"activity": point["max_activity"] / 2}
    label = f"{point['hidden_layers']} hidden, {point['max_activity']:.0%}"
    rates = study_activity.executed_rates(study_activity.stored()["points"][label])["central"]
    return {k: rates[k] for k in ("activity", "candidate_activity", "input_activity")}


def compare_point(point: dict, gpu: str, lists: str = "executed"):
    """``compare`` of one log configuration on ``gpu``: the chip as validate runs it, both GPU columns."""
    net = Network.feedforward(point["sizes"], max_activity=point["max_activity"], capacities=point["capacities"])
    return compare(net, "ipu-mk2", gpu, strategies=STRATEGIES, timesteps=100, batch_size=48,
                   **chip_activity(point, lists))


def row(point: dict, gpu: str, lists: str = "executed") -> dict:
    c = compare_point(point, gpu, lists)
    study = c.gpu["keras-rnn-xla"]
    phases = {p: s * 1e3 for p, s in study.phase_seconds().items()}
    return {"hidden_layers": point["hidden_layers"], "max_activity": point["max_activity"], "gpu": gpu,
            "chip_ms": c.mimd.seconds_per_step * 1e3, "log_ms": point.get("measured_ms_per_step"),
            "study_gpu_ms": study.seconds_per_step * 1e3, "study_gpu_phases_ms": phases,
            "kernels": study.placement["kernel_launches"], "host_waits": study.placement["host_waits"],
            "speedup": c.speedup["keras-rnn-xla"], "speedup_band": list(c.speedup_band["keras-rnn-xla"]),
            "compiled_speedup": c.speedup["compiled"], "compiled_band": list(c.speedup_band["compiled"])}


def format_rows(rows: list[dict]) -> str:
    def band(x, lo_hi):
        return f"{x:.2f}x ({lo_hi[0]:.2f}-{lo_hi[1]:.2f})"

    head = (f"{'config':<17}{'gpu':<11}{'chip ms':>8}{'log ms':>7}{'GPU ms':>8}{'io':>6}{'fwd':>7}{'bwd':>7}"
            f"{'upd':>6}{'kernels':>9}{'waits':>6}  {'speedup (band)':<22}{'compiled (band)':<22}")
    lines = [head]
    for r in rows:
        p = r["study_gpu_phases_ms"]
        log = "-" if r["log_ms"] is None else f"{r['log_ms']:.1f}"
        config = f"{r['hidden_layers']} hidden, {r['max_activity']:.0%}"
        lines.append(f"{config:<17}{r['gpu']:<11}{r['chip_ms']:>8.2f}{log:>7}{r['study_gpu_ms']:>8.2f}"
                     f"{p.get('io', 0):>6.2f}{p.get('forward', 0):>7.2f}{p.get('backward', 0):>7.2f}"
                     f"{p.get('update', 0):>6.2f}{r['kernels']:>9,}{r['host_waits']:>6}  "
                     f"{band(r['speedup'], r['speedup_band']):<22}{band(r['compiled_speedup'], r['compiled_band']):<22}")
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--gpu", default="a100-40gb,rtx-3090", help="GPU presets, comma-separated")
    ap.add_argument("--lists", choices=("executed", "half"), default="executed",
                    help="the chip's list fills: as the study's network executes them (default), or half full")
    ap.add_argument("--json", help="write the rows as JSON")
    args = ap.parse_args(argv)
    points = load("study-log")["points"]
    rows = [row(p, g, args.lists) for g in args.gpu.split(",") for p in points]
    print(format_rows(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
