"""Tenstorrent Tensix chips (Wormhole n150, Blackhole p150): a second MIMD family, dataflow-executed.

A Tensix chip is a grid of cores, each with its own L1 SRAM, five small RISC-V cores (two move data over
the NoCs, three drive the unpacker, the matrix engine (FPU) and the packer), a vector unit (SFPU), two
networks on chip in opposite directions and GDDR6 DRAM banks on the NoC. Cores run reader, compute and
writer kernels joined by circular buffers in L1: no global bulk-synchronous phases (``DATAFLOW``).

Hardware knows no model. Each preset value and its source are listed in ``docs/tensix.md`` (pinned to
tt-metal commit 06bd3735 and tt-isa-documentation); values no source pins are named assumptions
(``mimdsim.assumptions``, target ``chip.<field>``), their defaults equal to the entries' values.
Units: cycles of the chip's AI clock, bytes, bytes per second, watts.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .execution import DATAFLOW, ChipFamily, register
from .presets import Family

KiB = 1024
PCIE_GEN4_X16 = 16e9 * 16 * (128 / 130) / 8  # 31.5 GB/s one way (n150: PCI Express 4.0 x16)
PCIE_GEN5_X16 = 32e9 * 16 * (128 / 130) / 8  # 63.0 GB/s one way (p150: PCI Express 5.0 x16)

# The matrix engine (FPU) computes [8 x 16] x [16 x 16] per cycle: 2,048 multiply-accumulates (tt-metal
# tech_reports/matrix_engine/matrix_engine.md, "the same on Wormhole and Blackhole"); each higher math
# fidelity adds one pass over the mantissa bits (LoFi 1 ... HiFi4 4 passes).
FIDELITY_PHASES = {"lofi": 1, "hifi2": 2, "hifi3": 3, "hifi4": 4}
# Bytes of one 32 x 32 tile per data format (tt-metal tt_metal/common/tile: bfloat16 2 B per element;
# bfp8_b / bfp4_b one shared 8-bit exponent per 16 elements, 64 B per tile, plus 8 or 4 bits of mantissa).
TILE_ELEMENTS = 32 * 32
TILE_BYTES = {"bf16": 2048, "bfp8_b": 1024 + 64, "bfp4_b": 512 + 64, "fp32": 4096}


@dataclass(frozen=True)
class TensixSpec:
    """One Tensix chip on its board, as ttnn sees it: the compute grid ttnn places ops on, per-core
    L1 and engines, the NoCs, DRAM, the clock and the board's power."""

    name: str
    grid_x: int  # ttnn's compute grid (compute_with_storage_grid_size): columns ...
    grid_y: int  # ... and rows; the board's other cores are harvested or run the dispatch firmware
    tensix_cores: int  # Tensix cores enabled on the board (harvesting leaves these)
    l1_bytes: int  # L1 SRAM per core
    l1_reserved_bytes: int  # L1 below the allocator's base (firmware, kernel binaries, mailboxes)
    clock_hz: float  # AI clock
    fpu_macs_per_cycle: int = 2048  # [8x16] x [16x16] per cycle at LoFi
    fpu_eltwise_per_cycle: int = 128  # [8x16] element-wise add/sub/mul per cycle
    sfpu_lanes: int = 32  # vector unit: 32 lanes of fp32
    sfpu_instructions_per_element: float = 4.0  # a simple unary (compare, multiply-add chain): assumption
    nocs: int = 2
    noc_topology: str = "torus"
    noc_bytes_per_cycle: int = 32  # one flit per cycle per link
    noc_hop_cycles: int = 9  # router to neighbouring router
    noc_niu_cycles: int = 5  # NIU to its router (and router to NIU)
    dram_channels: int = 12
    dram_bytes: int = 12 * 1024 ** 3  # GDDR6 capacity
    dram_bytes_per_second: float = 288e9
    dram_efficiency: float = 0.92  # of the peak that readers across the grid reach (assumption)
    dram_latency_cycles: int = 600  # a read's round trip from a Tensix core (assumption)
    host_bytes_per_second: float = PCIE_GEN4_X16
    board_power_w: float = 160.0  # total board power (TBP)
    busy_power_fraction: float = 0.7  # of the TBP drawn while a training step runs (assumption)

    def __post_init__(self) -> None:
        TENSIX_CHIPS.check(
            self,
            ints={"grid_x": 1, "grid_y": 1, "tensix_cores": 1, "l1_bytes": 1, "l1_reserved_bytes": 0,
                  "fpu_macs_per_cycle": 1, "fpu_eltwise_per_cycle": 1, "sfpu_lanes": 1, "nocs": 1,
                  "noc_bytes_per_cycle": 1, "noc_hop_cycles": 0, "noc_niu_cycles": 0, "dram_channels": 1, "dram_bytes": 1,
                  "dram_latency_cycles": 0},
            positive=("clock_hz", "dram_bytes_per_second", "dram_efficiency", "host_bytes_per_second",
                      "board_power_w", "sfpu_instructions_per_element", "busy_power_fraction"),
            choices={"noc_topology": ("torus", "mesh")})
        if self.grid_x * self.grid_y > self.tensix_cores:
            from ..errors import ConfigError, Param
            raise ConfigError(f"Tensix chip {self.name!r}: a {self.grid_x} x {self.grid_y} compute grid needs "
                              f"{self.grid_x * self.grid_y} cores, more than its tensix_cores={self.tensix_cores}; ",
                              "lower ", Param("grid_x", key="chip.set.grid_x"), " or ",
                              Param("grid_y", key="chip.set.grid_y"))
        if self.l1_reserved_bytes >= self.l1_bytes or self.dram_efficiency > 1 or self.busy_power_fraction > 1:
            from ..errors import ConfigError
            raise ConfigError(f"Tensix chip {self.name!r}: l1_reserved_bytes={self.l1_reserved_bytes} must be below "
                              f"l1_bytes={self.l1_bytes}; dram_efficiency={self.dram_efficiency} and busy_power_fraction="
                              f"{self.busy_power_fraction} at most 1")

    # Derived figures.
    @property
    def cores(self) -> int:
        """Cores of ttnn's compute grid (what an op can use)."""
        return self.grid_x * self.grid_y

    @property
    def tiles(self) -> int:
        """The engine's tiles are this chip's cores (a program's per-core arrays span the grid)."""
        return self.cores

    @property
    def sram_per_tile(self) -> int:
        """A core's L1 under the name the settings' checks and the engine give a tile's SRAM."""
        return self.l1_bytes

    @property
    def l1_usable_bytes(self) -> int:
        return self.l1_bytes - self.l1_reserved_bytes

    @property
    def dram_bytes_per_cycle(self) -> float:
        """What the grid's readers reach of the DRAM's peak, per AI-clock cycle."""
        return self.dram_bytes_per_second * self.dram_efficiency / self.clock_hz

    def cycles_per_tile_matmul(self, fidelity: str) -> float:
        """FPU cycles of one 32x32x32 tile product: 32^3 MACs / 2,048 per cycle x the fidelity's passes
        (LoFi 16, HiFi2 32, HiFi3 48, HiFi4 64: tt-metal tech_reports/GEMM_FLOPS/GEMM_FLOPS.md)."""
        return TILE_ELEMENTS * 32 / self.fpu_macs_per_cycle * FIDELITY_PHASES[fidelity]

    def peak_flops(self, fidelity: str = "lofi") -> float:
        return 2.0 * self.fpu_macs_per_cycle * self.cores * self.clock_hz / FIDELITY_PHASES[fidelity]

    def replace(self, **overrides) -> "TensixSpec":
        return TENSIX_CHIPS.replace(self, overrides)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


