"""Kalman-filter track fitting compiled onto a MIMD chip (``reference/algorithms.md`` §4).

Tracks are dealt to tiles in contiguous blocks of ``tracks_per_tile``. Three programs
(``schedule``):

* ``published`` (default) TRACKR's program as built (``kernels/trackr/kalman_filter.py``; KalmanFilterIPU.cpp
  @cf6ca48): six ``KalmanFilter`` vertices per tile, one per worker, worker 0 taking the
  remainder; the timed program runs the on-tile Copy programs of the hits and constants
  (L345-350) and then the compute set (L392); the launch is TRACKR's per-run fixed time in
  chip cycles (``TRACKR_LAUNCH_CYCLES``), so it scales with the clock;
* ``fused`` the register-resident filter (``kalman_fit``, ``kernels/mimdsim_kalman/track_fit.py``): what a tuned
  codelet could reach, tracks in balanced blocks per worker;
* ``per-op`` one superstep per matrix operation of the register-resident filter.

One run::

    launch                     once per run (host kind)
    repeat batches:
      io.hits    (stream=True)  host -> every tile: its tracks' hits, N x 2 floats per track
      copies     (published)    popops.copy: TRACKR's Copy programs, constants -> variables
      fit                       the fit on every tile (one superstep; per-op: one per operation)
      io.states  (stream=True)  every tile -> host: smoothed states N x 4 floats per track, and
                                the fitted covariances (per track, or once per tile when shared)

``stream=False`` keeps hits and results in tile memory (loaded with the program, read after
it), as in the TRACKR benchmark that ``docs/validation.md`` compares with. Tracks/s is
``report.samples_per_second`` (``batch_size`` = tracks per run, ``timesteps`` = planes).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ...kernels.mimdsim_kalman import track_fit as kk
from ...kernels.trackr import kalman_filter as tk
from ...kernels.tile import Tile

from ...kernels.popops.vertices import copy_cycles
from ...kernels.tile import VERTEX_RUN_INSTRUCTIONS

from ...arch import as_system, chip as chip_preset
from ...compiler.transfers import host_stream
from ...engine import run_program
from ...errors import ConfigError, OutOfTileMemory, Param
from ...program import Launch, Loop, Program, ProgramMeta, Superstep, TensorAlloc, VertexSet
from ...report import Report
from ...report.bottleneck import bottleneck_notes
from ...checks import check_choice, check_int, check_number, check_positive_array

SCHEDULES = ("published", "fused", "per-op")
HIT_FLOATS = 2  # (x, y) per plane
OUT_STATE_FLOATS = 4  # (x, y, tx, ty) per plane
OUT_COV_FLOATS = {"scalar": 10, "vectorised": 6}  # unique entries of the symmetric covariance sent
DEFAULT_PLANES = 5  # the published study's detector planes
DEFAULT_SIGMA = 0.1  # hit resolution (TRACKR's sigma = 10e-2)
DEFAULT_PRIOR_VAR = (1.0, np.pi)  # (position, slope) variances at plane 0; slope pi as in TRACKR's C0


@dataclass(frozen=True)
class TrackMapping:
    """Tracks dealt to tiles in contiguous blocks: ``tracks_on_tile[i]`` tracks on tile i."""

    tracks_on_tile: np.ndarray

    def tile_groups(self, n_tiles: int) -> tuple[np.ndarray, list[str]]:
        busy = int(np.count_nonzero(self.tracks_on_tile))
        if 0 < busy < n_tiles:
            return np.array([0, busy]), [f"tracks (tiles 0-{busy - 1})", "idle tiles"]
        return np.array([0]), ["tracks"]


@dataclass
class KalmanRun:
    report: Report
    states: np.ndarray | None = None  # [tracks, planes, 4] smoothed (x, y, tx, ty)
    covariances: np.ndarray | None = None  # [tracks, planes, 4, 4] smoothed (a broadcast view when shared)
    hits: np.ndarray | None = None  # [tracks, planes, 2] the hits fitted
    tracks_on_tile: np.ndarray | None = None  # per tile of the system

    @property
    def tracks_per_second(self) -> float:
        return self.report.samples_per_second


# ------------------------------------------------------------------ input checks


def _numeric(value) -> bool:
    try:
        a = np.asarray(value)
    except Exception:
        return False
    return a.dtype != object and (np.issubdtype(a.dtype, np.number) and not np.issubdtype(a.dtype, np.complexfloating))


def check_variant(variant, covariance):
    """The codelet variant and covariance mode, if ``kernels/mimdsim_kalman/track_fit.py`` has them."""
    check_choice("variant", variant, kk.VARIANTS)
    check_choice("covariance", covariance, kk.COVARIANCE_MODES)


def check_planes(planes):
    return check_int("planes", planes, low=2, fix="a straight-line track fit needs at least 2 planes (4 "
                     "parameters, 2 measurements per plane; the published study used 5)")


HIT_BYTES_PER_PLANE = 8  # a track's hit on a plane: x and y, fp32; the least a tile keeps per plane


def check_planes_fit(planes: int, sram_per_tile: int) -> None:
    """Refuse, from the count alone and before any per-plane array, planes whose hits for a single
    track do not fit a tile's SRAM (every plan keeps at least one track's hits on its tile)."""
    need = HIT_BYTES_PER_PLANE * planes
    if need > sram_per_tile:
        raise ConfigError(Param("planes", planes), f": one track's hits alone take {need:,} B (x and y in fp32 on "
                          f"each plane) but a tile has {sram_per_tile:,} B of SRAM; give at most "
                          f"{sram_per_tile // HIT_BYTES_PER_PLANE:,} planes (the published study used 5)",
                          param=Param("planes", planes), limit=sram_per_tile // HIT_BYTES_PER_PLANE)


def check_hits(hits, planes=None):
    """``hits [tracks, planes, 2]``: finite numbers, at least one track."""
    if not _numeric(hits):
        raise ConfigError("hits must be a numeric array of shape [tracks, planes, 2] (x, y per plane)")
    h = np.asarray(hits, dtype=np.float64)
    if h.ndim != 3 or h.shape[2] != 2:
        raise ConfigError(f"hits have shape {h.shape}; expected [tracks, planes, 2] (x, y of each track's hit "
                          f"on each plane)")
    if h.shape[0] < 1:
        raise ConfigError("hits hold 0 tracks; give at least one track")
    check_planes(h.shape[1])
    if planes is not None and h.shape[1] != planes:
        raise ConfigError(f"hits have {h.shape[1]} planes but planes={planes}; drop planes= or make them agree")
    bad = ~np.isfinite(h)
    if bad.any():
        t, k, _ = np.argwhere(bad)[0]
        raise ConfigError(
            f"hits contain {int(bad.sum())} non-finite value(s) (first at track {t}, plane {k}: {h[t, k].tolist()}); "
            f"every track needs a finite hit on every plane — drop or refit those tracks before fitting")
    return h


def hit_variances(sigma, tracks, planes, covariance):
    """Hit variances broadcast to ``[1 | tracks, planes, 2]`` from a resolution ``sigma``: a number,
    per plane ``[N]``, per plane and axis ``[N, 2]``, or per hit ``[tracks, N]`` / ``[tracks, N, 2]``."""
    s = check_positive_array("sigma", sigma, fix="give hit resolutions > 0").astype(np.float64)
    if s.ndim == 0:
        s = s.reshape(1, 1, 1)
    elif s.ndim == 1 and s.shape == (planes,):
        s = s.reshape(1, planes, 1)
    elif s.ndim == 2 and s.shape == (planes, 2):
        s = s.reshape(1, planes, 2)
    elif s.ndim == 2 and s.shape == (tracks, planes):
        s = s.reshape(tracks, planes, 1)
    elif s.ndim == 3 and s.shape in ((tracks, planes, 2), (tracks, planes, 1)):
        pass
    else:
        raise ConfigError(f"sigma has shape {s.shape}; give a number, [planes]={planes}, [planes, 2], "
                          f"[tracks, planes]=({tracks}, {planes}) or [tracks, planes, 2]")
    per_hit = np.ndim(sigma) == 3 or (np.ndim(sigma) == 2 and np.shape(sigma) != (planes, 2))
    if per_hit and covariance == "shared":
        raise ConfigError("sigma differs per track, so tracks do not share one covariance; pass "
                          "covariance='per-track' (or one sigma per plane for covariance='shared')")
    return np.broadcast_to(s ** 2, (s.shape[0], planes, 2)), per_hit


def check_z(z, planes):
    if z is None:
        return np.arange(planes, dtype=np.float64)  # unit spacing (TRACKR: distance = 1)
    zz = np.asarray(z, dtype=np.float64) if _numeric(z) else None
    if zz is None or zz.shape != (planes,) or not np.isfinite(zz).all():
        raise ConfigError(f"z={z!r} must be {planes} finite plane positions (one per plane)")
    if (np.diff(zz) <= 0).any():
        raise ConfigError(f"z={zz.tolist()} must increase strictly from plane to plane (the planes are ordered "
                          f"along the beam); sort them or drop duplicate planes")
    return zz


def synthetic_tracks(tracks, planes=5, z=None, sigma=DEFAULT_SIGMA, theta0=0.0, seed=0):
    """Straight tracks with Gaussian hit noise (``sigma``: a number or an array broadcastable to
    ``[tracks, planes, 2]``) and optional multiple scattering (rms angle ``theta0`` per plane):
    start x, y ~ N(0, 1), slopes ~ N(0, 0.1). Returns ``(hits [tracks, planes, 2], truth
    [tracks, planes, 4])``."""
    planes = check_planes(planes)
    z = check_z(z, planes)
    rng = np.random.default_rng(seed)
    pos = rng.normal(0.0, 1.0, (tracks, 2))
    slope = rng.normal(0.0, 0.1, (tracks, 2))
    truth = np.zeros((tracks, planes, 4))
    for k in range(planes):
        if k:
            pos = pos + (z[k] - z[k - 1]) * slope
            slope = slope + rng.normal(0.0, theta0, (tracks, 2))
        truth[:, k, :2], truth[:, k, 2:] = pos, slope
    noise = rng.normal(0.0, 1.0, (tracks, planes, 2)) * np.broadcast_to(np.asarray(sigma, float), (tracks, planes, 2))
    return truth[:, :, :2] + noise, truth


# ------------------------------------------------------------------ the workload


# TRACKR's per-run fixed time: the intercept of its warm 6-worker MK1 runs (100/200/400 tracks per
# tile at 2 tiles: 349.7, 505.2, 822.7 us; per-tile fit 190.8 us + 1.5786 us x tracks, docs/as-built/
# trackr.md §1.6) in MK1 cycles (1.6 GHz, reference/hardware.md). What the published program
# counts itself at no tracks (the vertices' covariance work, the Copy programs, two syncs) is
# taken out, so that work is counted once, where TRACKR does it (docs/workloads.md §1.6).
TRACKR_INTERCEPT_S = 190.8e-6
MK1_CLOCK_HZ = 1.6e9


def trackr_launch_cycles(planes: int = DEFAULT_PLANES) -> float:
    """Chip cycles of one TRACKR run outside its compute and copies: ``engine.run``'s start, the
    host syncs and control code, measured as the MK1 intercept less the scalar build's counted
    fixed cycles (``kernels/trackr/kalman_filter.py``) at the benchmark's 5 planes."""
    tile = Tile()  # the MK1 tile: 6 workers, 11-cycle compute-set launch
    fixed_fit = tile.workers * (VERTEX_RUN_INSTRUCTIONS + tk.vertex_instructions("scalar", planes)[0]) + \
        tile.vertex_launch_cycles
    consts, regions = tk.copy_elements(np.array([tile.workers]), planes, tile.workers)  # constants only:
    consts = consts - tile.workers * 4 * planes  # the hits' share is per track
    fixed_copy = float(copy_cycles(consts, regions, kk.FLOAT_BYTES, tile)[0])
    sync = chip_preset("ipu-mk1").sync_cycles
    launch = TRACKR_INTERCEPT_S * MK1_CLOCK_HZ - fixed_fit - fixed_copy - 2 * sync  # copies, fit: 2 syncs
    if launch <= 0:
        raise ValueError(f"the counted fixed work ({fixed_fit + fixed_copy:.0f} cycles) exceeds TRACKR's intercept")
    return launch


