"""The placement search: which neurons per tile (and so how many chips) a spike-list or dense
program runs at, chosen by the cost model that times the run, under the memory plan.

Candidates. Every neurons-per-tile count n >= 1 the program's vertices build: the published
op has a vertex type for every n (``LIF...TwoNeuronSIMD`` for n = 2, ``...MultiNeuronSIMD``
for even n, the scalar ``...MultiNeuron<float>`` / ``...MultiRow<float>`` for odd n, 1
included; docs/as-built/graphcore_snn.md §3 B7/B8, kernels/graphcore_snn.py); mimdsim's fused
and dense codelets take any n. The study's own Python mapper searched even counts only
(``min_neurons_per_tile`` = 2 with ``transpose_weights``, §5): a mapper rule, not a vertex
limit, so odd counts are candidates too. Layers are placed as :func:`..mapping.map_network`
places them (whole layers per chip, filled in order), so n fixes the chips a placement uses:
searching n over the chips given searches the chips used, 1..given, too.

Order and pruning. n rises from the smallest count that places. The scan ends at the first count
whose neurons alone overfill a tile (:func:`memory_floor`: weights, gradients, Adam moments and
membrane history per neuron, true of every program and non-decreasing in n), or after two counts
in a row that are slower than the best so far or do not fit (a count that does not fit is not the
end by itself: the published op's one-copy weight gradient can halve a tile's bytes at a larger
count), or at ``MAX_SCORED`` scored counts. Step time is per-tile compute (growing with n) plus
reductions and exchange (shrinking with n); odd counts run scalar paths, so the curve is not
unimodal and two in a row are asked for. Over 40 grids (docs/user-guide.md) the rule never missed
the fastest count.

Score. Each fitting candidate runs rate-driven (:class:`.sources.RateSource`, seed 0) at half
each list's capacity, the CLI's default activity, so the choice depends on the shape only and
is cached per shape (a sweep over activities compiles and searches once). Its loops run their
first D + ``STEADY`` iterations and charge the rest the steady mean (:func:`score`); the loops'
part does not depend on T and is kept across timestep counts of one shape.
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import numpy as np

from ...engine import run_program
from ...errors import ConfigError, OutOfTileMemory, Param, join
from ...compiler.memory import check_fits
from ...program import Loop, Program
from .mapping import _place, weight_bytes_lower_bound
from .programs.compile import compile_program
from .sources import RateSource
from .step import PRECISIONS

MAX_SCORED = 8  # candidates run per shape at most (the default model runs 3)
STEADY = 12  # steady iterations a candidate's loops are scored on (score)
SLOWER_IN_A_ROW = 2  # one even and one odd count slower than the best end the scan


@dataclass(frozen=True)
class Candidate:
    neurons_per_tile: int
    chips: int
    tiles: int
    seconds: float | None  # scored step time; None: not scored (does not fit)
    why: str  # "chosen", "slower by x%", "does not fit: ...", "not scored"

    def describe(self) -> dict:
        return {"neurons_per_tile": self.neurons_per_tile, "chips": self.chips, "tiles": self.tiles,
                "seconds_per_step": self.seconds, "result": self.why}


@dataclass(frozen=True)
class Choice:
    program: Program
    candidates: tuple  # the chosen first, then the runners-up by time, then those that do not fit
    searched: bool  # False: the placement was pinned (--neurons-per-tile)


def half_capacity(sizes, capacities) -> list[float]:
    """Per layer (input first) the activity a search scores at: half the list's capacity."""
    return [min(1.0, k / (2 * n)) for n, k in zip(sizes, capacities)]


