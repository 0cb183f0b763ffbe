"""The placement search: which neurons per tile (and so how many chips) a spike-list or dense
program runs at, chosen by the cost model that times the run, under the memory plan.

Candidates. Every neurons-per-tile count n >= 1 the program's vertices build: the published
op has a vertex type for every n (``LIF...TwoNeuronSIMD`` for n = 2, ``...MultiNeuronSIMD``
for even n, the scalar ``...MultiNeuron<float>`` / ``...MultiRow<float>`` for odd n, 1
included; docs/as-built/graphcore_snn.md §3 B7/B8, kernels/graphcore_snn/vertices.py); mimdsim's fused
and dense codelets take any n. The study's own Python mapper searched even counts only
(``min_neurons_per_tile`` = 2 with ``transpose_weights``, §5): a mapper rule, not a vertex
limit, so odd counts are candidates too. Layers are placed as :func:`..mapping.map_network`
places them (whole layers per chip, filled in order), so n fixes the chips a placement uses:
searching n over the chips given searches the chips used, 1..given, too.

Order and pruning. Per chip count, n rises from the smallest count that places. The scan ends at the first count
whose neurons alone overfill a tile (:func:`memory_floor`: weights, gradients, Adam moments and
membrane history per neuron, true of every program and non-decreasing in n), or after two counts
in a row that are slower than the best so far or do not fit (a count that does not fit is not the
end by itself: the published op's one-copy weight gradient can halve a tile's bytes at a larger
count), or at ``MAX_SCORED`` scored counts. Step time is per-tile compute (growing with n) plus
reductions and exchange (shrinking with n); odd counts run scalar paths, so the curve is not
unimodal and two in a row are asked for. Over 40 grids (docs/user-guide.md) the rule never missed
the fastest count.

Score. Each fitting candidate runs rate-driven (:class:`.sources.RateSource`) at the rates the
run will draw from (:class:`Rates`: its activity, gradient-candidate and input rates, seed and
overflow policy); an execution-driven run, whose rates come from its dynamics, is scored at half
each list's capacity. Its loops run their first D + ``STEADY`` iterations and charge the rest
the steady mean (:func:`score`: exact where T <= D + ``STEADY``, then it is the run itself); the
loops' part does not depend on T and is kept across timestep counts of one shape. A search's
result is kept per problem, chips pinned, assumptions pinned and rates (:func:`search`), in this
process and, where :func:`use_disk_cache` names a folder (a sweep does), on disk keyed by that
content and the code's version.

More chips are never slower. The counts are scanned per chip count k (those placing on exactly
k chips, with the order and pruning below), and a search on N chips scores the union of the
scans for k = 1..N. Each scan and each score depends on the layout alone (the compiled program
keeps only the chips it uses), so the candidates of N chips include those of fewer chips, and
their fastest is at least as fast.

Structure. A :class:`Problem` is what is placed (the shape, the system, the compile settings). Its
:class:`Candidates` compile each count and plan its memory once (:class:`Candidate`; whether a
count fits is kept across searches, its program while the search lives). :func:`search` walks the
counts, scores each that fits and picks the fastest. When none fits, :func:`remedies` walks relaxed
problems (more chips, more tiles per chip, a smaller batch, fewer timesteps) through the same
candidates: each remedy is the least relaxation along one axis under which the placement fits.
"""
from __future__ import annotations

import collections
import dataclasses
import hashlib
import json
import os
from dataclasses import dataclass

import numpy as np

from ...compiler.memory import check_fits
from ...engine import loop_cycles, run_program
from ...errors import ConfigError, OutOfTileMemory, Param, join
from ...kernels.assumed import NOTHING, Pinned
from ...program import Loop, Program
from .mapping import _place, weight_bytes_lower_bound
from .programs.compile import compile_program
from .sources import RateSource
from .step import PRECISIONS

MAX_SCORED = 8  # candidates run per shape at most (the default model runs 3)
STEADY = 12  # steady iterations a candidate's loops are scored on (score)
SLOWER_IN_A_ROW = 2  # one even and one odd count slower than the best end the scan
PINNED_COUNTS_CHECKED = 64  # the counts a pinned count's remedy checks, smallest first
TILE_LADDER = (1.25, 1.5, 2, 3, 4)  # tiles per chip the tiles remedy tries, as multiples of the chip's


# ------------------------------------------------------------------ the problem and its candidates

