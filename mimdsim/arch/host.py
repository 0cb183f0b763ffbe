"""Host CPUs that drive a GPU, with presets: the machine a framework's per-op dispatch, launch and per-call
Python work runs on (docs/gpu-model.md, "Hosts"). Hardware knows no model: the framework's use of
``op_time_scale`` is in ``mimdsim/gpu/framework.py``.

``op_time_scale`` is the host time of one framework op on this host relative to the host on which this
project measured its per-op figures (``MEASUREMENT_HOST``, a 2-vCPU KVM guest of an AMD EPYC Zen 4 "Genoa",
/proc/cpuinfo family 25 model 17): above 1 a slower host, below 1 a faster one. It is the single-thread
speed ratio of the two CPUs; every preset's value but the measurement host's (1 by definition) is a named
assumption with a range (mimdsim/assumptions.py, "GPU hosts").
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..errors import ConfigError
from .presets import Family


@dataclass(frozen=True)
class HostSpec:
    """One GPU host: its CPU (model, sockets, cores, clocks, microarchitecture) and how long a framework op
    takes on it relative to the measurement host."""

    name: str
    description: str
    cpu: str  # the CPU model, as its maker names it
    sockets: int
    cores_per_socket: int
    base_clock_hz: float
    boost_clock_hz: float | None  # single-core boost; None where the source gives none (a cloud guest)
    microarchitecture: str
    op_time_scale: float  # host time of one framework op here / on MEASUREMENT_HOST

    def __post_init__(self):
        HOSTS.check(self, ints={"sockets": 1, "cores_per_socket": 1},
                    positive=("base_clock_hz", "boost_clock_hz", "op_time_scale"), optional=("boost_clock_hz",))
        if self.boost_clock_hz is not None and self.boost_clock_hz < self.base_clock_hz:
            raise ConfigError(f"host {self.name!r}: boost_clock_hz={self.boost_clock_hz:g} is below base_clock_hz="
                              f"{self.base_clock_hz:g}; a boost clock is at least the base clock")

    @property
    def cores(self) -> int:
        return self.sockets * self.cores_per_socket

    def replace(self, **overrides) -> "HostSpec":
        return HOSTS.replace(self, overrides)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


MEASUREMENT_HOST = "genoa-vm"

# Each field's source: docs/gpu-model.md, "Hosts". op_time_scale: the registry entry <preset>_op_time_scale.
PRESETS = {
    # this project's machine: lscpu / /proc/cpuinfo (AMD EPYC, family 25 model 17, KVM guest, 2 vCPUs, TSC 2.6 GHz)
    "genoa-vm": dict(description="2-vCPU KVM guest of an AMD EPYC Zen 4 'Genoa', family 25 model 17, SKU not "
                                 "exposed (where this project measured its per-op host figures)",
                     cpu="AMD EPYC (Genoa guest)", sockets=1, cores_per_socket=2,
                     base_clock_hz=2.6e9, boost_clock_hz=None, microarchitecture="Zen 4", op_time_scale=1.0),
    # NVIDIA DGX A100: 2x AMD EPYC 7742 (64 cores, 2.25 GHz base, 3.4 GHz boost)
    "dgx-a100": dict(description="NVIDIA DGX A100 (2x AMD EPYC 7742, Zen 2 'Rome')", cpu="AMD EPYC 7742", sockets=2,
                     cores_per_socket=64, base_clock_hz=2.25e9, boost_clock_hz=3.4e9, microarchitecture="Zen 2",
                     op_time_scale=1.46),
    # NVIDIA DGX H100: 2x Intel Xeon Platinum 8480C (56 cores, 2.0 GHz base, 3.8 GHz max turbo)
    "dgx-h100": dict(description="NVIDIA DGX H100 (2x Intel Xeon Platinum 8480C, Sapphire Rapids)",
                     cpu="Intel Xeon Platinum 8480C", sockets=2, cores_per_socket=56, base_clock_hz=2.0e9,
                     boost_clock_hz=3.8e9, microarchitecture="Golden Cove (Sapphire Rapids)", op_time_scale=1.2),
    # NVIDIA DGX-1 (V100): 2x Intel Xeon E5-2698 v4 (20 cores, 2.2 GHz base, 3.6 GHz turbo)
    "dgx-1": dict(description="NVIDIA DGX-1 with V100 (2x Intel Xeon E5-2698 v4, Broadwell)",
                  cpu="Intel Xeon E5-2698 v4", sockets=2, cores_per_socket=20, base_clock_hz=2.2e9,
                  boost_clock_hz=3.6e9, microarchitecture="Broadwell", op_time_scale=1.5),
    # an RTX 3090-era desktop: AMD Ryzen 9 5950X (16 cores, 3.4 GHz base, 4.9 GHz boost)
    "desktop-zen3": dict(description="desktop with an AMD Ryzen 9 5950X (Zen 3 'Vermeer')", cpu="AMD Ryzen 9 5950X",
                         sockets=1, cores_per_socket=16, base_clock_hz=3.4e9, boost_clock_hz=4.9e9,
                         microarchitecture="Zen 3", op_time_scale=0.85),
    # an RTX 4090-era desktop: AMD Ryzen 9 7950X (16 cores, 4.5 GHz base, 5.7 GHz boost)
    "desktop-zen4": dict(description="desktop with an AMD Ryzen 9 7950X (Zen 4 'Raphael')", cpu="AMD Ryzen 9 7950X",
                         sockets=1, cores_per_socket=16, base_clock_hz=4.5e9, boost_clock_hz=5.7e9,
                         microarchitecture="Zen 4", op_time_scale=0.68),
}
DESCRIPTIONS = {name: p["description"] for name, p in PRESETS.items()}

HOSTS = Family(HostSpec, kind="host", maker="host", presets=PRESETS, descriptions=DESCRIPTIONS)
host_description = HOSTS.description

# The host each GPU preset runs on unless told otherwise: NVIDIA's own systems for the data-centre parts, a
# desktop of the card's generation for the GeForce ones (docs/gpu-model.md, "Hosts").
DEFAULT_HOSTS = {"a100-40gb": "dgx-a100", "a100-80gb": "dgx-a100", "h100": "dgx-h100", "h200": "dgx-h100",
                 "v100": "dgx-1", "rtx-3090": "desktop-zen3", "rtx-4090": "desktop-zen4"}


def default_host(gpu_name: str) -> str:
    """The host preset a GPU preset runs on by default; a GPU of no preset runs on the measurement host (the
    per-op figures as measured)."""
    return DEFAULT_HOSTS.get(gpu_name, MEASUREMENT_HOST)


def host(name: str | HostSpec = MEASUREMENT_HOST, **overrides) -> HostSpec:
    """A host preset with any field overridden: ``host("dgx-a100", op_time_scale=1.3)``."""
    return HOSTS.get(name, overrides)
