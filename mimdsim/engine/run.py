"""The BSP engine: runs any program's schedule against its work source.

    superstep cycles = max over tiles(compute)        (codelets' estimators, via the registry)
                     + exchange phase + host           (fabric model; host streams are transfers)
                     + sync                            (one barrier per superstep)

A superstep whose sync is "local" (a program with no exchange into it) has no barrier while the
chip's ``local_sync_cycles`` is 0: each tile goes on from where it finished, so a run of such
supersteps after the last barrier costs max over tiles(their summed compute), and each is charged
what it adds to that maximum (layers' local programs on disjoint tiles overlap). A run is cut at a
loop's iteration boundary and at a launch, where the model charges the slowest tile.
    launch           = the chip's run_launch_cycles    (host, once where the program says)
                       or a named host time (``Launch.host_call``: a framework's work per call,
                       a wait on the host at an unbuffered stream copy)

Exchanges are static (compiled at fixed sizes), so their cost is computed once per
superstep; so is the compute of static codelets. The rest depends on the source's work
counts. A loop runs in two passes: first every iteration's numerics (the source's ``work``
calls, in program order), then the costs of all iterations at once (one call per vertex set
for codelets whose cost route is ``batched``), charged in execution order. A program without
a source (every codelet static: an analytical program) costs each loop body once and charges
it ``count`` times.

The engine knows programs, tiles, the fabric and the codelet registry — no network, neuron
or workload. A workload adds its own report sections (layers, placement, notes).
"""
from __future__ import annotations

import copy
from typing import NamedTuple, Protocol

import numpy as np

from ..kernels.assumed import NOTHING, Pinned
from ..kernels.tile import Tile

from .. import assumptions
from ..errors import ConfigError
from ..program import Launch, Loop, Program, Superstep, VertexSet
from ..report import KINDS, Report
from .cost import codelet, vertex_cycles
from .fabric import exchange_phase, sync_cost, traffic
from .recorder import Recorder



def launch_cycles(step: Launch, chip, pinned: Pinned = NOTHING) -> float:
    """A launch's host cycles: the engine run (the chip's ``run_launch_cycles``), or the named host
    time ``host_call`` (an assumption in seconds, as ``pinned`` holds it: a framework's work per call,
    a wait on the host)."""
    if step.host_call:
        return assumptions.value(step.host_call, pinned) * chip.clock_hz
    return chip.run_launch_cycles

class Touched(NamedTuple):
    """A superstep whose codelets read a named assumption, behind a barrier, as the run costed it (for
    the band, :mod:`mimdsim.engine.band`): its compute is its slowest tile per execution."""
    step: Superstep
    works: dict
    iterations: int | None
    times: int  # executions one cost is charged for (an analytical loop: its count)
    costs: tuple  # (tiles, cycles) as the run costed it


class TouchedRun(NamedTuple):
    """A barrier-free run of a loop body holding touched supersteps: from the barrier (or launch) before
    them, every superstep's costs as the run costed them (a local superstep's charge depends on every
    tile's compute since that barrier), and which supersteps are touched."""
    body: list
    costs: list
    touched: list
    works: dict
    iterations: int


class WorkSource(Protocol):
    """Where the data-dependent work counts of a run come from (execution- or rate-driven)."""

    mode: str  # "execution" or "rate"

    def work(self, vs: VertexSet, t: int | None) -> dict:
        """Work counts of vertex set ``vs`` at loop iteration ``t`` (None outside loops)."""

    # optional: ``loop_work(vertex_sets, ts) -> {id(vs): work with a leading iteration axis} | None``
    # gives every iteration's work of a loop body at once (codelets with ``batched`` cost routes);
    # None falls back to ``work`` per iteration.


