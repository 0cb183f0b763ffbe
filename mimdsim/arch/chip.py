"""Chip and system specifications: every hardware constant, with presets.

Hardware knows no model. Each field's value per preset and its source are listed in
``docs/cost-model.md``; fields the public record does not pin down are named
parameters with a documented default, never hidden constants.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..errors import ConfigError, Param
from ..checks import check_int
from .execution import BULK_SYNCHRONOUS, ChipFamily, find_family, register
from .presets import Family

KiB = 1024
# PCIe payload bandwidth per direction: GT/s x lanes x 128b/130b encoding / 8 bits.
PCIE_GEN3_X8 = 8e9 * 8 * (128 / 130) / 8  # 7.88 GB/s (MK1 cards)
PCIE_GEN4_X16 = 16e9 * 16 * (128 / 130) / 8  # 31.5 GB/s ("64 GB/s" counts both directions)
# An IPU-M2000 / Bow-2000 reaches its host server through one 100 GbE RoCE NIC shared by its four IPUs
# (Graphcore, IPU-POD Direct Attach build and test guide, "System summary"): 12.5 GB/s line rate, one way
ETHERNET_100G = 100e9 / 8


@dataclass(frozen=True)
class ChipSpec:
    """One MIMD processor: tiles with private SRAM, an exchange fabric and a sync controller.

    Cycle counts are in tile clock cycles; bandwidths of the fabric are bytes per cycle
    per tile, off-chip links and host I/O are bytes per second.
    """

    name: str
    tiles: int
    sram_per_tile: int  # bytes
    clock_hz: float
    workers: int = 6  # hardware worker threads per tile, barrel-issued round robin
    # Worker SIMD: a 64-bit datapath holds 2 x fp32 or 4 x fp16 per instruction.
    simd_fp32: int = 2
    simd_fp16: int = 4
    load_bytes: int = 8  # per load instruction (16 with ld128 in interleaved memory)
    sram_bank_bytes: int = 16 * KiB
    # AMP (matrix) unit, FLOPs per cycle per tile (1 MAC = 2 FLOPs).
    amp_flops_fp32: int = 32
    amp_flops_fp16: int = 128
    # Exchange fabric.
    exchange_send_bytes_per_cycle: float = 4.0
    exchange_recv_bytes_per_cycle: float = 4.0
    exchange_broadcast_bytes_per_cycle: float = 8.0  # supertile pair receiving the same data
    exchange_latency_cycles: int = 98  # first byte arrival, worst case across the chip
    # Fixed cost of one exchange phase beyond that latency: 0 (assumption, range 0-100). poplibs' planners
    # charge none (poplin ConvModel) or 100 cycles in all (popnn CTCLossPlan); the 600 once used here is
    # Target::getGlobalSyncCycles, a multi-chip barrier (global_sync_cycles). docs/cost-model.md.
    exchange_phase_overhead_cycles: int = 0
    # Synchronisation.
    sync_cycles: int = 126  # on-chip barrier
    global_sync_cycles: int = 600  # barrier spanning several chips
    # Barrier before a program with no exchange into it (superstep sync "local"): 0, none — Poplar's sync
    # analysis syncs only where an exchange needs it, so each tile runs on (assumption, range 0-126;
    # docs/cost-model.md). Above 0 the program pays it as a barrier and its tiles wait for each other.
    local_sync_cycles: int = 0
    # Supervisor thread: cost to launch one vertex's workers and join them.
    vertex_launch_cycles: int = 11
    # Chip-to-chip links and host.
    link_bytes_per_second: float = 320e9  # aggregate per chip
    link_latency_s: float = 1e-6  # one-way, per cross-chip exchange (unknown; assumption)
    host_bytes_per_second: float = PCIE_GEN4_X16  # one direction
    host_latency_s: float = 1.5e-6  # per host stream in a step (unknown; assumption)
    # Fixed cost of one program run started from the host (runtime, PCIe doorbell, host syncs at
    # start and end): TRACKR's intercept, an upper bound (docs/cost-model.md; docs/workloads.md).
    run_launch_s: float = 192e-6

    def __post_init__(self) -> None:
        CHIPS.check(
            self,
            ints={"tiles": 1, "sram_per_tile": 1, "workers": 1, "simd_fp32": 1, "simd_fp16": 1, "load_bytes": 1,
                  "sram_bank_bytes": 1, "amp_flops_fp32": 1, "amp_flops_fp16": 1, "exchange_latency_cycles": 0,
                  "exchange_phase_overhead_cycles": 0, "sync_cycles": 0, "global_sync_cycles": 0,
                  "local_sync_cycles": 0, "vertex_launch_cycles": 0},
            positive=("clock_hz", "exchange_send_bytes_per_cycle", "exchange_recv_bytes_per_cycle",
                      "exchange_broadcast_bytes_per_cycle", "link_bytes_per_second", "host_bytes_per_second"),
            seconds=("link_latency_s", "host_latency_s", "run_launch_s"))
        if self.exchange_broadcast_bytes_per_cycle < self.exchange_recv_bytes_per_cycle:
            raise ConfigError(
                f"chip {self.name!r}: exchange_broadcast_bytes_per_cycle="
                f"{self.exchange_broadcast_bytes_per_cycle} is below exchange_recv_bytes_per_cycle="
                f"{self.exchange_recv_bytes_per_cycle}; a supertile broadcast cannot be slower")

    # Derived figures.
    @property
    def sram_bytes(self) -> int:
        return self.tiles * self.sram_per_tile

    @property
    def peak_fp32_flops(self) -> float:
        return self.tiles * self.amp_flops_fp32 * self.clock_hz

    @property
    def peak_fp16_flops(self) -> float:
        return self.tiles * self.amp_flops_fp16 * self.clock_hz

    @property
    def link_bytes_per_cycle(self) -> float:
        return self.link_bytes_per_second / self.clock_hz

    @property
    def host_bytes_per_cycle(self) -> float:
        return self.host_bytes_per_second / self.clock_hz

    @property
    def link_latency_cycles(self) -> float:
        return self.link_latency_s * self.clock_hz

    @property
    def host_latency_cycles(self) -> float:
        return self.host_latency_s * self.clock_hz

    @property
    def run_launch_cycles(self) -> float:
        return self.run_launch_s * self.clock_hz

    def replace(self, **overrides) -> "ChipSpec":
        return CHIPS.replace(self, overrides)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class SystemSpec:
    """Several identical chips joined by chip-to-chip links (IPU-Links)."""

    chip: ChipSpec
    chips: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.chip, ChipSpec) and find_family(self.chip) is None:  # or a registered family's spec
            raise ConfigError(f"system chip must be a ChipSpec, got {type(self.chip).__name__}")
        check_int("chips", self.chips, low=1,
                  fix=("pass e.g. ", Param("chips", 2, python=f"system({self.chip.name!r}, chips=2)")))

    @property
    def name(self) -> str:
        return self.chip.name if self.chips == 1 else f"{self.chips}x{self.chip.name}"

    @property
    def tiles(self) -> int:
        return self.chips * self.chip.tiles

    def check_tiles(self, tiles: int | None) -> int:
        """The tiles a workload asks for: every tile of the system when None, else an integer
        between 1 and :attr:`tiles`."""
        if tiles is None:
            return self.tiles
        return check_int("tiles", tiles, low=1, high=self.tiles,
                         fix=f"{self.name} has {self.tiles} tiles; use fewer, or a system with more chips")

    def to_dict(self) -> dict:
        return {"chips": self.chips, "chip": self.chip.to_dict()}


_IPU_MK2 = dict(
    tiles=1472, sram_per_tile=624 * KiB, clock_hz=62.5e12 / (1472 * 32),
    amp_flops_fp32=32, amp_flops_fp16=128, sram_bank_bytes=16 * KiB,
    link_bytes_per_second=320e9, host_bytes_per_second=ETHERNET_100G,
)

PRESETS: dict[str, dict] = {
    "ipu-mk1": dict(
        tiles=1216, sram_per_tile=256 * KiB, clock_hz=1.6e9,
        amp_flops_fp32=16, amp_flops_fp16=64, sram_bank_bytes=32 * KiB,
        link_bytes_per_second=128e9, host_bytes_per_second=PCIE_GEN3_X8,
    ),
    "ipu-mk2": dict(_IPU_MK2),
    "bow": dict(_IPU_MK2, clock_hz=1.85e9),
}

DESCRIPTIONS = {
    "ipu-mk1": "Graphcore Colossus MK1 (GC2)",
    "ipu-mk2": "Graphcore Colossus MK2 (GC200)",
    "bow": "Graphcore Bow IPU (GC200 die, wafer-on-wafer power, 1.85 GHz)",
}

# Graphcore's processor and machine names for the presets' chips (GC2: Colossus MK1; GC200: Colossus MK2, in the
# IPU-M2000; Bow IPU, in the Bow-2000), so that a product name finds its preset
PRODUCTS = {"gc2": "ipu-mk1", "colossus-mk1": "ipu-mk1", "gc200": "ipu-mk2", "colossus-mk2": "ipu-mk2",
            "m2000": "ipu-mk2", "ipu-m2000": "ipu-mk2", "mk2": "ipu-mk2", "mk1": "ipu-mk1", "bow-ipu": "bow",
            "bow-2000": "bow", "bow2000": "bow"}
# Fields that describe the chip but that no cost reads: the codelet cycle counts (docs/cost-model.md) were measured
# or counted with them built in. A what-if that sets one would change nothing, so
# the settings refuse it (refuse_unread_fields); tests/test_errors.py checks that each indeed moves no figure.
UNREAD_FIELDS = ("load_bytes", "sram_bank_bytes")


def refuse_unread_fields(overrides, where: str = "") -> None:
    """Refuse a ``--set FIELD=VALUE`` (``[chip.set]``) of a field no cost reads (:data:`UNREAD_FIELDS`)."""
    unread = [f for f in overrides if f in UNREAD_FIELDS]
    if unread:
        f = unread[0]
        param = Param(f, overrides[f], key="chip.set." + f)
        raise ConfigError(where, param, f": no cost reads the chip field {f} (the codelet cycle counts have the chip's "
                          f"value built in; docs/cost-model.md), so it would change nothing; drop it. Fields a what-if "
                          f"moves: tiles, sram_per_tile, clock_hz, workers, the exchange_*, sync and host_* fields",
                          param=param, limit=UNREAD_FIELDS)


CHIPS = Family(ChipSpec, kind="chip", maker="chip", presets=PRESETS, descriptions=DESCRIPTIONS, products=PRODUCTS)
IPU = register(ChipFamily("graphcore-ipu", BULK_SYNCHRONOUS, CHIPS,
                          "Graphcore IPUs: tiles with private SRAM and six barrel-threaded workers, bulk-synchronous "
                          "compute, exchange and sync"))
chip_description = CHIPS.description  # long name of a preset ("" if none)


def chip(name: str | ChipSpec = "ipu-mk2", **overrides) -> ChipSpec:
    """A chip preset with any field overridden: ``chip("ipu-mk2", tiles=256)``. A preset (or spec) of
    another registered chip family (:mod:`.execution`) gives that family's spec; an unknown name is
    refused naming the IPU presets."""
    family = find_family(name)
    return (family.specs if family is not None else CHIPS).get(name, overrides)


def system(name: str | ChipSpec = "ipu-mk2", chips: int = 1, **overrides) -> SystemSpec:
    """``chips`` identical chips joined by links: ``system("ipu-mk2", chips=16)``."""
    return SystemSpec(chip=chip(name, **overrides), chips=chips)


def as_system(spec: ChipSpec | SystemSpec | str) -> SystemSpec:
    if isinstance(spec, SystemSpec):
        return spec
    if isinstance(spec, (str, ChipSpec)) or find_family(spec) is not None:
        return SystemSpec(chip=chip(spec))
    raise ConfigError(f"expected a chip name, ChipSpec or SystemSpec, got {type(spec).__name__}")