@dataclass(frozen=True)
class Problem:
    """What a placement is searched for: the network's shape (input first), the system, and
    :func:`.programs.compile.compile_program`'s other keywords as sorted ``(name, value)`` pairs.
    Hashable: the key of the caches below."""
    sizes: tuple
    capacities: tuple
    system: object
    settings: tuple

    @classmethod
    def of(cls, sizes, capacities, system, kw: dict) -> Problem:
        return cls(tuple(sizes), tuple(capacities), system, tuple(sorted(kw.items())))

    @property
    def kw(self) -> dict:
        return dict(self.settings)

    @property
    def shape(self) -> Problem:
        """This problem without its timestep count (what a score's loop part is kept by)."""
        return dataclasses.replace(self, settings=tuple(kv for kv in self.settings if kv[0] != "timesteps"))

    def relaxed(self, *, chips=None, tiles=None, **settings) -> Problem:
        """This problem on ``chips`` chips or ``tiles`` tiles per chip, or with other ``settings``
        (``batch_size``, ``timesteps``): the spaces the remedies search."""
        system = self.system
        if chips is not None:
            system = dataclasses.replace(system, chips=chips)
        if tiles is not None:
            system = dataclasses.replace(system, chip=system.chip.replace(tiles=tiles))
        return Problem(self.sizes, self.capacities, system, tuple(sorted({**self.kw, **settings}.items())))

    def counts(self, chips_used=None):
        """The neurons-per-tile counts that place, ascending: (n, chips used, tiles) (:func:`placing_counts`)."""
        return placing_counts(list(self.sizes[1:]), self.system.chips, self.system.chip.tiles,
                              self.kw["reserve_tile0"], chips_used)

    def fewest_per_chips(self, chips_used=None):
        """The fewest neurons per tile on each chip count (:func:`fewest_per_chips`)."""
        return fewest_per_chips(list(self.sizes[1:]), self.system.chips, self.system.chip.tiles,
                                self.kw["reserve_tile0"], chips_used)

    def floor(self, n: int) -> int:
        """:func:`memory_floor` of ``n`` neurons per tile under these settings."""
        kw = self.kw
        return memory_floor(self.sizes, n, timesteps=kw["timesteps"], batch_size=kw["batch_size"],
                            training=kw.get("training", True), optimizer=kw.get("optimizer", "adam"),
                            precision=kw.get("precision") or "fp32")

    def compile(self, neurons_per_tile=None) -> Program:
        return compile_program(self.sizes, self.capacities, self.system, neurons_per_tile=neurons_per_tile,
                               **self.kw)


@dataclass(frozen=True)
class Candidate:
    """One neurons-per-tile count compiled and its memory planned: where it places, and its program
    where it fits, else why it does not."""
    neurons_per_tile: int
    chips: int
    tiles: int
    program: Program | None  # None: does not fit
    oom: OutOfTileMemory | None

    @property
    def fits(self) -> bool:
        return self.program is not None


_FITS: dict = {}  # (problem, count) -> whether it fits: kept across searches (remedies probe many)


def _remember(key, fits: bool) -> None:
    if len(_FITS) > 1024:
        _FITS.clear()
    _FITS[key] = fits


class Candidates:
    """A problem's placements by neurons per tile, each compiled and fit-checked once."""

    def __init__(self, problem: Problem):
        self.problem = problem
        self._seen: dict[int, Candidate] = {}

    def __contains__(self, n: int) -> bool:
        return n in self._seen

    def get(self, n: int) -> Candidate:
        """Count ``n`` compiled and its memory planned (a :class:`ConfigError` of the compiler propagates)."""
        hit = self._seen.get(n)
        if hit is None:
            program = self.problem.compile(n)
            try:
                check_fits(program)
                oom = None
            except OutOfTileMemory as e:
                oom = e
            lay = program.mapping
            hit = self._seen[n] = Candidate(n, lay.chips_used, lay.tiles_used, None if oom else program, oom)
            _remember((self.problem, n), oom is None)
        return hit


def fits(problem: Problem, n=None, chips_used=None) -> bool:
    """Whether count ``n`` of ``problem`` fits; ``n=None``: the smallest count that places (on
    ``chips_used`` chips where given). A count the compiler refuses does not fit. Kept by count."""
    if n is None:
        n = next((c[0] for c in problem.counts(chips_used)), None)
        if n is None:
            return False
    key = (problem, n)
    if key not in _FITS:
        try:
            Candidates(problem).get(n)  # remembers; the program is not kept
        except ConfigError:
            _remember(key, False)
    return _FITS[key]


