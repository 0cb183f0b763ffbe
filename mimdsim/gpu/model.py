"""The GPU model: kernels costed on a :class:`GpuSpec`, launch by launch. Knows no workload.

A workload describes its work as a list of :class:`Kernel` s (its FLOPs, HBM bytes, launches);
each launch costs (roofline with a latency floor and size-dependent efficiencies)::

    t = max(floor, flops / (eff_flops(flops) * peak), bytes / (eff_hbm(bytes) * bandwidth))

where each ratio is capped by the time of the smallest amount at the next efficiency step
(the CALC curves are step functions; without the cap a slightly larger kernel could be
faster). :func:`workload_estimate` adds launch overheads and host transfers over PCIe and
returns a :class:`~mimdsim.report.Report` with the MIMD chip's schema.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..report import Report, empty_cycles
from ..arch.gpu import GpuSpec

WORKLOAD_KINDS = ("compute", "launch", "host")


@dataclass(frozen=True)
class Kernel:
    name: str
    phase: str  # forward, backward, update
    kind: str  # matrix (tensor cores / GEMM), vector (element-wise), gather (sparse, CUDA cores)
    flops: float
    nbytes: float
    count: int  # launches per training step
    dims: tuple = ()  # (m, n, k) of a GEMM C[m, n] = A[m, k] B[k, n]
    # operands every launch re-reads (a GEMM's weights inside the time loop): ``resident_bytes`` of them,
    # served from L2 when ``working_set`` (every such operand of the step: all the weights) fits in L2
    resident_bytes: float = 0.0
    working_set: float = 0.0


def gemm(name, phase, m, n, k, e, count):
    """C[m, n] = A[m, k] B[k, n]: 2mnk FLOPs; reads A and B, writes C."""
    return Kernel(name, phase, "matrix", 2.0 * m * n * k, e * (m * k + k * n + m * n), count, (m, n, k))


def roofline_seconds(amount: float, curve, rate: float) -> float:
    """``amount / (eff(amount) * rate)`` made monotone: never slower than the smallest amount at
    a higher efficiency step (so more work is never faster, and the GPU gets the benefit of
    the doubt between the curve's steps)."""
    if amount <= 0:
        return 0.0
    t = amount / (GpuSpec.efficiency(curve, amount) * rate)
    for threshold, eff in curve:
        if threshold > amount:
            t = min(t, threshold / (eff * rate))
    return t


def kernel_seconds(k: Kernel, spec: GpuSpec, precision: str) -> float:
    """Duration of one launch of ``k`` (without launch overhead)."""
    if k.kind == "matrix":
        peak, curve, floor = spec.matrix_flops(precision), spec.matrix_efficiency, spec.gemm_floor_s
    elif k.kind == "gather":  # sparse kernels run on CUDA cores and sit on the GEMM latency floor
        peak, curve, floor = spec.vector_flops(precision), spec.vector_efficiency, spec.gemm_floor_s
    else:
        peak, curve, floor = spec.vector_flops(precision), spec.vector_efficiency, spec.vector_floor_s
    compute = roofline_seconds(k.flops, curve, peak)
    if l2_resident(k, spec):  # the re-read operands come from L2: HBM moves the rest, L2 all of it
        memory = max(roofline_seconds(k.nbytes - k.resident_bytes, spec.hbm_efficiency, spec.hbm_bytes_per_second),
                     k.nbytes / spec.l2_bytes_per_second)
    else:
        memory = roofline_seconds(k.nbytes, spec.hbm_efficiency, spec.hbm_bytes_per_second)
    return max(floor, compute, memory)


def l2_resident(k: Kernel, spec: GpuSpec) -> bool:
    """Whether ``k``'s re-read operands stay in L2 between launches: the step's working set of them
    (``k.working_set``) fits ``spec.l2_bytes`` and the GPU's L2 bandwidth is known."""
    return bool(k.resident_bytes and spec.l2_bytes_per_second and k.working_set <= spec.l2_bytes)


def weight_gemm(name, phase, m, n, k, e, count, weights: float, working_set: float):
    """:func:`gemm` whose operand of ``weights`` bytes is a weight matrix re-read every launch."""
    g = gemm(name, phase, m, n, k, e, count)
    return Kernel(g.name, g.phase, g.kind, g.flops, g.nbytes, g.count, g.dims, float(weights), float(working_set))


# Host link payload bandwidth per direction: GT/s x lanes x 128b/130b / 8 (NV datasheets:
# V100 SXM2 "PCIe Gen3 32 GB/s", A100 "PCIe Gen4 64 GB/s", H100/H200 SXM "PCIe Gen5 128 GB/s",
# bidirectional figures).
PCIE_GEN3_X16 = 8e9 * 16 * (128 / 130) / 8
PCIE_GEN4_X16 = 16e9 * 16 * (128 / 130) / 8
PCIE_GEN5_X16 = 32e9 * 16 * (128 / 130) / 8
HOST_LINK = {"v100": PCIE_GEN3_X16, "a100-40gb": PCIE_GEN4_X16, "a100-80gb": PCIE_GEN4_X16,
             "h100": PCIE_GEN5_X16, "h200": PCIE_GEN5_X16}


def host_link_bytes_per_second(spec: GpuSpec) -> float:
    """One direction of the GPU's host link (PCIe Gen4 x16 for a GPU without a preset entry)."""
    return HOST_LINK.get(spec.name, PCIE_GEN4_X16)


def workload_estimate(kernels, spec: GpuSpec, precision: str, *, model: str, mode: str, batch_size: int,
                      timesteps: int, host_in_bytes: float = 0.0, host_out_bytes: float = 0.0,
                      device_bytes: dict | None = None, notes=(), placement=None) -> Report:
    """Cost a workload's kernels (each launch: :func:`kernel_seconds` + ``launch_overhead_s``) and
    its host transfers (bytes / host link + ``launch_overhead_s`` each) into a Report."""
    hz = spec.clock_hz
    cycles = empty_cycles(WORKLOAD_KINDS)
    steps: dict[str, dict] = {}
    link = host_link_bytes_per_second(spec)

    def add(name, phase, kind, seconds, launch, count):
        cycles[phase][kind] += seconds * hz
        cycles[phase]["launch"] += launch * hz
        rec = steps.setdefault(name, {"count": 0, **dict.fromkeys(WORKLOAD_KINDS, 0.0)})
        rec["count"] += count
        rec[kind] += seconds * hz
        rec["launch"] += launch * hz

    for name, nbytes in (("h2d", host_in_bytes), ("d2h", host_out_bytes)):
        if nbytes:
            add(name, "io", "host", nbytes / link, spec.launch_overhead_s, 1)
    launches = 0
    for k in kernels:
        launches += k.count
        add(k.name, k.phase, "compute", kernel_seconds(k, spec, precision) * k.count,
            spec.launch_overhead_s * k.count, k.count)
    del cycles["update"]
    used = sum((device_bytes or {}).values())
    totals = {k: sum(p[k] for p in cycles.values()) for k in WORKLOAD_KINDS}
    return Report(
        architecture=spec.name, platform="gpu", model=model, mode=mode, timesteps=int(timesteps),
        batch_size=int(batch_size), clock_hz=hz, cycles=cycles, steps=steps,
        memory={"device_bytes": int(used), "device_bytes_limit": int(spec.hbm_bytes),
                "by_category": {k: int(v) for k, v in (device_bytes or {}).items()}},
        placement={"precision": precision, "kernel_launches": launches, "host_link_bytes_per_second": link,
                   "bound": max(totals, key=totals.get), **(placement or {})},
        notes=[f"{launches} kernel launches; host link {link / 1e9:.1f} GB/s per direction"] + list(notes),
    )
