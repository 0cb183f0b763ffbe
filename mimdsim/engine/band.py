"""Bands: a run's time (chip, GPU, systolic array) or energy when its named assumptions move over their
ranges. Every band is made here; a chip run's from a few re-costs:

A run records the works of the supersteps whose codelets read an assumption (from their tile's
pinned values); nothing else is kept. Under a set of assumption values the
total is the run's total plus two exact deltas:

* chip fields (exchange, sync, link, host, launch constants): every superstep's exchange, sync
  and host cycles depend on the spec only, so they are re-costed per distinct superstep and
  multiplied by its execution count (a field that only adds a constant per exchange phase, sync or
  launch is ``(value - used) x events``, with no re-cost at all); ``local_sync_cycles`` moved above 0
  also adds back the compute the run's barrier-free local supersteps overlapped (the engine records it);
* codelet constants: the recorded supersteps' compute is re-costed from the recorded works
  (max over tiles per iteration, as the engine charges it);
* host time per event (kind "host", ``Launch.host_call``: a framework's work per call, a wait on the
  host at an unbuffered stream copy): ``(value - used) x events``.

Compute, exchange, sync and host of a superstep add, so the two deltas add exactly. No numerics
run again.
"""
from __future__ import annotations

import numpy as np

from .. import assumptions as A
from ..kernels.assumed import NOTHING, Pinned
from ..program import Launch, Loop
from .run import TouchedRun, _Costs
from .fabric import exchange_phase, sync_cost

# chip fields charged as a constant per event: (value - used) x count, no re-cost
_PER_PHASE = ("exchange_phase_overhead_cycles", "exchange_latency_cycles")
_PER_SYNC = {"sync_cycles": "chip", "global_sync_cycles": "global", "local_sync_cycles": "local"}


def _phases(step) -> int:
    """Exchange phases a superstep's exchange pays latency and overhead for (into the tiles, to the host)."""
    into = out = False
    for t in step.exchange:
        moved = bool(np.any(t.src != t.dst))
        if np.any(t.dst < 0):
            out = out or moved
        else:
            into = into or moved
    return int(into) + int(out)