# ------------------------------------------------------------------ the search

@dataclass(frozen=True)
class Verdict:
    """A candidate as the search left it, for the report: its time and why it was or was not chosen."""
    neurons_per_tile: int
    chips: int
    tiles: int
    seconds: float | None  # scored step time; None: not scored (does not fit)
    why: str  # "chosen", "slower by x%", "does not fit: ...", "pinned"

    def describe(self) -> dict:
        return {"neurons_per_tile": self.neurons_per_tile, "chips": self.chips, "tiles": self.tiles,
                "seconds_per_step": self.seconds, "result": self.why}


@dataclass(frozen=True)
class Choice:
    program: Program
    candidates: tuple  # Verdicts: the chosen first, then the runners-up by time, then those that do not fit
    searched: bool  # False: the placement was pinned (neurons_per_tile)


def half_capacity(sizes, capacities) -> list[float]:
    """Per layer (input first) the activity a search scores at without a run's rates: half the list's capacity."""
    return [min(1.0, k / (2 * n)) for n, k in zip(sizes, capacities)]


@dataclass(frozen=True)
class Rates:
    """What a rate-driven run draws its spikes from: per layer (input first) the firing rate and the
    gradient-candidate rate (0 for the input), the seed and the overflow policy (input, hidden) of
    :class:`.sources.RateSource`. Hashable: part of the search's cache key."""
    activity: tuple
    candidate: tuple
    seed: int = 0
    random_policy: tuple = (False, False)

    @classmethod
    def half_capacity(cls, sizes, capacities) -> Rates:
        """Half each list's capacity, seed 0: what an execution-driven run's placement is scored at."""
        act = tuple(half_capacity(sizes, capacities))
        return cls(act, (0.0,) + act[1:])

    def source(self, program: Program, sizes, capacities) -> RateSource:
        return RateSource(program, sizes, capacities, list(self.activity), list(self.candidate), seed=self.seed,
                          random_policy=self.random_policy)


def score(program: Program, steady: int | None = STEADY, key=None, pinned: Pinned = NOTHING,
          rates: Rates | None = None) -> float:
    """Seconds per step of ``program`` rate-driven at ``rates`` (default: half each list's capacity, seed 0).

    ``steady=None`` runs every iteration. Otherwise each loop is estimated from its first
    ``D + steady`` iterations, ``D = (L - 1) * delay`` (layer l is silent for t < (l - 1) * delay,
    :class:`.sources.RateSource`): those run as they would, and each iteration not run is charged
    the mean of the ``steady`` ones. Every iteration from D on runs the same supersteps on draws
    of the same distribution, so the estimate has the full run's expected value (see
    docs/user-guide.md, "Placement search"). The steps outside the loops run at the program's T
    on lists whose rows past ``D + steady`` repeat the steady rows drawn.

    The loops' part depends on the loop bodies, not on T: it is kept per ``key`` (the search's
    shape without T), so another T of one shape runs only the steps outside the loops. ``pinned``:
    the codelet and host assumptions the run pins, under which each candidate is timed. Where
    T <= D + ``steady`` every iteration runs: the score is the run's own time at ``rates``."""
    plan = program.plan
    T = program.timesteps
    transient = (len(plan.sizes) - 2) * plan.delay
    short = T if steady is None else min(T, transient + steady)
    rates = rates or Rates.half_capacity(plan.sizes, plan.capacities)

    def source(prog):
        return rates.source(prog, plan.sizes, plan.capacities)

    if short >= T:
        return run_program(program, source(program), pinned=pinned).seconds_per_step
    loops = [s for s in program.schedule if isinstance(s, Loop)]
    # the bodies are lowered from the shape, not from T (T sizes the histories, the io and the loss
    # outside the loops; tests/test_placement.py compares the bodies at two T for every program); the
    # published op's weight-gradient scheme, chosen by the memory plan, is the one choice T moves
    cache_key = None if key is None else (key, short, plan.weight_grad_copies, pinned, rates)
    hit = _LOOPS.get(cache_key) if cache_key is not None else None
    if hit is not None:
        _LOOPS.move_to_end(cache_key)  # least recently used first out
    else:
        looped = _part(program, [dataclasses.replace(s, count=short) for s in loops], short)
        src = source(looped)
        records = loop_cycles(looped, src, pinned=pinned)  # the loops' cycles only: no report charged
        if records is None:  # works asked iteration by iteration: the run records them
            src, records = source(looped), []
            run_program(looped, src, loop_cycles=records, pinned=pinned)
        hit = ([(float(c.sum()), float(c[t >= transient].mean()), t.size) for t, c in records], src.stats)
        if cache_key is not None:
            while len(_LOOPS) >= LOOPS_KEPT:
                _LOOPS.popitem(last=False)
            _LOOPS[cache_key] = hit
    parts, stats = hit
    rest = _part(program, [s for s in program.schedule if not isinstance(s, Loop)], T)
    src = source(rest)
    rows = np.arange(T)
    rows = np.where(rows < short, rows, transient + (rows - transient) % (short - transient))  # steady rows repeat
    for name in ("spikes", "kept", "listed", "dropped_spikes", "dropped_candidates"):
        setattr(src.stats, name, [a[rows] for a in getattr(stats, name)])
    report = run_program(rest, src, pinned=pinned)
    cycles = report.total_cycles + sum(total + (T - n) * mean for total, mean, n in parts)
    return cycles / report.clock_hz


