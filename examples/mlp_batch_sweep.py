"""MLP inference (flavour-tagging sized, 1800-128-128-1) against batch size: the MIMD chip's AMP
units beside GPU models (docs/workloads.md, "Dense networks").

    python examples/mlp_batch_sweep.py [--out DIR]

For each batch the chip runs fp32 and fp16 (its AMP products by poplin's estimator of the AMP
vertex), with inputs resident or streamed over the host link; the A100 and H100 run the same
inference in fp32, tf32 and fp16. Prints a table and writes ``mlp_batch_sweep.md``.
"""
from __future__ import annotations

import argparse
import os

from mimdsim.workloads.mlp.gpu_kernels import mlp_estimate
from mimdsim.workloads import mlp
from mimdsim.workloads.mlp.program import DEFAULT_SIZES

BATCHES = [1, 16, 256, 1024, 4096, 16384, 65536]


def rows(chip="ipu-mk2", gpus=("a100-40gb", "h100")):
    out = []
    for b in BATCHES:
        r = {"batch": b}
        for prec in ("fp32", "fp16"):
            for stream in (False, True):
                key = f"{chip} {prec} {'streamed' if stream else 'resident'}"
                r[key] = mlp(b, DEFAULT_SIZES, chip, precision=prec, stream=stream).samples_per_second
        for g in gpus:
            for prec in ("fp32", "tf32", "fp16"):
                for stream in (False, True):
                    r[f"{g} {prec} {'streamed' if stream else 'resident'}"] = \
                        mlp_estimate(list(DEFAULT_SIZES), b, g, precision=prec, stream=stream).samples_per_second
        out.append(r)
    return out


def table(rs, chip="ipu-mk2", gpus=("a100-40gb", "h100")):
    cols = [f"{chip} fp32 resident", f"{chip} fp16 resident", f"{chip} fp16 streamed"] + \
           [f"{g} {p} resident" for g in gpus for p in ("fp32", "fp16")] + [f"{g} fp16 streamed" for g in gpus]
    lines = ["| batch | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for r in rs:
        lines.append(f"| {r['batch']} | " + " | ".join(f"{r[c] / 1e6:,.3g}" for c in cols) + " |")
    lines.append("")
    lines.append("10^6 samples/s.")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "docs", "figures"))
    args = ap.parse_args()
    text = table(rows())
    print(text)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "mlp_batch_sweep.md"), "w") as f:
        f.write(text + "\n")


if __name__ == "__main__":
    main()
