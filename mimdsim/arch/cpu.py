"""CPU specifications, with presets: the host-side reference of the workloads (docs/workloads.md,
"CPU model"). Hardware knows no model: the Kalman estimate lives in ``mimdsim/workloads/kalman/cpu.py``."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..errors import ConfigError
from .presets import Family


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
        CPUS.check(self, ints=dict.fromkeys(("cores", "threads", "simd_fp32", "fp_per_cycle", "loads_per_cycle",
                                             "stores_per_cycle"), 1),
                   positive=("clock_hz", "turbo_clock_hz", "memory_bytes_per_second"),
                   seconds=("parallel_overhead_s",))
        if self.threads < self.cores:
            raise ConfigError(f"CPU {self.name!r}: threads={self.threads} < cores={self.cores}; a core runs at "
                              f"least one thread")

    def replace(self, **overrides) -> "CpuSpec":
        return CPUS.replace(self, overrides)

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

CPUS = Family(CpuSpec, kind="CPU", maker="cpu", presets=PRESETS, descriptions=DESCRIPTIONS)


def cpu(name: str | CpuSpec = "i7-9750h", **overrides) -> CpuSpec:
    """A CPU preset with any field overridden: ``cpu("i7-9750h", cores=4)``."""
    return CPUS.get(name, overrides)
