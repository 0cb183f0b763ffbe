"""Kalman-filter track fitting and MLP inference as GPU kernel lists (next to the SNN step's
``kernels.py``), costed launch by launch with :func:`~mimdsim.gpu.estimate.kernel_seconds`.

Kalman (one CUDA thread per track, batched small-matrix code; counts from ``kernels/kalman.py``):

* ``fused``   one kernel fits every track (the whole predict / filter / smooth loop per
  thread; intermediates in registers or L1); with a shared covariance a one-thread kernel
  computes the covariance pass first (it sits on the vector floor).
* ``per-op``  one batched kernel per matrix operation and plane (a batched-BLAS port): each
  reads its operands from and writes its result to device memory.

FLOPs = arithmetic instructions x lanes (2 for the vectorised variant's float2 views); HBM
bytes = the kernel's loads and stores (fused: hits in, states and covariances out).

MLP (inference): per layer one GEMM ``[B, n_in] x [n_in, n_out]`` (matrix kind, in the given
precision) and one element-wise bias + activation kernel.

Host transfers over PCIe (``stream=True``): input and output bytes at the GPU's host link
rate (:data:`HOST_LINK`), each transfer paying ``launch_overhead_s``.
"""
from __future__ import annotations

from kernels import kalman as kk

from ..arch.gpu import GpuSpec, gpu as gpu_spec
from ..errors import ConfigError
from ..report import Report, empty_cycles
from .estimate import kernel_seconds
from .kernels import Kernel

KALMAN_STRATEGIES = ("fused", "per-op")
WORKLOAD_KINDS = ("compute", "launch", "host")

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


def kalman_kernels(tracks, planes, *, variant="vectorised", covariance="shared", strategy="fused"):
    """Kernels of one Kalman fit of ``tracks`` tracks (no host transfers)."""
    if strategy not in KALMAN_STRATEGIES:
        raise ConfigError(f"unknown GPU Kalman strategy {strategy!r}; choose one of {', '.join(KALMAN_STRATEGIES)}")
    lanes, f = kk.LANES[variant], kk.FLOAT_BYTES
    shared = covariance == "shared"
    ks = []
    if strategy == "fused":
        cov_arith = kk.pass_arith(variant, "cov", planes)
        state_arith = kk.pass_arith(variant, "state", planes)
        per_track_out = planes * (4 + (0 if shared else _out_cov(variant)))
        if shared:
            ld, st = kk.pass_memory(variant, "cov", planes)
            ks.append(Kernel("kalman.covariance", "forward", "vector", lanes * cov_arith, f * lanes * (ld + st), 1))
        ks.append(Kernel("kalman.fit", "forward", "vector",
                         tracks * lanes * (state_arith + (0 if shared else cov_arith)),
                         tracks * f * (planes * 2 + per_track_out), 1))
        return ks
    for stage, part, _, op in kk.op_schedule(planes, variant):
        n = 1 if (part == "cov" and shared) else tracks
        ks.append(Kernel(f"{stage}.{op.name}", "backward" if stage == "smooth" else "forward", "vector",
                         n * lanes * op.arith, n * f * lanes * (op.loads + op.stores), 1))
    return ks


def _out_cov(variant):
    return {"scalar": 10, "vectorised": 6}[variant]


def mlp_kernels(sizes, batch, *, e=4):
    """Kernels of one MLP inference pass over a batch (input size first in ``sizes``)."""
    ks = []
    for l in range(1, len(sizes)):
        n_in, n = sizes[l - 1], sizes[l]
        ks.append(Kernel(f"L{l}.gemm", "forward", "matrix", 2.0 * batch * n * n_in,
                         e * (batch * n_in + n_in * n + batch * n), 1, (batch, n, n_in)))
        # bias + activation: reads the GEMM output and the bias, writes the activation
        ks.append(Kernel(f"L{l}.bias_act", "forward", "vector", 2.0 * batch * n, e * (2 * batch * n + n), 1))
    return ks


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


def kalman_estimate(tracks, planes=5, gpu="a100-40gb", *, variant="vectorised", covariance="shared",
                    strategy="fused", stream=True) -> Report:
    """Kalman fit of ``tracks`` tracks on a GPU (float32 on the CUDA cores)."""
    spec = gpu if isinstance(gpu, GpuSpec) else gpu_spec(gpu)
    kk._check(variant, covariance)
    f = kk.FLOAT_BYTES
    cov_out = planes * _out_cov(variant) * (1 if covariance == "shared" else tracks)
    hits_b, out_b = tracks * planes * 2 * f, (tracks * planes * 4 + cov_out) * f
    ks = kalman_kernels(tracks, planes, variant=variant, covariance=covariance, strategy=strategy)
    return workload_estimate(
        ks, spec, "fp32", model=f"kalman {planes} planes, {variant}, {covariance} covariance",
        mode=f"{strategy} fp32", batch_size=tracks, timesteps=planes,
        host_in_bytes=hits_b if stream else 0.0, host_out_bytes=out_b if stream else 0.0,
        device_bytes={"hits": hits_b, "states": out_b}, placement={"strategy": strategy, "stream": bool(stream)},
        notes=["one thread per track; hits resident in device memory (stream=False)" if not stream else
               "one thread per track; hits in and states out over PCIe"])


def mlp_estimate(sizes, batch, gpu="a100-40gb", *, precision="fp32", stream=True) -> Report:
    """One MLP inference pass over ``batch`` samples on a GPU."""
    spec = gpu if isinstance(gpu, GpuSpec) else gpu_spec(gpu)
    spec.matrix_flops(precision)  # raises if the GPU lacks the precision
    e = spec.bytes_per_element(precision)
    sizes = list(sizes)
    params = sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))
    return workload_estimate(
        mlp_kernels(sizes, batch, e=e), spec, precision, model="mlp " + "-".join(map(str, sizes)),
        mode=f"eager {precision}", batch_size=batch, timesteps=1,
        host_in_bytes=batch * sizes[0] * e if stream else 0.0, host_out_bytes=batch * sizes[-1] * e if stream else 0.0,
        device_bytes={"weights": e * params, "activations": e * batch * (sizes[0] + 2 * max(sizes[1:]))},
        placement={"strategy": "eager", "stream": bool(stream)})