class Recoster:
    """Total cycles of a recorded run under other assumption values (``total_cycles(values)``)."""

    def __init__(self, program, total_cycles: float, recorded: list, overlap: float = 0.0, pinned: Pinned = NOTHING):
        self.program, self.system, self.base = program, program.system, float(total_cycles)
        self.pinned = pinned  # what the run held pinned (its codelet constants and host times)
        self.overlap = float(overlap)  # compute the run's barrier-free local supersteps overlapped
        self.recorded = recorded  # engine.run's Touched and TouchedRun records: compute that reads an assumption
        # what the schedule and the system fix (events, their counts, fabric re-costs) is kept with the
        # program's static costs, per schedule
        memo = program.static_costs.setdefault("band", {})
        hit = memo.get(id(program.schedule))
        if hit is None or hit[0] is not program.schedule:
            hit = memo[id(program.schedule)] = (program.schedule, self._events(program), {}, {})
        _, (self.events, self.phases, self.syncs, self.launches, self.calls), self._base, self._deltas = hit
        self._static, self._layouts = memo.setdefault("static", {}), memo.setdefault("layouts", {})
        self.call_used = {name: A.value(name, self.pinned) for name in self.calls}  # the values the run charged
        # per record, the codelet assumptions whose codelets it runs, and its re-costed charges (memo)
        by_codelet = {}
        for a in A.REGISTRY.values():
            for c in a.codelets:
                by_codelet.setdefault(c, set()).add(a.name)

        def steps(rec):
            return [s for s, t in zip(rec.body, rec.touched) if t] if isinstance(rec, TouchedRun) else [rec.step]

        self._reads = [frozenset(n for s in steps(r) for vs in s.compute for n in by_codelet.get(vs.codelet, ()))
                       for r in recorded]
        self._reads_any = frozenset().union(*self._reads) if self._reads else frozenset()
        self._per: dict = {}  # (record, values it reads) -> its supersteps' re-costed cycles
        self._charges: dict = {}  # ((record, values) or record, free) -> the compute charged

    @staticmethod
    def _events(program):
        """Every distinct superstep or launch with its execution count, and the counts the band scales."""
        counts: dict = {}
        for item in program.schedule:
            for s in (item.body if isinstance(item, Loop) else (item,)):
                n = item.count if isinstance(item, Loop) else 1
                counts[id(s)] = (s, counts.get(id(s), (s, 0))[1] + n)
        events = list(counts.values())
        phases = sum(n * _phases(s) for s, n in events if not isinstance(s, Launch))
        syncs = {k: sum(n for s, n in events if not isinstance(s, Launch) and s.sync == k)
                 for k in ("chip", "global", "local")}
        launches = sum(n for s, n in events if isinstance(s, Launch) and not s.host_call)
        calls: dict = {}  # host time per event (Launch.host_call): assumption -> count
        for s, n in events:
            if isinstance(s, Launch) and s.host_call:
                calls[s.host_call] = calls.get(s.host_call, 0) + n
        return events, phases, syncs, launches, calls

    def _costs(self, rec, costs, again):
        """A record's supersteps' ``(tiles, cycles)``: those touched for which ``again(step)`` holds
        re-costed under ``costs.tile``'s pinned values, the others as the run costed them."""
        if isinstance(rec, TouchedRun):
            return [costs.compute(s, rec.works, rec.iterations) if t and again(s) else c
                    for s, c, t in zip(rec.body, rec.costs, rec.touched)]
        return costs.compute(rec.step, rec.works, rec.iterations) if again(rec.step) else rec.costs

    @staticmethod
    def _charge(rec, per, costs) -> float:
        """The compute the engine charges a record whose supersteps cost ``per`` (``_costs``): a
        barrier-free run as ``local_runs`` charges it (no overlap when ``costs.free`` is false), a
        superstep alone its slowest tile per execution."""
        def slowest(step, cyc, executions):
            local = cyc[1]
            if not (step.compute and local.size):
                return 0.0
            return float(local.max(axis=-1).sum()) if local.ndim == 2 else float(local.max()) * executions

        if isinstance(rec, TouchedRun):
            runs = costs.local_runs(rec.body, per, rec.iterations)
            return sum(float(runs[j].sum()) if j in runs else slowest(s, cyc, rec.iterations)
                       for j, (s, cyc) in enumerate(zip(rec.body, per)) if cyc is not None)
        return slowest(rec.step, per, rec.iterations or rec.times)

    def _compute_delta(self, moved: dict, free: bool) -> float:
        """Compute added when the codelet assumptions ``moved`` (name -> value) take those values: each
        record that runs a codelet reading one of them is re-costed (its costs memoised per record and the
        values of the assumptions it reads, so corners reuse the one-at-a-time re-costs) and charged against
        its charge at the run's values. ``free``: barrier-free supersteps overlap (``local_sync_cycles`` 0);
        else each is charged its slowest tile, as the engine charges them behind a barrier."""
        costs = _Costs.__new__(_Costs)  # the engine's own compute rule, on fresh caches
        # static codelets' cycles under each set of pinned values, and the supersteps' tile layouts
        # (geometry only), kept with the program for its other runs; the dynamic ones are costed afresh
        costs.layouts, costs.touched = self._layouts, frozenset()
        costs.n_tiles, costs.free = self.system.tiles, free
        base = {n: A.value(n, self.pinned) for n in self._reads_any}
        run_codelets = A.of_kind(self.pinned, "codelet")  # the codelet values the run held, moved on top
        delta = 0.0
        for i, (rec, reads) in enumerate(zip(self.recorded, self._reads)):
            if not reads & moved.keys():
                continue
            key = (i, tuple((n, moved.get(n, base[n])) for n in sorted(reads)))
            if key not in self._per:
                vals = {n: v for n, v in key[1] if v != base[n]}
                costs.tile = self._tile(run_codelets | vals)
                costs.static = self._static.setdefault(costs.tile.pinned, {})
                codelets = frozenset(c for n in vals for c in A.REGISTRY[n].codelets)
                self._per[key] = self._costs(rec, costs, lambda s: any(vs.codelet in codelets for vs in s.compute))
            for k, per in (((i, free), None), ((key, free), self._per[key])):
                if k not in self._charges:
                    self._charges[k] = self._charge(rec, self._costs(rec, costs, lambda s: False) if per is None
                                                    else per, costs)
            delta += self._charges[(key, free)] - self._charges[(i, free)]
        return delta

    def _tile(self, pinned: Pinned):
        from ..kernels.tile import Tile
        return Tile.of(self.system.chip, self.program.meta.precision, pinned)

    def _fabric_delta(self, fields: dict) -> float:
        """Exchange and host cycles added when the chip fields ``fields`` (inside the fabric's max()) change:
        only the supersteps those fields can reach are re-costed (host fields: steps with host streams;
        link fields: none on one chip)."""
        key = tuple(sorted(fields.items()))
        if key not in self._deltas:  # the spec and the schedule only: the same for every run of the program
            self._deltas[key] = self._fabric_recost(fields)
        return self._deltas[key]

    def _fabric_recost(self, fields: dict) -> float:
        host = any(f.startswith("host_") for f in fields)
        link = any(f.startswith("link_") for f in fields)
        if all(f.startswith("link_") for f in fields) and self.system.chips == 1:
            return 0.0
        other = type(self.system)(chip=self.system.chip.replace(**fields), chips=self.system.chips)
        delta = 0.0
        for s, n in self.events:
            if isinstance(s, Launch) or not s.exchange:
                continue
            if host and not link and len(fields) == sum(f.startswith("host_") for f in fields) and \
                    not any(np.any(t.src < 0) or np.any(t.dst < 0) for t in s.exchange):
                continue
            base = self._base.get(id(s))
            if base is None:
                base = self._base[id(s)] = sum(exchange_phase(s.exchange, self.system))
            delta += n * (sum(exchange_phase(s.exchange, other)) - base)
        return delta

    def total_cycles(self, values: dict) -> float:
        chip = self.system.chip
        fields = A.spec_overrides("chip", chip.name, values)
        delta = 0.0
        rest = {}
        for f, v in fields.items():
            if f in _PER_PHASE:
                delta += (v - getattr(chip, f)) * self.phases
            elif f in _PER_SYNC:
                delta += (v - getattr(chip, f)) * self.syncs[_PER_SYNC[f]]
                if f == "local_sync_cycles" and v > 0 and chip.local_sync_cycles == 0:
                    delta += self.overlap  # a barrier before each local program: its tiles no longer overlap
            elif f == "run_launch_s":
                delta += (v - chip.run_launch_s) * chip.clock_hz * self.launches
            else:
                rest[f] = v
        if rest:  # fields inside the fabric's max(): re-cost the supersteps they reach
            delta += self._fabric_delta(rest)
        for n, v in values.items():  # host work per call: (value - used) x calls, no re-cost
            if A.REGISTRY[n].kind == "host" and n in self.calls:
                delta += (v - self.call_used[n]) * chip.clock_hz * self.calls[n]
        # codelet constants moved away from the values the run used: re-cost only what reads them
        codelets = {n: v for n, v in values.items() if A.REGISTRY[n].kind == "codelet" and v != A.value(n, self.pinned)}
        if codelets and self.recorded:
            free = fields.get("local_sync_cycles", chip.local_sync_cycles) == 0
            delta += self._compute_delta(codelets, free)
        return self.base + delta


