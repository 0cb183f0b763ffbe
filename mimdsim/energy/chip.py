"""Energy of a MIMD chip's step, from the counts the engine records (``Report.activity``).

    static   = chips x (leakage + (idle - leakage) x clock / preset clock) x seconds
    compute  = tile compute cycles (summed over tiles) x tile_cycle_pj
    memory   = tile compute cycles x sram_bytes_per_cycle x sram_pj_per_byte
    exchange = on-chip bytes delivered x exchange_pj_per_byte
    host     = chip-to-chip link bytes x 8 x link_pj_per_bit + host bytes x 8 x pcie_pj_per_bit

Idle power runs for the whole step: sync waits, exchange-idle tiles and host waits burn it.
The codelets' estimators count cycles, not instructions by class, so a busy tile cycle has one
average energy (AMP cycles of dense programs cost more: ``docs/energy.md``, "Limits").
"""
from __future__ import annotations

from ..arch.chip import PRESETS
from ..kernels.assumed import NOTHING, Pinned
from ..report import Report
from .constants import has_power_limits, power_limits
from .summary import energy_section


def chip_energy(report: Report, system, pinned: Pinned = NOTHING) -> dict | None:
    """The energy section of a chip report (None for a chip without a preset's constants)."""
    chip = system.chip
    name = chip.name
    if not has_power_limits(name) or "tile_compute_cycles" not in report.activity:
        return None
    a = report.activity
    seconds = report.seconds_per_step
    clock_ratio = chip.clock_hz / PRESETS[name]["clock_hz"]

    def parts(get):
        idle = get(f"{name}.idle_w")
        leak = min(get("ipu.leakage_share") * get(f"{name}.max_w"), idle)
        cycles = a["tile_compute_cycles"]
        return {
            "static": system.chips * (leak + (idle - leak) * clock_ratio) * seconds,
            "compute": cycles * get(f"{name}.tile_cycle_pj") * 1e-12,
            "memory": cycles * get("ipu.sram_bytes_per_cycle") * get(f"{name}.sram_pj_per_byte")
            * 1e-12,
            "exchange": a["exchange_bytes"] * get("ipu.exchange_pj_per_byte") * 1e-12,
            "host": 8e-12 * (a["link_bytes"] * get("ipu.link_pj_per_bit")
                             + a["host_bytes"] * get("host.pcie_pj_per_bit")),
        }

    idle, peak = power_limits(name, pinned)
    return energy_section(parts, seconds, report.batch_size, (system.chips * idle, system.chips * peak), a, name,
                          pinned)
