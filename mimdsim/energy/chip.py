"""Energy of a MIMD chip's step, from the counts the engine records (``Report.activity``).

    static   = chips x die x (leakage + (idle - leakage) x clock / preset clock) x seconds
    compute  = tile compute cycles (summed over tiles) x tile_cycle_pj
    memory   = tile compute cycles x sram_bytes_per_cycle x sram_pj_per_byte
    exchange = on-chip bytes delivered x exchange_pj_per_byte
    host     = chip-to-chip link bytes x 8 x link_pj_per_bit + host bytes x 8 x pcie_pj_per_bit

with die = 1 + tile_static_share x (tiles / preset tiles - 1): the chip is priced as itself, its
tiles, clock and chips read from its spec; the constants are its preset's, stated at the preset's
tiles and clock. Idle power runs for the whole step: sync waits, exchange-idle tiles and host waits
burn it. The codelets' estimators count cycles, not instructions by class, so a busy tile cycle
has one average energy (AMP cycles of dense programs cost more: ``docs/energy.md``, "Limits").
"""
from __future__ import annotations

from ..arch.execution import family_of
from ..kernels.assumed import NOTHING, Pinned
from ..report import Report
from .constants import preset_of
from .summary import energy_section, size_factor


def chip_energy(report: Report, system, pinned: Pinned = NOTHING) -> dict | None:
    """The energy section of a chip report (None for a chip whose name is no preset with constants)."""
    chip = system.chip
    preset = preset_of(chip, family_of(chip).specs)
    if preset is None or "tile_compute_cycles" not in report.activity:
        return None
    name = preset.name
    a = report.activity
    seconds = report.seconds_per_step
    clock_ratio, tile_ratio = chip.clock_hz / preset.clock_hz, chip.tiles / preset.tiles

    def static_w(get, watts):  # a preset's power figure at this system's chips, tiles and clock
        leak = min(get("ipu.leakage_share") * get(f"{name}.max_w"), get(f"{name}.idle_w"))
        die = size_factor(get, "ipu.tile_static_share", tile_ratio)
        return system.chips * die * (leak + (watts - leak) * clock_ratio)

    def parts(get):
        cycles = a["tile_compute_cycles"]
        return {
            "static": static_w(get, get(f"{name}.idle_w")) * seconds,
            "compute": cycles * get(f"{name}.tile_cycle_pj") * 1e-12,
            "memory": cycles * get("ipu.sram_bytes_per_cycle") * get(f"{name}.sram_pj_per_byte")
            * 1e-12,
            "exchange": a["exchange_bytes"] * get("ipu.exchange_pj_per_byte") * 1e-12,
            "host": 8e-12 * (a["link_bytes"] * get("ipu.link_pj_per_bit")
                             + a["host_bytes"] * get("host.pcie_pj_per_bit")),
        }

    def limits(get):
        return static_w(get, get(f"{name}.idle_w")), static_w(get, get(f"{name}.max_w"))

    return energy_section(parts, seconds, report.batch_size, limits, a, name, pinned)
