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

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError

KiB = 1024
MiB = 1024 * KiB

DATAFLOWS = ("os", "ws", "is")
DATAFLOW_NAMES = {"os": "output stationary", "ws": "weight stationary", "is": "input stationary"}


def _check_dataflow(dataflow) -> str:
    if dataflow not in DATAFLOWS:
        raise ConfigError(
            f"dataflow={dataflow!r} is not a systolic dataflow; use one of "
            f"{', '.join(repr(d) for d in DATAFLOWS)} "
            f"({', '.join(f'{k}: {v}' for k, v in DATAFLOW_NAMES.items())})")
    return dataflow


def _check_dim(name: str, value) -> None:
    """``value`` must be an integer >= 1 (a Python int or a numpy integer array)."""
    if isinstance(value, (bool, np.bool_)):
        raise ConfigError(f"{name}={value!r} must be an integer >= 1, not a bool")
    arr = np.asarray(value)
    if arr.dtype.kind not in "iu":
        if arr.dtype.kind == "f" and arr.size and np.all(np.isfinite(arr)) and np.all(arr == np.floor(arr)):
            pass  # whole-number floats (e.g. 256.0) are accepted
        else:
            raise ConfigError(f"{name}={value!r} must be an integer >= 1 (got dtype {arr.dtype})")
    if arr.size == 0:
        raise ConfigError(f"{name} is an empty array; pass at least one size")
    if np.any(arr < 1):
        bad = (arr[arr < 1].ravel()[0] if arr.ndim else arr).item()
        raise ConfigError(f"{name}={bad!r} must be an integer >= 1; a GEMM or array dimension "
                          f"cannot be zero or negative")


def _array_dim(name: str, value) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ConfigError(f"{name}={value!r} must be an integer >= 1 (systolic array {name})")
    return int(value)


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
    _check_dim(name, v)
    return np.asarray(v).astype(np.int64)


def systolic_gemm_folds(m, n, k, *, rows: int, cols: int, dataflow: str):
    """Number of ``rows x cols`` folds: ``ceil(S_R / rows) * ceil(S_C / cols)``."""
    rows, cols = _array_dim("rows", rows), _array_dim("cols", cols)
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
    rows, cols = _array_dim("rows", rows), _array_dim("cols", cols)
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


@dataclass(frozen=True)
class SystolicSpec:
    """A systolic-array accelerator: a ``rows x cols`` MAC array with a fixed dataflow,
    three operand SRAMs (ifmap = A, filter = B, ofmap = C, SCALE-Sim's names), an off-chip
    memory and a vector unit for element-wise work.

    Cycle counts are array clock cycles; byte sizes are bytes; bandwidth is bytes/second.
    Each preset's figures and their sources are in ``docs/systolic-model.md``.
    """

    name: str
    rows: int
    cols: int
    dataflow: str  # 'os' | 'ws' | 'is'
    clock_hz: float
    ifmap_sram_bytes: int
    filter_sram_bytes: int
    ofmap_sram_bytes: int
    dram_bytes_per_second: float
    vector_flops_per_cycle: float  # vector unit for element-wise work
    bytes_per_element: int = 2

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ConfigError(f"systolic spec name={self.name!r} must be a non-empty string")
        for f in ("rows", "cols", "ifmap_sram_bytes", "filter_sram_bytes", "ofmap_sram_bytes",
                  "bytes_per_element"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ConfigError(
                    f"systolic {self.name!r}: {f}={v!r} must be an integer >= 1; "
                    f"pass e.g. systolic({self.name!r}, {f}={_EXAMPLE.get(f, 1)})")
        if self.dataflow not in DATAFLOWS:
            raise ConfigError(
                f"systolic {self.name!r}: dataflow={self.dataflow!r} is not one of "
                f"{', '.join(repr(d) for d in DATAFLOWS)}; pass e.g. "
                f"systolic({self.name!r}, dataflow='ws')")
        for f in ("clock_hz", "dram_bytes_per_second", "vector_flops_per_cycle"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) \
                    or not math.isfinite(v) or v <= 0:
                raise ConfigError(
                    f"systolic {self.name!r}: {f}={v!r} must be a positive finite number; "
                    f"pass e.g. systolic({self.name!r}, {f}={_EXAMPLE[f]:g})")

    # Derived figures.
    @property
    def macs(self) -> int:
        """Multiply-accumulate units in the array."""
        return self.rows * self.cols

    @property
    def peak_flops(self) -> float:
        """Array peak, 2 FLOPs (or ops) per MAC per cycle."""
        return 2.0 * self.macs * self.clock_hz

    @property
    def dram_bytes_per_cycle(self) -> float:
        return self.dram_bytes_per_second / self.clock_hz

    def gemm_cycles(self, m, n, k):
        """Compute cycles of ``(M x K) @ (K x N)`` on this array (no memory stalls)."""
        return systolic_gemm_cycles(m, n, k, rows=self.rows, cols=self.cols, dataflow=self.dataflow)

    def gemm_seconds(self, m, n, k):
        return np.asarray(self.gemm_cycles(m, n, k), dtype=np.float64) / self.clock_hz

    def gemm_utilization(self, m, n, k):
        return gemm_utilization(m, n, k, self.rows, self.cols, self.dataflow)

    def replace(self, **overrides) -> "SystolicSpec":
        names = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(overrides) - names)
        if unknown:
            raise ConfigError(
                f"unknown systolic field(s) {unknown}; valid fields: {', '.join(sorted(names))}")
        return dataclasses.replace(self, **overrides)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


