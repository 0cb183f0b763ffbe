"""Kalman-filter track fitting: straight-line tracks through N detector planes.

State ``p = (x, y, tx, ty)`` (position and slopes at a plane), 4x4 covariance ``C``,
one 2-D hit ``m = (x, y)`` per plane with variances ``V = diag(vx, vy)``
(``reference/algorithms.md`` §4; Mohan et al. 2021; TRACKR). Equations, plane k = 0..N-1
at position z_k, dz = z_k - z_{k-1}::

    prior (plane 0)   p = (m0x, m0y, 0, 0),   C = diag(c_pos, c_pos, c_slope, c_slope)
    predict (k >= 1)  p_k|k-1 = F p_k-1,      C_k|k-1 = F C_k-1 F^T + Q
                      F = [[1,0,dz,0],[0,1,0,dz],[0,0,1,0],[0,0,0,1]],  Q = diag(0, 0, q, q)
    filter  (all k)   S = H C H^T + V,  K = C H^T S^-1,  p += K (m - H p),  C -= K H C
                      H = [[1,0,0,0],[0,1,0,0]]
    smooth  (k < N-1) A = C_k F^T C_k+1|k^-1
                      p_k^s = p_k + A (p_k+1^s - p_k+1|k),  C_k^s = C_k + A (C_k+1^s - C_k+1|k) A^T

(Rauch-Tung-Striebel smoother; the last plane's smoothed state is its filtered state.)

Tracks are independent: each worker thread fits its own tracks from tile memory. Because
``F``, ``H``, ``V`` and ``Q`` do not depend on the hits, every track with the same hit
variances has the same covariances and gains: with ``covariance="shared"`` (TRACKR's
algorithm) each worker computes the covariance pass once and its tracks run only the state
pass; with ``covariance="per-track"`` (hit-dependent variances) every track runs both.

Two code variants are costed (same numerics):

* ``scalar``      dense 4x4 matrix code, one float per instruction (a direct port, like
  TRACKR's threaded codelet);
* ``vectorised``  zero terms pruned and float2 SIMD: with diagonal V, Q and prior and this F,
  the x-view (x, tx) and y-view (y, ty) never mix, so the covariance is two 2x2 blocks and one
  float2 instruction updates both views (TRACKR's "vectorised, zero terms pruned").

Each stage is a list of :class:`MatOp` instruction mixes, counted for a hand-written worker
loop (docs/workloads.md): ``instructions = arith + stores + max(0, loads - arith)`` (a load
co-issues with an arithmetic instruction, docs/cost-model.md §3.1).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..codelet import VERTEX_STATE_BYTES, register
from ..tile import Tile

VARIANTS = ("scalar", "vectorised")
COVARIANCE_MODES = ("shared", "per-track")
STAGES = ("init", "predict", "update", "smooth", "final")
FLOAT_BYTES = 4

# ------------------------------------------------------------------ functional implementation


def transport(dz, dtype=np.float64):
    """F for plane gaps ``dz[..., ]`` -> ``[..., 4, 4]``."""
    dz = np.asarray(dz, dtype=dtype)
    F = np.zeros(dz.shape + (4, 4), dtype=dtype)
    F[..., 0, 0] = F[..., 1, 1] = F[..., 2, 2] = F[..., 3, 3] = 1
    F[..., 0, 2] = F[..., 1, 3] = dz
    return F


def kalman_fit(hits, z, hit_var, prior_var=(1.0, np.pi), q=0.0, dtype=np.float32):
    """Fit all tracks at once (numpy over tracks; the only Python loop is over planes).

    ``hits [T, N, 2]``; ``z [N]`` plane positions; ``hit_var`` broadcastable to ``[T|1, N, 2]``
    (x and y hit variances; a leading 1 gives the shared covariance of every track); ``prior_var``
    = (position, slope) variances of the prior at plane 0; ``q`` slope variance added per plane
    (multiple scattering). Returns a dict of ``states [T, N, 4]`` and ``covariances
    [T|1, N, 4, 4]`` (smoothed), plus the filtered and predicted ones.
    """
    m = np.asarray(hits, dtype=dtype)
    T, N, _ = m.shape
    V = np.asarray(hit_var, dtype=dtype)
    V = np.broadcast_to(V, np.broadcast_shapes(V.shape, (1, N, 2)))
    Tc = V.shape[0]  # 1 when the covariance is shared by all tracks
    dz = np.diff(np.asarray(z, dtype=dtype))
    F = transport(dz, dtype)  # [N-1, 4, 4]
    H = np.zeros((2, 4), dtype=dtype)
    H[0, 0] = H[1, 1] = 1
    Q = np.zeros((4, 4), dtype=dtype)
    Q[2, 2] = Q[3, 3] = q

    p = np.zeros((T, 4, 1), dtype=dtype)
    p[:, :2, 0] = m[:, 0]
    C = np.zeros((Tc, 4, 4), dtype=dtype)
    C[:, 0, 0] = C[:, 1, 1] = prior_var[0]
    C[:, 2, 2] = C[:, 3, 3] = prior_var[1]
    p_pred = np.zeros((T, N, 4, 1), dtype=dtype)
    C_pred = np.zeros((Tc, N, 4, 4), dtype=dtype)
    p_filt = np.zeros((T, N, 4, 1), dtype=dtype)
    C_filt = np.zeros((Tc, N, 4, 4), dtype=dtype)
    for k in range(N):  # forward: predict, filter
        if k:
            p = F[k - 1] @ p
            C = F[k - 1] @ C @ F[k - 1].T + Q
        p_pred[:, k], C_pred[:, k] = p, C
        Vk = np.zeros((Tc, 2, 2), dtype=dtype)
        Vk[:, 0, 0], Vk[:, 1, 1] = V[:, k, 0], V[:, k, 1]
        S = H @ C @ H.T + Vk
        K = C @ H.T @ np.linalg.inv(S)
        p = p + K @ (m[:, k, :, None] - H @ p)
        C = C - K @ H @ C
        p_filt[:, k], C_filt[:, k] = p, C
    p_s, C_s = p_filt.copy(), C_filt.copy()
    for k in range(N - 2, -1, -1):  # backward: RTS smoother
        A = C_filt[:, k] @ F[k].T @ np.linalg.inv(C_pred[:, k + 1])
        p_s[:, k] = p_filt[:, k] + A @ (p_s[:, k + 1] - p_pred[:, k + 1])
        C_s[:, k] = C_filt[:, k] + A @ (C_s[:, k + 1] - C_pred[:, k + 1]) @ np.swapaxes(A, -1, -2)
    return {"states": p_s[..., 0], "covariances": C_s, "filtered_states": p_filt[..., 0],
            "filtered_covariances": C_filt, "predicted_states": p_pred[..., 0], "predicted_covariances": C_pred}


# ------------------------------------------------------------------ instruction counts


@dataclass(frozen=True)
class MatOp:
    """One operation of a worker's Kalman loop: its arithmetic, load and store instructions."""

    name: str
    arith: int  # FP and integer ALU instructions (one issue slot each)
    loads: int  # ld32 (scalar) or ld64 (float2); co-issue with an arith instruction
    stores: int  # st32 / st64

    @property
    def instructions(self) -> int:
        return self.arith + self.stores + max(0, self.loads - self.arith)