# the loops' part of a score, by shape without T and the bodies' content; the least recently used goes first past
# LOOPS_KEPT (each holds its list statistics, ~0.2 MB at B = 64): a sweep's other T of a shape, a few shapes on, hits
_LOOPS: collections.OrderedDict = collections.OrderedDict()
LOOPS_KEPT = 512


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


def counts_on_chips(sizes, chips: int, tiles_per_chip, reserve_tile0) -> tuple[int, int] | None:
    """The neurons-per-tile counts ``(lowest, highest)`` that place the layers on exactly ``chips``
    chips, or None. The chips the in-order fill uses never grow with the count (fewer tiles per
    layer), so each bound is a bisection over 1..max(sizes): what a pin that no placement meets
    is told would fit, found without trying every count."""
    def used(n):  # chips used at n neurons per tile; more than ``chips`` where it does not place
        placed, _ = _place(sizes, n, chips, tiles_per_chip, reserve_tile0)
        return chips + 1 if placed is None else placed[-1].chip + 1

    def first(ok, lo, hi):  # the least n in [lo, hi] with ok(n) (ok monotone), or hi + 1
        while lo <= hi:
            mid = (lo + hi) // 2
            if ok(mid):
                hi = mid - 1
            else:
                lo = mid + 1
        return lo

    top = max(sizes)
    lowest = first(lambda n: used(n) <= chips, 1, top)
    if lowest > top or used(lowest) != chips:
        return None
    return lowest, first(lambda n: used(n) < chips, lowest, top) - 1


def placements_text(sizes, chips: int, tiles_per_chip, reserve_tile0) -> str:
    """Which neurons-per-tile counts place the layers on each chip count up to ``chips``, in words."""
    spans = [(k, counts_on_chips(sizes, k, tiles_per_chip, reserve_tile0))
             for k in range(1, min(chips, len(sizes)) + 1)]
    said = [f"{k} chip(s) at {lo}{'' if lo == hi else f'-{hi}'} neurons per tile" for k, (lo, hi) in
            ((k, span) for k, span in spans if span is not None)]
    return ", ".join(said) if said else f"no count places them on {chips} chip(s) of {tiles_per_chip} tiles"


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


