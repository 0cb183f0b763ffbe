"""The matmuls tt-metal's tech report publishes for ttnn's out-of-box configs, and the model's predictions.

Shapes, data types and fidelities of the out-of-box tables in tt-metal's tech_reports/GEMM_FLOPS/GEMM_FLOPS.md
(commit 06bd3735): every operand and the output DRAM-interleaved, the full compute grid (8 x 8 on an n150,
13 x 10 on a p150), without and with trace. The report's times are whole-op measurements: no constant of the
model is set from them (docs/tensix.md); they are compared once, after the predictions below were committed
(docs/validation.md, "Tensix matmuls").
"""
from __future__ import annotations

import json
import pathlib

from .ops import tensix_op

N150_SHAPES = ((512, 512, 512), (512, 1024, 1024), (512, 1024, 2048), (1024, 1024, 1024), (1024, 1024, 2048),
               (1024, 2048, 2048), (2048, 2048, 2048), (2048, 2048, 3072), (2048, 3072, 3072), (3072, 3072, 3072),
               (3072, 3072, 4096), (3072, 4096, 4096), (4096, 4096, 4096))
# the p150's shapes are the n150's scaled to its 13 x 10 grid (M by 10/8, K and N by 13/8)
P150_SHAPES = ((640, 832, 832), (640, 1664, 1664), (640, 1664, 3328), (1280, 1664, 1664), (1280, 1664, 3328),
               (1280, 3328, 3328), (2560, 3328, 3328), (2560, 3328, 4992), (2560, 4992, 4992), (3840, 4992, 4992),
               (3840, 4992, 6656), (3840, 6656, 6656), (5120, 6656, 6656))
SHAPES = {"wormhole-n150": N150_SHAPES, "blackhole-p150": P150_SHAPES}
FORMATS = (("bf16", "hifi2"), ("bfp8_b", "lofi"), ("bfp4_b", "lofi"))
CHIPS = tuple(SHAPES)


def predictions() -> list[dict]:
    """One row per chip, format and shape: the model's device, eager and traced times (us) and TFLOP/s."""
    rows = []
    for chip in CHIPS:
        for precision, fidelity in FORMATS:
            for m, k, n in SHAPES[chip]:
                r = tensix_op("matmul", chip, m=m, k=k, n=n, precision=precision, fidelity=fidelity, band=False)
                rows.append({"chip": chip, "m": m, "k": k, "n": n, "precision": precision, "fidelity": fidelity,
                             "config": r.config["config"], "device_us": r.device_seconds * 1e6,
                             "eager_us": r.seconds * 1e6, "traced_us": r.traced_seconds * 1e6,
                             "traced_tflops": r.flops() / r.traced_seconds / 1e12})
    return rows


def prediction_table() -> str:
    """docs/tensix.md's predicted table (markdown)."""
    lines = ["| chip | M | K | N | format | config | device us | eager us | traced us | traced TFLOP/s |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in predictions():
        lines.append(f"| {r['chip']} | {r['m']} | {r['k']} | {r['n']} | {r['precision']} {r['fidelity']} | "
                     f"{r['config']} | {r['device_us']:,.1f} | {r['eager_us']:,.1f} | {r['traced_us']:,.1f} | "
                     f"{r['traced_tflops']:,.1f} |")
    return "\n".join(lines)


# The report's "Inference Time Avg [ns]" per shape, without and with trace: tt-metal
# tech_reports/GEMM_FLOPS/GEMM_FLOPS.md (commit 06bd3735), "N150 Out of Box Results" and "P150 Out of Box
# Results (13x10 grid)"; measured on the cards, host-timed over a loop of the same op. Added after the
# predictions above were committed (e81a97d), for the comparison only. Stored once, as mimdsim validate's source
# tensix-matmul reads them: {(chip, precision, traced): times in SHAPES' order}.
MEASURED_FILE = pathlib.Path(__file__).resolve().parents[1] / "validation" / "data" / "tensix_matmul.json"


def _measured_ns() -> dict:
    with open(MEASURED_FILE) as f:
        rows = json.load(f)["points"]
    out = {}
    for chip in CHIPS:
        for precision, _ in FORMATS:
            for traced in (False, True):
                by_shape = {(r["m"], r["k"], r["n"]): r["measured_ns"] for r in rows
                            if (r["chip"], r["precision"], r["trace"]) == (chip, precision, traced)}
                out[(chip, precision, traced)] = tuple(by_shape[s] for s in SHAPES[chip])
    return out


MEASURED_NS = _measured_ns()


def comparison() -> list[dict]:
    """Every prediction beside its measurement: model / measured, traced and eager."""
    out = []
    index = {(c, p): 0 for c in CHIPS for p, _ in FORMATS}
    for r in predictions():
        i = index[(r["chip"], r["precision"])]
        index[(r["chip"], r["precision"])] += 1
        traced = MEASURED_NS[(r["chip"], r["precision"], True)][i] / 1e3
        eager = MEASURED_NS[(r["chip"], r["precision"], False)][i] / 1e3
        out.append({**r, "measured_traced_us": traced, "measured_eager_us": eager,
                    "traced_ratio": r["traced_us"] / traced, "eager_ratio": r["eager_us"] / eager})
    return out


def comparison_summary() -> str:
    """Per chip and format: the median and the range of model / measured (traced and eager), and the
    bands' reach, as docs/validation.md reports them."""
    import statistics

    rows = comparison()
    lines = ["| chip | format | traced: median model / measured | range | eager: median | range |",
             "|---|---|---|---|---|---|"]
    for chip in CHIPS:
        for precision, fidelity in FORMATS:
            sel = [r for r in rows if r["chip"] == chip and r["precision"] == precision]
            t = [r["traced_ratio"] for r in sel]
            e = [r["eager_ratio"] for r in sel]
            lines.append(f"| {chip} | {precision} {fidelity} | {statistics.median(t):.2f} | {min(t):.2f}-{max(t):.2f} | "
                         f"{statistics.median(e):.2f} | {min(e):.2f}-{max(e):.2f} |")
    return "\n".join(lines)
