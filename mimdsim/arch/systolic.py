"""Systolic-array (TPU-like) specifications, with presets.

Hardware knows no model: the GEMM timing of an array lives in ``mimdsim/gpu/systolic.py``.
Each preset's figures and their sources are in ``docs/systolic-model.md``.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .presets import Family

KiB = 1024
MiB = 1024 * KiB

DATAFLOWS = ("os", "ws", "is")
DATAFLOW_NAMES = {"os": "output stationary", "ws": "weight stationary", "is": "input stationary"}


@dataclass(frozen=True)
class SystolicSpec:
    """A systolic-array accelerator: a ``rows x cols`` MAC array with a fixed dataflow,
    three operand SRAMs (ifmap = A, filter = B, ofmap = C, SCALE-Sim's names), an off-chip
    memory and a vector unit for element-wise work.

    Cycle counts are array clock cycles; byte sizes are bytes; bandwidth is bytes/second.
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
        SYSTOLIC_ARRAYS.check(
            self, ints=dict.fromkeys(("rows", "cols", "ifmap_sram_bytes", "filter_sram_bytes", "ofmap_sram_bytes",
                                      "bytes_per_element"), 1),
            positive=("clock_hz", "dram_bytes_per_second", "vector_flops_per_cycle"), choices={"dataflow": DATAFLOWS})

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

    def replace(self, **overrides) -> "SystolicSpec":
        return SYSTOLIC_ARRAYS.replace(self, overrides)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


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

SYSTOLIC_ARRAYS = Family(SystolicSpec, kind="systolic array", maker="systolic", presets=SYSTOLIC_PRESETS,
                         descriptions=SYSTOLIC_DESCRIPTIONS)


def systolic(name: str | SystolicSpec = "tpu-v1", **overrides) -> SystolicSpec:
    """A systolic preset with any field overridden: ``systolic("tpu-v1", dataflow="os")``."""
    return SYSTOLIC_ARRAYS.get(name, overrides)