def drivers_of(kind: str, spec, fixed: dict) -> list:
    """The assumptions that apply to ``spec`` (a chip or GPU spec) and are not pinned: an
    assumption is pinned by ``--assume`` (``fixed``) or by a spec field set away from its value."""
    out = []
    for a in A.for_preset(kind, spec.name):
        if a.name in fixed:
            continue
        if a.kind in ("chip", "gpu", "hostcpu") and hasattr(spec, a.field) and float(getattr(spec, a.field)) != a.value:
            continue  # --set FIELD=...: the user's value, held
        out.append(a)
    return out


def band(evaluate, drivers: list, batch_size: int, base_seconds: float) -> dict:
    """The uncertainty section: corners and each driver's one-at-a-time swing (top first).

    ``evaluate(values) -> seconds`` re-costs the run with ``{name: value}`` moved."""
    rows, low_corner, high_corner = [], {}, {}
    for a in drivers:
        at_low, at_high = evaluate({a.name: a.low}), evaluate({a.name: a.high})
        lo_end, hi_end = (a.low, a.high) if at_low <= at_high else (a.high, a.low)
        low_corner[a.name], high_corner[a.name] = lo_end, hi_end
        rows.append({"name": a.name, "value": a.value, "range": [a.low, a.high], "unit": a.unit,
                     "seconds_per_step": [min(at_low, at_high), max(at_low, at_high)],
                     "at_low": at_low, "at_high": at_high})
    rows.sort(key=lambda r: -(r["seconds_per_step"][1] - r["seconds_per_step"][0]))
    lo = evaluate(low_corner) if drivers else base_seconds
    hi = evaluate(high_corner) if drivers else base_seconds
    lo, hi = min(lo, base_seconds), max(hi, base_seconds)
    return {"seconds_per_step": [lo, hi], "samples_per_second": [batch_size / hi, batch_size / lo],
            "assumptions": len(drivers), "drivers": rows}