PRESETS: dict[str, dict] = {
    # Wormhole n150: 80 Tensix on the die, 72 enabled on the n150 (8 x 9); ttnn's compute grid is 8 x 8,
    # the ninth row running fast dispatch. 1464 KiB L1 per core; 12 GDDR6 channels, 288 GB/s; 1 GHz; 160 W.
    "wormhole-n150": dict(grid_x=8, grid_y=8, tensix_cores=72, l1_bytes=1464 * KiB, l1_reserved_bytes=100 * KiB,
                          clock_hz=1.0e9, noc_bytes_per_cycle=32, dram_channels=12, dram_bytes=12 * 1024 ** 3,
                          dram_bytes_per_second=288e9,
                          host_bytes_per_second=PCIE_GEN4_X16, board_power_w=160.0),
    # Blackhole p150: 140 Tensix (14 x 10); ttnn's compute grid 13 x 10, one column for dispatch. 1536 KiB
    # L1 per core; 8 GDDR6 channels (32 GB), 512 GB/s; 1.35 GHz; NoC flits of 512 bits; 300 W.
    "blackhole-p150": dict(grid_x=13, grid_y=10, tensix_cores=140, l1_bytes=1536 * KiB, l1_reserved_bytes=100 * KiB,
                           clock_hz=1.35e9, noc_bytes_per_cycle=64, dram_channels=8, dram_bytes=32 * 1024 ** 3,
                           dram_bytes_per_second=512e9,
                           host_bytes_per_second=PCIE_GEN5_X16, board_power_w=300.0),
}

DESCRIPTIONS = {
    "wormhole-n150": "Tenstorrent Wormhole n150 (one Wormhole B0, 72 Tensix cores, 12 GB GDDR6)",
    "blackhole-p150": "Tenstorrent Blackhole p150 (one Blackhole, 140 Tensix cores, 32 GB GDDR6)",
}

TENSIX_CHIPS = Family(TensixSpec, kind="chip", maker="chip", presets=PRESETS, descriptions=DESCRIPTIONS)
TENSIX = register(ChipFamily("tenstorrent-tensix", DATAFLOW, TENSIX_CHIPS,
                             "Tenstorrent Tensix chips: cores with private L1 running reader, compute and writer "
                             "kernels joined by circular buffers, two NoCs and DRAM on the grid (dataflow)"))
