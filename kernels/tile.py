"""What a codelet may know about the machine: one tile. Never the chip.

The barrel model (Graphcore IPU Programmer's Guide; poplibs cycle estimators): each
of the tile's ``workers`` hardware threads issues one instruction every ``workers``
cycles, round robin, so a vertex whose work is split over the workers costs::

    cycles = workers * max over workers(instructions) + vertex_launch_cycles

Fewer busy workers than ``workers`` do not make one worker faster: the idle issue
slots are wasted, as on the chip.

Compute sets of many vertices per tile (the published sparse-BPTT op: 48 state-update and
96 flag vertices per tile) are costed by :func:`deal_vertices` (single-worker vertices, each
started by the supervisor's ``run`` on a free worker context) and :func:`multi_vertex_cycles`
(MultiVertex instances, each run by all workers, one instance after another).
"""
from __future__ import annotations

import hashlib

from dataclasses import dataclass

import functools
import weakref

import numpy as np

from ._jit import njit, numba_loaded
from .assumed import NOTHING, Pinned


@dataclass(frozen=True)
class Tile:
    workers: int = 6
    simd: int = 2  # lanes per vector instruction (64-bit datapath): 2 x fp32, or 4 x fp16
    load_bytes: int = 8
    vertex_launch_cycles: int = 11
    # the widths and the AMP unit's rates, for codelets that choose their precision themselves
    simd_fp32: int = 2
    simd_fp16: int = 4
    amp_flops_fp32: int = 32
    amp_flops_fp16: int = 128
    # codelet assumptions pinned for this run (a band's corner, --assume); an estimator reads
    # ``tile.pinned.get(name, its own constant)``
    pinned: Pinned = NOTHING

    @classmethod
    def of(cls, spec, precision: str = "fp32", pinned: Pinned = NOTHING) -> "Tile":
        """The tile of a ChipSpec-like object (duck-typed: kernels know no chip); with
        ``precision="fp16"`` a vector instruction holds ``simd_fp16`` (4) halves."""
        simd = spec.simd_fp16 if precision == "fp16" else spec.simd_fp32
        return cls(workers=spec.workers, simd=simd, load_bytes=spec.load_bytes,
                   vertex_launch_cycles=spec.vertex_launch_cycles, simd_fp32=spec.simd_fp32,
                   simd_fp16=spec.simd_fp16, amp_flops_fp32=spec.amp_flops_fp32, amp_flops_fp16=spec.amp_flops_fp16,
                   pinned=Pinned.of(pinned))


def worker_of_sample(batch: int, workers: int) -> np.ndarray:
    """Worker that handles each sample: contiguous, balanced blocks (``b * workers // B``).

    B = 48 gives blocks of 8; B = 7 gives (0, 1), (2), (3), (4), (5), (6); B = 3 uses
    workers 0, 2 and 4.
    """
    return np.arange(batch) * workers // batch


@functools.lru_cache(maxsize=64)
def _assignment(batch: int, workers: int) -> np.ndarray:
    """One-hot [B, workers] matrix of ``worker_of_sample`` (read-only, shared)."""
    assign = np.zeros((batch, workers))
    assign[np.arange(batch), worker_of_sample(batch, workers)] = 1.0
    assign.flags.writeable = False
    return assign


def per_worker(instr: np.ndarray, workers: int) -> np.ndarray:
    """Sum per-sample instruction counts ``[..., vertices, B]`` into ``[..., vertices, workers]``
    (leading axes: loop iterations evaluated at once)."""
    instr = np.asarray(instr, dtype=np.float64)
    return instr @ _assignment(instr.shape[-1], workers)


def per_worker_affine(const, slope, per_sample, workers: int) -> np.ndarray:
    """``per_worker`` of ``instr[..., v, b] = const[v] + slope[v] * per_sample[..., b]`` without
    forming the ``[..., vertices, B]`` array: ``const * samples(w) + slope * sum_{b in w} x[b]``
    (exact: instruction counts are integers)."""
    x = np.asarray(per_sample, dtype=np.float64)
    assign = _assignment(x.shape[-1], workers)
    sums = x @ assign  # [..., W]
    return (np.asarray(const, dtype=np.float64)[:, None] * assign.sum(axis=0)
            + np.asarray(slope, dtype=np.float64)[:, None] * sums[..., None, :])


def barrel_cycles(worker_instr: np.ndarray, tile: Tile) -> np.ndarray:
    """Cycles of vertices given instructions per worker ``[..., vertices, workers]``."""
    worker_instr = np.asarray(worker_instr, dtype=np.float64)
    return tile.workers * _max_last(worker_instr) + tile.vertex_launch_cycles