RECIPROCAL = 4  # software reciprocal sequence (docs/cost-model.md §3.1)
# 4x4 inverse by cofactors (TRACKR's inverse): 18 2x2 minors x (2 mul + 1 sub) = 54; determinant
# 4 x (3 mul + 2 add) + 4 mul + 3 add = 27; reciprocal 4; 16 entries x (3 mul + 2 add + 1 mul) = 96.
INVERSE_4X4_ARITH = 18 * 3 + (4 * 5 + 7) + RECIPROCAL + 16 * 6
INVERSE_4X4_LOADS = 18 * 4 + 16 + 16 * 3  # elements read where used: minors, determinant rows, entries
# 2x2 inverse: det = s00 s11 - s01 s10 (3); reciprocal (4); 4 entries x mul (4) + 2 negations (2).
INVERSE_2X2_ARITH = 3 + RECIPROCAL + 4 + 2


def gemm(name, r, k, c, *, acc=False, load_acc=False, load_a=True, load_b=True, store=True) -> MatOp:
    """Dense scalar ``out[r, c] (+)= a[r, k] b[k, c]``: r·c·k multiplies and r·c·(k-1) adds (+ r·c
    accumulating adds); every multiply loads the operands held in memory (a, b), plus the
    accumulated matrix when it lives in memory; ``store`` writes the r·c results."""
    mul = r * c * k
    add = r * c * (k - 1) + (r * c if acc else 0)
    loads = mul * (int(load_a) + int(load_b)) + (r * c if load_acc else 0)
    return MatOp(name, mul + add, loads, r * c if store else 0)


