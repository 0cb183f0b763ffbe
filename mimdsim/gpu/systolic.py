"""Systolic-array (TPU-like) cost model: compute cycles of a GEMM, closed form.

The semantics are SCALE-Sim's (github scalesim-project/scale-sim-v2, ``pip install
scalesim``): for every dataflow, the GEMM ``C[M,N] = A[M,K] @ B[K,N]`` is mapped onto
a spatial grid ``S_R x S_C`` and a temporal extent ``T``, cut into folds of
``rows x cols``, and the folds run one after another, each padded to the full array:

==========  =========  =========  =====  ==========================  ================
dataflow    S_R        S_C        T      stationary in the PEs       cycles per fold
==========  =========  =========  =====  ==========================  ================
``os``      M          N          K      outputs C                   R + C + T - 2
``ws``      K          N          M      weights B (the "filter")    2R + C + T - 2
``is``      K          M          N      inputs A (the "ifmap")      2R + C + T - 2
==========  =========  =========  =====  ==========================  ================

    folds  = ceil(S_R / R) * ceil(S_C / C)
    cycles = folds * cycles_per_fold - 1

with ``R = rows`` and ``C = cols`` (the whole array, also for a partial fold). The final
``- 1`` is SCALE-Sim's convention: it reports the (0-based) cycle in which the last
output is written, not the number of cycles. Stalls on SRAM/DRAM are not part of this
count (SCALE-Sim reports them separately). ``docs/systolic-model.md`` derives each term
from SCALE-Sim's demand matrices and lists the runs it was checked against.

Hardware knows no model: this module knows GEMM shapes, not networks.
"""
from __future__ import annotations

import numpy as np

from ..arch.systolic import DATAFLOW_NAMES, DATAFLOWS, SystolicSpec
from ..checks import check_choice, check_int, check_positive_array

_DATAFLOW_FIX = ", ".join(f"{k}: {v}" for k, v in DATAFLOW_NAMES.items())


def _check_dataflow(dataflow) -> str:
    return check_choice("dataflow", dataflow, DATAFLOWS, fix=_DATAFLOW_FIX)


def _ceil_div(a, b):
    return -(-a // b)


def spatio_temporal(m, n, k, dataflow: str):
    """``(S_R, S_C, T)`` of the GEMM ``(M x K) @ (K x N)`` under ``dataflow`` (SCALE-Sim's mapping)."""
    _check_dataflow(dataflow)
    if dataflow == "os":
        return m, n, k
    if dataflow == "ws":
        return k, n, m
    return k, m, n  # 'is'


def _as_int64(name, v):
    return check_positive_array(name, v, integer=True).astype(np.int64)


def systolic_gemm_folds(m, n, k, *, rows: int, cols: int, dataflow: str):
    """Number of ``rows x cols`` folds: ``ceil(S_R / rows) * ceil(S_C / cols)``."""
    rows, cols = check_int("rows", rows, low=1), check_int("cols", cols, low=1)
    sr, sc, _ = spatio_temporal(_as_int64("m", m), _as_int64("n", n), _as_int64("k", k), dataflow)
    folds = _ceil_div(sr, rows) * _ceil_div(sc, cols)
    return int(folds) if np.ndim(folds) == 0 else folds


def systolic_gemm_cycles(m, n, k, *, rows: int, cols: int, dataflow: str):
    """Compute cycles of ``C[M,N] = A[M,K] @ B[K,N]`` on a ``rows x cols`` systolic array.

    Matches SCALE-Sim's stall-free cycle count (its "Total Cycles" with "Stall Cycles" = 0):

        os: S_R=M, S_C=N, T=K;  per fold  R + C + T - 2
        ws: S_R=K, S_C=N, T=M;  per fold 2R + C + T - 2
        is: S_R=K, S_C=M, T=N;  per fold 2R + C + T - 2
        cycles = ceil(S_R/R) * ceil(S_C/C) * per_fold - 1

    ``m``, ``n``, ``k`` may be integers or integer numpy arrays (broadcast together); the
    result is an ``int`` for scalar inputs and an ``int64`` array otherwise. No SRAM or
    DRAM stalls are included.
    """
    rows, cols = check_int("rows", rows, low=1), check_int("cols", cols, low=1)
    _check_dataflow(dataflow)
    sr, sc, t = spatio_temporal(_as_int64("m", m), _as_int64("n", n), _as_int64("k", k), dataflow)
    folds = _ceil_div(sr, rows) * _ceil_div(sc, cols)
    fill_drain = rows + cols - 2 if dataflow == "os" else 2 * rows + cols - 2
    cycles = folds * (fill_drain + t) - 1
    return int(cycles) if np.ndim(cycles) == 0 else cycles


def gemm_utilization(m, n, k, rows: int, cols: int, dataflow: str):
    """Useful MACs over MAC slots: ``M*N*K / (rows * cols * cycles)``.

    Uses :func:`systolic_gemm_cycles` (SCALE-Sim's count, which is one less than the
    number of cycles the demand spans), so it equals SCALE-Sim's "Overall Util %" / 100.
    On a 1x1 output-stationary array that count has no fill/drain to hide the ``- 1``
    (M=N=K=1 gives 0 cycles, where SCALE-Sim itself divides by zero) and the ratio would
    exceed 1; there the denominator is at least one cycle and the ratio is clipped to 1.
    """
    cycles = systolic_gemm_cycles(m, n, k, rows=rows, cols=cols, dataflow=dataflow)
    macs = np.asarray(m, dtype=np.float64) * np.asarray(n, dtype=np.float64) * np.asarray(k, dtype=np.float64)
    slots = float(rows) * float(cols) * np.maximum(np.asarray(cycles, dtype=np.float64), 1.0)
    util = np.minimum(1.0, macs / slots)
    return float(util) if np.ndim(util) == 0 else util


def array_gemm_cycles(array: SystolicSpec, m, n, k):
    """Compute cycles of ``(M x K) @ (K x N)`` on the systolic ``array`` (no memory stalls)."""
    return systolic_gemm_cycles(m, n, k, rows=array.rows, cols=array.cols, dataflow=array.dataflow)


def array_gemm_seconds(array: SystolicSpec, m, n, k):
    """:func:`array_gemm_cycles` at the array's clock."""
    return np.asarray(array_gemm_cycles(array, m, n, k), dtype=np.float64) / array.clock_hz
