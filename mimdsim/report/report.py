"""The report: one schema for every architecture (MIMD chip, GPU, systolic array).

Cycles by phase (io, forward, backward, update) and kind (compute, exchange, sync,
host on the MIMD chip; compute and launch on a GPU), seconds per training step,
samples/s, a breakdown per superstep (MIMD) or per kernel (GPU), memory, per-layer
statistics and, for MIMD chips, per-tile arrays (compute cycles, SRAM bytes).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from ..errors import Message, Param, join

KINDS = ("compute", "exchange", "sync", "host")
PHASES = ("io", "forward", "backward", "update")


def empty_cycles(kinds=KINDS) -> dict:
    return {phase: dict.fromkeys(kinds, 0.0) for phase in PHASES}


class JsonOutput:
    """``to_json`` for anything with a ``to_dict``: the text, also written to ``path`` if given."""

    def to_json(self, path=None, indent=2) -> str:
        text = json.dumps(self.to_dict(), indent=indent)
        if path is not None:
            with open(path, "w") as f:
                f.write(text + "\n")
        return text


@dataclass
class Report(JsonOutput):
    architecture: str  # chip, system, GPU or array name
    platform: str  # "mimd", "gpu" or "systolic"
    model: str
    mode: str  # "execution", "rate" or "analytical"
    timesteps: int
    batch_size: int
    clock_hz: float
    cycles: dict  # phase -> kind -> cycles
    steps: dict  # superstep (MIMD) or kernel (GPU) name -> {"count", kind: cycles, ...}
    memory: dict  # MIMD: max_tile_bytes, tile_bytes_limit, ...; GPU: device_bytes, device_bytes_limit, ...
    layers: list = field(default_factory=list)
    placement: dict = field(default_factory=dict)
    tile_compute_cycles: np.ndarray | None = None
    tile_memory_bytes: np.ndarray | None = None
    notes: list = field(default_factory=list)
    activity: dict = field(default_factory=dict)  # counts the energy model reads (bytes moved, FLOPs, ...)
    energy: dict | None = None  # mimdsim.energy's section: joules per step, watts, samples per joule, bands
    uncertainty: dict | None = None  # mimdsim.engine.band's section: the band when named assumptions move

    @property
    def kinds(self) -> tuple:
        seen = []
        for kinds in self.cycles.values():
            seen += [k for k in kinds if k not in seen]
        return tuple(seen)

    @property
    def total_cycles(self) -> float:
        return float(sum(sum(k.values()) for k in self.cycles.values()))

    @property
    def seconds_per_step(self) -> float:
        return self.total_cycles / self.clock_hz

    @property
    def samples_per_second(self) -> float:
        return self.batch_size / self.seconds_per_step

    def activity_line(self) -> str:
        """Activity per neuron layer, for a benchmark's or a user's check that the network is live."""
        return ", ".join(f"L{ly['layer']} {100 * ly['activity']:.2f}%" for ly in self.layers[1:])

    def silent_layers(self) -> list:
        """Neuron layers that sent no spike in the step (a silent layer times nothing and trains nothing)."""
        return [ly["layer"] for ly in self.layers[1:] if ly["spikes"] == 0]

    def kind_totals(self) -> dict:
        return {k: float(sum(p.get(k, 0.0) for p in self.cycles.values())) for k in self.kinds}

    def phase_seconds(self) -> dict:
        return {p: sum(k.values()) / self.clock_hz for p, k in self.cycles.items()}

    def to_dict(self) -> dict:
        d = {
            "architecture": self.architecture, "platform": self.platform, "model": self.model,
            "mode": self.mode, "timesteps": self.timesteps, "batch_size": self.batch_size,
            "clock_hz": self.clock_hz,
            "samples_per_second": self.samples_per_second,
            "seconds_per_step": self.seconds_per_step,
            "seconds_by_phase": self.phase_seconds(),
            **({k: self.energy[k] for k in ("joules_per_step", "samples_per_joule", "watts")} if self.energy else {}),
            "cycles": {**self.kind_totals(), "total": self.total_cycles,
                       "by_phase": {p: dict(v) for p, v in self.cycles.items()}},
            ("supersteps" if self.platform == "mimd" else "kernels"): self.steps,
            "memory": self.memory,
            "layers": self.layers,
            "placement": self.placement,
            "notes": self.notes,
        }
        if self.energy:
            d["energy"] = {k: v for k, v in self.energy.items()
                           if k not in ("joules_per_step", "samples_per_joule", "watts")}
        if self.uncertainty:
            d["uncertainty"] = self.uncertainty
        if self.tile_compute_cycles is not None:
            d["tiles"] = {"compute_cycles": self.tile_compute_cycles.tolist(),
                          "memory_bytes": self.tile_memory_bytes.tolist()}
        return d

    def format(self, full: bool = False) -> str:
        """A readable, plain-text report. A summary that stays short at any size — the slowest
        supersteps, the first and last layers, repeated notes once — unless ``full`` (``--full``).
        A :class:`~mimdsim.errors.Message` where a line names a parameter (the command line prints
        its flag)."""
        every = Param("full", True, key="output.full")
        kinds = self.kinds
        totals = self.kind_totals()
        total = self.total_cycles or 1.0
        lines = [
            f"mimdsim report: {self.model} on {self.architecture} ({self.mode}"
            + (", inference" if self.placement.get("program") == "inference" else "")
            + f"), T={self.timesteps}, B={self.batch_size}",
            f"  samples/s        {self.samples_per_second:,.1f}",
            f"  seconds/step     {self.seconds_per_step * 1e3:,.3f} ms  ({total:,.0f} cycles at "
            f"{self.clock_hz / 1e9:.3g} GHz)",
            *([uncertainty_line(self.uncertainty, self.seconds_per_step)] if self.uncertainty else []),
            *([energy_line(self.energy)] if self.energy else []),
            *(program_lines(self.placement, f"  {'program':<17}") if self.platform == "mimd" else []),
            "",
            f"  {'phase':<10}" + "".join(f"{k:>14}" for k in kinds) + f"{'total':>14}{'share':>8}",
        ]
        for phase, per_kind in self.cycles.items():
            s = sum(per_kind.values())
            lines.append(f"  {phase:<10}" + "".join(f"{per_kind.get(k, 0):>14,.0f}" for k in kinds)
                         + f"{s:>14,.0f}{100 * s / total:>7.1f}%")
        lines.append(f"  {'total':<10}" + "".join(f"{totals[k]:>14,.0f}" for k in kinds) + f"{total:>14,.0f}")
        label = "superstep" if self.platform == "mimd" else "kernel"
        steps = list(self.steps.items()) if full or len(self.steps) <= SUMMARY_ROWS else \
            per_layer_groups(self.steps, kinds)
        step_total = lambda item: sum(item[1].get(k, 0.0) for k in kinds)  # noqa: E731
        shown = steps if full or len(steps) <= SUMMARY_ROWS else \
            sorted(sorted(steps, key=step_total, reverse=True)[:SUMMARY_ROWS - 2], key=steps.index)
        heading = f"{label:<22}" if len(shown) == len(steps) else f"{f'slowest {len(shown)} of {len(steps)}':<22}"
        lines += ["", f"  {heading}{'count':>7}" + "".join(f"{k:>14}" for k in kinds) + f"{'share':>8}"]
        for name, s in shown:
            tot = sum(s.get(k, 0.0) for k in kinds)
            lines.append(f"  {name:<22}{s['count']:>7}" + "".join(f"{s.get(k, 0.0):>14,.0f}" for k in kinds)
                         + f"{100 * tot / total:>7.1f}%")
        if len(shown) < len(steps):
            rest = sum(step_total(item) for item in steps) - sum(step_total(item) for item in shown)
            lines.append(Message(f"  ... {len(steps) - len(shown)} more, {100 * rest / total:.1f}% of the step (",
                                 every, f" lists every {label})"))
        if len(steps) < len(self.steps):
            lines.append(f"  (a row ending .L* sums that {label} over every layer: {len(self.steps):,} {label}s in all)")
        m = self.memory
        if "max_tile_bytes" in m:
            lines += ["", f"  memory: fullest tile {m['fullest_tile']} uses {m['max_tile_bytes']:,} of "
                          f"{m['tile_bytes_limit']:,} B ({100 * m['max_tile_bytes'] / m['tile_bytes_limit']:.1f}%): "
                      + ", ".join(f"{k} {v:,}" for k, v in sorted(m["fullest_tile_by_category"].items(),
                                                                  key=lambda kv: -kv[1]) if v)]
        elif "device_bytes" in m:
            lines += ["", f"  memory: {m['device_bytes']:,} of {m['device_bytes_limit']:,} B "
                          f"({100 * m['device_bytes'] / m['device_bytes_limit']:.1f}%): "
                      + ", ".join(f"{k} {v:,}" for k, v in m["by_category"].items() if v)]
        pl = self.placement
        if "tiles_used" in pl:
            lines.append(f"  placement: {pl['tiles_used']} tiles on {pl['chips_used']} chip(s)"
                         + (f", {pl['neurons_per_tile']} neurons per tile" if "neurons_per_tile" in pl else "")
                         + (f"; {pl['schedule']} schedule" if pl.get("schedule") else "")
                         + (f", {pl['weight_grad_copies']} weight-gradient cop{'y' if pl['weight_grad_copies'] == 1 else 'ies'}"
                            f" per tile" if pl.get("weight_grad_copies") else ""))  # the published op's choice
        lines += search_lines(pl)
        lines += matmul_plan_lines(pl)
        if self.layers:
            lines += ["", f"  {'layer':<7}{'neurons':>9}{'tiles':>7}{'K':>6}{'activity':>10}{'listed':>9}"
                          f"{'spikes':>11}{'dropped':>10}{'dropped cand.':>15}"]
            n = len(self.layers)
            shown_layers = self.layers if full or n <= SUMMARY_ROWS else \
                self.layers[:SUMMARY_ROWS - 4] + self.layers[-2:]
            for i, ly in enumerate(shown_layers):
                if len(shown_layers) < n and i == SUMMARY_ROWS - 4:
                    hidden = self.layers[SUMMARY_ROWS - 4:-2]
                    acts = [100 * h["activity"] for h in hidden]
                    lines.append(Message(f"  ... {len(hidden)} more layers (activity {min(acts):.2f}-{max(acts):.2f}%, "
                                         f"{sum(h['spikes'] for h in hidden):,} spikes, "
                                         f"{sum(h['dropped_spikes'] for h in hidden):,} dropped; ", every,
                                         " lists every layer)"))
                lines.append(f"  {ly['layer']:<7}{ly['neurons']:>9}{ly['tiles']:>7}{ly['capacity']:>6}"
                             f"{100 * ly['activity']:>9.2f}%{100 * ly['listed_fraction']:>8.2f}%"
                             f"{ly['spikes']:>11,}{ly['dropped_spikes']:>10,}{ly['dropped_candidates']:>15,}")
            dropped = sum(ly["dropped_spikes"] for ly in self.layers)
            if dropped:
                total = sum(ly["spikes"] for ly in self.layers)  # generated: sent + dropped
                over = [ly for ly in self.layers if ly["dropped_spikes"]]
                where = ", ".join(f"layer {ly['layer']} {ly['dropped_spikes']:,}" for ly in over[:8]) \
                    + (f" and {len(over) - 8} more layers" if len(over) > 8 and not full else "")
                if full:
                    where = ", ".join(f"layer {ly['layer']} {ly['dropped_spikes']:,}" for ly in over)
                lines.append(Message(f"  note: {dropped:,} of {total:,} spikes ({100 * dropped / total:.2g}%) overflowed "
                                     f"their list's capacity K and were not sent ({where}); raise ",
                                     Param("max_activity", action="raise"), " (", Param("input_capacity", action="raise"),
                                     " for the input list) to keep them."))
        lines += [Message("  note: ", n if full else collapsed(n)) for n in self.notes]
        return Message(*join(*lines, sep="\n"))


SUMMARY_ROWS = 12  # rows of a table the summary shows before it folds the rest into one line


def per_layer_groups(steps: dict, kinds) -> list:
    """Supersteps that differ only in their layer suffix (``bwd.decay.L1``, ``bwd.decay.L2``, ...) as
    one row ``bwd.decay.L*`` with their counts and cycles summed, in program order."""
    import re

    groups: dict = {}
    for name, s in steps.items():
        key = re.sub(r"\.L\d+$", ".L*", name)
        g = groups.setdefault(key, {"count": 0, **{k: 0.0 for k in kinds}})
        g["count"] += s["count"]
        for k in kinds:
            g[k] += s.get(k, 0.0)
    return list(groups.items())


def collapsed(note) -> Message:
    """:func:`collapse_repeats` of each text part of a note (its parameters as they are)."""
    return Message(*(collapse_repeats(p) if isinstance(p, str) else p for p in join(note)))


def collapse_repeats(text: str, least: int = 4) -> str:
    """A comma-separated run of one item repeated ``least`` times or more, written once with its
    count: "0.5%, 0.5%, 0.5%, 0.5%" -> "0.5% (x4)"; a run of consecutive integers as a range:
    "layer(s) 11, 12, 13, 14" -> "layer(s) 11-14"."""
    import re

    text = re.sub(r"(?<![\d.])\d+(?:, \d+){%d,}(?![\d.%%])" % (least - 1), lambda m: _ranges(m.group(0)), text)
    parts = text.split(", ")
    out, i = [], 0
    while i < len(parts):
        j = i
        while j + 1 < len(parts) and parts[j + 1] == parts[i]:
            j += 1
        run = j - i + 1
        out.extend([f"{parts[i]} (x{run})"] if run >= least else parts[i:j + 1])
        i = j + 1
    return ", ".join(out)


def _ranges(numbers: str) -> str:
    """"3, 4, 5, 6, 9" -> "3-6, 9" (runs of consecutive integers of length 3 or more)."""
    vals = [int(v) for v in numbers.split(", ")]
    out, i = [], 0
    while i < len(vals):
        j = i
        while j + 1 < len(vals) and vals[j + 1] == vals[j] + 1:
            j += 1
        out += [f"{vals[i]}-{vals[j]}"] if j - i >= 2 else [str(v) for v in vals[i:j + 1]]
        i = j + 1
    return ", ".join(out)


def uncertainty_line(u: dict, seconds: float) -> str:
    """``  band             8.3 ms/step (7.1-9.4 from 3 named assumptions; largest: ...)``."""
    lo, hi = u["seconds_per_step"]
    ms = lambda s: f"{s * 1e3:,.3g}"  # noqa: E731
    n = u["assumptions"]
    text = f"  band             {ms(seconds)} ms/step ({ms(lo)}-{ms(hi)} from {n} named assumption{'' if n == 1 else 's'}"
    top = u["drivers"][0] if u["drivers"] else None
    if top and top["seconds_per_step"][1] > top["seconds_per_step"][0]:
        text += f"; largest: {top['name']} {ms(top['seconds_per_step'][0])}-{ms(top['seconds_per_step'][1])}"
    if u.get("pinned"):
        text += "; pinned: " + ", ".join(f"{k}={v:g}" for k, v in u["pinned"].items())
    return text + ")"


def tornado_lines(u: dict) -> list[str]:
    """Every driver's one-at-a-time swing, largest first (``--assumptions``)."""
    out = ["", f"  {'assumption (one at a time)':<38}{'value':>10}{'range':>20}   ms/step at low / high end"]
    for d in u["drivers"]:
        rng = f"{d['range'][0]:g}-{d['range'][1]:g}"
        out.append(f"  {d['name']:<38}{d['value']:>10g}{rng:>20}   {d['at_low'] * 1e3:,.4g} / {d['at_high'] * 1e3:,.4g}")
    lo, hi = u["seconds_per_step"]
    out.append(f"  {'all at once (corners)':<68}   {lo * 1e3:,.4g} / {hi * 1e3:,.4g}")
    return out