# Scalar dense code. The state p (4 floats) stays in registers along a track's plane loop.
SCALAR_STATE = {
    "init": (MatOp("p=(m0,0)", 2, 2, 0),),
    "predict": (gemm("p=F*p", 4, 4, 1, load_b=False),),
    "update": (gemm("H*p", 2, 4, 1, load_b=False, store=False),
               MatOp("r=m-Hp", 2, 2, 0),
               gemm("p+=K*r", 4, 2, 1, acc=True, load_b=False)),
    "smooth": (MatOp("d=ps-pp", 4, 4, 0),
               gemm("ps=pf+A*d", 4, 4, 1, acc=True, load_acc=True, load_b=False)),
    "final": (MatOp("ps=pf", 0, 0, 4),),
}
# Scalar dense covariance pass: C (16 floats) in memory; writes the gain tables K (4x2 per
# plane) and A (4x4 per gap) that the state pass reads.
SCALAR_COV = {
    "init": (MatOp("C=C0", 0, 16, 16),),
    "predict": (gemm("T=F*C", 4, 4, 4), gemm("C=T*Ft+Q", 4, 4, 4, acc=True, load_acc=True)),
    "update": (gemm("HC=H*C", 2, 4, 4),
               gemm("S=HC*Ht+V", 2, 4, 2, acc=True, load_acc=True),
               MatOp("Si=inv(S)", INVERSE_2X2_ARITH, 4, 4),
               gemm("CHt=C*Ht", 4, 4, 2),
               gemm("K=CHt*Si", 4, 2, 2),
               gemm("C-=K*HC", 4, 2, 4, acc=True, load_acc=True)),
    "smooth": (MatOp("Pi=inv(Cp)", INVERSE_4X4_ARITH, INVERSE_4X4_LOADS, 16),
               gemm("M=Cf*Ft", 4, 4, 4),
               gemm("A=M*Pi", 4, 4, 4),
               MatOp("D=Cs-Cp", 16, 32, 16),
               gemm("E=A*D", 4, 4, 4),
               gemm("Cs=Cf+E*At", 4, 4, 4, acc=True, load_acc=True)),
    "final": (MatOp("Cs=Cf", 0, 16, 16),),
}
# Vectorised, zero terms pruned: float2 lane 0 holds the x-view, lane 1 the y-view. Per view
# the state is (u, t), the covariance [[a, b], [b, c]], the gain (k0, k1), A a 2x2.
VECTORISED_STATE = {
    "init": (MatOp("u=m0,t=0", 1, 1, 0),),
    "predict": (MatOp("u+=dz*t", 2, 1, 1),),  # mul, add; ld dz; st u (t is unchanged)
    "update": (MatOp("r=m-u", 1, 1, 0),
               MatOp("u,t+=k*r", 4, 2, 2)),  # 2 x (mul, add); ld k0, k1; st u, t
    "smooth": (MatOp("du,dt", 2, 2, 0),  # u_s' - u_p' and t_s' - t_f (t_p' = t_f); ld u_p', t_f
               MatOp("us,ts=pf+A*d", 8, 5, 2)),  # 2 x (2 mul, 2 add); ld u_f, A (4); st u_s, t_s
    "final": (MatOp("us,ts=uf,tf", 0, 0, 2),),
}
VECTORISED_COV = {
    "init": (MatOp("a,b,c=prior", 1, 2, 0),),
    "predict": (MatOp("a,b,c+=dz*...", 7, 4, 3),),  # a += 2dz b + dz^2 c (4); b += dz c (2); c += q (1)
    "update": (MatOp("S=a+v,w=1/S", 1 + RECIPROCAL, 1, 0),
               MatOp("k=(a,b)*w", 2, 0, 2),
               MatOp("a,b,c-=k*...", 6, 0, 3)),  # c -= k1 b; b -= k0 b; a -= k0 a
    "smooth": (MatOp("M=Cf*Ft", 4, 4, 0),  # a + dz b, b + dz c; ld a, b, c, dz
               MatOp("I=inv(Cp)", 3 + RECIPROCAL + 1 + 3, 3, 0),  # det; 1/det; -1/det; 3 entries
               MatOp("A=M*I", 12, 0, 4),  # 4 entries x (2 mul + 1 add)
               MatOp("D=Cs-Cp", 3, 0, 0),
               MatOp("E=A*D", 12, 0, 0),
               MatOp("Cs=Cf+E*At", 12, 0, 3)),  # 3 entries x (2 mul + 2 add)
    "final": (MatOp("Cs=Cf", 0, 0, 3),),
}
OPS = {("scalar", "state"): SCALAR_STATE, ("scalar", "cov"): SCALAR_COV,
       ("vectorised", "state"): VECTORISED_STATE, ("vectorised", "cov"): VECTORISED_COV}