def search(sizes, capacities, system, *, neurons_per_tile=None, chips_used=None, reserve_tile0=True,
           pinned: Pinned = NOTHING, rates: Rates | None = None, **kw) -> Choice:
    """The fastest placement that fits (see the module docstring), its candidates scored at ``rates``
    (None: half each list's capacity); ``neurons_per_tile`` and ``chips_used`` pin either. Raises
    :class:`OutOfTileMemory` with checked remedies when none fits."""
    if chips_used is not None:
        if chips_used > system.chips:
            raise ConfigError(Param("chips_used", chips_used), f" is more than the {system.chips} chip(s) given: raise ",
                              Param("chips", action="raise"), f" to at least {chips_used} or lower ",
                              Param("chips_used", action="lower"), param=Param("chips_used", chips_used),
                              limit=system.chips)
        system = dataclasses.replace(system, chips=chips_used)
    space = _space(Problem.of(sizes, capacities, system, dict(kw, reserve_tile0=reserve_tile0)))
    if neurons_per_tile is not None:  # pinned: today's placement, no scoring
        return _pinned(space, neurons_per_tile, chips_used)
    if kw.get("schedule") == "poptorch":  # poplin's planner maps every matmul over the chip: no neuron placement
        program = space.problem.compile()
        check_fits(program)
        return Choice(program, (), False)
    rates = rates or Rates.half_capacity(sizes, capacities)
    key = (space.problem, chips_used, pinned, rates)
    verdicts = _recall(key)
    if verdicts is not None:  # searched before (this process or, on disk, an earlier run of this code)
        return Choice(space.get(verdicts[0].neurons_per_tile).program, verdicts, True)
    seconds, failed = _scored(space, chips_used, pinned, rates)
    if not seconds:
        if not failed:  # nothing places: the mapper's own error names the layer and the fix
            space.problem.compile()
            problem = space.problem
            raise ConfigError(Param("chips_used", chips_used), ": no neurons-per-tile count places the layers on "
                              f"exactly {chips_used} chip(s) (whole layers per chip, filled in order); what places: "
                              + placements_text(list(problem.sizes[1:]), chips_used, problem.system.chip.tiles,
                                                problem.kw["reserve_tile0"]) + "; give one of those ",
                              Param("chips_used", action="change"), " or drop it", param=Param("chips_used", chips_used))
        raise with_remedies(failed[0].oom, space, pinned=None, chips_pinned=chips_used is not None) from None
    choice = _ranked(space, seconds, failed)
    _keep(key, choice.candidates)
    return choice


# ------------------------------------------------------------------ what searches keep

_SPACES: dict = {}  # Problem -> its Candidates (compiled counts), the latest few: a sweep's activities share them
SPACES_KEPT = 2
_CHOSEN: dict = {}  # (problem, chips pinned, assumptions pinned, rates) -> the search's verdicts
CHOSEN_KEPT = 4096  # verdicts are a few numbers each: ~1 MB at most
_DISK = {"folder": None, "writes": 0}  # where searches are kept across runs (use_disk_cache); None: this process only
DISK_FILES_KEPT = 20_000  # searches kept on disk, ~2 KB each (~40 MB); the least recently used go first
PRUNE_EVERY = 1_000  # a process's writes between two checks of the folder's size


def _space(problem: Problem) -> Candidates:
    """The problem's candidates, kept for the next search of the same problem (another activity)."""
    hit = _SPACES.pop(problem, None) or Candidates(problem)
    _SPACES[problem] = hit  # most recent last
    while len(_SPACES) > SPACES_KEPT:
        del _SPACES[next(iter(_SPACES))]
    return hit


def forget() -> None:
    """Drop the searches and compiled candidates this process keeps, as a new process starts without them
    (the searches kept on disk stay)."""
    _SPACES.clear()
    _CHOSEN.clear()


def use_disk_cache(folder) -> None:
    """Keep searches in ``folder`` across runs (None: in this process only). Each is a small JSON file
    named by the digest of its key and the code's version (:func:`code_version`); a folder that cannot
    be written keeps nothing and costs nothing. The folder is held to :data:`DISK_FILES_KEPT` searches
    (:func:`prune_disk_cache`, checked at a process's first write and every :data:`PRUNE_EVERY` after)."""
    _DISK["folder"] = None if folder is None else os.fspath(folder)


