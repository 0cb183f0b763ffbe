"""Kalman-filter track fitting as GPU kernels (one CUDA thread per track, batched small-matrix
code; counts from ``kernels/mimdsim_kalman/track_fit.py``), costed launch by launch by :mod:`mimdsim.gpu.model`:

* ``fused``   one kernel fits every track (the whole predict / filter / smooth loop per
  thread; intermediates in registers or L1); with a shared covariance a one-thread kernel
  computes the covariance pass first (it sits on the vector floor).
* ``per-op``  one batched kernel per matrix operation and plane (a batched-BLAS port): each
  reads its operands from and writes its result to device memory.

FLOPs = arithmetic instructions x lanes (2 for the vectorised variant's float2 views); HBM
bytes = the kernel's loads and stores (fused: hits in, states and covariances out).

Host transfers over PCIe (``stream=True``): hits in, states and covariances out at the GPU's
host link rate, each transfer paying ``launch_overhead_s``.
"""
from __future__ import annotations

from ...kernels.mimdsim_kalman import track_fit as kk

from ...arch.gpu import GpuSpec, gpu as gpu_spec
from ...gpu.model import Kernel, workload_estimate
from ...report import Report
from ...checks import check_choice
from .program import check_variant

KALMAN_STRATEGIES = ("fused", "per-op")


def kalman_kernels(tracks, planes, *, variant="vectorised", covariance="shared", strategy="fused"):
    """Kernels of one Kalman fit of ``tracks`` tracks (no host transfers)."""
    check_choice("strategy", strategy, KALMAN_STRATEGIES)
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


def kalman_estimate(tracks, planes=5, gpu="a100-40gb", *, variant="vectorised", covariance="shared",
                    strategy="fused", stream=True) -> Report:
    """Kalman fit of ``tracks`` tracks on a GPU (float32 on the CUDA cores)."""
    spec = gpu if isinstance(gpu, GpuSpec) else gpu_spec(gpu)
    check_variant(variant, covariance)
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