LANES = {"scalar": 1, "vectorised": 2}  # floats per arithmetic instruction (2 views in a float2)

# Loop and vertex overheads (instructions).
VERTEX_OVERHEAD = 8  # per worker: load the vertex's field pointers and track count, loop setup
TRACK_OVERHEAD = 3  # per track: advance the per-track pointers, loop branch (brnzdec)
PLANE_STEP = 1  # per plane iteration: loop branch (addresses post-increment in ld64step/st64step)

# Storage per track / per covariance pass, in floats (docs/workloads.md).
STATE_FLOATS = {"scalar": 4, "vectorised": 4}
PREDICTED_STATE_FLOATS = {"scalar": 4, "vectorised": 2}  # pruned code keeps only u (t_pred = t_filt)
COV_FLOATS = {"scalar": 16, "vectorised": 6}  # dense 4x4, or two [[a, b], [b, c]] blocks
GAIN_FLOATS = {"scalar": 8, "vectorised": 4}  # K per plane
SMOOTHER_GAIN_FLOATS = {"scalar": 16, "vectorised": 8}  # A per gap
SCRATCH_FLOATS = {"scalar": 16 + 8 + 4 + 4 + 8 + 16 + 16 + 16 + 16, "vectorised": 0}  # T, HC, S, Si, CHt, Pi, M, D, E
CODE_BYTES_PER_INSTRUCTION = 4  # 32-bit instructions, straight-line loop bodies
CODE_BASE_BYTES = 256  # vertex entry, loops and exits


def multiplicity(stage: str, planes: int) -> int:
    """How often a stage runs per track (state pass) or per covariance pass."""
    return {"init": 1, "predict": planes - 1, "update": planes, "smooth": planes - 1, "final": 1}[stage]


def _one_of(name, value, options):
    if value not in options:
        raise ValueError(f"{name}={value!r} is not one of {', '.join(map(repr, options))}")


def check_variant(variant, covariance=None):
    """ValueError unless ``variant`` is one of VARIANTS (and ``covariance``, when given, one of
    COVARIANCE_MODES). Callers facing users check their arguments first."""
    _one_of("variant", variant, VARIANTS)
    if covariance is not None:
        _one_of("covariance", covariance, COVARIANCE_MODES)