def score(program: Program, steady: int | None = STEADY, key=None) -> float:
    """Seconds per step of ``program`` rate-driven at half each list's capacity (seed 0).

    ``steady=None`` runs every iteration. Otherwise each loop is estimated from its first
    ``D + steady`` iterations, ``D = (L - 1) * delay`` (layer l is silent for t < (l - 1) * delay,
    :class:`.sources.RateSource`): those run as they would, and each iteration not run is charged
    the mean of the ``steady`` ones. Every iteration from D on runs the same supersteps on draws
    of the same distribution, so the estimate has the full run's expected value (see
    docs/user-guide.md, "Placement search"). The steps outside the loops run at the program's T
    on lists whose rows past ``D + steady`` repeat the steady rows drawn.

    The loops' part depends on the loop bodies, not on T: it is kept per ``key`` (the search's
    shape without T), so another T of one shape runs only the steps outside the loops."""
    plan = program.plan
    T = program.timesteps
    transient = (len(plan.sizes) - 2) * plan.delay
    short = T if steady is None else min(T, transient + steady)
    act = half_capacity(plan.sizes, plan.capacities)

    def source(prog):
        return RateSource(prog, plan.sizes, plan.capacities, act, [0.0] + act[1:], seed=0)

    if short >= T:
        return run_program(program, source(program)).seconds_per_step
    loops = [s for s in program.schedule if isinstance(s, Loop)]
    # the bodies are lowered from the shape, not from T (T sizes the histories, the io and the loss
    # outside the loops; tests/test_placement.py compares the bodies at two T for every program); the
    # published op's weight-gradient scheme, chosen by the memory plan, is the one choice T moves
    cache_key = None if key is None else (key, short, plan.weight_grad_copies)
    hit = _LOOPS.get(cache_key) if cache_key is not None else None
    if hit is None:
        looped = _part(program, [dataclasses.replace(s, count=short) for s in loops], short)
        src, records = source(looped), []
        run_program(looped, src, loop_cycles=records)
        hit = ([(float(c.sum()), float(c[t >= transient].mean()), t.size) for t, c in records], src.stats)
        if cache_key is not None:
            if len(_LOOPS) > 512:
                _LOOPS.clear()
            _LOOPS[cache_key] = hit
    parts, stats = hit
    rest = _part(program, [s for s in program.schedule if not isinstance(s, Loop)], T)
    src = source(rest)
    rows = np.arange(T)
    rows = np.where(rows < short, rows, transient + (rows - transient) % (short - transient))  # steady rows repeat
    for name in ("spikes", "kept", "listed", "dropped_spikes", "dropped_candidates"):
        setattr(src.stats, name, [a[rows] for a in getattr(stats, name)])
    report = run_program(rest, src)
    cycles = report.total_cycles + sum(total + (T - n) * mean for total, mean, n in parts)
    return cycles / report.clock_hz


_LOOPS: dict = {}  # the loops' part of a score, by shape without T and the bodies' content


def _part(program: Program, schedule, timesteps) -> Program:
    """``program`` running ``schedule`` over ``timesteps``; the static costs shared with it."""
    out = dataclasses.replace(program, schedule=list(schedule), timesteps=timesteps)
    out.static_costs = program.static_costs  # the same supersteps: costs computed once
    return out


