"""A simple multi-core CPU model of the same Kalman work (docs/workloads.md, "2.2 CPU").

Per core, a track's instructions (``kernels/mimdsim_kalman/track_fit.py`` counts) issue on the core's ports::

    cycles per track = max(arith / fp_per_cycle, loads / loads_per_cycle, stores / stores_per_cycle)

with the ``scalar`` variant one track at a time (dense scalar code), and the ``vectorised``
variant SIMD across tracks (structure-of-arrays: each float2 view-pair instruction of the chip
becomes 2 scalar operations, ``simd_fp32`` tracks per vector instruction). Tracks are split
evenly over ``cores``; with a shared covariance each core runs the covariance pass once.

    run = max(ceil(tracks / cores) x cycles per track + covariance pass, memory traffic / bandwidth)
          / clock + parallel_overhead_s (when cores > 1)

The clock is ``turbo_clock_hz`` on one core and ``clock_hz`` (base, sustained) on several.
SMT threads share a core's ports and add nothing here. Not modelled: caches (the working set
per track is a few hundred bytes), branch mispredictions, frequency steps between base and
turbo, compiler quality.

``trackr_cpu_estimate`` models TRACKR's own CPU reference as built instead (Eigen, SSE2, lazy
expressions re-evaluated, OpenMP over 500-track batches; docs/workloads.md §2.3): the CPU row of
the Kalman comparison with TRACKR's program.
"""
from __future__ import annotations

from ...kernels.mimdsim_kalman import track_fit as kk

from ...arch.cpu import CpuSpec, cpu
from ...report import Report, empty_cycles
from ...checks import check_int
from .program import check_variant

CPU_KINDS = ("compute", "memory", "launch")


def _pass_cycles(spec: CpuSpec, variant: str, part: str, planes: int, across_tracks: bool = True) -> float:
    """Core cycles of one pass: per track when ``across_tracks`` (the vectorised variant then runs
    ``simd_fp32`` tracks per instruction, each chip float2 instruction being 2 scalar operations),
    else one pass run on its own with the chip's instruction counts (the shared covariance pass)."""
    if across_tracks:
        scale = kk.LANES[variant] / spec.simd_fp32 if variant == "vectorised" else 1.0
    else:
        scale = 1.0
    arith = kk.pass_arith(variant, part, planes) * scale
    ld, st = kk.pass_memory(variant, part, planes)
    return max(arith / spec.fp_per_cycle, ld * scale / spec.loads_per_cycle, st * scale / spec.stores_per_cycle)