def stage_instructions(variant: str, part: str, stage: str) -> int:
    """Instructions of one run of ``stage`` of the ``part`` ("state" or "cov") pass."""
    check_variant(variant)
    return sum(op.instructions for op in OPS[(variant, part)][stage])


def pass_instructions(variant: str, part: str, planes: int) -> int:
    """One state pass (a track) or covariance pass, loop branches included:
    Σ_stage multiplicity × stage instructions + (2N - 1) × PLANE_STEP (+ TRACK_OVERHEAD)."""
    body = sum(multiplicity(s, planes) * stage_instructions(variant, part, s) for s in STAGES)
    return body + (2 * planes - 1) * PLANE_STEP + (TRACK_OVERHEAD if part == "state" else 0)


def pass_arith(variant: str, part: str, planes: int) -> int:
    """Arithmetic instructions of one pass (for the GPU and CPU models): Σ multiplicity × arith."""
    check_variant(variant)
    return sum(multiplicity(s, planes) * sum(op.arith for op in OPS[(variant, part)][s]) for s in STAGES)


def pass_memory(variant: str, part: str, planes: int) -> tuple[int, int]:
    """(loads, stores) of one pass."""
    check_variant(variant)
    ld = sum(multiplicity(s, planes) * sum(op.loads for op in OPS[(variant, part)][s]) for s in STAGES)
    st = sum(multiplicity(s, planes) * sum(op.stores for op in OPS[(variant, part)][s]) for s in STAGES)
    return ld, st


