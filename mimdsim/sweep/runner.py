"""Running a sweep: serially, on a pool of local processes, or on a Dask cluster (several points of
one shape per task); no lost work, no point twice.

Each finished point is appended to the results file (JSON lines: parameters, summary,
versions, seed, or the error it raised) as soon as it completes (flushed at once, fsynced at
most once a second and at the end); a re-run skips the points already in the file; a point
that raises is recorded and the sweep goes on. One sweep at a time writes a results file: a
second run of the same sweep waits for the first (a lock beside the file, ``<results>.lock``)
and then computes only what is left, so two runs end with one record per point. A worker that
dies has the points it had not yet returned rescheduled by Dask's scheduler; a chunk whose
records are already written is released at once and never recomputed.
"""
from __future__ import annotations

import contextlib
import functools
import json
import os
import platform
import time
import traceback

try:
    import fcntl
except ImportError:  # not POSIX: no lock (a second concurrent run may duplicate points; load_results keeps one)
    fcntl = None

from .spec import Sweep, point_id, point_values

DISTRIBUTED_HINT = "for parallel sweeps install the extra: pip install \"mimdsim[distributed]\""


def versions() -> dict:
    return dict(_versions())  # a fresh dict per record


@functools.lru_cache(maxsize=1)
def _versions() -> tuple:
    """The versions, read once per process (they cannot change while it runs)."""
    import numba
    import numpy

    from ..version import __version__
    return tuple({"mimdsim": __version__, "numpy": numpy.__version__, "numba": numba.__version__,
                  "python": platform.python_version()}.items())


PLACEMENT_KEYS = ("schedule", "neurons_per_tile", "chips_used", "tiles_used")  # of report.placement, per record


def run_point(values: dict, command: str, params: dict) -> dict:
    """Run one point; return its result record (never raises for a bad point)."""
    from ..workloads.snn.from_settings import build_run

    rec = {"id": point_id(params), "params": params, "seed": values["run.seed"], "versions": versions()}
    t0 = time.perf_counter()
    try:
        net, system, kw = build_run(values)
        if command == "compare":
            from ..compare import compare
            c = compare(net, system, values["gpu.preset"], strategies=values["gpu.strategies"],
                        precision=values["gpu.precision"], systolic=values["gpu.systolic"],
                        host=values.get("gpu.host"), **kw)
            report = c.mimd
            rec["speedup"] = c.speedup
            if c.speedup_band:  # every named assumption of both sides over its range
                rec["speedup_band"] = c.speedup_band
            rec["gpu_samples_per_second"] = {s: r.samples_per_second for s, r in c.gpu.items()}
            if c.energy_ratio:  # samples per joule, MIMD over each column's
                rec["energy_ratio"] = c.energy_ratio
                rec["gpu_samples_per_joule"] = {s: r.energy["samples_per_joule"] for s, r in c.gpu.items() if r.energy}
            if c.refused:
                rec["refused"] = c.refused
        else:
            from ..workloads.snn.simulate import simulate
            report = simulate(net, system, **kw).report
        d = report.to_dict()
        rec.update(status="ok", samples_per_second=d["samples_per_second"], seconds_per_step=d["seconds_per_step"],
                   cycles={k: v for k, v in d["cycles"].items() if k != "by_phase"},
                   **{k: d["memory"][k] for k in ("max_tile_bytes", "tile_bytes_limit", "device_bytes",
                                                   "device_bytes_limit") if k in d["memory"]},  # a Tensix chip: DRAM
                   activity=[ly["activity"] for ly in d["layers"]],
                   dropped_spikes=sum(ly["dropped_spikes"] for ly in d["layers"]))
        # the program and placement that ran: a what-if over activity can move the search's choice
        ran = {k: d["placement"][k] for k in PLACEMENT_KEYS if k in (d.get("placement") or {})}
        if ran:
            rec["placement"] = ran
        if report.uncertainty:  # the band of the named assumptions (docs/cost-model.md)
            u = report.uncertainty
            rec["uncertainty"] = {"seconds_per_step": u["seconds_per_step"], "samples_per_second": u["samples_per_second"],
                                  "drivers": [{k: dr[k] for k in ("name", "seconds_per_step")} for dr in u["drivers"]]}
        if report.energy:  # energy per point (docs/energy.md): the central figures and their bands
            rec.update({k: d[k] for k in ("joules_per_step", "samples_per_joule", "watts")},
                       energy_band=d["energy"]["band"], energy_by_component=d["energy"]["by_component"])
    except Exception as e:  # a failing point is recorded, not fatal
        rec.update(status="error", error=f"{type(e).__name__}: {e}",
                   traceback=traceback.format_exc(limit=3))
    rec["wall_seconds"] = time.perf_counter() - t0
    return rec