def kalman_estimate(tracks, planes=5, cpu_spec="i7-9750h", *, variant="vectorised", covariance="shared",
                    cores=None) -> Report:
    """The Kalman fit of ``tracks`` tracks on ``cores`` cores (default: all) of a CPU."""
    spec = cpu_spec if isinstance(cpu_spec, CpuSpec) else cpu(cpu_spec)
    check_variant(variant, covariance)
    n_cores = spec.cores if cores is None else check_int("cores", cores, low=1, high=spec.cores,
                                                         fix=f"{spec.name} has {spec.cores} cores")
    check_int("tracks", tracks, low=1)
    hz = spec.turbo_clock_hz if n_cores == 1 else spec.clock_hz
    state = _pass_cycles(spec, variant, "state", planes)
    per_core = -(-tracks // n_cores)
    if covariance == "shared":
        compute = per_core * state + _pass_cycles(spec, variant, "cov", planes, across_tracks=False)
    else:
        compute = per_core * (state + _pass_cycles(spec, variant, "cov", planes))
    f = kk.FLOAT_BYTES
    out_cov = {"scalar": 10, "vectorised": 6}[variant] * planes * (tracks if covariance == "per-track" else 1)
    nbytes = f * (tracks * planes * (2 + 4) + out_cov)
    memory = nbytes / spec.memory_bytes_per_second * hz
    launch = spec.parallel_overhead_s * hz if n_cores > 1 else 0.0
    cycles = empty_cycles(CPU_KINDS)
    del cycles["update"], cycles["io"]
    cycles["forward"]["compute"] = compute
    cycles["forward"]["memory"] = max(0.0, memory - compute)
    cycles["forward"]["launch"] = launch
    steps = {"kalman.fit": {"count": 1, "compute": compute, "memory": max(0.0, memory - compute), "launch": launch}}
    return Report(
        architecture=spec.name, platform="cpu", model=f"kalman {planes} planes, {variant}, {covariance} covariance",
        mode=f"{n_cores} core(s)", timesteps=planes, batch_size=int(tracks), clock_hz=hz, cycles=cycles,
        steps=steps, memory={"host_bytes": int(nbytes)},  # hits read and results written in DRAM
        placement={"cores": n_cores, "clock_hz": hz, "cycles_per_track": state, "variant": variant,
                   "covariance": covariance, "precision": "fp32",
                   "bound": "memory" if memory > compute else "compute"},
        notes=[f"{n_cores} core(s) at {hz / 1e9:.2f} GHz, {state:.1f} core cycles per track "
               f"({'SIMD across tracks' if variant == 'vectorised' else 'scalar'} code)"],
    )


# ------------------------------------------------------------------ TRACKR's CPU reference as built
# src/KalmanFilter.cpp @c26fc47, benchmark.cpp @037d707, benchmark_omp.cpp @120dc28
# (docs/as-built/trackr.md §4; docs/workloads.md §2.3). Eigen, batched: a 4 x N MatrixXf of
# states, one track per column; `auto` expressions re-evaluated at every use.
TRACKR_SIMD_FP32 = 4  # Makefile @b65d25b L4: -O3 and no -march, so SSE2 (128-bit), no FMA
TRACKR_BATCH = 500  # benchmark_omp.cpp L158-160: one KalmanFilter of 500 tracks per OpenMP iteration
# Per track and plane, forward (L116-148), counting each evaluation of the lazy expressions:
# F*p 3x (L119), p_proj^T*C_proj^-1 2x and m^T*HTG 2x (L138), tmp*C_filt 2x (L139).
FORWARD_PRODUCTS = 3 + 2 + 2 + 2
FORWARD_ELEMENTWISE = 2  # the + of L138, in both evaluations of tmp
FORWARD_COPY_FLOATS = 2  # the two hit rows copied into mm (L133-134)
BACKWARD_PRODUCTS = 1  # A * (p_smooth - p_proj) (L164)
BACKWARD_ELEMENTWISE = 2  # the - and the + of L164
# Per batch (per KalmanFilter::execute): 4x4 x 4x4 products: F*C*FT 7x per plane (2 products) and
# H^T*G 6x, (H^T G)*H 4x per plane; A = C_f*FT*C_p^-1 per gap (2 products).
BATCH_PRODUCTS_PER_PLANE = 7 * 2 + 6 + 4
BATCH_PRODUCTS_PER_GAP = 2
FIXED_INVERSES_PER_PLANE = 10  # Matrix4f inverses: C_proj^-1 8x (in C_filt 4x ...) + 2x in tmp (§4)
DYNAMIC_INVERSES_PER_GAP = 1  # MatrixXf inverse (partial-pivot LU) in A (L161)
HEAP_ALLOCATIONS = 30  # history matrices and temporaries per call (§4) [assumption on the count]
MALLOC_CYCLES = 100  # one glibc malloc + free of a small block [assumption]
ISSUE_PER_CYCLE = 4  # Skylake: 4 micro-ops allocated per cycle (INTEL-OPT)
SHUFFLES_PER_CYCLE = 1  # one shuffle port (port 5) (INTEL-OPT)


def trackr_track_ops(planes: int) -> dict:
    """SSE instructions per track: a product of a 4x4 held in 4 registers with a track's 4-vector is
    4 scalar loads + 4 broadcasts (shufps) + 4 mulps + 3 addps + 1 store; an element-wise 4-vector
    operation 2 loads + 1 addps/subps + 1 store; a copied float 1 load + 1 store."""
    prod = FORWARD_PRODUCTS * planes + BACKWARD_PRODUCTS * (planes - 1)
    ew = FORWARD_ELEMENTWISE * planes + BACKWARD_ELEMENTWISE * (planes - 1)
    cp = FORWARD_COPY_FLOATS * planes
    return {"fp": 7 * prod + ew, "loads": 4 * prod + 2 * ew + cp, "stores": prod + ew + cp, "shuffles": 4 * prod}


def _port_cycles(spec: CpuSpec, ops: dict) -> float:
    fp_instr = ops["fp"]
    uops = ops["fp"] + ops["loads"] + ops["stores"] + ops["shuffles"]
    return max(fp_instr / spec.fp_per_cycle, ops["loads"] / spec.loads_per_cycle, ops["stores"] / spec.stores_per_cycle,
               ops["shuffles"] / SHUFFLES_PER_CYCLE, uops / ISSUE_PER_CYCLE)


def trackr_batch_fixed_ops(planes: int) -> dict:
    """Per call: fixed-size 4x4 products in SSE (16 loads, 16 broadcasts, 16 mulps + 12 addps, 4
    stores each); 4x4 inverses as scalar SSE code, the cofactor count of ``kernels/trackr/kalman_filter.py``
    (fixed size) and a partial-pivot LU plus 4 solves, 2 x 4^3 multiply-adds (dynamic size)."""
    from ...kernels.trackr.kalman_filter import INVERSE_DENSE
    n_prod = BATCH_PRODUCTS_PER_PLANE * planes + BATCH_PRODUCTS_PER_GAP * (planes - 1)
    inv_fixed, inv_dyn = FIXED_INVERSES_PER_PLANE * planes, DYNAMIC_INVERSES_PER_GAP * (planes - 1)
    lu = 2 * 2 * 4 ** 3  # multiply + add
    return {"fp": 28 * n_prod + INVERSE_DENSE.arith * inv_fixed + lu * inv_dyn,
            "loads": 16 * n_prod + INVERSE_DENSE.loads * inv_fixed + 2 * 4 ** 3 * inv_dyn,
            "stores": 4 * n_prod + INVERSE_DENSE.stores * inv_fixed + 16 * inv_dyn,
            "shuffles": 16 * n_prod}


def trackr_cpu_estimate(tracks, planes=5, cpu_spec="i7-9750h", *, cores=None, threads=None,
                        batch=TRACKR_BATCH) -> Report:
    """TRACKR's Eigen reference on a CPU. One thread (``threads=1``): one ``KalmanFilter`` of all
    ``tracks`` (benchmark.cpp). More: OpenMP over batches of ``batch`` tracks (benchmark_omp.cpp),
    dealt in rounds of ``threads``; a core's SMT threads share its ports, so the busiest core
    runs ceil(batches in the round / cores) batches one after another::

        batch cycles = tracks x per-track port cycles + fixed (products, inverses, heap allocations)
        run = Σ rounds ceil(b_round / cores) x batch cycles / clock + parallel_overhead_s (threads > 1)

    (a short last batch is costed as a full one: TRACKR ran whole batches of 500).
    """
    spec = cpu_spec if isinstance(cpu_spec, CpuSpec) else cpu(cpu_spec)
    tracks = check_int("tracks", tracks, low=1)
    n_cores = spec.cores if cores is None else check_int("cores", cores, low=1, high=spec.cores,
                                                         fix=f"{spec.name} has {spec.cores} cores")
    smt = spec.threads // spec.cores
    n_threads = n_cores * smt if threads is None else check_int(
        "threads", threads, low=1, high=n_cores * smt, fix=f"{n_cores} core(s) run at most {n_cores * smt} threads")
    batch = check_int("batch", batch, low=1, fix="give the tracks per OpenMP batch (TRACKR: 500)")
    # TRACKR_SIMD_FP32 lanes hold one track's 4-vector: the counts above are per track
    per_track = _port_cycles(spec, trackr_track_ops(planes))
    fixed = _port_cycles(spec, trackr_batch_fixed_ops(planes)) + HEAP_ALLOCATIONS * MALLOC_CYCLES
    if n_threads == 1:
        hz, sizes = spec.turbo_clock_hz, [tracks]
        compute = tracks * per_track + fixed
        launch = 0.0
    else:
        hz = spec.turbo_clock_hz if n_cores == 1 else spec.clock_hz  # as §2.2: turbo on one core
        batches = -(-tracks // batch)
        rounds, last = divmod(batches, n_threads)  # full rounds of n_threads batches, and the rest
        per_batch = min(batch, tracks) * per_track + fixed  # a short last batch is costed as a full one
        compute = (rounds * -(-n_threads // n_cores) + -(-last // n_cores)) * per_batch
        sizes = range(batches)
        launch = spec.parallel_overhead_s * hz
    cycles = empty_cycles(CPU_KINDS)
    del cycles["update"], cycles["io"]
    cycles["forward"]["compute"] = compute
    cycles["forward"]["launch"] = launch
    steps = {"kalman.fit": {"count": 1, "compute": compute, "memory": 0.0, "launch": launch}}
    return Report(
        architecture=spec.name, platform="cpu", model=f"kalman {planes} planes, TRACKR Eigen reference as built",
        mode=f"{n_threads} thread(s) on {n_cores} core(s)", timesteps=planes, batch_size=int(tracks), clock_hz=hz,
        cycles=cycles, steps=steps,  # hits p0 and the three 4P x N history matrices (L97-100)
        memory={"host_bytes": int(kk.FLOAT_BYTES * tracks * planes * (4 + 4 * 3))},
        placement={"cores": n_cores, "threads": n_threads, "clock_hz": hz, "cycles_per_track": per_track,
                   "fixed_cycles_per_batch": fixed, "batches": len(sizes), "variant": "trackr-eigen",
                   "precision": "fp32", "bound": "compute"},
        notes=[f"TRACKR's Eigen reference: {n_threads} thread(s) at {hz / 1e9:.2f} GHz, {per_track:.1f} core cycles "
               f"per track (SSE2, lazy expressions re-evaluated) + {fixed:,.0f} per batch of {batch}"],
    )
