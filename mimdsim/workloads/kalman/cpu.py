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

import dataclasses
import difflib
import math
import numbers
from dataclasses import dataclass

from kernels import kalman as kk

from ...errors import ConfigError
from ...report import Report, empty_cycles

CPU_KINDS = ("compute", "memory", "launch")


@dataclass(frozen=True)
class CpuSpec:
    """One multi-core CPU: cores, clocks, SIMD width, issue ports and DRAM bandwidth."""

    name: str
    cores: int
    threads: int  # hardware threads (SMT); share the core's ports
    clock_hz: float  # base clock, sustained on all cores
    turbo_clock_hz: float  # single-core turbo
    simd_fp32: int  # fp32 lanes per vector instruction (AVX2: 8)
    fp_per_cycle: int  # vector FP instructions issued per cycle per core (FMA ports)
    loads_per_cycle: int
    stores_per_cycle: int
    memory_bytes_per_second: float
    parallel_overhead_s: float = 2e-6  # fork/join of one parallel region (unknown; assumption)

    def __post_init__(self):
        for name in ("cores", "threads", "simd_fp32", "fp_per_cycle", "loads_per_cycle", "stores_per_cycle"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
                raise ConfigError(f"CPU {self.name!r}: {name}={v!r} must be an integer >= 1; "
                                  f"pass e.g. cpu({self.name!r}, {name}=1)")
        for name in ("clock_hz", "turbo_clock_hz", "memory_bytes_per_second"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v) or v <= 0:
                raise ConfigError(f"CPU {self.name!r}: {name}={v!r} must be a positive finite number")
        v = self.parallel_overhead_s
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v) or v < 0:
            raise ConfigError(f"CPU {self.name!r}: parallel_overhead_s={v!r} must be a finite number of seconds >= 0")
        if self.threads < self.cores:
            raise ConfigError(f"CPU {self.name!r}: threads={self.threads} < cores={self.cores}; a core runs at "
                              f"least one thread")

    def replace(self, **overrides) -> "CpuSpec":
        names = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(overrides) - names)
        if unknown:
            raise ConfigError(f"unknown CPU field(s) {unknown}; valid fields: {', '.join(sorted(names))}")
        return dataclasses.replace(self, **overrides)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


PRESETS = {
    # Intel Core i7-9750H (Coffee Lake-H, 2019), the CPU of the TRACKR benchmark (hardware.md):
    # 6 cores / 12 threads, 2.6 GHz base, 4.5 GHz max turbo, 41.8 GB/s (DDR4-2666, 2 channels)
    # per Intel ARK; AVX2 (8 x fp32); Skylake-family core: 2 FMA ports, 2 loads + 1 store per cycle
    # (Intel 64 and IA-32 Architectures Optimization Reference Manual).
    "i7-9750h": dict(cores=6, threads=12, clock_hz=2.6e9, turbo_clock_hz=4.5e9, simd_fp32=8, fp_per_cycle=2,
                     loads_per_cycle=2, stores_per_cycle=1, memory_bytes_per_second=41.8e9),
}
DESCRIPTIONS = {"i7-9750h": "Intel Core i7-9750H (6 cores, 12 threads, AVX2), the TRACKR CPU reference"}


def cpu(name="i7-9750h", **overrides) -> CpuSpec:
    """A CPU preset with any field overridden: ``cpu("i7-9750h", cores=4)``."""
    if isinstance(name, CpuSpec):
        return name.replace(**overrides) if overrides else name
    if name not in PRESETS:
        close = difflib.get_close_matches(str(name).lower(), PRESETS, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"unknown CPU {name!r}; presets are {', '.join(PRESETS)}.{hint}")
    base = CpuSpec(name=name, **PRESETS[name])
    return base.replace(**overrides) if overrides else base


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
    kk._check(variant, covariance)
    n_cores = spec.cores if cores is None else cores
    if isinstance(n_cores, bool) or not isinstance(n_cores, numbers.Integral) or not 1 <= n_cores <= spec.cores:
        raise ConfigError(f"cores={cores!r} must be an integer between 1 and {spec.cores} ({spec.name})")
    if isinstance(tracks, bool) or not isinstance(tracks, numbers.Integral) or tracks < 1:
        raise ConfigError(f"tracks={tracks!r} must be an integer >= 1")
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