_EXAMPLE = {"rows": 128, "cols": 128, "ifmap_sram_bytes": 64 * KiB, "filter_sram_bytes": 64 * KiB,
            "ofmap_sram_bytes": 64 * KiB, "bytes_per_element": 2, "clock_hz": 1e9,
            "dram_bytes_per_second": 10e9, "vector_flops_per_cycle": 128}

# Every figure and its source: docs/systolic-model.md, "Presets".
SYSTOLIC_PRESETS: dict[str, dict] = {
    # Google TPU v1 (Jouppi et al., ISCA 2017): 256x256 8-bit MACs at 700 MHz, weights
    # preloaded into the array (weight stationary), 24 MiB Unified Buffer (activations),
    # Weight FIFO of four 256x256 tiles, 4 MiB of 32-bit accumulators, 34 GB/s DDR3
    # weight memory. Vector width (256 per cycle) is an assumption: one element per column.
    "tpu-v1": dict(
        rows=256, cols=256, dataflow="ws", clock_hz=700e6,
        ifmap_sram_bytes=24 * MiB, filter_sram_bytes=4 * 256 * 256, ofmap_sram_bytes=4 * MiB,
        dram_bytes_per_second=34e9, vector_flops_per_cycle=256, bytes_per_element=1,
    ),
    # scale-sim-v2 configs/google.cfg: 256x256, ws, 6144/6144/2048 kB SRAMs, 1-byte words.
    # SCALE-Sim has no clock and no vector unit: clock and DRAM rate from TPU v1.
    "scalesim-google": dict(
        rows=256, cols=256, dataflow="ws", clock_hz=700e6,
        ifmap_sram_bytes=6144 * KiB, filter_sram_bytes=6144 * KiB, ofmap_sram_bytes=2048 * KiB,
        dram_bytes_per_second=34e9, vector_flops_per_cycle=256, bytes_per_element=1,
    ),
    # scale-sim-v2 configs/scale.cfg (the default config): 32x32, os, 64/64/64 kB SRAMs,
    # Bandwidth 10 words/cycle, 1-byte words. Clock 1 GHz and vector width 32 are assumptions.
    "scalesim-32x32": dict(
        rows=32, cols=32, dataflow="os", clock_hz=1e9,
        ifmap_sram_bytes=64 * KiB, filter_sram_bytes=64 * KiB, ofmap_sram_bytes=64 * KiB,
        dram_bytes_per_second=10 * 1e9, vector_flops_per_cycle=32, bytes_per_element=1,
    ),
}

SYSTOLIC_DESCRIPTIONS = {
    "tpu-v1": "Google TPU v1 (256x256 8-bit MACs, 700 MHz, weight stationary)",
    "scalesim-google": "SCALE-Sim v2 configs/google.cfg (TPU-v1-like 256x256, ws)",
    "scalesim-32x32": "SCALE-Sim v2 default configs/scale.cfg (32x32, os)",
}


def systolic(name: str | SystolicSpec = "tpu-v1", **overrides) -> SystolicSpec:
    """A systolic preset with any field overridden: ``systolic("tpu-v1", dataflow="os")``."""
    if isinstance(name, SystolicSpec):
        return name.replace(**overrides) if overrides else name
    if name not in SYSTOLIC_PRESETS:
        import difflib
        close = difflib.get_close_matches(str(name), SYSTOLIC_PRESETS, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ConfigError(
            f"unknown systolic array {name!r}; presets are {', '.join(SYSTOLIC_PRESETS)}.{hint}")
    names = {f.name for f in dataclasses.fields(SystolicSpec)}
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise ConfigError(
            f"unknown systolic field(s) {unknown}; valid fields: {', '.join(sorted(names))}")
    return SystolicSpec(name=name, **{**SYSTOLIC_PRESETS[name], **overrides})