def worker_tracks(tracks, workers):
    """Most tracks on one worker of each tile: tracks split in balanced blocks (``b * W // n``)."""
    return -(-np.asarray(tracks) // workers)


def kalman_cycles(tracks, planes: int, tile: Tile, variant: str = "vectorised", covariance: str = "shared"):
    """Cycles of the fused ``kalman_fit`` vertex on each tile with ``tracks[v]`` tracks:

    worker instructions = VERTEX_OVERHEAD + n_w × state pass + (cov pass once   if shared
                                                              n_w × cov pass    if per-track)
    cycles = workers × worker instructions + vertex_launch_cycles   (0 on a tile without tracks)

    with n_w = ceil(tracks / workers) on the busiest worker."""
    check_variant(variant, covariance)
    tracks = np.asarray(tracks)
    n_w = worker_tracks(tracks, tile.workers)
    state = pass_instructions(variant, "state", planes)
    cov = pass_instructions(variant, "cov", planes)
    if covariance == "shared":
        instr = VERTEX_OVERHEAD + cov + n_w * state
    else:
        instr = VERTEX_OVERHEAD + n_w * (state + cov)
    return np.where(tracks > 0, tile.workers * instr + tile.vertex_launch_cycles, 0).astype(np.float64)


def op_schedule(planes: int, variant: str):
    """The operations in program order, as (stage, part, op index, op) — one superstep each in
    the ``per-op`` schedule: init, filter plane 0, (predict, filter) for planes 1..N-1, final,
    then the smoother from plane N-2 back to 0; covariance operations before state ones."""
    check_variant(variant)
    order = [("init", None)] + [("update", 0)] + \
        [(s, k) for k in range(1, planes) for s in ("predict", "update")] + [("final", None)] + \
        [("smooth", k) for k in range(planes - 2, -1, -1)]
    for stage, _ in order:
        for part in ("cov", "state"):
            for i, op in enumerate(OPS[(variant, part)][stage]):
                yield stage, part, i, op


def op_cycles(tracks, op: MatOp, part: str, tile: Tile, covariance: str = "shared"):
    """Cycles of one operation run as its own vertex (``per-op`` schedule), on each tile:

    state op, or cov op per track:  VERTEX_OVERHEAD + n_w × (op instructions + TRACK_OVERHEAD)
    cov op, shared:                 VERTEX_OVERHEAD + op instructions (each busy worker its own copy)
    cycles = workers × that + vertex_launch_cycles"""
    _one_of("covariance", covariance, COVARIANCE_MODES)
    tracks = np.asarray(tracks)
    n_w = worker_tracks(tracks, tile.workers)
    if part == "cov" and covariance == "shared":
        instr = np.full(tracks.shape, VERTEX_OVERHEAD + op.instructions)
    else:
        instr = VERTEX_OVERHEAD + n_w * (op.instructions + TRACK_OVERHEAD)
    return np.where(tracks > 0, tile.workers * instr + tile.vertex_launch_cycles, 0).astype(np.float64)


def code_bytes(variant: str) -> int:
    """Machine code of the fused codelet: one copy of every stage's loop body."""
    body = sum(stage_instructions(variant, part, s) for part in ("state", "cov") for s in STAGES)
    return CODE_BASE_BYTES + CODE_BYTES_PER_INSTRUCTION * body


def tile_bytes(tracks, planes: int, workers: int, variant: str = "vectorised", covariance: str = "shared",
               per_hit_variance: bool = False, ops_vertices: int = 1) -> dict:
    """SRAM per tile by tensor, for ``tracks[v]`` tracks on each tile (arrays over tiles).

    Per track: hits N·2 floats (+ N·2 hit variances when they differ per hit); predicted
    (N-1)·PREDICTED_STATE, filtered N·STATE and smoothed N·STATE floats; smoothed covariances
    N·COV floats (per track when covariance="per-track"). Per busy worker (each computes its own
    covariance pass): predicted and filtered covariances, gain tables K and A, scratch (and the
    smoothed covariances when shared). Code once per tile; ``ops_vertices`` vertex states per
    busy worker (1 for the fused codelet, the number of operations for ``per-op``)."""
    check_variant(variant, covariance)
    tracks = np.asarray(tracks, dtype=np.int64)
    N, f = int(planes), FLOAT_BYTES
    busy = np.minimum(tracks, workers)
    cov = COV_FLOATS[variant]
    per_worker = f * ((N - 1) * cov + N * cov + N * GAIN_FLOATS[variant]
                      + (N - 1) * SMOOTHER_GAIN_FLOATS[variant] + SCRATCH_FLOATS[variant])
    smoothed_cov = f * N * cov
    out = {
        "hits": tracks * f * N * 2,
        "hit_variances": tracks * f * N * 2 if per_hit_variance else np.zeros_like(tracks),
        "states": tracks * f * ((N - 1) * PREDICTED_STATE_FLOATS[variant] + 2 * N * STATE_FLOATS[variant]),
        "covariances": busy * per_worker + (tracks if covariance == "per-track" else busy) * smoothed_cov,
        "code": np.where(tracks > 0, code_bytes(variant) + VERTEX_STATE_BYTES * busy * ops_vertices, 0),
    }
    return {k: np.asarray(v, dtype=np.int64) for k, v in out.items()}


def _fit_cost(tiles, g, work, tile):  # one vertex per tile; g["tracks"][v] tracks on vertex v
    return tiles, kalman_cycles(g["tracks"], g["planes"], tile, g["variant"], g["covariance"])


def _op_cost(tiles, g, work, tile):
    return tiles, op_cycles(g["tracks"], g["op"], g["part"], tile, g["covariance"])


KALMAN_SCALAR = register("kalman_fit.scalar", kalman_cycles, code_bytes=code_bytes("scalar"), cost=_fit_cost,
                         static=True)
KALMAN_VECTORISED = register("kalman_fit.vectorised", kalman_cycles, code_bytes=code_bytes("vectorised"),
                             cost=_fit_cost, static=True)
# per-op schedule: one vertex per operation; together they hold the fused codelet's loop bodies
KALMAN_OP_SCALAR = register("kalman_op.scalar", op_cycles, code_bytes=code_bytes("scalar"), cost=_op_cost,
                            static=True)
KALMAN_OP_VECTORISED = register("kalman_op.vectorised", op_cycles, code_bytes=code_bytes("vectorised"),
                                cost=_op_cost, static=True)
