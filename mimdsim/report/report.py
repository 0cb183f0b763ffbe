"""The report: one schema for every architecture (the GPU model fills the same fields).

Cycles by phase (io, forward, backward, update) and kind (compute, exchange, sync,
host), seconds per training step, samples/s, per-tile arrays (compute cycles, SRAM
bytes), per-superstep totals and per-layer spike statistics.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

KINDS = ("compute", "exchange", "sync", "host")


@dataclass
class Report:
    architecture: str  # chip or system name
    model: str
    mode: str  # "execution" or "rate"
    timesteps: int
    batch_size: int
    clock_hz: float
    cycles: dict  # phase -> kind -> cycles
    supersteps: dict  # name -> {"count", "compute", "exchange", "sync", "host"}
    tile_compute_cycles: np.ndarray
    tile_memory_bytes: np.ndarray
    tile_bytes_limit: int
    memory_by_category: dict  # category -> bytes on the fullest tile
    layers: list  # per layer dicts
    placement: dict = field(default_factory=dict)

    @property
    def total_cycles(self) -> float:
        return float(sum(sum(k.values()) for k in self.cycles.values()))

    @property
    def seconds_per_step(self) -> float:
        return self.total_cycles / self.clock_hz

    @property
    def samples_per_second(self) -> float:
        return self.batch_size / self.seconds_per_step

    def kind_totals(self) -> dict:
        return {k: float(sum(p.get(k, 0.0) for p in self.cycles.values())) for k in KINDS}

    def to_dict(self) -> dict:
        kinds = self.kind_totals()
        fullest = int(np.argmax(self.tile_memory_bytes)) if self.tile_memory_bytes.size else 0
        return {
            "architecture": self.architecture, "model": self.model, "mode": self.mode,
            "timesteps": self.timesteps, "batch_size": self.batch_size, "clock_hz": self.clock_hz,
            "samples_per_second": self.samples_per_second,
            "seconds_per_step": self.seconds_per_step,
            "cycles": {**kinds, "total": self.total_cycles,
                       "by_phase": {p: dict(v) for p, v in self.cycles.items()}},
            "supersteps": self.supersteps,
            "memory": {"max_tile_bytes": int(self.tile_memory_bytes.max(initial=0)),
                       "tile_bytes_limit": int(self.tile_bytes_limit),
                       "fullest_tile": fullest,
                       "fullest_tile_by_category": self.memory_by_category,
                       "total_bytes": int(self.tile_memory_bytes.sum())},
            "layers": self.layers,
            "placement": self.placement,
            "tiles": {"compute_cycles": self.tile_compute_cycles.tolist(),
                      "memory_bytes": self.tile_memory_bytes.tolist()},
        }

    def to_json(self, path=None, indent=2) -> str:
        text = json.dumps(self.to_dict(), indent=indent)
        if path is not None:
            with open(path, "w") as f:
                f.write(text + "\n")
        return text

    def format(self) -> str:
        """A readable, plain-text report."""
        d = self.to_dict()
        c = d["cycles"]
        total = c["total"] or 1.0
        lines = [
            f"mimdsim report: {self.model} on {self.architecture} ({self.mode}-driven), "
            f"T={self.timesteps}, B={self.batch_size}",
            f"  samples/s        {self.samples_per_second:,.1f}",
            f"  seconds/step     {self.seconds_per_step * 1e3:,.3f} ms  ({total:,.0f} cycles at "
            f"{self.clock_hz / 1e9:.3g} GHz)",
            "",
            f"  {'phase':<10}" + "".join(f"{k:>14}" for k in KINDS) + f"{'total':>14}{'share':>8}",
        ]
        for phase, kinds in self.cycles.items():
            s = sum(kinds.values())
            lines.append(f"  {phase:<10}" + "".join(f"{kinds.get(k, 0):>14,.0f}" for k in KINDS)
                         + f"{s:>14,.0f}{100 * s / total:>7.1f}%")
        lines.append(f"  {'total':<10}" + "".join(f"{c[k]:>14,.0f}" for k in KINDS) + f"{total:>14,.0f}")
        lines += ["", f"  {'superstep':<18}{'count':>7}{'compute':>14}{'exchange':>14}{'sync':>12}{'share':>8}"]
        for name, s in self.supersteps.items():
            tot = s["compute"] + s["exchange"] + s["sync"] + s["host"]
            lines.append(f"  {name:<18}{s['count']:>7}{s['compute']:>14,.0f}{s['exchange'] + s['host']:>14,.0f}"
                         f"{s['sync']:>12,.0f}{100 * tot / total:>7.1f}%")
        m = d["memory"]
        lines += ["", f"  memory: fullest tile {m['fullest_tile']} uses {m['max_tile_bytes']:,} of "
                      f"{m['tile_bytes_limit']:,} B ({100 * m['max_tile_bytes'] / m['tile_bytes_limit']:.1f}%): "
                  + ", ".join(f"{k} {v:,}" for k, v in sorted(m["fullest_tile_by_category"].items(),
                                                              key=lambda kv: -kv[1]) if v)]
        pl = self.placement
        if pl:
            lines.append(f"  placement: {pl['tiles_used']} tiles on {pl['chips_used']} chip(s), "
                         f"{pl['neurons_per_tile']} neurons per tile")
        lines += ["", f"  {'layer':<7}{'neurons':>9}{'tiles':>7}{'K':>6}{'activity':>10}{'listed':>9}"
                      f"{'spikes':>11}{'dropped':>10}{'dropped cand.':>15}"]
        for ly in self.layers:
            lines.append(f"  {ly['layer']:<7}{ly['neurons']:>9}{ly['tiles']:>7}{ly['capacity']:>6}"
                         f"{100 * ly['activity']:>9.2f}%{100 * ly['listed_fraction']:>8.2f}%"
                         f"{ly['spikes']:>11,}{ly['dropped_spikes']:>10,}{ly['dropped_candidates']:>15,}")
        if any(ly["dropped_spikes"] for ly in self.layers):
            lines.append("  note: some spike lists overflowed their capacity K; dropped spikes were not sent "
                         "(raise max_activity/capacity to keep them).")
        return "\n".join(lines)
