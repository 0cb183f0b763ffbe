"""The BSP engine: runs any program's schedule against its work source.

    superstep cycles = max over tiles(compute)        (codelets' estimators, via the registry)
                     + exchange phase + host           (fabric model; host streams are transfers)
                     + sync                            (one barrier per superstep)
    launch           = the chip's run_launch_cycles    (host, once where the program says)

Exchanges are static (compiled at fixed sizes), so their cost is computed once per
superstep; so is the compute of static codelets. The rest is evaluated every step from the
source's work counts. A program without a source (every codelet static: an analytical
program) costs each loop body once and charges it ``count`` times.

The engine knows programs, tiles, the fabric and the codelet registry — no network, neuron
or workload. A workload adds its own report sections (layers, placement, notes).
"""
from __future__ import annotations

from typing import Protocol

import numpy as np

from kernels.tile import Tile

from ..program import Launch, Loop, Program, Superstep, VertexSet
from ..report import KINDS, Report, empty_cycles
from .cost import codelet, vertex_cycles
from .fabric import exchange_phase, sync_cost


class WorkSource(Protocol):
    """Where the data-dependent work counts of a run come from (execution- or rate-driven)."""

    mode: str  # "execution" or "rate"

    def work(self, vs: VertexSet, t: int | None) -> dict:
        """Work counts of vertex set ``vs`` at loop iteration ``t`` (None outside loops)."""


class _Costs:
    """Charges superstep executions into the report's tallies."""

    def __init__(self, program: Program, source, timeline):
        self.program, self.source, self.timeline = program, source, timeline
        system = program.system
        self.system = system
        self.tile = Tile.of(system.chip, program.meta.precision)
        self.n_tiles = system.tiles
        self.cycles = empty_cycles()
        self.per_step: dict[str, dict] = {}
        self.tile_compute = np.zeros(self.n_tiles)
        self.static: dict[int, np.ndarray] = {}
        self.exchange: dict[str, tuple[float, float]] = {}
        self.group_starts = program.mapping.tile_groups(self.n_tiles)[0] if timeline is not None else None

    def compute(self, step: Superstep, t) -> np.ndarray:
        tile_cycles = np.zeros(self.n_tiles)
        for vs in step.compute:
            work = self.source.work(vs, t) if self.source is not None else {}  # execution: runs the numerics
            static = codelet(vs.codelet).static
            if static and id(vs) in self.static:
                tile_cycles += self.static[id(vs)]
                continue
            tiles, cyc = vertex_cycles(vs, work, self.tile)
            contrib = np.bincount(tiles, weights=cyc, minlength=self.n_tiles)
            if static:
                self.static[id(vs)] = contrib
            tile_cycles += contrib
        return tile_cycles

    def charge(self, step, t, count: int = 1) -> None:
        """Run ``step`` at iteration ``t`` and charge it ``count`` times."""
        kinds = dict.fromkeys(KINDS, 0.0)
        if isinstance(step, Launch):
            kinds["host"] = self.system.chip.run_launch_cycles
            tile_cycles = None
        else:
            tile_cycles = self.compute(step, t)
            if step.name not in self.exchange:
                self.exchange[step.name] = exchange_phase(step.exchange, self.system)
            kinds["exchange"], kinds["host"] = self.exchange[step.name]
            kinds["compute"] = float(tile_cycles.max()) if step.compute else 0.0
            kinds["sync"] = float(sync_cost(step.sync, self.system))
            self.tile_compute += tile_cycles if count == 1 else count * tile_cycles
        phase = self.cycles[step.phase]
        rec = self.per_step.setdefault(step.name, {"count": 0, "phase": step.phase, **dict.fromkeys(KINDS, 0.0)})
        rec["count"] += count
        for k, v in kinds.items():
            phase[k] += v if count == 1 else count * v
            rec[k] += v if count == 1 else count * v
        if self.timeline is not None:
            groups = (np.maximum.reduceat(tile_cycles, self.group_starts) if tile_cycles is not None
                      else np.zeros(len(self.group_starts)))
            for _ in range(count):
                self.timeline.append({"name": step.name, "phase": step.phase, "t": t, **kinds,
                                      "group_compute": groups})


def run_program(program: Program, source: WorkSource | None = None, *, timeline: list | None = None,
                progress=None) -> Report:
    """Run ``program`` against ``source`` (None: an analytical program of static codelets).

    ``timeline``: if a list is given, one record per superstep execution is appended
    (name, phase, t, compute, exchange, sync, host cycles and the slowest tile's compute per
    tile group of the program's mapping) — what a trace is drawn from. ``progress(done,
    total)`` is called after every loop iteration.
    """
    costs = _Costs(program, source, timeline)
    total = sum(s.count for s in program.schedule if isinstance(s, Loop))
    done = 0
    for step in program.schedule:
        if not isinstance(step, Loop):
            costs.charge(step, None)
        elif source is None:  # every cost is static: one evaluation, charged count times
            for s in step.body:
                costs.charge(s, None, step.count)
            done += step.count
            if progress is not None:
                progress(done, total)
        else:
            for t in (range(step.count - 1, -1, -1) if step.reverse else range(step.count)):
                for s in step.body:
                    costs.charge(s, t)
                done += 1
                if progress is not None:
                    progress(done, total)
    system = program.system
    used = program.tile_bytes()
    return Report(architecture=system.name, platform="mimd", model=program.meta.model,
                  mode=f"{source.mode}-driven" if source is not None else "analytical",
                  timesteps=program.timesteps, batch_size=program.batch_size, clock_hz=system.chip.clock_hz,
                  cycles=costs.cycles, steps=costs.per_step, memory=memory_summary(program),
                  tile_compute_cycles=costs.tile_compute, tile_memory_bytes=used)


def memory_summary(program: Program) -> dict:
    """The report's memory section: the fullest tile, its bytes by category, the limit."""
    mem = program.tile_memory()
    used = program.tile_bytes()
    fullest = int(np.argmax(used))
    return {"max_tile_bytes": int(used.max()), "tile_bytes_limit": int(program.system.chip.sram_per_tile),
            "fullest_tile": fullest, "fullest_tile_by_category": {k: int(v[fullest]) for k, v in mem.items()},
            "total_bytes": int(used.sum())}