def vectors(n, tile: Tile) -> np.ndarray:
    """Vector instructions to cover ``n`` float32 lanes."""
    return -(-np.asarray(n) // tile.simd)


_PLANS: dict = {}  # by array (while it lives): (weak reference, plan)


def deal_plan(job_tiles: np.ndarray, workers: int):
    """(order, unique tiles, (tile, worker) slot of each job in sorted order) of a job layout,
    cached per array: a program's vertex layouts are static and costed every iteration."""
    key = (id(job_tiles), job_tiles.size, workers)
    hit = _PLANS.get(key)
    if hit is not None and hit[0]() is job_tiles:
        return hit[1]
    # the same layout in another program (another number of timesteps): by content
    # a digest, not the bytes: a key of a sweep's layouts held every job array of every program before
    content = (hashlib.blake2b(np.ascontiguousarray(job_tiles).data, digest_size=32).digest(), job_tiles.dtype.str,
               job_tiles.shape, workers)
    plan = _PLANS_BY_CONTENT.get(content)
    if plan is None:
        plan = _make_plan(job_tiles, workers)
        size = sum(a.nbytes for a in plan if isinstance(a, np.ndarray))
        if len(_PLANS_BY_CONTENT) >= 1024 or _PLANS_BYTES[0] + size > PLANS_KEPT_BYTES:
            _PLANS_BY_CONTENT.clear()  # a sweep of many shapes: its plans never pile up past the bound
            _PLANS_BYTES[0] = 0
        _PLANS_BY_CONTENT[content] = plan
        _PLANS_BYTES[0] += size
    try:
        if len(_PLANS) > 4096:
            _PLANS.clear()

        def forget(ref, key=key):  # the array is gone: its plan goes with it (unless another took the key)
            if _PLANS.get(key, (None,))[0] is ref:
                del _PLANS[key]
        _PLANS[key] = (weakref.ref(job_tiles, forget), plan)
    except TypeError:  # not weak-referenceable: no caching
        pass
    return plan


PLANS_KEPT_BYTES = 128 * 2**20  # deal plans kept by content at most (a default-model layout's plan: ~4 MB)
_PLANS_BYTES = [0]
_PLANS_BY_CONTENT: dict = {}


def _make_plan(job_tiles: np.ndarray, workers: int):
    ascending = bool(np.all(job_tiles[1:] >= job_tiles[:-1]))  # the usual layout: no sort needed
    order = np.arange(job_tiles.size) if ascending else np.argsort(job_tiles, kind="stable")
    t = job_tiles[order]
    start = np.flatnonzero(np.concatenate([[True], t[1:] != t[:-1]]))  # np.unique(t, return_index=True)
    uniq = t[start]
    rank = np.arange(t.size) - np.repeat(start, np.diff(np.append(start, t.size)))
    slot = np.repeat(np.arange(uniq.size), np.diff(np.append(start, t.size))) * workers + rank % workers
    increasing = bool(np.all(slot[1:] > slot[:-1]))  # at most `workers` jobs per tile: slots already grouped
    by_slot = np.arange(slot.size) if increasing else np.argsort(slot, kind="stable")
    s = slot[by_slot]
    first = np.flatnonzero(np.concatenate([[True], s[1:] != s[:-1]]))  # np.unique(s, return_index=True)
    used = s[first]
    perm = order[by_slot]
    direct = used.size == t.size and bool((perm == np.arange(perm.size)).all())  # one job per slot, in order
    full = direct and used.size == uniq.size * workers  # ... and every slot used: a reshape
    job_slot = np.repeat(used, np.diff(np.append(first, perm.size)))  # slot of each job in grouped order
    return perm, uniq, used, first, direct, full, job_slot  # jobs grouped by slot; each used slot's first job


def deal_jobs(job_tiles, job_instr, tile: Tile):
    """Single-worker jobs placed on tiles, dealt round robin to each tile's workers.

    Returns ``(tiles, cycles)`` for the tiles that got jobs:
    ``workers * max over workers(sum of job instructions) + vertex_launch_cycles``.
    ``job_instr`` is ``[jobs]`` or ``[iterations, jobs]`` (cycles then ``[iterations, tiles]``).
    """
    job_tiles = np.asarray(job_tiles)
    W = tile.workers
    instr = np.asarray(job_instr, dtype=np.float64)
    lead = instr.shape[:-1] if instr.ndim > 1 else ()
    if job_tiles.size == 0:
        return job_tiles.astype(np.int64), np.zeros(lead + (0,))
    order, uniq, used, first, direct, full, job_slot = deal_plan(job_tiles, W)
    instr = np.broadcast_to(instr, lead + job_tiles.shape)
    if instr.ndim == 2 and not direct and numba_loaded():  # a loop's iterations in one compiled pass
        out = np.empty((instr.shape[0], uniq.size))
        _deal_rows(instr, order, job_slot, uniq.size, W, float(tile.vertex_launch_cycles), out)
        return uniq, out
    if full:  # one job per (tile, worker) slot, in slot order
        per = instr
    elif direct:
        per = np.zeros(lead + (uniq.size * W,))
        per[..., used] = instr
    else:
        per = np.zeros(lead + (uniq.size * W,))
        per[..., used] = np.add.reduceat(instr[..., order], first, axis=-1)  # jobs of one slot are adjacent
    if numba_loaded():  # the same maxima, W * max + launch per tile in one compiled pass
        flat = np.ascontiguousarray(per).reshape(-1, uniq.size * W)
        out = np.empty((flat.shape[0], uniq.size))
        _busiest_rows(flat, uniq.size, W, float(tile.vertex_launch_cycles), out)
        return uniq, out.reshape(lead + (uniq.size,))
    return uniq, W * _max_last(per.reshape(lead + (uniq.size, W))) + tile.vertex_launch_cycles


@njit(cache=True)
def _busiest_rows(per, U, W, launch, out):
    """``busiest_workers`` of every row of ``per[rows, U * W]``."""
    for i in range(per.shape[0]):
        busiest_workers(per[i], U, W, launch, out[i])


@njit(cache=True)
def _deal_rows(instr, order, job_slot, U, W, launch, out):
    """``deal_jobs`` of ``instr[iterations, jobs]``: per iteration, each slot's jobs summed in
    grouped order (as ``np.add.reduceat``), then ``W * max over workers + launch`` per tile."""
    per = np.zeros(U * W)
    for i in range(instr.shape[0]):
        per[:] = 0.0
        for j in range(order.shape[0]):
            per[job_slot[j]] += instr[i, order[j]]
        busiest_workers(per, U, W, launch, out[i])


@njit(cache=True)
def busiest_workers(per, U, W, launch, out):
    """``out[u] = W * max over workers of per[u * W: (u + 1) * W] + launch``: tile u's cycles
    from its workers' instructions (slots in tile-major order)."""
    for u in range(U):
        m = per[u * W]
        for w in range(1, W):
            if per[u * W + w] > m:
                m = per[u * W + w]
        out[u] = W * m + launch


def _max_last(x):
    """``x.max(axis=-1)`` for a short last axis (the workers): elementwise maxima of its columns,
    far faster than numpy's reduction over a 6-long inner axis (same values)."""
    out = x[..., 0].copy()
    for w in range(1, x.shape[-1]):
        np.maximum(out, x[..., w], out=out)
    return out


# The vertex-launch model (docs/cost-model.md, "Vertex launch"). Counted in a worker's issue
# slots, like instructions: each costs ``workers`` tile cycles in the barrel.
#  * VERTEX_RUN_INSTRUCTIONS: the supervisor's ``run`` that starts a worker vertex on a free
#    context; it issues in the slot the vertex will occupy. poplibs
#    lib/popnn/PerformanceEstimation.hpp, getBwdNonlinearityDerivativeCycles: a worker vertex
#    adds "2 // run instruction" that a supervisor vertex does not.
#  * WORKER_VERTEX_OVERHEAD: the rest of a worker vertex's entry and exit (load the vertex
#    state base, set up, ``exitz``); same function: "+ 7; // remaining vertex overhead". Added
#    by codelets whose own count does not already include it (the compiled C++ vertices of
#    kernels/graphcore_snn/vertices.py); poplibs' worker estimators include their entry code.
VERTEX_RUN_INSTRUCTIONS = 2
WORKER_VERTEX_OVERHEAD = 7


def deal_vertices(vertex_tiles, vertex_instr, tile: Tile, run: int = VERTEX_RUN_INSTRUCTIONS):
    """A compute set of single-worker vertices on their tiles: ``(tiles, cycles)``.

    The supervisor starts the vertices of a tile in compute-set order, each with a ``run``
    (``run`` issue slots) on the next worker context (round robin, rank mod ``workers``); a
    worker's vertex costs ``workers`` cycles per instruction, as every barrel slot does::

        cycles[tile] = workers * max over contexts(sum over its vertices(run + instr))
                       + vertex_launch_cycles          (the compute set's start and join)

    ``vertex_instr`` is ``[V]`` or ``[..., V]`` (leading loop-iteration axes); cycles come
    back ``[..., U]`` for the ``U`` unique tiles returned. Round robin equals the supervisor's
    earliest-free order when a tile's vertices cost the same; otherwise it is an
    approximation of it (docs/cost-model.md).
    """
    return deal_jobs(vertex_tiles, np.asarray(vertex_instr, dtype=np.float64) + run, tile)


@functools.lru_cache(maxsize=64)
def _round_robin(batch: int, workers: int) -> np.ndarray:
    """One-hot [B, workers]: the b-th vertex of a tile runs on worker b mod workers (read-only, shared)."""
    assign = np.zeros((batch, workers))
    assign[np.arange(batch), np.arange(batch) % workers] = 1.0
    assign.flags.writeable = False
    return assign


def deal_sample_grid(tiles, const, slope, per_sample, tile: Tile, run: int = VERTEX_RUN_INSTRUCTIONS):
    """``deal_vertices`` for one vertex per (sample, tile) in sample-major order (vertex ``b * T + j``
    on ``tiles[j]``) whose instructions are affine, ``const[j] + slope[j] * per_sample[..., b]``:
    on every tile sample b is the b-th vertex, so it runs on worker ``b mod workers``, and the
    per-worker sums are computed from per-sample sums, without the ``[..., B * T]`` array."""
    tiles = np.asarray(tiles)
    if not (tiles.size < 2 or bool(np.all(tiles[1:] > tiles[:-1]))) and np.unique(tiles).size != tiles.size:
        raise ValueError("deal_sample_grid needs each tile once (a tile with two grid columns runs 2 B vertices); "
                         "use deal_vertices")
    x = np.asarray(per_sample, dtype=np.float64)
    B, W = x.shape[-1], tile.workers
    assign = _round_robin(B, W)
    sums, count = x @ assign, assign.sum(axis=0)  # [..., W], [W]
    if numba_loaded():  # the same products and sums per (tile, worker), without the [..., T, W] array
        flat = np.ascontiguousarray(sums.reshape(-1, W))
        out = np.empty((flat.shape[0], tiles.size))
        cr = run + np.broadcast_to(np.asarray(const, dtype=np.float64), tiles.shape)
        _sample_grid_rows(flat, np.ascontiguousarray(cr),
                          np.ascontiguousarray(np.broadcast_to(np.asarray(slope, dtype=np.float64), tiles.shape)),
                          count, W, float(tile.vertex_launch_cycles), out)
        return tiles, out.reshape(sums.shape[:-1] + (tiles.size,))
    per = (count * (run + np.asarray(const, dtype=np.float64))[:, None]
           + np.asarray(slope, dtype=np.float64)[:, None] * sums[..., None, :])  # [..., T, W]
    return tiles, W * _max_last(per) + tile.vertex_launch_cycles


@njit(cache=True)
def _sample_grid_rows(sums, cr, slope, count, W, launch, out):
    """``deal_sample_grid``'s cycles: ``out[i, j] = W * max over w(count[w] * cr[j] + slope[j] * sums[i, w])
    + launch``, each term as numpy forms it."""
    for i in range(sums.shape[0]):
        for j in range(cr.shape[0]):
            m = count[0] * cr[j] + slope[j] * sums[i, 0]
            for w in range(1, W):
                v = count[w] * cr[j] + slope[j] * sums[i, w]
                if v > m:
                    m = v
            out[i, j] = W * m + launch


def multi_vertex_cycles(vertex_tiles, worker_instr, tile: Tile, run: int = VERTEX_RUN_INSTRUCTIONS):
    """MultiVertex instances on their tiles: ``(tiles, cycles)``.

    Each instance runs on all ``workers`` contexts (``runall``); ``worker_instr[..., V]`` is
    its busiest worker's instructions. Instances on one tile run one after another::

        cycles[tile] = sum over its instances(workers * (run + worker_instr))
                       + vertex_launch_cycles
    """
    vertex_tiles = np.asarray(vertex_tiles)
    instr = np.asarray(worker_instr, dtype=np.float64)
    lead = instr.shape[:-1]
    uniq, inv = np.unique(vertex_tiles, return_inverse=True)
    per = tile.workers * (run + instr.reshape(-1, vertex_tiles.size))
    n = per.shape[0]
    flat = (np.arange(n)[:, None] * uniq.size + inv[None, :]).ravel()
    summed = np.bincount(flat, weights=per.ravel(), minlength=n * uniq.size).reshape(lead + (uniq.size,))
    return uniq, summed + tile.vertex_launch_cycles