def memory_floor(sizes, n, *, timesteps, batch_size, training=True, optimizer="adam", precision="fp32") -> int:
    """Bytes a tile holding up to ``n`` neurons of a layer needs at least, in every program (published,
    fused, dense): per neuron its weights, when training their gradient and Adam's moments
    (:func:`.mapping.weight_bytes_lower_bound`), and its membrane history (T steps when training, one
    for inference). Non-decreasing in ``n``: once over the SRAM, no larger count fits."""
    e = PRECISIONS[precision]
    weights = weight_bytes_lower_bound(sizes, training=training, optimizer=optimizer, bytes_per_value=e)
    steps = timesteps if training else 1
    return max(min(n, m) * (w // m + steps * batch_size * e) for m, w in zip(sizes[1:], weights))


def placing_counts(sizes, chips, tiles_per_chip, reserve_tile0, chips_used=None):
    """Neurons-per-tile counts that place the layers, ascending (lazily): (n, chips used, tiles)."""
    for n in range(1, max(sizes) + 1):
        placed, _ = _place(sizes, n, chips, tiles_per_chip, reserve_tile0)
        if placed is None:
            continue
        used = placed[-1].chip + 1
        if chips_used is None or used == chips_used:
            yield n, used, sum(p.tiles for p in placed)


def fewest_per_chips(sizes, chips, tiles_per_chip, reserve_tile0, chips_used=None):
    """For each chip count k in 1..chips (or ``chips_used`` only), the fewest neurons per tile that
    place the layers on k chips: (n, chips used, tiles), distinct n, fewest chips first."""
    seen = set()
    for k in ([chips_used] if chips_used is not None else range(1, min(chips, len(sizes)) + 1)):  # <= a layer a chip
        hit = next(placing_counts(sizes, k, tiles_per_chip, reserve_tile0, k if chips_used is not None else None),
                   None)
        if hit is not None and hit[0] not in seen:
            seen.add(hit[0])
            yield hit
            if hit[0] == 1:
                return


def _compile(sizes, capacities, system, n, kw):
    program = compile_program(sizes, capacities, system, neurons_per_tile=n, **kw)
    try:
        check_fits(program)
        return program, None
    except OutOfTileMemory as e:
        return None, e


def _oom_why(e: OutOfTileMemory) -> str:
    return f"does not fit: tile {e.tile} needs {e.used:,} B of {e.limit:,} B"


def search(sizes, capacities, system, *, neurons_per_tile=None, chips_used=None, reserve_tile0=True,
           **kw) -> Choice:
    """The fastest placement that fits (see the module docstring); ``neurons_per_tile`` and
    ``chips_used`` pin either. Raises :class:`OutOfTileMemory` with checked remedies when none fits."""
    sizes, capacities = tuple(sizes), tuple(capacities)
    kw = dict(kw, reserve_tile0=reserve_tile0)
    if chips_used is not None:
        if chips_used > system.chips:
            raise ConfigError(Param("chips_used", chips_used), f" is more than the {system.chips} chip(s) given: raise ",
                              Param("chips", action="raise"), f" to at least {chips_used} or lower ",
                              Param("chips_used", action="lower"), param=Param("chips_used", chips_used),
                              limit=system.chips)
        system = dataclasses.replace(system, chips=chips_used)
    layer_sizes = list(sizes[1:])
    if neurons_per_tile is not None:  # pinned: today's placement, no scoring
        program = compile_program(sizes, capacities, system, neurons_per_tile=neurons_per_tile, **kw)
        if chips_used is not None and program.mapping.chips_used != chips_used:
            raise ConfigError(Param("neurons_per_tile", neurons_per_tile), " places the layers on "
                              f"{program.mapping.chips_used} chip(s), not ", Param("chips_used", chips_used),
                              ": drop one of them")
        try:
            check_fits(program)
        except OutOfTileMemory as e:
            raise with_remedies(e, sizes, capacities, system, kw, pinned=neurons_per_tile,
                                chips_pinned=chips_used is not None) from None
        lay = program.mapping
        return Choice(program, (Candidate(neurons_per_tile, lay.chips_used, lay.tiles_used, None, "pinned"),), False)
    if kw.get("schedule") == "poptorch":  # poplin's planner maps every matmul over the chip: no neuron placement
        program = compile_program(sizes, capacities, system, **kw)
        check_fits(program)
        return Choice(program, (), False)
    scored, failed, programs = [], [], {}
    shape = (sizes, capacities, system, tuple(sorted((k, v) for k, v in kw.items() if k != "timesteps")))

    def visit(n, used, tiles):
        """Compile, plan memory and score count ``n``; False where it does not fit."""
        program, oom = _compile(sizes, capacities, system, n, kw)
        if program is None:
            failed.append((Candidate(n, used, tiles, None, _oom_why(oom)), oom))
            return False
        scored.append(Candidate(n, used, tiles, score(program, key=(shape, n)), ""))
        programs[n] = program
        return True

    floor = functools.partial(memory_floor, sizes, timesteps=kw["timesteps"], batch_size=kw["batch_size"],
                              training=kw.get("training", True), optimizer=kw.get("optimizer", "adam"),
                              precision=kw.get("precision") or "fp32")
    sram = system.chip.sram_per_tile
    slower = 0
    counts = placing_counts(layer_sizes, system.chips, system.chip.tiles, reserve_tile0, chips_used)
    for n, used, tiles in counts:
        if floor(n) > sram and (scored or failed):  # the first is compiled: its plan names the tile
            break  # this count's and every larger count's neurons alone overfill a tile
        best = min((c.seconds for c in scored), default=None)
        if not visit(n, used, tiles):  # a larger count may still fit (the published op's one-copy weight
            slower += best is not None  # gradient halves a tile's bytes): not better, the scan goes on
        else:
            slower = slower + 1 if best is not None and scored[-1].seconds >= best else 0
        if slower >= SLOWER_IN_A_ROW or len(scored) >= MAX_SCORED:
            break
    # the chips used: the fewest neurons per tile that place on each chip count 1..given is always a
    # candidate, so more chips given are never slower than fewer
    for n, used, tiles in fewest_per_chips(layer_sizes, system.chips, system.chip.tiles, reserve_tile0, chips_used):
        if n not in programs and floor(n) <= sram and not any(c.neurons_per_tile == n for c, _ in failed):
            visit(n, used, tiles)
    first_oom = min(failed, key=lambda f: f[0].neurons_per_tile)[1] if failed else None
    failed = sorted((c for c, _ in failed), key=lambda c: c.neurons_per_tile)
    if not scored:
        if first_oom is None:  # nothing places: the mapper's own error names the layer and the fix
            compile_program(sizes, capacities, system, **kw)
        raise with_remedies(first_oom, sizes, capacities, system, kw, pinned=None,
                            chips_pinned=chips_used is not None) from None
    ranked = sorted(scored, key=lambda c: (c.seconds, c.neurons_per_tile))  # ties: the fewer neurons per tile
    best = ranked[0]
    out = [dataclasses.replace(best, why="chosen")]
    out += [dataclasses.replace(c, why=f"slower by {100 * (c.seconds / best.seconds - 1):.1f}%") for c in ranked[1:]]
    return Choice(programs[best.neurons_per_tile], tuple(out + failed), True)


@functools.lru_cache(maxsize=256)
def _fits(sizes, capacities, system, n, chips_used, kw_items):
    """Whether the smallest count that places (or ``n``) fits: the same compile and memory plan."""
    kw = dict(kw_items)
    if n is None:
        n = next((c[0] for c in placing_counts(list(sizes[1:]), system.chips, system.chip.tiles,
                                               kw["reserve_tile0"], chips_used)), None)
        if n is None:
            return None
    try:
        program, _ = _compile(sizes, capacities, system, n, kw)
    except ConfigError:
        return None
    return n if program is not None else None


def _largest(lo, hi, ok):
    """The largest v in [lo, hi] with ok(v), assuming ok holds below some bound; None if ok(lo) fails."""
    if not ok(lo):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid - 1)
    return lo


def remedies(sizes, capacities, system, kw, *, pinned=None, chips_pinned=False) -> tuple[list[tuple], list[tuple]]:
    """Every remedy that makes the model fit, each checked by compiling it and planning its memory;
    and what was tried in vain (each as message parts naming its parameters)."""
    T, B = kw["timesteps"], kw["batch_size"]
    items = tuple(sorted((k, v) for k, v in kw.items() if k not in ("timesteps", "batch_size")))

    def fits(sys_=system, n=pinned, T_=T, B_=B, chips_used=None):
        return _fits(sizes, capacities, sys_, n, chips_used, items + (("batch_size", B_), ("timesteps", T_)))

    out, tried = [], []
    if pinned is not None:  # the counts the search would try
        ok = [n for n, _, _ in _take(placing_counts(list(sizes[1:]), system.chips, system.chip.tiles,
                                                    kw["reserve_tile0"]), 64) if fits(n=n)]
        if ok:
            out.append((Param("neurons_per_tile", ok[0]), f" (or {', '.join(map(str, ok[1:4]))})" if ok[1:] else "",
                        " or drop ", Param("neurons_per_tile", action="drop"), " (the search picks)"))
    L = len(sizes) - 1
    for k in range(system.chips + 1, max(L, system.chips) + 1):  # more than one chip per layer never helps
        if fits(dataclasses.replace(system, chips=k), n=None, chips_used=k if chips_pinned else None):
            out.append((Param("chips_used" if chips_pinned else "chips", k),
                        *((" (and ", Param("chips", k), ")") if chips_pinned else ()),
                        *(() if pinned is None else (" without ", Param("neurons_per_tile", action="drop")))))
            break
    else:
        if max(L, system.chips) > system.chips:
            tried.append((f"up to {max(L, system.chips)} chips (one layer per chip)",))
    tiles = system.chip.tiles
    ladder = [int(tiles * f) for f in (1.25, 1.5, 2, 3, 4)]
    with_tiles = lambda t: fits(_with_tiles(system, t), n=pinned)  # noqa: E731
    hit = next((t for t in ladder if with_tiles(t)), None)
    if hit is not None:
        lo = max([tiles] + [t for t in ladder if t < hit])
        while hit - lo > max(8, hit // 100):  # the fewest, to about 1%: each probe compiled
            mid = (lo + hit) // 2
            lo, hit = (lo, mid) if with_tiles(mid) else (mid, hit)
        out.append((Param("tiles", hit), " (tiles per chip)"))
    else:
        tried.append(("up to ", Param("tiles", ladder[-1])))
    b = _largest(1, B - 1, lambda v: fits(B_=v) is not None) if B > 1 else None
    if b:
        out.append((Param("batch_size", b),))
    elif B > 1:
        tried.append((Param("batch_size", 1),))
    t = _largest(1, T - 1, lambda v: fits(T_=v) is not None) if T > 1 else None
    if t:
        out.append((Param("timesteps", t),))
    elif T > 1:
        tried.append((Param("timesteps", 1),))
    return out, tried


def _take(it, n):
    return [x for _, x in zip(range(n), it)]


def _with_tiles(system, tiles):
    return dataclasses.replace(system, chip=system.chip.replace(tiles=tiles))


def with_remedies(e: OutOfTileMemory, sizes, capacities, system, kw, *, pinned, chips_pinned) -> OutOfTileMemory:
    """``e`` with its advice replaced by the remedies the search checked."""
    fixes, in_vain = remedies(sizes, capacities, system, kw, pinned=pinned, chips_pinned=chips_pinned)
    what = e.hint.split(". ", 1)[0]  # "N tile(s) over the limit; largest here: X"
    tried = (f"neurons per tile {pinned} (pinned)" if pinned is not None else
             "every neurons-per-tile count that places, up to one whose neurons alone overfill a tile")
    advice = (f"{what}. Tried {tried} on {system.chips} chip(s).",)
    if fixes:
        advice += (" Each of these fits (checked): ", *join(*fixes, sep="; "), ".")
    if in_vain:
        advice += (" Checked and still over: ", *join(*in_vain, sep="; "), ".")
    if not fixes:
        advice += (" Not checked: a lower ", Param("max_activity", action="lower"), " (smaller lists) or more SRAM per "
                   "tile (", Param("sram_per_tile", key="chip.set.sram_per_tile", shown="N"), ").")
    return OutOfTileMemory(e.tile, e.used, e.limit, e.breakdown, advice,
                           remedies=[p for f in fixes for p in f if isinstance(p, Param) and p.suggests])
