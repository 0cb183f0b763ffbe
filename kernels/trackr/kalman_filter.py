"""TRACKR's Kalman codelet as built: the instructions of ``KalmanFilter::compute()`` counted
from its source, call by call (docs/as-built/trackr.md §1; docs/workloads.md §1.3b).

Source: lohedges/trackr ``src/KalmanFilterCodelet.cpp``. Two builds were measured:

* ``scalar``      version **V_b** (@0e1f12e): dense ``copy/sum/sub/mul/inverse`` helpers over
  ``Vector<Input<Vector<float>>>`` rows, one float per instruction; the logs
  ``benchmark_ipu_{100,200,400}_threaded_warm_clang.txt`` (@89a1521);
* ``vectorised``  version **V_e** (index id 49030690108): ``float4`` casts in ``copy/sum/sub``,
  zero terms pruned in ``mul_4x4_4x4``, ``mul_4x4_4xN``, ``inverse_4x4`` and ``fast_copy``; the
  logs ``benchmark_ipu_mk{1,2}_408_threaded_warm_vector_manual_clang.txt`` (@483c0f9).

The vertex holds ``n`` tracks as the columns of 4 x n row tensors; every intermediate (projected,
filtered, smoothed states, temporaries) is written to a tensor and read back by the next helper.
The covariance work (4x4 products and inverses) runs once per vertex, whatever ``n``. Each call
of ``compute()`` is counted as ``fixed + per_track x n`` worker instructions (``Call``), from the
helper's loop nest and these code-generation assumptions (no disassembly exists; each is named
and documented in docs/workloads.md §1.3b):

* a statement's FP, load and store instructions follow ``kernels.mimdsim_kalman.track_fit.MatOp``: a load
  co-issues with an FP instruction, stores and loop branches take their own slot;
* column loops are ``brnzdec`` loops with post-incrementing loads/stores (1 instruction per
  iteration), preceded by ``LOOP_SETUP``; the 4-row loops are not unrolled (``ROW_STEP``);
* ``Vector<Vector>`` indexing: ``in[r]`` loads the row's data pointer (``ROW_LOAD``) from the
  field's descriptor array, whose base is loaded from the vertex state once per call and operand
  (``FIELD_LOAD``); row offsets ``i*4`` cost one integer add per operand (``OFFSET``);
* ``out`` may alias the inputs (no ``__restrict``), so coefficients are reloaded after every
  store and V_b's ``+=`` is stored on every term;
* V_e's ``mul_4x4_4xN`` column loops (split in two so that each row's coefficients are fixed; the
  source comment before them, V_e L354, says the split optimised best) are vectorised to float2
  behind a runtime alias check; V_b's dense ``mul`` loops are not (its ``out`` is stored inside
  the k-accumulation).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..codelet import register
from ..mimdsim_kalman.track_fit import FLOAT_BYTES, RECIPROCAL, MatOp
from ..tile import VERTEX_RUN_INSTRUCTIONS, WORKER_VERTEX_OVERHEAD, Tile

BUILDS = {"scalar": "V_b @0e1f12e", "vectorised": "V_e (index id 49030690108)"}

# Named instruction counts (docs/workloads.md §1.3b, "as built: constants").
FIELD_LOAD = 1  # ld32: a field's row-descriptor base from the vertex state, per operand and call
ROW_LOAD = 1  # ld32: one row's data pointer (`&in[r][0]`), hoisted out of the column loop
SIZE_LOAD = 1  # ld32: `.size()` of a SPAN row (V_b re-reads it per row, `in[i].size()`)
SHIFT = 1  # `size / 4` for the float4 loops (V_e), once per call
OFFSET = 1  # add: a row offset `i*4` / `(i+1)*4` per operand that has one
LOOP_SETUP = 2  # trip count and counter before a column loop
LOOP_BRANCH = 1  # brnzdec per iteration of a loop (addresses post-increment)
ROW_STEP = 1  # branch of the (not unrolled) 4-row loop, per row
ALIAS_CHECK = 4  # runtime overlap test of out against the two input rows before a vectorised loop
SPLAT = 1  # a coefficient copied into both halves of a float2 register (V_e mul_4x4_4xN)

# 4x4 inverses (docs/as-built/trackr.md §1.4): FP operations after common subexpressions.
# Dense (V_b `inverse`): 18 minors x 3 + det 4 x (3 mul + 2 add) + 4 mul + 3 add + 4 outputs
# reusing det's brackets (1 mul) + 12 x (3 mul + 2 add + 1 mul) + 8 negations, + reciprocal.
INVERSE_DENSE = MatOp("inverse", 18 * 3 + (4 * 5 + 4 + 3) + 4 + 12 * 6 + 8 + RECIPROCAL, 16 + 8, 16)
# Pruned (V_e inverse_4x4, L375-422): 9 minors x 3 + 4 surviving products + det 9 + outputs
# 34 mul + 4 sub + 8 negations, + reciprocal; 12 distinct elements read.
INVERSE_PRUNED = MatOp("inverse_4x4", 9 * 3 + 4 + 9 + 34 + 4 + 8 + RECIPROCAL, 12 + 8, 16)


@dataclass(frozen=True)
class Call:
    """One helper call of ``compute()``: ``fixed + per_track x n`` worker instructions."""

    line: str  # source line(s) of the call
    text: str
    fixed: float
    per_track: float
    part: str  # "state" (4 x n work), "cov" (4x4 work, once per vertex) or "control" (loops)


# ------------------------------------------------------------------ helpers, per build


def copy_rows(variant, rows, offsets=0):
    """``copy`` of ``rows`` rows of n floats (V_b ``copy(InputFloat&, InOutFloat&, ...)``, a row loop
    around a column loop: ld32, st32, brnzdec per float; V_e
    L200-228: float4 = 2 ld64 + 2 st64 + brnzdec per 4 floats)."""
    if variant == "scalar":
        per_row = 2 * ROW_LOAD + SIZE_LOAD + LOOP_SETUP + ROW_STEP
        fixed = 2 * FIELD_LOAD + offsets * OFFSET + rows * per_row
        return fixed, rows * (MatOp("cp", 0, 1, 1).instructions + LOOP_BRANCH)
    per_row = 2 * ROW_LOAD + LOOP_SETUP + ROW_STEP
    fixed = 2 * FIELD_LOAD + SIZE_LOAD + SHIFT + offsets * OFFSET + rows * per_row
    return fixed, rows * (MatOp("cp4", 0, 2, 2).instructions + LOOP_BRANCH) / 4


def elementwise(variant):
    """``sum``/``sub`` of two 4 x n tensors (V_b ``sum``/``sub``: ld, ld, f32add, st, brnzdec per float; V_e
    L251-311: 4 ld64, 2 f32v2add, 2 st64, brnzdec per float4)."""
    if variant == "scalar":
        per_row = 3 * ROW_LOAD + SIZE_LOAD + LOOP_SETUP + ROW_STEP
        return 3 * FIELD_LOAD + 4 * per_row, 4 * (MatOp("add", 1, 2, 1).instructions + LOOP_BRANCH)
    per_row = 3 * ROW_LOAD + LOOP_SETUP + ROW_STEP
    fixed = 3 * FIELD_LOAD + SIZE_LOAD + SHIFT + 4 * per_row
    return fixed, 4 * (MatOp("add4", 2, 4, 2).instructions + LOOP_BRANCH) / 4


def mul_dense():
    """V_b ``mul`` (4x4 times 4 x n; L227-270): per output `out=0` then 4 x (ld a, ld b, mul,
    add, st out) — 8 FP, 8 loads, 5 stores — and brnzdec; per row the out, in0 and 4 in1 row
    pointers, `in1[0].size()`, the loop set-up and the row branch."""
    per_row = 6 * ROW_LOAD + SIZE_LOAD + LOOP_SETUP + ROW_STEP
    return 3 * FIELD_LOAD + 4 * per_row, 4 * (MatOp("mac4", 8, 8, 5).instructions + LOOP_BRANCH)


def mul_4xn_pruned():
    """V_e ``mul_4x4_4xN`` (L343-371): two loops of 2 rows; per row 2 coefficients (ld, splat),
    3 row pointers, the alias check and loop set-up; per float2 of columns 2 ld64, 2 f32v2mul,
    f32v2add, st64, brnzdec."""
    per_row = 3 * ROW_LOAD + 2 * (1 + SPLAT) + ALIAS_CHECK + LOOP_SETUP + ROW_STEP
    return 3 * FIELD_LOAD + SIZE_LOAD + 4 * per_row, 4 * (MatOp("v2", 3, 2, 1).instructions + LOOP_BRANCH) / 2


def mul_4x4_pruned():
    """V_e ``mul_4x4_4x4`` (L315-340): loop over 4 columns, body unrolled over the 4 rows; per
    output 2 coefficient and 2 element loads (reloaded: out may alias in0), 2 mul, 1 add, 1 st."""
    per_col = 4 * MatOp("out", 3, 4, 1).instructions + LOOP_BRANCH
    return 3 * FIELD_LOAD + 12 * ROW_LOAD + LOOP_SETUP + 4 * per_col


def mul_4x4(variant):
    if variant == "scalar":
        fixed, per_col = mul_dense()
        return fixed + 4 * per_col  # the same `mul` with in1[0].size() = 4
    return mul_4x4_pruned()


def inverse(variant):
    return 2 * FIELD_LOAD + (INVERSE_DENSE if variant == "scalar" else INVERSE_PRUNED).instructions


def copy_4x4(variant, offsets=0):
    """V_b ``copy`` of a 4x4 (16 floats); V_e ``fast_copy`` (L231-248): 8 scalar copies (ld32,
    st32) through 4 + 4 row pointers."""
    if variant == "scalar":
        fixed, per_col = copy_rows("scalar", 4, offsets)
        return fixed + 4 * per_col
    return 2 * FIELD_LOAD + offsets * OFFSET + 8 * ROW_LOAD + MatOp("fast_copy", 0, 8, 8).instructions


def sum_4x4(variant):
    fixed, per_col = elementwise(variant)
    return fixed + 4 * per_col


# ------------------------------------------------------------------ compute(), in program order


def _state(line, text, cost):
    return Call(line, text, cost[0], cost[1], "state")


def _cov(line, text, instr):
    return Call(line, text, instr, 0, "cov")


def program(variant: str, planes: int) -> list[Call]:
    """Every helper call of ``compute()`` for ``planes`` planes, in order (V_e line numbers;
    V_b has the same statements in the same order, with ``copy`` for ``fast_copy``, ``mul`` for
    both products, ``inverse`` and 4 rows in the two hit copies)."""
    v = variant
    hit_rows = 4 if v == "scalar" else 2  # V_e copies rows 0 and 2 only (stride 2, L128, L153)
    calls = [Call("L119", "num_planes = p0.size()/4; loop set-ups", SIZE_LOAD + SHIFT + 2 * LOOP_SETUP, 0, "control"),
             _state("L128", "copy(p0, p)", copy_rows(v, hit_rows)),
             _cov("L131", "fast_copy(C0, C)", copy_4x4(v))]
    for _ in range(planes):
        mul_n = mul_dense() if v == "scalar" else mul_4xn_pruned()
        calls += [
            _state("L138", "mul_4x4_4xN(F, p, p_proj)", mul_n),
            _state("L139", "copy(p_proj, p_projs[i])", copy_rows(v, 4, 1)),
            _cov("L142", "mul_4x4_4x4(F, C, tmp0)", mul_4x4(v)),
            _cov("L143", "mul_4x4_4x4(tmp0, FT, C_proj)", mul_4x4(v)),
            _cov("L144", "fast_copy(C_proj, C_projs[i])", copy_4x4(v, 1)),
            _cov("L147", "inverse_4x4(C_proj, tmp0)", inverse(v)),
            _cov("L148", "sum(HTGH, tmp0, C_proj)", sum_4x4(v)),
            _cov("L149", "inverse_4x4(C_proj, C_filt)", inverse(v)),
            _cov("L150", "fast_copy(C_filt, C_filts[i])", copy_4x4(v, 1)),
            _state("L153", "copy(p0[i], m)", copy_rows(v, hit_rows, 1)),
            _state("L154", "mul_4x4_4xN(tmp0, p_proj, tmpN0)", mul_n),
            _state("L155", "mul_4x4_4xN(HTG, m, tmpN1)", mul_n),
            _state("L156", "sum(tmpN0, tmpN1, tmpN1)", elementwise(v)),
            _state("L159", "mul_4x4_4xN(C_filt, tmpN1, p_filt)", mul_n),
            _state("L160", "copy(p_filt, p_filts[i])", copy_rows(v, 4, 1)),
            _state("L163", "copy(p_filt, p)", copy_rows(v, 4)),
            _cov("L166", "fast_copy(C_filt, C)", copy_4x4(v)),
            Call("L135", "forward loop branch", LOOP_BRANCH, 0, "control"),
        ]
    calls += [_state("L170", "copy(p_filt, p_smooth)", copy_rows(v, 4)),
              _state("L171", "copy(p_smooth, p_smooths[P-1])", copy_rows(v, 4, 1))]
    for _ in range(planes - 1):
        mul_n = mul_dense() if v == "scalar" else mul_4xn_pruned()
        calls += [
            _cov("L178", "fast_copy(C_filts[i], C_filt)", copy_4x4(v, 1)),
            _cov("L179", "fast_copy(C_projs[i+1], C_proj)", copy_4x4(v, 1)),
            _cov("L180", "inverse_4x4(C_proj, tmp1)", inverse(v)),
            _cov("L181", "mul_4x4_4x4(C_filt, FT, tmp0)", mul_4x4(v)),
            _cov("L182", "mul_4x4_4x4(tmp0, tmp1, tmp2)", mul_4x4(v)),
            _state("L185", "copy(p_filts[i], p_filt)", copy_rows(v, 4, 1)),
            _state("L186", "copy(p_projs[i+1], p_proj)", copy_rows(v, 4, 1)),
            _state("L187", "sub(p_smooth, p_proj, p_smooth)", elementwise(v)),
            _state("L188", "mul_4x4_4xN(tmp2, p_smooth, tmpN0)", mul_n),
            _state("L189", "sum(p_filt, tmpN0, p_smooth)", elementwise(v)),
            _state("L190", "copy(p_smooth, p_smooths[i])", copy_rows(v, 4, 1)),
            Call("L175", "backward loop branch", LOOP_BRANCH, 0, "control"),
        ]
    return calls


def vertex_instructions(variant: str, planes: int) -> tuple[float, float]:
    """(fixed, per track) worker instructions of one vertex: ``WORKER_VERTEX_OVERHEAD`` + Σ calls."""
    calls = program(variant, planes)
    return WORKER_VERTEX_OVERHEAD + sum(c.fixed for c in calls), sum(c.per_track for c in calls)


def worker0_tracks(tracks, workers):
    """Tracks on worker 0, which TRACKR gives the remainder (KalmanFilterIPU.cpp @cf6ca48 L246-253):
    ``tracks // workers + tracks % workers``."""
    t = np.asarray(tracks)
    return t // workers + t % workers