def search_lines(placement: dict) -> list[str]:
    """The placement search's chosen candidate and the next two (``placement["search"]``)."""
    found = placement.get("search")
    if not found:
        return []
    out = ["  placement candidates (scored rate-driven at the run's rates, an execution-driven run's at half each "
           "list's capacity; loops from their first steps):"]
    for c in found:
        t = f"{c['seconds_per_step'] * 1e3:.3f} ms" if c["seconds_per_step"] is not None else "-"
        out.append(f"    {c['neurons_per_tile']:>3} neurons per tile on {c['chips']} chip(s), {c['tiles']:>6} tiles  "
                   f"{t:>10}  {c['result']}")
    return out


def energy_line(e: dict) -> str:
    """One line: joules per step with its band, average watts, samples per joule, the largest shares."""
    lo, hi = e["band"]["joules_per_step"]
    total = e["joules_per_step"] or 1.0
    shares = sorted(((v, k) for k, v in e["by_component"].items() if v), reverse=True)[:3]
    return (f"  joules/step      {_joules(total)} ({_joules(lo)}-{_joules(hi)}), {e['watts']:,.1f} W, "
            f"{e['samples_per_joule']:,.1f} samples/J; " + ", ".join(f"{k} {100 * v / total:.0f}%" for v, k in shares))


