"""Energy of a systolic array's step, SCALE-Sim style: per-MAC and per-byte SRAM and DRAM energies.

    static  = array x idle x seconds, array = 1 + array_static_share x (rows x cols / preset's - 1)
    compute = MACs x mac_pj (int8 or fp16 by bytes_per_element) + vector ops x vector_pj_per_op
    memory  = SRAM bytes x sram_pj_per_byte + DRAM bytes x 8 x dram_pj_per_bit

SRAM bytes of a GEMM follow the dataflow (:func:`gemm_sram_bytes`). The array is priced as itself:
its size and element width from its spec, the constants its preset's (stated at the preset's size).
"""
from __future__ import annotations

import math

from ..arch.systolic import SYSTOLIC_ARRAYS
from ..kernels.assumed import NOTHING, Pinned
from ..report import Report
from .constants import preset_of
from .summary import energy_section, size_factor


def gemm_sram_bytes(m: int, n: int, k: int, rows: int, cols: int, dataflow: str, e: int) -> float:
    """Operand SRAM traffic of ``C[m,n] = A[m,k] B[k,n]``: what is stationary is read once, what
    streams is read once per fold across it, and outputs are written once per fold along k
    (partial sums) or once (output stationary)."""
    if dataflow == "os":  # C stays; A streams across column folds, B across row folds
        reads = m * k * math.ceil(n / cols) + k * n * math.ceil(m / rows)
        writes = m * n
    elif dataflow == "ws":  # B stays; A streams once per column fold; partial C once per row fold of k
        reads = k * n + m * k * math.ceil(n / cols)
        writes = m * n * math.ceil(k / rows)
    else:  # "is": A stays; B streams once per column fold of m; partial C once per row fold of k
        reads = m * k + k * n * math.ceil(m / cols)
        writes = m * n * math.ceil(k / rows)
    return float(e * (reads + writes))


def systolic_energy(report: Report, spec, pinned: Pinned = NOTHING) -> dict | None:
    """The energy section of a systolic array's report (None for an array whose name is no preset with
    constants)."""
    preset = preset_of(spec, SYSTOLIC_ARRAYS)
    if preset is None or "macs" not in report.activity:
        return None
    name = preset.name
    a = report.activity
    seconds = report.seconds_per_step
    mac = "systolic.int8_mac_pj" if spec.bytes_per_element == 1 else "systolic.fp16_mac_pj"

    def array(get):
        return size_factor(get, "systolic.array_static_share", spec.macs / preset.macs)

    def parts(get):
        return {
            "static": array(get) * get(f"{name}.idle_w") * seconds,
            "compute": 1e-12 * (a["macs"] * get(mac) + a["vector_ops"] * get("systolic.vector_pj_per_op")),
            "memory": 1e-12 * (a["sram_bytes"] * get("systolic.sram_pj_per_byte")
                               + 8 * a["dram_bytes"] * get("systolic.dram_pj_per_bit")),
        }

    def limits(get):
        return array(get) * get(f"{name}.idle_w"), array(get) * get(f"{name}.max_w")

    return energy_section(parts, seconds, report.batch_size, limits, a, name, pinned)