class _Costs:
    """Costs superstep executions and charges them to the run's :class:`~.recorder.Recorder`."""

    def __init__(self, program: Program, source, out: Recorder, record: list | None = None,
                 pinned: Pinned = NOTHING):
        self.program, self.source, self.out = program, source, out
        # supersteps whose codelets read a named assumption (Touched, TouchedRun), for bands
        self.record, self.touched = record, (assumptions.touched_codelets() if record is not None else frozenset())
        self.times = 1  # executions one compute() call is charged for (an analytical loop: its count)
        system = program.system
        self.system = system
        # the codelets read their pinned assumptions from the tile, the launches the host calls'
        self.tile = Tile.of(system.chip, program.meta.precision, assumptions.of_kind(pinned, "codelet"))
        self.host_pinned = assumptions.of_kind(pinned, "host")
        self.n_tiles = system.tiles
        # barrier-free local supersteps: per-tile compute since the last barrier
        self.free = system.chip.local_sync_cycles == 0
        self.carry = None
        # static costs live with the program: a compiled program is run many times; kept per tile (its
        # pinned codelet assumptions), whole spec (an overridden chip keeps its preset's name) and pinned
        # host times, side by side, so runs under other pins (another thread's) never clear them
        key = ("costs", self.tile, system, self.host_pinned)
        cached = program.static_costs.setdefault(key, {"compute": {}, "exchange": {}, "layouts": {}, "traffic": {}})
        self.static: dict[int, np.ndarray] = cached["compute"]
        self.exchange: dict[int, tuple[float, float]] = cached["exchange"]
        self.layouts: dict[int, tuple] = cached["layouts"]
        self.traffic: dict[int, np.ndarray] = cached["traffic"]

    def static_cycles(self, vs: VertexSet):
        """``(tiles, cycles)`` of a static vertex set, computed once per program."""
        if id(vs) not in self.static:
            self.static[id(vs)] = vertex_cycles(vs, {}, self.tile)
        return self.static[id(vs)]

    def compute(self, step: Superstep, works: dict, iterations: int | None):
        """Compute cycles of ``step`` on the tiles it uses: ``(tiles, cycles)`` with cycles
        ``[len(tiles)]``, or ``[iterations, len(tiles)]`` when ``works[id(vs)]`` holds one work
        dict per loop iteration (still ``[len(tiles)]`` when every codelet of the step is static,
        whose result is kept with the program). A codelet's tiles depend on its geometry only, so
        the union of a superstep's tiles and each vertex set's place in it are computed once."""
        out = self._compute(step, works, iterations)
        if iterations is None and self.touches(step):  # a loop's are recorded by record_segments
            self.record.append(Touched(step, works, iterations, self.times, out))
        return out

    def touches(self, step) -> bool:
        """Whether ``step`` runs a codelet that reads a named assumption (recorded for the band)."""
        return bool(self.touched) and not isinstance(step, Launch) and \
            any(vs.codelet in self.touched for vs in step.compute)

    def _compute(self, step: Superstep, works: dict, iterations: int | None):
        done = self.static.get(("step", id(step)))
        if done is not None:
            return done
        parts, dynamic = [], False
        for vs in step.compute:
            c = codelet(vs.codelet)
            if c.static:
                parts.append(self.static_cycles(vs))
                continue
            dynamic = True
            if id(vs) not in works:
                raise ConfigError(f"codelet {vs.codelet!r} of superstep {step.name!r} needs work counts, but the "
                                  f"program runs without a work source; run it with the workload's source")
            work = works[id(vs)]
            if iterations is None:
                parts.append(vertex_cycles(vs, work, self.tile))
            elif c.batched:  # all iterations in one call
                parts.append(vertex_cycles(vs, work if isinstance(work, dict) else _stack(work), self.tile))
            else:
                per = [vertex_cycles(vs, w, self.tile) for w in work]
                parts.append((per[0][0], np.stack([np.asarray(cyc, dtype=np.float64) for _, cyc in per])))
        layout = self.layouts.get(id(step))
        if layout is None:
            tiles = [np.asarray(t, dtype=np.int64) for t, _ in parts]
            if len(tiles) == 1 and _increasing(tiles[0]):  # one vertex set on distinct tiles in order
                union = tiles[0]
            else:
                union = np.unique(np.concatenate(tiles)) if tiles else np.zeros(0, dtype=np.int64)
            pos = [np.searchsorted(union, t) for t in tiles]
            layout = self.layouts[id(step)] = (union, pos, [_increasing(p) or np.unique(p).size == p.size
                                                            for p in pos],
                                               len(pos) == 1 and pos[0].size == union.size and _increasing(pos[0]))
        union, pos, unique, ident = layout
        # a loop's superstep of static codelets costs the same in every iteration: one row
        shape = union.shape if iterations is None or not dynamic else (iterations, union.size)
        if ident and np.shape(parts[0][1]) == shape:
            # one vertex set on its own tiles in order (pos is 0..n-1): 0 + cycles, as the sum below forms it
            local = np.asarray(parts[0][1], dtype=np.float64) + 0.0
            parts = ()
        else:
            local = np.zeros(shape)
        for (_, cyc), p, u in zip(parts, pos, unique):  # added vertex set by vertex set, as on the tile
            cyc = np.asarray(cyc, dtype=np.float64)
            if u:
                local[..., p] += cyc
            else:
                np.add.at(local, (Ellipsis, p), cyc)
        if not dynamic:
            local.flags.writeable = False  # shared by every run of the program
            self.static[("step", id(step))] = (union, local)
        return union, local

    def exchange_of(self, step: Superstep) -> tuple[float, float]:
        if id(step) not in self.exchange:
            self.exchange[id(step)] = exchange_phase(step.exchange, self.system)
        return self.exchange[id(step)]

    def traffic_of(self, step: Superstep) -> np.ndarray:
        if id(step) not in self.traffic:
            self.traffic[id(step)] = traffic(step.exchange, self.system)
        return self.traffic[id(step)]

    def charge(self, step, t, computed=None, count: int = 1) -> None:
        """Charge ``step`` at iteration ``t`` (its ``(tiles, cycles)`` compute given) ``count`` times."""
        kinds = dict.fromkeys(KINDS, 0.0)
        if isinstance(step, Launch):
            kinds["host"] = launch_cycles(step, self.system.chip, self.host_pinned)
            self.carry = None
            self.out.on_superstep(step, t, kinds, count)
            return
        tiles, local = computed
        saved = None
        kinds["exchange"], kinds["host"] = self.exchange_of(step)
        kinds["compute"] = float(local.max()) if step.compute and local.size else 0.0
        kinds["sync"] = float(sync_cost(step.sync, self.system))
        if step.sync == "local" and self.free:  # no barrier: the tiles run on
            if self.carry is None:
                self.carry = np.zeros(self.n_tiles)
            before = float(self.carry.max())
            self.carry[tiles] += local
            added = float(self.carry.max()) - before
            saved = count * (kinds["compute"] - added)
            kinds["compute"] = added
        else:
            self.carry = np.zeros(self.n_tiles)
            self.carry[tiles] = local
        self.out.on_superstep(step, t, kinds, count, computed, self.traffic_of(step), saved)

    def step(self, step, t) -> None:
        """A superstep or launch outside loops."""
        if isinstance(step, Launch):
            self.charge(step, t)
            return
        # every vertex set's numerics run (a static cost still computes, e.g. the loss)
        works = {id(vs): self.source.work(vs, t) for vs in step.compute} if self.source is not None else {}
        self.charge(step, t, self.compute(step, works, None))

    def loop(self, loop: Loop, done: int, total: int) -> int:
        """Numerics of every iteration, then the costs of all of them; returns iterations done."""
        self.carry = None
        each = self.out.per_execution
        if self.source is None:  # every cost is static: one evaluation, charged count times
            self.times = 1 if each else loop.count
            for _ in range(loop.count if each else 1):
                self.carry = None  # a run of barrier-free supersteps is cut at the iteration boundary
                for s in loop.body:
                    cyc = None if isinstance(s, Launch) else self.compute(s, {}, None)
                    self.charge(s, None, cyc, 1 if each else loop.count)
            self.times = 1
            self.carry = None
            self.out.on_progress(done + loop.count, total)
            return loop.count
        # the iterations' indices, only where numerics run per iteration (a static loop of a billion
        # batches needs none)
        ts, works = self.whole_loop_works(loop)
        if works is not None:
            self.out.on_progress(done + len(ts), total)
        else:
            work = self.source.work
            flat = [(vs, None if codelet(vs.codelet).static else []) for s in loop.body
                    if not isinstance(s, Launch) for vs in s.compute]
            for i, t in enumerate(ts):  # the numerics, in program order
                for vs, kept in flat:
                    w = work(vs, t)
                    if kept is not None:
                        kept.append(w)
                self.out.on_progress(done + i + 1, total)
            works = {id(vs): kept for vs, kept in flat if kept is not None}
        per_step = [None if isinstance(s, Launch) else self.compute(s, works, len(ts)) for s in loop.body]
        if self.touched:
            self.record_segments(loop.body, per_step, works, len(ts))
        if each:  # one record per execution
            for i, t in enumerate(ts):
                self.carry = None  # a run of barrier-free supersteps is cut at the iteration boundary
                for s, cyc in zip(loop.body, per_step):
                    self.charge(s, t, None if cyc is None else (cyc[0], cyc[1] if cyc[1].ndim == 1 else cyc[1][i]))
        else:
            self.charge_loop(loop.body, per_step, len(ts), ts)
        self.carry = None
        return len(ts)

    def record_segments(self, body, per_step, works, iterations: int) -> None:
        """Keep, for the band, each touched superstep of a loop body with what its charge depends on:
        alone when a barrier precedes it and none follows (its compute is its slowest tile), else its
        whole barrier-free run, from the barrier before it, with the other supersteps' costs as they
        were (a local superstep's charge depends on every tile's compute since that barrier). A touched
        superstep outside a loop is recorded alone by ``compute`` and re-costed by its slowest tile: exact
        behind a barrier; no program here runs a touched codelet in a barrier-free superstep outside a loop
        (``tests/test_assumptions.py`` checks the band against full re-runs)."""
        def local(s):
            return not isinstance(s, Launch) and s.sync == "local" and self.free

        j = 0
        while j < len(body):
            if not self.touches(body[j]):
                j += 1
                continue
            start = j
            while start > 0 and local(body[start]):
                start -= 1  # back to the barrier (or launch) the run starts from
            end = j + 1
            while end < len(body) and local(body[end]):
                end += 1
            seg = range(start, end)
            if end - start == 1 or not any(local(body[i]) for i in seg):
                self.record.append(Touched(body[j], works, iterations, self.times, per_step[j]))
                j += 1
                continue
            self.record.append(TouchedRun([body[i] for i in seg], [per_step[i] for i in seg],
                                          [self.touches(body[i]) for i in seg], works, iterations))
            j = end

    def local_runs(self, body, per_step, iterations: int) -> dict:
        """``{j: compute per iteration}`` of the body's barrier-free local supersteps: what each adds
        to the slowest tile's compute since the last barrier (the charge() rule, every iteration at once)."""
        # the carry is kept per tile while every superstep of the run costs the same in each iteration
        # (static codelets: one row), and made per tile and iteration ([tiles, iterations], rows
        # gathered whole) only from the first that does not; the same additions, the same integers
        out, carry, top = {}, None, None
        for j, (s, cyc) in enumerate(zip(body, per_step)):
            if isinstance(s, Launch):
                carry = None
                continue
            tiles, local = cyc
            if s.sync != "local" or not self.free:
                carry = (tiles, local)  # a barrier: made dense only if a local superstep follows
                continue
            if not isinstance(carry, np.ndarray):
                barrier = carry
                carry = np.zeros(self.n_tiles if barrier is None or barrier[1].ndim == 1
                                 else (self.n_tiles, iterations))
                if barrier is not None:
                    carry[barrier[0]] = barrier[1] if barrier[1].ndim == 1 else barrier[1].T
                top = carry.max(axis=0)
            if not len(tiles):
                out[j] = np.zeros(iterations)
                continue
            if local.ndim == 2 and carry.ndim == 1:  # the first superstep whose cost moves per iteration
                carry = np.repeat(carry[:, None], iterations, axis=1)
                top = np.full(iterations, top)
            # compute only adds (cycles >= 0): the slowest tile is the old slowest or one just added to,
            # so the new maximum needs the touched tiles only (the same integers, exactly). The tiles are
            # distinct and ascending: a run of consecutive tiles is added in place through a view, others
            # gathered once, added and written back (the same sums as carry[tiles] += ...)
            first, last = int(tiles[0]), int(tiles[-1])
            view = carry[first:last + 1] if last - first + 1 == len(tiles) else None
            sub = carry[tiles] if view is None else view
            if carry.ndim == 1:
                sub += local
                new = max(top, sub.max())
                out[j] = np.full(iterations, new - top)
            else:
                sub += local.T if local.ndim == 2 else local[:, None]
                new = np.maximum(top, sub.max(axis=0))
                out[j] = new - top
            if view is None:
                carry[tiles] = sub
            top = new
        return out

    def body_costs(self, body) -> tuple:
        """``(fixed, moved)`` of a loop body, computed once per program: ``fixed[kind, j]`` the
        exchange, sync and host cycles of superstep j (a launch's host cycles), which no work count
        moves, and the bytes one iteration moves (None unless they are integers, which add exactly
        in any order: then each superstep's are added in turn)."""
        hit = self.layouts.get(("body", id(body)))
        if hit is None or hit[0] is not body:
            kind = {k: i for i, k in enumerate(KINDS)}
            fixed = np.zeros((len(KINDS), len(body)))
            moved = np.zeros(3)
            for j, s in enumerate(body):
                if isinstance(s, Launch):
                    fixed[kind["host"], j] = launch_cycles(s, self.system.chip, self.host_pinned)
                    continue
                fixed[kind["exchange"], j], fixed[kind["host"], j] = self.exchange_of(s)
                fixed[kind["sync"], j] = float(sync_cost(s.sync, self.system))
                moved += self.traffic_of(s)
            exact = bool(np.all(moved == np.floor(moved))) and float(moved.max(initial=0.0)) < 2.0 ** 40
            fixed.flags.writeable = False
            hit = self.layouts[("body", id(body))] = (body, fixed, moved if exact else None)
        return hit[1], hit[2]

    def charge_loop(self, body, per_step, iterations: int, ts) -> None:
        """Charge every iteration of a loop body at once (:meth:`loop_vals`), handed to the recorder."""
        vals, per_iteration, saved = self.loop_vals(body, per_step, iterations)
        self.out.on_loop(body, ts, vals, per_step, per_iteration, saved)

    def loop_vals(self, body, per_step, iterations: int):
        """``(vals, moved, saved)`` of a loop body's iterations: ``vals[kind, iteration, superstep]`` the
        cycles charged, the barrier-free supersteps' compute as ``local_runs`` overlaps it; the bytes one
        iteration moves; the overlap each barrier-free superstep saved."""
        vals = np.zeros((len(KINDS), iterations, len(body)))  # kind, iteration, superstep
        compute = KINDS.index("compute")
        overlapped = self.local_runs(body, per_step, iterations)
        fixed, moved = self.body_costs(body)
        vals[:] = fixed[:, None, :]  # exchange, sync, host and launches: the same in every iteration
        saved = []
        for j, (s, cyc) in enumerate(zip(body, per_step)):
            if isinstance(s, Launch):
                continue
            tiles, local = cyc
            if s.compute and local.size:
                vals[compute, :, j] = local.max(axis=-1)
                if j in overlapped:
                    saved.append(float((vals[compute, :, j] - overlapped[j]).sum()))
                    vals[compute, :, j] = overlapped[j]
        per_iteration = [moved] if moved is not None else [self.traffic_of(s) for s in body
                                                            if not isinstance(s, Launch)]
        return vals, per_iteration, saved

    def whole_loop_works(self, loop: Loop) -> tuple:
        """``(ts, works)``: the loop's iterations in execution order and, where the source can give them
        (its optional ``loop_work``), every iteration's work counts at once; else ``works`` is None."""
        ts = list(range(loop.count - 1, -1, -1) if loop.reverse else range(loop.count))
        whole = getattr(self.source, "loop_work", None)
        works = whole([vs for s in loop.body if not isinstance(s, Launch) for vs in s.compute], ts) \
            if whole is not None else None
        return ts, works

    def loop_cycles(self, loop: Loop) -> tuple | None:
        """``(t, cycles)`` of ``loop``, each iteration's cycles (every kind and superstep) as
        ``run_program(loop_cycles=...)`` records them, and nothing else charged or recorded; None where
        the source has no whole-loop work (the caller then runs the program)."""
        ts, works = self.whole_loop_works(loop)
        if works is None:
            return None
        per_step = [None if isinstance(s, Launch) else self._compute(s, works, len(ts)) for s in loop.body]
        vals, _, _ = self.loop_vals(loop.body, per_step, len(ts))
        return np.asarray(ts), vals.sum(axis=(0, 2))