def kalman(tracks_per_tile=None, planes=None, chip="ipu-mk2", *, tiles=None, variant="vectorised",
           covariance="shared", schedule="published", stream=True, batches=1, hits=None, execute=False,
           sigma=DEFAULT_SIGMA, z=None, prior_var=DEFAULT_PRIOR_VAR, theta0=0.0, seed=0,
           dtype=np.float32, launch_cycles=None) -> KalmanRun:
    """Fit tracks with a Kalman filter on ``chip`` (a preset name, ChipSpec or SystemSpec).

    ``tracks_per_tile`` tracks on each of ``tiles`` tiles (default: every tile of the system) and
    ``planes`` planes (default 5, or the planes of ``hits``);
    ``variant`` "scalar" or "vectorised" code; ``covariance`` "shared" (one covariance pass per
    worker, TRACKR's algorithm) or "per-track"; ``schedule`` "published" (TRACKR's codelet and
    program as built: variant "scalar" is its dense threaded build V_b, "vectorised" its float4,
    zero-pruned build V_e; shared covariance only), "fused" (the register-resident codelet) or
    "per-op" (one superstep per matrix operation); ``launch_cycles`` the per-run launch in chip
    cycles (default: TRACKR's, ``trackr_launch_cycles()``, for "published"; the chip's
    ``run_launch_s`` otherwise); ``stream`` hits in and results out over the host link;
    ``batches`` batches per run (the launch is paid once per run). With ``hits [tracks, planes, 2]``
    (or ``execute=True``: synthetic tracks) the fit runs numerically and its states and
    covariances are returned; timing is the same either way. ``sigma`` hit resolution (number,
    per plane, or per hit with covariance="per-track"); ``z`` plane positions (default 0, 1, ...);
    ``prior_var`` (position, slope) variances at plane 0; ``theta0`` rms scattering angle per plane.
    """
    system = as_system(chip)
    check_variant(variant, covariance)
    check_choice("schedule", schedule, SCHEDULES)
    published = schedule == "published"
    if published and covariance != "shared":
        raise ConfigError(Param("covariance", covariance), ": TRACKR's codelet (", Param("schedule", "published"),
                          ") computes the covariance once per vertex only; pass ", Param("covariance", "shared"), ", or ",
                          Param("schedule", "fused"), " for a per-track covariance")
    if launch_cycles is None and published:
        launch_cycles = trackr_launch_cycles()
    if launch_cycles is not None:
        launch_cycles = float(check_number("launch_cycles", launch_cycles, low=0,
                                           fix="give the per-run launch in chip cycles (0: none)"))
        c = system.chip
        system = dataclasses.replace(system, chip=c.replace(run_launch_s=launch_cycles / c.clock_hz))
    batches = check_int("batches", batches, low=1, fix="pass batches=1 or more (batches per run)")
    n_tiles = system.check_tiles(tiles)
    h = None
    if hits is not None:
        h = check_hits(hits, None if planes is None else check_planes(planes))
        planes = h.shape[1]
        n = h.shape[0]
        if tracks_per_tile is None:
            tracks_per_tile = -(-n // n_tiles)
        tpt = check_int("tracks_per_tile", tracks_per_tile, low=1, fix="pass tracks_per_tile >= 1")
        if n > n_tiles * tpt:
            raise ConfigError(f"{n} tracks do not fit {n_tiles} tiles x tracks_per_tile={tpt}; raise tracks_per_tile "
                              f"to {-(-n // n_tiles)} or the tile count")
    else:
        planes = check_planes(DEFAULT_PLANES if planes is None else planes)
        if tracks_per_tile is None:
            raise ConfigError("give tracks_per_tile= (tracks on each tile), or hits= to fit")
        tpt = check_int("tracks_per_tile", tracks_per_tile, low=1,
                        fix="pass tracks_per_tile >= 1 (the study used 100-408)")
        n = n_tiles * tpt
    check_planes_fit(planes, system.chip.sram_per_tile)
    zz = check_z(z, planes)
    pv = check_positive_array("prior_var", prior_var, fix="give two variances > 0 (position, slope)")
    if pv.shape != (2,):
        raise ConfigError(f"prior_var={prior_var!r} must be two variances (position, slope)")
    pv = pv.astype(np.float64)
    th = float(check_number("theta0", theta0, low=0, fix="pass the rms scattering angle per plane in radians "
                            "(0: no scattering)"))
    var, per_hit = hit_variances(sigma, n, planes, covariance)

    tracks_on_tile = np.zeros(system.tiles, dtype=np.int64)
    tracks_on_tile[:n_tiles] = np.clip(n - np.arange(n_tiles) * tpt, 0, tpt)
    tile = Tile.of(system.chip)
    if published and variant == "vectorised":
        step = 4 * tile.workers
        bad = tracks_on_tile[(tracks_on_tile % step != 0)]
        if bad.size:
            raise ConfigError(f"{int(bad[0])} tracks on a tile: TRACKR's float4 codelet needs a multiple of "
                              f"{step} (4 per worker x {tile.workers} workers; KalmanFilterIPU.cpp L50-69); pass ",
                              Param("tracks_per_tile", max(step, int(bad[0]) // step * step)), ", or ",
                              Param("variant", "scalar"), " or ", Param("schedule", "fused"))

    # memory plan
    n_ops = sum(1 for _ in kk.op_schedule(planes, variant)) if schedule == "per-op" else 1

    def plan(tracks):
        if published:
            return tk.tile_bytes(tracks, planes, tile.workers, variant)
        return kk.tile_bytes(tracks, planes, tile.workers, variant, covariance, per_hit, ops_vertices=n_ops)

    mem = plan(tracks_on_tile)
    used = sum(mem.values())
    limit = system.chip.sram_per_tile
    fullest = int(np.argmax(used))
    if used[fullest] > limit:
        counts = np.arange(1, tracks_on_tile[fullest] + 1)
        ok = sum(plan(counts).values()) <= limit
        fit = int(counts[ok].max()) if ok.any() else 0
        raise OutOfTileMemory(fullest, int(used[fullest]), int(limit), {k: int(v[fullest]) for k, v in mem.items()},
                              ("Lower ", Param("tracks_per_tile", action="lower"), f" ({fit} fit on a tile), ",
                               *(("use ", Param("schedule", "fused"), " (the register-resident codelet keeps fewer "
                                  "tensors), ") if published else
                                 ("use ", Param("variant", "vectorised"), " or ", Param("covariance", "shared"), ", ")),
                               "or a chip with more SRAM per tile."))

    # numerics
    states = covs = None
    if h is None and execute:
        h, _ = synthetic_tracks(n, planes, zz, np.sqrt(var), th, seed)
    if h is not None:
        fit = kk.kalman_fit(h, zz, var, tuple(pv), th ** 2, dtype=dtype)
        states = fit["states"]
        covs = np.broadcast_to(fit["covariances"], (n,) + fit["covariances"].shape[1:])

    model = f"kalman {planes} planes, {variant}, {covariance} covariance" + \
        {"published": ", TRACKR as built", "fused": ", register-resident", "per-op": ", per-op"}[schedule]
    program = lower(system, tracks_on_tile, planes, mem, model=model, variant=variant, covariance=covariance,
                    schedule=schedule, stream=stream, batches=batches, per_hit=per_hit)
    report = run_program(program)  # every cost is static: no work source

    supersteps = program.schedule[-1].count * len(program.schedule[-1].body)
    bound, notes = bottleneck_notes(report.cycles, report.steps, system.chip.clock_hz, supersteps)
    tracks_run = n * batches
    notes.insert(0, f"{tracks_run:,} tracks per run ({n_tiles} tiles x {tpt} tracks x {batches} batch(es)): "
                    f"{tracks_run * system.chip.clock_hz / report.total_cycles / 1e6:,.3f} x 10^6 tracks/s")
    if published:
        notes.append(f"TRACKR's program as built ({tk.BUILDS[variant]}): 6 vertices per tile, the Copy programs, a "
                     f"per-run launch of {system.chip.run_launch_cycles:,.0f} chip cycles")
    if not stream:
        notes.append("hits resident in tile memory (stream=False): no host I/O is timed, as in the TRACKR benchmark")
    report.mode = "execution" if states is not None else "analytical"
    report.placement = {"tiles": int((tracks_on_tile > 0).sum()), "chips": int(-(-n_tiles // system.chip.tiles)),
                        "tracks_per_tile": tpt, "tracks_per_run": tracks_run, "batches": batches, "variant": variant,
                        "covariance": covariance, "schedule": schedule, "stream": bool(stream),
                        "supersteps_per_run": supersteps, "bound": bound}
    report.notes = notes
    return KalmanRun(report=report, states=states, covariances=covs, hits=h, tracks_on_tile=tracks_on_tile)


def lower(system, tracks_on_tile, planes, mem, *, model, variant, covariance, schedule, stream, batches,
          per_hit) -> Program:
    """The run as a program: the launch, then ``batches`` times hits in, the fit, states out.

    ``mem``: the SRAM plan by category (arrays over tiles), as :func:`kernels.mimdsim_kalman.track_fit.tile_bytes` gives it.
    """
    f = kk.FLOAT_BYTES
    tiles_idx = np.arange(system.tiles)
    sync = "global" if system.chips > 1 else "chip"
    geometry = {"tracks": tracks_on_tile, "planes": planes, "variant": variant, "covariance": covariance}
    body = []
    if stream:
        hit_bytes = tracks_on_tile * f * planes * HIT_FLOATS * (2 if per_hit else 1)
        body.append(Superstep("io.hits", "io", (), (host_stream("hits", tiles_idx, hit_bytes),), sync))
    if schedule == "published":  # KalmanFilterIPU.cpp: Copy programs (L345-350), then Execute (L392)
        elements, regions = tk.copy_elements(tracks_on_tile, planes, Tile.of(system.chip).workers)
        busy = np.flatnonzero(tracks_on_tile)
        copies = VertexSet("popops.copy", None, busy, {"elements": elements[busy], "regions": regions[busy]})
        body.append(Superstep("copies", "forward", (copies,), (), sync))
        body.append(Superstep("fit", "forward", (VertexSet(f"trackr_kalman.{variant}", None, tiles_idx, geometry),),
                              (), sync))
    elif schedule == "fused":
        body.append(Superstep("fit", "forward", (VertexSet(f"kalman_fit.{variant}", None, tiles_idx, geometry),),
                              (), sync))
    else:
        for stage, part, _, op in kk.op_schedule(planes, variant):
            vs = VertexSet(f"kalman_op.{variant}", None, tiles_idx, {**geometry, "op": op, "part": part})
            body.append(Superstep(f"{stage}.{op.name}", "backward" if stage == "smooth" else "forward", (vs,), (),
                                  sync))
    if stream:
        cov_per_tile = np.where(tracks_on_tile > 0, 1, 0) if covariance == "shared" else tracks_on_tile
        out_bytes = f * planes * (tracks_on_tile * OUT_STATE_FLOATS + cov_per_tile * OUT_COV_FLOATS[variant])
        body.append(Superstep("io.states", "io", (), (host_stream("states", tiles_idx, out_bytes, True),), sync))
    tensors = [TensorAlloc(k, k, np.flatnonzero(v), v[v != 0]) for k, v in mem.items()]
    return Program(system, TrackMapping(tracks_on_tile), planes, int(tracks_on_tile.sum()) * batches, tensors,
                   [Launch(), Loop("batches", batches, tuple(body))], ProgramMeta(model, "kalman"))