def energy_band(joules, central: float, used: dict, pinned: Pinned, seconds: float, batch_size: int) -> dict:
    """The band of an energy section: ``joules(values) -> joules per step`` re-evaluated with each energy
    constant it read (``used``: name -> value) that is a named assumption and not ``pinned`` moved over its
    range (the drivers, largest swing first), and the corners set each at the end that lowers, or raises,
    the joules; the step's time (``seconds``) is the point estimate's."""
    held = {n: v for n, v in used.items() if n in A.REGISTRY and n in pinned}
    drivers = [A.REGISTRY[n] for n in used if n in A.REGISTRY and n not in held]
    rows, low_corner, high_corner = [], {}, {}
    for a in drivers:
        at_low, at_high = joules({a.name: a.low}), joules({a.name: a.high})
        low_corner[a.name], high_corner[a.name] = (a.low, a.high) if at_low <= at_high else (a.high, a.low)
        rows.append({"name": a.name, "value": a.value, "range": [a.low, a.high], "unit": a.unit,
                     "joules_per_step": [min(at_low, at_high), max(at_low, at_high)], "at_low": at_low,
                     "at_high": at_high})
    rows.sort(key=lambda r: -(r["joules_per_step"][1] - r["joules_per_step"][0]))
    lo, hi = min(joules(low_corner), central), max(joules(high_corner), central)
    out = {"joules_per_step": [lo, hi], "watts": [lo / seconds, hi / seconds],
           "samples_per_joule": [batch_size / hi, batch_size / lo], "assumptions": len(rows), "drivers": rows}
    if held:
        out["pinned"] = held
    return out


def unread_by(program, names) -> list:
    """The codelet and host-call assumptions among ``names`` that this program never reads: a codelet
    entry whose codelets it does not run, a framework's host call it does not make."""
    runs = {vs.codelet for s in program.supersteps() for vs in s.compute}
    calls = {s.host_call for item in program.schedule
             for s in (item.body if isinstance(item, Loop) else (item,)) if isinstance(s, Launch) and s.host_call}
    out = []
    for n in names:
        a = A.REGISTRY[n]
        if (a.kind == "codelet" and not runs & set(a.codelets)) or (a.kind == "host" and n not in calls):
            out.append(n)
    return out


def chip_band(program, report, recorded: list, fixed: dict) -> dict:
    """The band of a MIMD run (``report``) whose touched supersteps were ``recorded``: the chip's
    assumptions, the codelet ones whose codelets the program runs and the host calls it makes."""
    rc = Recoster(program, report.total_cycles, recorded, report.activity.get("local_overlap_cycles", 0.0),
                  A.of_kind(Pinned.of(fixed), "codelet", "host"))
    clock = program.system.chip.clock_hz
    # a framework's host work per call drives the band only where the program makes such calls
    calls = [a for a in A.REGISTRY.values() if a.kind == "host" and a.name in rc.calls and a.name not in fixed]
    chip = drivers_of("chip", program.system.chip, fixed)
    unread = set(unread_by(program, [a.name for a in chip]))
    out = band(lambda v: rc.total_cycles(v) / clock, [a for a in chip if a.name not in unread] + calls,
               report.batch_size, report.seconds_per_step)
    pinned = {k: v for k, v in fixed.items() if A.REGISTRY[k].kind in ("chip", "codelet", "host")}
    if pinned:
        out["pinned"] = pinned
    return out