def load_results(path, damaged: list | None = None) -> list[dict]:
    """One record per point of a results file, the first written for each id, in file order (a
    file written by an older mimdsim that let two runs append the same point keeps its first
    record). A damaged line (a write cut short, bytes that are no JSON record) is skipped, so its
    point is computed again; ``damaged`` gets its line number, and why, for the report."""
    if not os.path.exists(path):
        return []
    out, seen = [], set()
    with open(path, errors="replace") as f:
        for number, line in enumerate(f, start=1):
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                rec, why = None, "not JSON"
            else:
                why = "" if isinstance(rec, dict) and isinstance(rec.get("id"), str) and \
                    isinstance(rec.get("params"), dict) else "JSON but not a record: no object with an id and params"
            if why:
                if damaged is not None:
                    damaged.append((number, why))
                continue
            if rec["id"] not in seen:
                seen.add(rec["id"])
                out.append(rec)
    return out


@contextlib.contextmanager
def results_lock(path, note=None):
    """Hold ``<path>.lock`` for as long as this process writes ``path``: a second sweep writing
    the same results file waits here (saying so through ``note``) until the first has finished."""
    if fcntl is None:
        yield
        return
    try:
        lock = open(f"{path}.lock", "a+", errors="replace")
    except OSError as e:  # a damaged lock (a folder in its place, no permission) would block every run
        from ..errors import ConfigError
        raise ConfigError(f"the sweep's lock file {path + '.lock'!r} cannot be opened ({e.strerror or e}); it only "
                          f"keeps two sweeps from writing {path!r} at once: when no other sweep runs, remove it and "
                          f"run again") from None
    with lock:
        try:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip()
            holder = holder if holder.startswith("pid ") and holder[4:].isdigit() else "another process"
            if note:
                note(f"another mimdsim sweep ({holder}) is writing {path}: waiting for it to finish, then "
                     f"computing only the points it left")
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        lock.seek(0)
        lock.truncate()
        lock.write(f"pid {os.getpid()}")
        lock.flush()
        try:
            yield
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def results_dataframe(path):
    """The results as a pandas DataFrame (parameters flattened into columns)."""
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("results_dataframe needs pandas: pip install pandas") from None
    rows = []
    for r in load_results(path):
        row = {**r["params"], **{k: v for k, v in r.items() if k not in ("params", "versions", "traceback")}}
        for k, v in (r.get("speedup") or {}).items():
            row[f"speedup.{k}"] = v
        for k, v in (r.get("placement") or {}).items():
            row[f"placement.{k}"] = v
        rows.append(row)
    return pd.DataFrame(rows)


class ResultsWriteError(OSError):
    """The results file refused a record (disk full, a file-size limit): ``record_bytes`` the line's size.
    :func:`run_sweep` turns it into one line with the space needed and the command that resumes."""

    def __init__(self, path, error: OSError, record_bytes: int):
        super().__init__(error.errno, error.strerror or str(error), path)
        self.record_bytes = record_bytes


def _append(path, rec):
    # a line cut off by an interrupted write must not swallow the next record
    torn = False
    size = os.path.getsize(path) if os.path.exists(path) else 0
    if size:
        with open(path, "rb") as f:
            f.seek(-1, os.SEEK_END)
            torn = f.read(1) != b"\n"
    line = ("\n" if torn else "") + json.dumps(rec, default=float) + "\n"
    try:
        with open(path, "a") as f:
            f.write(line)
            f.flush()  # in the OS from here: a worker or sweep process that dies loses nothing
            now = time.monotonic()
            if now - _SYNCED.get(path, -SYNC_SECONDS) >= SYNC_SECONDS:  # on disk at most SYNC_SECONDS later
                os.fsync(f.fileno())
                _SYNCED[path] = now
    except OSError as e:
        with contextlib.suppress(OSError):  # the part of the line that went in: away, so no damaged line stays
            os.truncate(path, size)
        raise ResultsWriteError(path, e, len(line.encode())) from e


SYNC_SECONDS = 1.0  # fsync the results file at most this often (each fsync costs ~5-10 ms) and at the end
_SYNCED: dict = {}


