"""What a run puts out, as the engine charges it: one :class:`Recorder` the engine calls.

The engine decides what each superstep costs (:mod:`.run`: the compute, exchange, sync and host
rules, barrier-free overlap); the recorder keeps what is asked of the run: the report's tallies
(cycles by phase and kind, per superstep, per tile, bytes moved, the compute barrier-free
supersteps overlapped), and where a caller asked, the timeline (one record per superstep
execution, what a trace is drawn from), every loop run's per-iteration cycles (what an estimate
from a few iterations extrapolates) and progress calls. The band's records of supersteps that read
a named assumption stay with the engine's costs (:mod:`.band` re-costs them).
"""
from __future__ import annotations

import numpy as np

from ..report import KINDS, empty_cycles


class Recorder:
    """The run's outputs, fed by the engine: :meth:`on_superstep` for one charge (a superstep or
    launch, ``count`` executions), :meth:`on_loop` for a loop body's iterations charged at once,
    :meth:`on_progress` after the numerics of loop iterations."""

    def __init__(self, n_tiles: int, *, timeline: list | None = None, group_starts=None,
                 loop_cycles: list | None = None, progress=None):
        self.cycles = empty_cycles()  # by phase and kind
        self.per_step: dict[str, dict] = {}  # by superstep name: count, phase and cycles by kind
        self.tile_compute = np.zeros(n_tiles)
        self.moved = np.zeros(3)  # bytes moved: on-chip exchange, chip-to-chip links, host (energy model)
        self.overlap_saved = 0.0  # compute the barrier-free local supersteps overlapped
        self.timeline, self.group_starts = timeline, group_starts
        self.loop_cycles, self.progress = loop_cycles, progress

    @property
    def per_execution(self) -> bool:
        """Whether every execution is charged on its own (a timeline is kept), not a loop at once."""
        return self.timeline is not None

    def on_progress(self, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(done, total)

    def on_superstep(self, step, t, kinds: dict, count: int = 1, computed=None, moved=None,
                     saved: float | None = None) -> None:
        """``step`` charged at iteration ``t`` ``count`` times: ``kinds`` its cycles per execution,
        ``computed`` its ``(tiles, cycles)`` (None for a launch), ``moved`` the bytes one execution
        moves, ``saved`` the compute its barrier-free overlap saved (all ``count`` executions)."""
        tile_cycles = None
        if moved is not None:
            self.moved += count * moved
        if saved is not None:
            self.overlap_saved += saved
        if computed is not None:
            tiles, local = computed
            self.tile_compute[tiles] += local if count == 1 else count * local
            if self.timeline is not None:
                tile_cycles = np.zeros(self.tile_compute.size)
                tile_cycles[tiles] = local
        phase = self.cycles[step.phase]
        rec = self.per_step.setdefault(step.name, {"count": 0, "phase": step.phase, **dict.fromkeys(KINDS, 0.0)})
        rec["count"] += count
        for k, v in kinds.items():
            phase[k] += v if count == 1 else count * v
            rec[k] += v if count == 1 else count * v
        if self.timeline is not None:
            groups = (np.maximum.reduceat(tile_cycles, self.group_starts) if tile_cycles is not None
                      else np.zeros(len(self.group_starts)))
            self.timeline.append({"name": step.name, "phase": step.phase, "t": t, **kinds, "group_compute": groups})

    def on_loop(self, body, ts, vals: np.ndarray, computed: list, moved: list, saved: list) -> None:
        """A loop body's ``len(ts)`` iterations charged at once: ``vals[kind, iteration, superstep]``
        the cycles charged, ``computed`` each superstep's ``(tiles, cycles)`` (None for a launch),
        ``moved`` the bytes one iteration moves (added in turn), ``saved`` the overlap each barrier-free
        superstep saved. Totals add in execution order (a cumulative sum over the interleaved sequence
        adds exactly as one-by-one charges)."""
        iterations, n = len(ts), len(body)
        for m in moved:
            self.moved += iterations * m
        for s in saved:
            self.overlap_saved += s
        for cyc in computed:  # cycle counts are integers: any order of adding them is exact
            if cyc is not None:
                tiles, local = cyc
                self.tile_compute[tiles] += local.sum(axis=0) if local.ndim == 2 else iterations * local
        if self.loop_cycles is not None:  # every iteration's cycles, all kinds and supersteps: (t, cycles)
            self.loop_cycles.append((np.asarray(ts), vals.sum(axis=(0, 2))))
        phases = [s.phase for s in body]
        for phase in dict.fromkeys(phases):
            cols = np.array([p == phase for p in phases])
            tot = self.cycles[phase]
            seq = np.concatenate([[[tot[k]] for k in KINDS], vals[:, :, cols].reshape(len(KINDS), -1)], axis=1)
            for k, v in zip(KINDS, np.cumsum(seq, axis=1)[:, -1]):
                tot[k] = float(v)
        names = [s.name for s in body]
        for s in body:
            self.per_step.setdefault(s.name, {"count": 0, "phase": s.phase, **dict.fromkeys(KINDS, 0.0)})
        if len(set(names)) == n:  # every superstep once: all records in one cumulative sum
            start = np.array([[self.per_step[nm][k] for nm in names] for k in KINDS])  # [kinds, n]
            last = np.cumsum(np.concatenate([start[:, :, None], vals.transpose(0, 2, 1)], axis=2), axis=2)[..., -1]
            for j, nm in enumerate(names):
                rec = self.per_step[nm]
                rec["count"] += iterations
                for i, k in enumerate(KINDS):
                    rec[k] = float(last[i, j])
            return
        for j, s in enumerate(body):  # a name twice in the body: its records add in body order
            rec = self.per_step[s.name]
            rec["count"] += iterations
            for i, k in enumerate(KINDS):
                rec[k] = float(np.cumsum(np.concatenate([[rec[k]], vals[i, :, j]]))[-1])

    def activity(self) -> dict:
        """The report's activity counts (what the energy model reads)."""
        return {"tile_compute_cycles": float(self.tile_compute.sum()),
                "exchange_bytes": float(self.moved[0]), "link_bytes": float(self.moved[1]),
                "host_bytes": float(self.moved[2]),
                # compute the barrier-free local supersteps overlapped (what a barrier would add back)
                **({"local_overlap_cycles": self.overlap_saved} if self.overlap_saved else {})}