def trackr_cycles(tracks, planes: int, tile: Tile, variant: str = "vectorised"):
    """Cycles of TRACKR's compute set on each tile with ``tracks[v]`` tracks: one ``KalmanFilter``
    vertex per worker (KalmanFilterIPU.cpp L240-253, L353), worker 0 the busiest::

        cycles = workers x (VERTEX_RUN_INSTRUCTIONS + fixed + per_track x n_0) + vertex_launch_cycles

    (0 on a tile without tracks)."""
    tracks = np.asarray(tracks)
    fixed, per_track = vertex_instructions(variant, planes)
    instr = VERTEX_RUN_INSTRUCTIONS + fixed + per_track * worker0_tracks(tracks, tile.workers)
    return np.where(tracks > 0, tile.workers * instr + tile.vertex_launch_cycles, 0).astype(np.float64)


# ------------------------------------------------------------------ memory (KalmanFilterIPU.cpp L281-342)

ROWS_PER_VERTEX = {"4xn": 7 * 4, "4Pxn": 4, "4x4": 11 * 4, "4Px4": 2}  # rows of the 24 fields (x planes for 4P)
DESCRIPTOR_BYTES = 8  # a SPAN vector: pointer + size
CODE_BYTES_PER_INSTRUCTION = 4


def code_bytes(variant: str, planes: int = 5) -> int:
    """Machine code estimate: helpers inlined at every call site, so one copy of every call's
    fixed part and loop body (per-track part per track), 4 B per instruction, + vertex entry."""
    calls = program(variant, 2)  # one forward and one backward iteration's call sites
    sites = {(c.line, c.text): c for c in calls}.values()
    return int(CODE_BYTES_PER_INSTRUCTION * (WORKER_VERTEX_OVERHEAD + sum(c.fixed + c.per_track for c in sites)))