def _sync(path) -> None:
    """Everything appended to ``path`` on disk."""
    if os.path.exists(path):
        with open(path, "a") as f:
            os.fsync(f.fileno())
        _SYNCED[path] = time.monotonic()


def pending(sweep: Sweep) -> list[dict]:
    done = {r["id"] for r in load_results(sweep.results)}
    out, seen = [], set()
    for params in sweep.points:
        pid = point_id(params)
        if pid not in done and pid not in seen:
            seen.add(pid)
            out.append(params)
    return out


def by_shape(points: list[dict]) -> list[dict]:
    """The points with those of one compiled program (differing only in rate settings) together, shapes
    in the order they first appear: a serial run then compiles, places and keeps each shape once."""
    groups: dict = {}
    for p in points:
        groups.setdefault(_shape_key(p), []).append(p)
    return [p for g in groups.values() for p in g]


def _shape_key(params: dict) -> str:
    return json.dumps({k: v for k, v in params.items() if k not in RATE_KEYS}, sort_keys=True, default=float)


@contextlib.contextmanager
def placement_cache(cache: bool | str = True):
    """Searches kept on disk across runs for the duration (``cache``: True, the default folder; a path;
    False, this process only: ``--no-cache``), keyed by their content and the code's version."""
    from ..workloads.snn import placement

    before = placement._DISK["folder"]
    placement.use_disk_cache((placement.default_cache_folder() if cache is True else cache) if cache else None)
    try:
        yield
    finally:
        placement.use_disk_cache(before)


def run_serial(sweep: Sweep, *, limit=None, progress=None, note=None, cache: bool | str = True) -> int:
    """Run the missing points one after another, those of one shape together (:func:`by_shape`);
    returns how many were computed. ``cache``: keep placement searches on disk (:func:`placement_cache`)."""
    with results_lock(sweep.results, note), placement_cache(cache):
        todo = by_shape(pending(sweep))[:limit]  # read under the lock: what another run wrote is not redone
        for i, params in enumerate(todo, start=1):
            _append(sweep.results, run_point(point_values(sweep, params), sweep.command, params))
            if progress:
                progress(i, len(todo))
        _sync(sweep.results)
    return len(todo)


# settings that change no compiled program: points differing only in these share one
RATE_KEYS = frozenset({"run.activity", "run.candidate_activity", "run.input_activity"})
TASKS_PER_WORKER = 4  # enough tasks to balance the workers, few enough to amortise a task's overhead
MOST_POINTS_PER_TASK = 64