def default_cache_folder() -> str:
    """``$MIMDSIM_CACHE_DIR``, else ``$XDG_CACHE_HOME/mimdsim``, else ``~/.cache/mimdsim``; searches in
    ``placements/`` under it."""
    root = os.environ.get("MIMDSIM_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "mimdsim")
    return os.path.join(root, "placements")


_VERSION: list = []


def code_version() -> str:
    """A digest of every Python file of the simulator (``mimdsim`` and ``kernels``): any change to the
    code that could move a score gives other cache keys."""
    if not _VERSION:
        from ...kernels import assumed
        package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # mimdsim/
        h = hashlib.sha1()
        for root in (package, os.path.dirname(os.path.abspath(assumed.__file__))):
            for folder, dirs, files in sorted(os.walk(root)):
                dirs.sort()
                for name in sorted(f for f in files if f.endswith(".py")):
                    path = os.path.join(folder, name)
                    h.update(os.path.relpath(path, root).encode())
                    with open(path, "rb") as f:
                        h.update(f.read())
        _VERSION.append(h.hexdigest())
    return _VERSION[0]


def _disk_path(key) -> tuple[str, str]:
    text = repr((code_version(), key))
    return os.path.join(_DISK["folder"], hashlib.sha1(text.encode()).hexdigest() + ".json"), text


def _recall(key) -> tuple | None:
    hit = _CHOSEN.get(key)
    if hit is not None or _DISK["folder"] is None:
        return hit
    path, text = _disk_path(key)
    try:
        with open(path) as f:
            data = json.load(f)
        if data["key"] != text:  # another key with the same digest: not this search
            return None
        hit = tuple(Verdict(*v) for v in data["verdicts"])
    except (OSError, ValueError, KeyError, TypeError):  # absent, unreadable or damaged: search again
        return None
    _CHOSEN[key] = hit
    try:
        os.utime(path)  # used now: the pruning keeps the searches a user's sweeps still read
    except OSError:
        pass
    return hit


def _keep(key, verdicts: tuple) -> None:
    if len(_CHOSEN) >= CHOSEN_KEPT:
        _CHOSEN.clear()
    _CHOSEN[key] = verdicts
    if _DISK["folder"] is None:
        return
    path, text = _disk_path(key)
    try:
        os.makedirs(_DISK["folder"], exist_ok=True)
        temporary = f"{path}.{os.getpid()}.tmp"
        with open(temporary, "w") as f:
            json.dump({"key": text, "verdicts": [dataclasses.astuple(v) for v in verdicts]}, f)
        os.replace(temporary, path)  # whole or absent: a reader never sees half a file
    except OSError:  # a cache that cannot be written keeps nothing; the search's result stands
        return
    if _DISK["writes"] % PRUNE_EVERY == 0:  # the first write of a process, then every PRUNE_EVERY
        prune_disk_cache(_DISK["folder"])
    _DISK["writes"] += 1


def prune_disk_cache(folder, kept: int | None = None) -> int:
    """Keep at most ``kept`` (default :data:`DISK_FILES_KEPT`) searches in ``folder`` (only the files
    :func:`_keep` names: a 40-digit hex digest and ``.json``): above that, the least recently used
    (written or read) are removed until four fifths of ``kept`` are left, so a folder
    does not grow with every sweep, nor with the searches of code versions no key names any more (the
    code's version is part of every key). Returns how many were removed; a file another process removed
    first, or one that cannot be removed, is skipped."""
    kept = DISK_FILES_KEPT if kept is None else kept
    try:
        with os.scandir(folder) as entries:
            files = [e for e in entries if _is_search_file(e.name) and e.is_file()]
    except OSError:
        return 0
    if len(files) <= kept:
        return 0
    by_use = sorted(files, key=_mtime)
    removed = 0
    for e in by_use[: len(files) - (4 * kept) // 5]:
        try:
            os.remove(e.path)
            removed += 1
        except OSError:
            pass
    return removed


def _is_search_file(name: str) -> bool:
    """A search's file as :func:`_keep` names it (a SHA-1 in hex, ``.json``): a folder given by path may
    hold a user's own files, which the pruning never touches."""
    stem, dot, ext = name.partition(".")
    return ext == "json" and len(stem) == 40 and all(c in "0123456789abcdef" for c in stem)


def _mtime(entry) -> float:
    try:
        return entry.stat().st_mtime
    except OSError:  # removed meanwhile: first in line, its removal then skipped
        return 0.0


def _pinned(space: Candidates, n: int, chips_used) -> Choice:
    problem = space.problem
    sizes, chips, tiles = list(problem.sizes[1:]), problem.system.chips, problem.system.chip.tiles
    placed, failure = _place(sizes, n, chips, tiles, problem.kw["reserve_tile0"])
    if placed is None:  # the pin places no layout: say why, and which counts do
        layer, neurons, need = failure
        reserve = problem.kw["reserve_tile0"]
        spans = [span for k in range(1, min(chips, len(sizes)) + 1)
                 if (span := counts_on_chips(sizes, k, tiles, reserve)) is not None]
        lowest = min((lo for lo, _ in spans), default=None)
        fix = ("raise ", Param("neurons_per_tile", action="raise"), f" to at least {lowest}") \
            if lowest is not None and n < lowest else ("change ", Param("neurons_per_tile", action="change"))
        more = Param("chips_used", action="raise") if chips_used is not None else Param("chips", action="raise")
        raise ConfigError(Param("neurons_per_tile", n), f": layer {layer} ({neurons} neurons) needs {need} tiles, "
                          f"and the layers do not fit on {chips} chip(s) of {tiles} tiles (whole layers per chip, "
                          f"filled in order{', tile 0 kept free' if reserve else ''}); what places: "
                          + placements_text(sizes, chips, tiles, reserve) + "; ", *fix,
                          *(() if need > tiles - reserve else (", or raise ", more)),
                          param=Param("neurons_per_tile", n), limit=lowest)
    c = space.get(n)
    if chips_used is not None and c.chips != chips_used:
        span = counts_on_chips(list(problem.sizes[1:]), chips_used, problem.system.chip.tiles,
                               problem.kw["reserve_tile0"])
        fits = (f"on {chips_used} chip(s) the layers take {span[0]}{'' if span[0] == span[1] else f'-{span[1]}'} "
                f"neurons per tile" if span else f"none places them on {chips_used} chip(s); what places: "
                + placements_text(list(problem.sizes[1:]), chips_used, problem.system.chip.tiles,
                                  problem.kw["reserve_tile0"]))
        raise ConfigError(Param("neurons_per_tile", n), f" places the layers on {c.chips} chip(s), not ",
                          Param("chips_used", chips_used), f" (whole layers per chip, filled in order); {fits}: "
                          "change one of them or drop one", param=Param("neurons_per_tile", n))
    if not c.fits:
        raise with_remedies(c.oom, space, pinned=n, chips_pinned=chips_used is not None) from None
    return Choice(c.program, (Verdict(n, c.chips, c.tiles, None, "pinned"),), False)


def _scored(space: Candidates, chips_used, pinned: Pinned = NOTHING, rates: Rates | None = None) -> tuple[dict, list]:
    """The scoring loop: for each chip count k (``chips_used`` only, where pinned), the counts that place
    on exactly k chips, ascending, each that fits timed (:func:`score`), until that scan's end (module
    docstring). Each scan depends on k and the layouts alone, never on the chips given, so more chips
    given score a superset and are never slower. Returns ``{n: seconds}`` and the candidates that do
    not fit, by count."""
    problem = space.problem
    sram = problem.system.chip.sram_per_tile
    seconds, failed = {}, []

    def visit(n) -> bool:
        c = space.get(n)
        if c.fits:
            if n not in seconds:
                seconds[n] = score(c.program, key=(problem.shape, n), pinned=pinned, rates=rates)
        elif c not in failed:
            failed.append(c)
        return c.fits

    layers = len(problem.sizes) - 1
    for k in [chips_used] if chips_used is not None else range(1, min(problem.system.chips, layers) + 1):
        best, slower, scored, tried = None, 0, 0, False
        for n, _, _ in problem.counts(k):
            if problem.floor(n) > sram and (tried or seconds or failed):  # the first is compiled: its plan names the tile
                break  # this count's and every larger count's neurons alone overfill a tile
            tried = True
            if not visit(n):  # a larger count may still fit (the published op's one-copy weight
                slower += best is not None  # gradient halves a tile's bytes): not better, the scan goes on
            else:
                scored += 1
                slower = slower + 1 if best is not None and seconds[n] >= best else 0
                best = seconds[n] if best is None else min(best, seconds[n])
            if slower >= SLOWER_IN_A_ROW or scored >= MAX_SCORED:
                break
    return seconds, sorted(failed, key=lambda c: c.neurons_per_tile)


def _ranked(space: Candidates, seconds: dict, failed: list) -> Choice:
    """The fastest candidate chosen (ties: the fewer neurons per tile), the others after it."""
    def verdict(n, why):
        c = space.get(n)
        return Verdict(n, c.chips, c.tiles, seconds[n], why)

    ranked = sorted(seconds, key=lambda n: (seconds[n], n))
    best = seconds[ranked[0]]
    out = [verdict(ranked[0], "chosen")]
    out += [verdict(n, f"slower by {100 * (seconds[n] / best - 1):.1f}%") for n in ranked[1:]]
    out += [Verdict(c.neurons_per_tile, c.chips, c.tiles, None, _oom_why(c.oom)) for c in failed]
    return Choice(space.get(ranked[0]).program, tuple(out), True)


def _oom_why(e: OutOfTileMemory) -> str:
    return f"does not fit: tile {e.tile} needs {e.used:,} B of {e.limit:,} B"


# ------------------------------------------------------------------ the remedies: the search, relaxed

def remedies(space: Candidates, *, pinned=None, chips_pinned=False) -> tuple[list[tuple], list[tuple]]:
    """Every remedy that makes the model fit, each checked by compiling it and planning its memory
    (:func:`fits`: the same candidates as the search, on a relaxed problem); and what was tried in vain
    (each as message parts naming its parameters).

    Each axis is walked to its least relaxation that fits: another count (pinned only), more chips
    (one at a time, up to one layer per chip), more tiles per chip (a ladder, then bisected to
    about 1 %), a smaller batch and fewer timesteps (the largest that fits, bisected)."""
    problem = space.problem
    system, kw = problem.system, problem.kw
    T, B, L = kw["timesteps"], kw["batch_size"], len(problem.sizes) - 1
    out, tried = [], []
    if pinned is not None:  # the counts the search would try
        ok = [n for n, _, _ in _take(problem.counts(), PINNED_COUNTS_CHECKED) if fits(problem, n)]
        if ok:
            out.append((Param("neurons_per_tile", ok[0]), f" (or {', '.join(map(str, ok[1:4]))})" if ok[1:] else "",
                        " or drop ", Param("neurons_per_tile", action="drop"), " (the search picks)"))
    top = max(L, system.chips)  # more than one chip per layer never helps
    k = _first(range(system.chips + 1, top + 1),
               lambda k: fits(problem.relaxed(chips=k), chips_used=k if chips_pinned else None))
    if k is not None:
        out.append((Param("chips_used" if chips_pinned else "chips", k),
                    *((" (and ", Param("chips", k), ")") if chips_pinned else ()),
                    *(() if pinned is None else (" without ", Param("neurons_per_tile", action="drop")))))
    elif top > system.chips:
        tried.append((f"up to {top} chips (one layer per chip)",))
    ladder = [int(system.chip.tiles * f) for f in TILE_LADDER]
    t = _fewest(system.chip.tiles, ladder, lambda t: fits(problem.relaxed(tiles=t), pinned))
    if t is not None:
        out.append((Param("tiles", t), " (tiles per chip)"))
    else:
        tried.append(("up to ", Param("tiles", ladder[-1])))
    for name, now in (("batch_size", B), ("timesteps", T)):
        v = _largest(1, now - 1, lambda v: fits(problem.relaxed(**{name: v}), pinned)) if now > 1 else None
        if v:
            out.append((Param(name, v),))
        elif now > 1:
            tried.append((Param(name, 1),))
    return out, tried


def _first(values, ok):
    """The first of ``values`` with ok(v); None if none."""
    return next((v for v in values if ok(v)), None)


def _fewest(start, ladder, ok):
    """The fewest v above ``start`` with ok(v), to about 1 %: the first rung of ``ladder`` that holds,
    bisected down to within max(8, 1 %) of the rung below it (each probe compiled); None if no rung holds."""
    hit = _first(ladder, ok)
    if hit is None:
        return None
    lo = max([start] + [t for t in ladder if t < hit])
    while hit - lo > max(8, hit // 100):
        mid = (lo + hit) // 2
        lo, hit = (lo, mid) if ok(mid) else (mid, hit)
    return hit


def _largest(lo, hi, ok):
    """The largest v in [lo, hi] with ok(v), assuming ok holds below some bound; None if ok(lo) fails."""
    if not ok(lo):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid - 1)
    return lo


def _take(it, n):
    return [x for _, x in zip(range(n), it)]


def with_remedies(e: OutOfTileMemory, space: Candidates, *, pinned, chips_pinned) -> OutOfTileMemory:
    """``e`` with its advice replaced by the remedies the search checked."""
    fixes, in_vain = remedies(space, pinned=pinned, chips_pinned=chips_pinned)
    what = e.hint.split(". ", 1)[0]  # "N tile(s) over the limit; largest here: X"
    tried = (f"neurons per tile {pinned} (pinned)" if pinned is not None else
             "every neurons-per-tile count that places, up to one whose neurons alone overfill a tile")
    advice = (f"{what}. Tried {tried} on {space.problem.system.chips} chip(s).",)
    if fixes:
        advice += (" Each of these fits (checked): ", *join(*fixes, sep="; "), ".")
    if in_vain:
        advice += (" Checked and still over: ", *join(*in_vain, sep="; "), ".")
    if not fixes:
        advice += (" Not checked: a lower ", Param("max_activity", action="lower"), " (smaller lists) or more SRAM per "
                   "tile (", Param("sram_per_tile", key="chip.set.sram_per_tile", shown="N"), ").")
    return OutOfTileMemory(e.tile, e.used, e.limit, e.breakdown, advice,
                           remedies=[p for f in fixes for p in f if isinstance(p, Param) and p.suggests])
