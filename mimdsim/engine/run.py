"""The BSP engine: runs a program's supersteps against an activity source.

Superstep time = max over tiles(compute) + exchange phase + sync. Exchanges are static
(compiled at fixed capacity), so their cost is computed once per superstep; compute is
evaluated every step from the source's work counts through the codelets' estimators.
"""
from __future__ import annotations

import numpy as np

from kernels.tile import Tile

from ..program import Loop, Program
from ..report import KINDS, Report, empty_cycles
from .cost import STATIC, vertex_cycles
from .fabric import exchange_cost, sync_cost


def run_program(program: Program, source, *, timeline: list | None = None, progress=None) -> Report:
    """Run ``program`` against ``source``.

    ``timeline``: if a list is given, one record per superstep execution is appended
    (name, phase, t, compute, exchange, sync, host cycles and the slowest tile's compute per
    layer tile range) — what a trace is drawn from. ``progress(done, total)`` is called after
    every loop iteration.
    """
    system = program.system
    tile = Tile.of(system.chip, program.meta.get("precision", "fp32"))
    n_tiles = system.tiles
    cycles = empty_cycles()
    per_step: dict[str, dict] = {}
    tile_compute = np.zeros(n_tiles)
    static_cache: dict[int, np.ndarray] = {}
    exchange_cache = {}

    def execute(step, t):
        tile_cycles = np.zeros(n_tiles)
        for vs in step.compute:
            work = source.work(vs, t)  # runs the numerics in execution mode
            key = id(vs)
            if vs.codelet in STATIC and key in static_cache:
                tile_cycles += static_cache[key]
                continue
            tiles, cyc = vertex_cycles(vs, work, tile)
            contrib = np.bincount(tiles, weights=cyc, minlength=n_tiles)
            if vs.codelet in STATIC:
                static_cache[key] = contrib
            tile_cycles += contrib
        if step.name not in exchange_cache:
            exchange_cache[step.name] = exchange_cost(step.exchange, system)
        ex = exchange_cache[step.name]
        compute = float(tile_cycles.max()) if step.compute else 0.0
        sync = float(sync_cost(step.sync, system))
        # "host" is only the time the host link adds beyond the on-chip and link traffic
        on_chip = max(float(ex.tile_cycles.max(initial=0.0)), ex.link_cycles)
        host = max(0.0, ex.host_cycles - on_chip) if ex.cycles else 0.0
        exch = ex.cycles - host
        ph = cycles[step.phase]
        ph["compute"] += compute
        ph["exchange"] += exch
        ph["host"] += host
        ph["sync"] += sync
        rec = per_step.setdefault(step.name, {"count": 0, "phase": step.phase, **dict.fromkeys(KINDS, 0.0)})
        rec["count"] += 1
        rec["compute"] += compute
        rec["exchange"] += exch
        rec["host"] += host
        rec["sync"] += sync
        tile_compute[:] += tile_cycles
        if timeline is not None:
            timeline.append({"name": step.name, "phase": step.phase, "t": t, "compute": compute,
                             "exchange": exch, "sync": sync, "host": host,
                             "group_compute": np.maximum.reduceat(tile_cycles, group_starts)})

    # tile groups for the timeline: [0, first layer), each layer's range, the rest
    bounds = [0] + [p.first_tile for p in program.layout.layers] + [program.layout.layers[-1].first_tile
                                                                      + program.layout.layers[-1].tiles]
    group_starts = np.unique(np.array([b for b in bounds if b < n_tiles], dtype=np.int64))
    total = sum(s.count for s in program.schedule if isinstance(s, Loop))
    done = 0
    for step in program.schedule:
        if isinstance(step, Loop):
            steps = range(step.count - 1, -1, -1) if step.reverse else range(step.count)
            for t in steps:
                for s in step.body:
                    execute(s, t)
                done += 1
                if progress is not None:
                    progress(done, total)
        else:
            execute(step, None)

    return _report(program, source, cycles, per_step, tile_compute)


def _report(program, source, cycles, per_step, tile_compute) -> Report:
    mem = program.tile_memory()
    used = program.tile_bytes()
    fullest = int(np.argmax(used))
    st = source.stats
    T, B = program.timesteps, program.batch_size
    sizes, caps = source.sizes, source.capacities
    layers = []
    for l in range(len(sizes)):
        n = sizes[l]
        p = program.layout.layers[l - 1] if l else None
        steps = T * B
        layers.append({
            "layer": l, "neurons": n, "tiles": p.tiles if p else 0,
            "first_tile": p.first_tile if p else None, "chip": p.chip if p else None,
            "capacity": caps[l],
            "activity": float(st.spikes[l].sum() / (n * steps)),
            "listed_fraction": float(st.listed[l].sum() / (n * steps)),
            "spikes": int(st.spikes[l].sum()),
            "kept_spikes": int(st.kept[l].sum()),
            "dropped_spikes": int(st.dropped_spikes[l].sum()),
            "dropped_candidates": int(st.dropped_candidates[l].sum()),
            "overflowed_lists": int((st.dropped_spikes[l] > 0).sum()),
        })
    lay = program.layout
    return Report(
        architecture=program.system.name, platform="mimd", model=program.meta["model"],
        mode=f"{source.mode}-driven", timesteps=T, batch_size=B, clock_hz=program.system.chip.clock_hz,
        cycles=cycles, steps=per_step,
        memory={"max_tile_bytes": int(used.max()), "tile_bytes_limit": int(program.system.chip.sram_per_tile),
                "fullest_tile": fullest,
                "fullest_tile_by_category": {k: int(v[fullest]) for k, v in mem.items()},
                "total_bytes": int(used.sum())},
        layers=layers,
        placement={"tiles_used": lay.tiles_used, "chips_used": lay.chips_used,
                   "neurons_per_tile": lay.neurons_per_tile, "reserved_tiles": list(lay.reserved_tiles),
                   "optimizer": program.optimizer, "precision": program.meta.get("precision", "fp32"),
                   "delay": program.meta.get("delay", 1),
                   "program": "training" if program.meta.get("training", True) else "inference"},
        tile_compute_cycles=tile_compute, tile_memory_bytes=used,
    )