def task_chunks(points: list[dict], workers: int, most: int = MOST_POINTS_PER_TASK) -> list[list[dict]]:
    """The points in tasks: points that share a compiled program (they differ only in rate
    settings) go together, so a worker lowers each shape once and reuses it from its cache;
    about ``TASKS_PER_WORKER`` tasks per worker, at most ``most`` points each."""
    groups: dict = {}
    for p in points:
        groups.setdefault(_shape_key(p), []).append(p)
    size = max(1, min(most, -(-len(points) // (TASKS_PER_WORKER * max(int(workers), 1)))))
    return [g[i:i + size] for g in groups.values() for i in range(0, len(g), size)]


def run_points(jobs: list[tuple], cache: bool | str = False) -> list[dict]:
    """One task: ``run_point`` for each ``(values, command, params)`` in turn (``cache``: :func:`placement_cache`)."""
    with placement_cache(cache):
        return [run_point(*job) for job in jobs]


def run_dask(sweep: Sweep, client, *, progress=None, note=None, cache: bool | str = True) -> int:
    """Run the missing points as tasks on a dask.distributed client (several points of one shape
    per task, :func:`task_chunks`); returns how many were computed. Each task's records are
    written as it completes and its future released at once: a worker that dies later holds no
    result the scheduler would recompute."""
    from distributed import as_completed

    with results_lock(sweep.results, note):
        todo = pending(sweep)
        workers = max(len(client.scheduler_info().get("workers", {})), 1)
        running = as_completed([client.submit(run_points, [(point_values(sweep, p), sweep.command, p) for p in chunk],
                                              cache, key=f"points-{point_id(chunk[0])}-{len(chunk)}", pure=False,
                                              retries=2)
                                for chunk in task_chunks(todo, workers)])
        done = 0
        for fut in running:
            records = fut.result()
            fut.release()  # written below: nothing keeps it, so losing its worker recomputes nothing
            del fut
            for rec in records:
                _append(sweep.results, rec)
                done += 1
                if progress:
                    progress(done, len(todo))
        _sync(sweep.results)
    return len(todo)


def _write_errors_resumable(run):
    """A record the results file refuses (disk full, a file-size limit) ends the sweep in one line: the
    file, the space the points left need and the command that resumes (every record written is kept)."""
    @functools.wraps(run)
    def wrapped(sweep: Sweep, **kw):
        try:
            return run(sweep, **kw)
        except ResultsWriteError as e:
            raise _write_refused(sweep, e) from None
    return wrapped


def _write_refused(sweep: Sweep, error: ResultsWriteError):
    from ..errors import ConfigError
    import errno
    left = len(pending(sweep))
    kept = len(load_results(sweep.results))
    need = left * error.record_bytes
    space = f"{need / 1e6:,.1f} MB" if need >= 1e5 else f"{need:,} B"
    fix = ("raise the file-size limit (ulimit -f) or choose a results file on another disk"
           if error.errno == errno.EFBIG else "free that much disk space or choose a results file on another disk")
    return ConfigError(f"the sweep's results file {sweep.results!r} refused a record ({error.strerror}): the {left} "
                       f"point(s) left need about {space} more ({error.record_bytes:,} B a record); the {kept} "
                       f"point(s) written are kept; {fix}, then run `mimdsim sweep {sweep.path}` again to compute "
                       f"the rest")


def run_pool(sweep: Sweep, workers: int, *, progress=None, note=None, cache: bool | str = True) -> int:
    """Run the missing points on a pool of ``workers`` local processes (the standard library's, forked
    where the platform allows: no cluster to start, nothing to install), several points of one shape
    per task (:func:`task_chunks`); each task's records are written by this process as it completes.
    A worker that dies (killed, out of memory) breaks the pool: the points not yet written run on a
    new pool, at most ``POOL_RETRIES`` times. Returns how many were computed."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    with results_lock(sweep.results, note):
        todo = pending(sweep)
        done = 0
        for attempt in range(POOL_RETRIES + 1):
            left = pending(sweep)
            tasks = task_chunks(left, workers)
            try:
                with ProcessPoolExecutor(min(workers, len(tasks)) or 1, mp_context=context) as pool:
                    running = [pool.submit(run_points, [(point_values(sweep, p), sweep.command, p) for p in chunk],
                                           cache) for chunk in tasks]
                    for fut in as_completed(running):
                        for rec in fut.result():
                            _append(sweep.results, rec)
                            done += 1
                            if progress:
                                progress(done, len(todo))
                break
            except BrokenProcessPool:
                if attempt == POOL_RETRIES:
                    raise
                if note:
                    note(f"a sweep worker process died; running the {len(pending(sweep))} point(s) not yet written "
                         f"on new processes")
        _sync(sweep.results)
    return len(todo)


POOL_RETRIES = 2  # new pools after a worker died (as Dask retries a task twice)
# a local run with fewer points than this per worker runs serially: starting the pool and loading each
# worker's compiled kernels (~1 s a process) costs more than a second core saves (docs/performance.md)
SERIAL_BELOW_POINTS_PER_WORKER = 3


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@_write_errors_resumable
def run_sweep(sweep: Sweep, *, scheduler=None, workers=None, serial=False, progress=None, out=print,
              cache: bool | str = True) -> int:
    """Run a sweep: on the Dask scheduler at ``scheduler``; else locally on a pool of ``workers``
    processes (default one per core; a sweep with fewer than ``SERIAL_BELOW_POINTS_PER_WORKER`` points
    per worker, or one worker, runs serially); ``serial`` runs in this process. ``cache``: placement
    searches kept on disk across runs (:func:`placement_cache`; False: ``--no-cache``)."""
    if serial:
        return run_serial(sweep, progress=progress, note=out, cache=cache)
    if scheduler:
        try:
            from distributed import Client
        except ImportError:
            out(f"dask.distributed is not installed: running on local processes ({DISTRIBUTED_HINT})")
        else:
            with Client(scheduler) as client:
                return run_dask(sweep, client, progress=progress, note=out, cache=cache)
    n = workers or cores()
    if n <= 1 or len(pending(sweep)) < SERIAL_BELOW_POINTS_PER_WORKER * n:
        return run_serial(sweep, progress=progress, note=out, cache=cache)
    return run_pool(sweep, n, progress=progress, note=out, cache=cache)
