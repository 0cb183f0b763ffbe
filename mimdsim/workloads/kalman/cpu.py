"""A simple multi-core CPU model of the same Kalman work (docs/workloads.md, "CPU model").

Per core, a track's instructions (``kernels/kalman.py`` counts) issue on the core's ports::

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
"""
from __future__ import annotations

from kernels import kalman as kk

from ...arch.cpu import CpuSpec, cpu
from ...report import Report, empty_cycles
from ...validate import check_int
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