def _increasing(a: np.ndarray) -> bool:
    """Whether ``a`` is strictly increasing (so its values are distinct): one pass, no sort."""
    return a.size < 2 or bool(np.all(a[1:] > a[:-1]))


def _stack(works: list[dict]) -> dict:
    """One work dict per iteration -> one dict of arrays with a leading iteration axis."""
    out = {}
    for k, v in works[0].items():
        if isinstance(v, (bool, int, float, str, np.generic)):  # a flag: the same in every iteration
            if any(w[k] != v for w in works):
                raise ConfigError(f"work count {k!r} is a scalar that changes between iterations; a source must "
                                  f"give per-vertex arrays for data-dependent counts")
            out[k] = v
        else:
            out[k] = np.stack([np.asarray(w[k]) for w in works])
    return out


def loop_cycles(program: Program, source: WorkSource, *, pinned: Pinned = NOTHING) -> list | None:
    """What ``run_program(program, source, loop_cycles=records, pinned=pinned)`` appends to ``records``,
    for a program whose schedule holds loops only (a placement score's loop part), without charging a
    report: one ``(t, cycles)`` per loop, the same numbers (:meth:`_Costs.loop_cycles`). None where a loop's
    works come iteration by iteration (then run the program)."""
    if not all(isinstance(s, Loop) for s in program.schedule):
        raise ValueError("loop_cycles runs a program of loops only; run_program runs any program")
    costs = _Costs(program, source, Recorder(program.system.tiles), None, pinned)
    out = []
    for loop in program.schedule:
        one = costs.loop_cycles(loop)
        if one is None:
            return None
        out.append(one)
    return out