def gpu_spec_with(spec, values: dict):
    """``spec`` (a GpuSpec) with the GPU assumptions of ``values`` set; the efficiency scale
    multiplies every point of the matrix efficiency curve (capped at 1)."""
    fields = A.spec_overrides("gpu", spec.name, values)
    scale = fields.pop("matrix_efficiency_scale", None)
    if scale is not None:
        fields["matrix_efficiency"] = tuple((t, min(1.0, e * scale)) for t, e in spec.matrix_efficiency)
    return spec.replace(**fields) if fields else spec


def host_spec_with(spec, values: dict):
    """``spec`` (a HostSpec) with the host assumptions of ``values`` that apply to it set (its op_time_scale)."""
    fields = A.spec_overrides("hostcpu", spec.name, values)
    return spec.replace(**fields) if fields else spec


def gpu_band(estimate, spec, fixed: dict, batch_size: int, base_seconds: float, framework: str | None = None,
             host=None) -> dict:
    """The band of a GPU column: ``estimate(spec) -> Report`` re-run (analytical, about a millisecond)
    with each GPU assumption moved, and each host constant of the column's ``framework`` (kind
    "framework", e.g. eager PyTorch's per-op host cost) and, where that framework spends host time per op, the
    speed of the ``host`` that drives the GPU (a HostSpec, kind "hostcpu"), passed to the re-run as
    ``estimate(spec, pinned)``'s second argument: the eager timeline overlaps host and device, so a per-op cost
    moves the step by less than (value - used) x ops wherever the device is the slower stream, and only a re-run
    is exact."""
    from ..gpu.framework import FRAMEWORKS, reads_host

    drivers = drivers_of("gpu", spec, fixed)
    on_host = bool(framework) and host is not None and reads_host(FRAMEWORKS[framework])
    if framework:
        drivers += [a for a in A.for_preset("framework", framework) if a.name not in fixed]
    if on_host:
        drivers += drivers_of("hostcpu", host, fixed)

    def evaluate(values):
        return estimate(gpu_spec_with(spec, values),
                        A.of_kind(Pinned.of(values), "framework", "hostcpu")).seconds_per_step

    out = band(evaluate, drivers, batch_size, base_seconds)
    pinned = {k: v for k, v in fixed.items() if A.REGISTRY[k].kind == "gpu"
              or (A.REGISTRY[k].kind == "framework" and A.REGISTRY[k].applies(framework or ""))
              or (on_host and A.REGISTRY[k].kind == "hostcpu" and A.REGISTRY[k].applies(host.name))}
    if pinned:
        out["pinned"] = pinned
    return out


def systolic_spec_with(spec, values: dict):
    """``spec`` (a SystolicSpec) with the systolic assumptions of ``values`` set; a clock moved keeps
    the DRAM bandwidth in bytes per cycle (SCALE-Sim's bandwidth is words per cycle)."""
    fields = A.spec_overrides("systolic", spec.name, values)
    if "clock_hz" in fields:
        fields["dram_bytes_per_second"] = spec.dram_bytes_per_cycle * fields["clock_hz"]
    return spec.replace(**fields) if fields else spec


def systolic_band(estimate, spec, fixed: dict, batch_size: int, base_seconds: float) -> dict:
    """The band of a systolic column: ``estimate(spec) -> Report`` re-run (analytical) with each of the
    array's assumptions moved (a clock moves the step by exactly used / value)."""
    out = band(lambda v: estimate(systolic_spec_with(spec, v)).seconds_per_step, drivers_of("systolic", spec, fixed),
               batch_size, base_seconds)
    pinned = {k: v for k, v in fixed.items() if A.REGISTRY[k].kind == "systolic" and A.REGISTRY[k].applies(spec.name)}
    if pinned:
        out["pinned"] = pinned
    return out