def _joules(j: float) -> str:
    return f"{j * 1e3:,.3g} mJ" if j < 1 else f"{j:,.3g} J"


def program_lines(placement: dict, lead: str = "  program: ") -> list:
    """The program that ran, its number format and why (the model's default, asked for, or forced by a
    setting, named), then each other program the network could run, one line each."""
    if not placement.get("schedule"):
        return []
    why = placement.get("schedule_reason")
    lines = [Message(f"{lead}{placement['schedule']}, {placement.get('precision', 'fp32')}",
                     *((" (", why, ")") if why else ()))]
    others = placement.get("other_programs") or []
    if others:
        lines.append(Message(" " * (len(lead) - 2) + "  also runs (", Param("schedule", shown="NAME"), "):"))
        lines += [f"{' ' * len(lead)}  {o['schedule']:<10}{o['about']}" for o in others]
    return lines


def matmul_plan_lines(placement: dict) -> list[str]:
    """The matmul plan of a dense program (``placement["matmul_plan"]``), one line per matmul."""
    plan = placement.get("matmul_plan")
    if not plan:
        return []
    out = [f"  matmul plan ({placement.get('schedule', '')}): [M x K] . [K x N] split M x K x N over tiles, block"]
    for m in plan:
        M, K, N = m["shape"]
        out.append(f"    {m['matmul']:<22}[{M} x {K}] . [{K} x {N}]  split {' x '.join(map(str, m['split']))} "
                   f"({m['tiles']} tiles), block {' x '.join(map(str, m['block']))}, {m['cycles']:,} cycles")
    return out