def run_program(program: Program, source: WorkSource | None = None, *, timeline: list | None = None,
                progress=None, record: list | None = None, loop_cycles: list | None = None,
                pinned: Pinned = NOTHING) -> Report:
    """Run ``program`` against ``source`` (None: an analytical program of static codelets).

    ``timeline``: if a list is given, one record per superstep execution is appended
    (name, phase, t, compute, exchange, sync, host cycles and the slowest tile's compute per
    tile group of the program's mapping) — what a trace is drawn from. ``progress(done,
    total)`` is called after every loop iteration's numerics (once per loop for an analytical
    program). ``record``: if a list is given, the supersteps whose codelets read a named assumption
    are appended with their works (what :mod:`mimdsim.engine.band` re-costs).
    ``loop_cycles``: if a list is given (and no timeline), one record per loop run of a
    program with a work source is appended: ``(t, cycles)``, the iterations' t in execution order
    and each iteration's cycles (every kind, every superstep of the body) — what an estimate
    from a few iterations extrapolates (:func:`mimdsim.workloads.snn.placement.score`).
    ``pinned``: the named assumptions pinned for this run (codelet constants and host times; a chip
    field is its spec's, already on ``program.system``).
    """
    n_tiles = program.system.tiles
    out = Recorder(n_tiles, timeline=timeline, loop_cycles=loop_cycles, progress=progress,
                   group_starts=program.mapping.tile_groups(n_tiles)[0] if timeline is not None else None)
    costs = _Costs(program, source, out, record, pinned)
    total = sum(s.count for s in program.schedule if isinstance(s, Loop))
    done = 0
    for step in program.schedule:
        if isinstance(step, Loop):
            done += costs.loop(step, done, total)
        else:
            costs.step(step, None)
    system = program.system
    memo = program.static_costs.get("memory")  # the memory plan is static: summarised once per program
    if memo is None or memo[0] != len(program.tensors):
        memo = program.static_costs["memory"] = (len(program.tensors), memory_summary(program), program.tile_bytes())
    _, summary, used = memo
    return Report(architecture=system.name, platform="mimd", model=program.meta.model,
                  mode=f"{source.mode}-driven" if source is not None else "analytical",
                  timesteps=program.timesteps, batch_size=program.batch_size, clock_hz=system.chip.clock_hz,
                  cycles=out.cycles, steps=out.per_step, memory=copy.deepcopy(summary),
                  tile_compute_cycles=out.tile_compute, tile_memory_bytes=used.copy(), activity=out.activity())


def memory_summary(program: Program) -> dict:
    """The report's memory section: the fullest tile, its bytes by category, the limit."""
    mem = program.tile_memory()
    used = program.tile_bytes()
    fullest = int(np.argmax(used))
    return {"max_tile_bytes": int(used.max()), "tile_bytes_limit": int(program.system.chip.sram_per_tile),
            "fullest_tile": fullest, "fullest_tile_by_category": {k: int(v[fullest]) for k, v in mem.items()},
            "total_bytes": int(used.sum())}
