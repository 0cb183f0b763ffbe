"""The snnTorch IPU study's configuration (Sun et al., arXiv 2211.10725; vinniesun/snntorch-ipu
``train_fcn.py``) as PopTorch builds it, for every neuron model of the zoo, fp32 and fp16, on
ipu-mk2 and bow, beside snnTorch in eager PyTorch on GPUs (float32, the study's framework):
784-1000-10 (or a population code 784-1000-100, 10 classes), T = 25, B = 128, bias, ce_count,
Adam, one step per host call, the same pixels at every step (``static_input``).

The PopTorch program's cost does not depend on the spikes (dense matmuls), so the chip columns
are rate-driven; ``tests/test_poptorch.py`` checks the numerics and that every layer spikes.

    python examples/sun2022_poptorch.py            # markdown table (docs/validation.md)
"""
from __future__ import annotations

import argparse

import mimdsim
from mimdsim.snn.zoo import ZOO

MODELS = ("leaky", "synaptic", "alpha", "lapicque", "rleaky-one-to-one", "rleaky", "rsynaptic")
GPUS = ("a100-40gb", "v100")


def rows(T=25, B=128, chips=("ipu-mk2", "bow"), population=False):
    out = []
    sizes = [784, 1000, 100 if population else 10]
    for name in MODELS:
        net = mimdsim.Network.build(sizes, ZOO[name], bias=True, loss="ce_count",
                                    num_classes=10 if population else None)
        row = {"model": name}
        for chip in chips:
            for precision in ("fp32", "fp16"):
                rep = mimdsim.simulate(net, chip, timesteps=T, batch_size=B, activity=0.1, precision=precision,
                                       schedule="poptorch", static_input=True).report
                row[f"{chip} {precision}"] = rep.samples_per_second
        for gpu in GPUS:
            row[f"{gpu} eager"] = mimdsim.gpu_estimate(net, gpu, timesteps=T, batch_size=B, strategy="eager",
                                                       precision="fp32", activity=0.1).samples_per_second
        out.append(row)
    return out


def markdown(table) -> str:
    cols = list(table[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in table:
        lines.append("| " + " | ".join(r[c] if isinstance(r[c], str) else f"{r[c]:,.0f}" for c in cols) + " |")
    a100 = "a100-40gb eager"
    lines.append("")
    lines.append("| model | " + " | ".join(f"{c} / A100 eager" for c in cols[1:5]) + " |")
    lines.append("|" + "---|" * 5)
    for r in table:
        lines.append(f"| {r['model']} | " + " | ".join(f"{r[c] / r[a100]:.1f}x" for c in cols[1:5]) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--population", action="store_true", help="784-1000-100, a population code of 10 classes")
    args = ap.parse_args()
    print(markdown(rows(population=args.population)))
