"""The matmuls tt-metal's tech report publishes for ttnn's out-of-box configs, and the model's predictions.

Shapes, data types and fidelities of the out-of-box tables in tt-metal's tech_reports/GEMM_FLOPS/GEMM_FLOPS.md
(commit 06bd3735): every operand and the output DRAM-interleaved, the full compute grid (8 x 8 on an n150,
13 x 10 on a p150), without and with trace. The report's times are whole-op measurements: no constant of the
model is set from them (docs/tensix.md); they are compared once, after the predictions below were committed
(docs/validation.md, "Tensix matmuls").
"""
from __future__ import annotations

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


# The report's "Inference Time Avg [ns]" per shape (in SHAPES' order), without and with trace: tt-metal
# tech_reports/GEMM_FLOPS/GEMM_FLOPS.md (commit 06bd3735), "N150 Out of Box Results" and "P150 Out of Box
# Results (13x10 grid)"; measured on the cards, host-timed over a loop of the same op. Added after the
# predictions above were committed (e81a97d), for the comparison only.
MEASURED_NS = {
    ("wormhole-n150", "bf16", False): (49049.85, 117115.97, 141491.89, 72388.65, 116362.57, 163326.26, 302200.32,
                                       454769.13, 581557.75, 887527.47, 1146514.42, 1465699.67, 2016849.52),
    ("wormhole-n150", "bf16", True): (19965.17, 115242.00, 140731.33, 68984.03, 113062.86, 159676.07, 298922.06,
                                      450646.88, 576856.14, 886178.02, 1142554.28, 1458785.53, 2008533.48),
    ("wormhole-n150", "bfp8_b", False): (48458.58, 74362.75, 87664.13, 46341.42, 69828.03, 94122.89, 157222.75,
                                         236735.34, 302987.10, 441465.38, 579712.39, 744667.05, 941920.28),
    ("wormhole-n150", "bfp8_b", True): (14207.36, 72386.26, 86517.33, 40965.08, 66068.17, 89848.04, 155975.82,
                                        235431.19, 297122.00, 438799.86, 577411.65, 729207.99, 927324.30),
    ("wormhole-n150", "bfp4_b", False): (50134.66, 60689.45, 69224.83, 50826.07, 51388.74, 71642.40, 126240.25,
                                         193784.24, 237233.64, 353837.01, 438330.17, 567185.88, 750935.08),
    ("wormhole-n150", "bfp4_b", True): (12259.48, 56591.03, 61962.60, 27215.48, 44860.84, 63495.64, 114889.14,
                                        173368.45, 231659.41, 336377.62, 439398.29, 558745.86, 746693.61),
    ("blackhole-p150", "bf16", False): (21712.78, 32711.03, 55029.39, 48613.55, 85642.34, 128111.84, 240602.49,
                                        344324.11, 465774.54, 700097.08, 941648.48, 1211328.51, 1610884.67),
    ("blackhole-p150", "bf16", True): (18069.74, 32436.85, 54368.97, 48279.76, 84846.02, 127110.48, 239679.81,
                                       343863.96, 465235.71, 699429.51, 941219.33, 1211090.09, 1609773.64),
    ("blackhole-p150", "bfp8_b", False): (15618.80, 25348.66, 38230.42, 32222.27, 51093.10, 73120.59, 128996.37,
                                          185058.12, 247588.16, 361664.30, 483880.04, 619204.04, 819244.38),
    ("blackhole-p150", "bfp8_b", True): (15175.34, 24542.81, 38168.43, 31893.25, 50685.41, 72801.11, 126972.20,
                                         181505.68, 243880.75, 358223.92, 480144.02, 614566.80, 812776.09),
    ("blackhole-p150", "bfp4_b", False): (17251.97, 28364.66, 36702.16, 31585.69, 45259.00, 63893.80, 117444.99,
                                          161149.50, 225834.85, 331790.45, 440454.48, 567355.16, 749273.30),
    ("blackhole-p150", "bfp4_b", True): (13511.18, 21009.45, 30767.92, 25050.64, 39494.04, 60267.45, 110042.10,
                                         156936.65, 219643.12, 324723.72, 435388.09, 562322.14, 743987.56),
}


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