def tile_bytes(tracks, planes: int, workers: int, variant: str = "vectorised") -> dict:
    """SRAM per tile by category (arrays over tiles): TRACKR's 24 fields and 6 constants per vertex.

    Per track: 7 4xn + 4 (4P)xn variables and the (4P)xn hit constant = 28 + 20P floats.
    Per vertex (6 per busy tile): 11 4x4 + 2 (4P)x4 variables and 5 4x4 constants = 256 + 32P floats,
    and the vertex state: 24 field descriptors + (72 + 24P) row descriptors, 8 B each."""
    tracks = np.asarray(tracks, dtype=np.int64)
    P, f = int(planes), FLOAT_BYTES
    vertices = np.where(tracks > 0, workers, 0)
    rows = 7 * 4 + 4 * 4 * P + 11 * 4 + 2 * 4 * P
    out = {
        "hits": tracks * f * 4 * P,  # c_p0 constant (x, y in rows 0 and 2 of each plane block)
        "states": tracks * f * (7 * 4 + 4 * 4 * P),
        "covariances": vertices * f * (11 * 16 + 2 * 16 * P + 5 * 16),
        "code": np.where(tracks > 0, code_bytes(variant, P) + vertices * DESCRIPTOR_BYTES * (24 + rows), 0),
    }
    return {k: np.asarray(v, dtype=np.int64) for k, v in out.items()}


def copy_elements(tracks, planes: int, workers: int):
    """Floats moved by the timed program's Copy programs (KalmanFilterIPU.cpp L345-350): per vertex
    c_p0 (4P x n) and the five 4x4 constants; (elements, regions) per tile."""
    tracks = np.asarray(tracks, dtype=np.int64)
    vertices = np.where(tracks > 0, workers, 0)
    return tracks * 4 * planes + vertices * 5 * 16, vertices * 6


def _cost(tiles, g, work, tile):  # one compute set; g["tracks"][v] tracks on tile v's six vertices
    return tiles, trackr_cycles(g["tracks"], g["planes"], tile, g["variant"])


TRACKR_SCALAR = register("trackr_kalman.scalar", trackr_cycles, code_bytes=code_bytes("scalar"), cost=_cost,
                         static=True)
TRACKR_VECTORISED = register("trackr_kalman.vectorised", trackr_cycles, code_bytes=code_bytes("vectorised"),
                             cost=_cost, static=True)
