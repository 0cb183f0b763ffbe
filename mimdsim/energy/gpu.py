"""Energy of a GPU step, from its kernel list's counts (``Report.activity``).

    static  = idle x whole step + (busy_static_share x TDP - idle) x kernel time
    compute = tensor FLOPs x tensor_pj_per_flop (x fp16/tf32 peak for tf32)
              + CUDA-core FLOPs x cuda_fp32_pj_per_flop (x fp32/fp16 peak for fp16 and bf16;
                strict-FP32 GEMM FLOPs / fp32_gemm_share: the same power at the measured lower rate)
    memory  = DRAM bytes x 8 x dram_pj_per_bit
    host    = launches x launch_uj + host bytes x 8 x pcie_pj_per_bit

with the per-FLOP energies the preset's (board power over its modelled peak rate, ``constants.py``)
times the preset's rate over the spec's: a GPU overridden to another peak (or efficiency curve) keeps
its board's power at its own peak, the derivation's source observation. Idle and maximum power are
the board's, the preset's. Launch gaps and host-bound waits (eager PyTorch) burn idle power only.
"""
from __future__ import annotations

from ..arch.gpu import GPUS
from ..kernels.assumed import NOTHING, Pinned
from ..report import Report
from .constants import preset_of
from .summary import energy_section


def kernel_activity(kernels, precision: str) -> dict:
    """FLOPs on the tensor cores and the CUDA cores, DRAM bytes and launches of a kernel list
    (:class:`mimdsim.gpu.model.Kernel` s); fp32 GEMMs run on the CUDA cores."""
    # one pass (a traced step lists thousands of kernels, and a band asks again per re-cost); each total
    # adds its terms in kernel order from 0, as a sum() over the list does
    matrix = flops = nbytes = launches = 0
    for k in kernels:
        f = k.flops * k.count
        flops += f
        if k.kind == "matrix":
            matrix += f
        nbytes += k.nbytes * k.count
        launches += k.count
    tensor = matrix if precision != "fp32" else 0
    return {"precision": precision, "tensor_flops": float(tensor), "cuda_flops": float(flops - tensor),
            "cuda_gemm_flops": float(matrix - tensor),  # strict-FP32 GEMMs on the CUDA cores (of cuda_flops)
            "dram_bytes": float(nbytes), "launches": int(launches), "host_bytes": 0.0}


def _top_rate(preset, spec, curve: str, peak: str) -> float:
    """The preset's modelled top rate of a kind of kernel over the spec's (a rate: the efficiency curve's
    top step times the peak); 1 for a spec at its preset's fields."""
    def rate(s):
        return getattr(s, curve)[0][1] * getattr(s, peak)
    return rate(preset) / rate(spec)


def gpu_energy(report: Report, spec, pinned: Pinned = NOTHING) -> dict | None:
    """The energy section of a GPU report (None for a GPU whose name is no preset with constants)."""
    preset = preset_of(spec, GPUS)
    if preset is None or "tensor_flops" not in report.activity:
        return None
    name = preset.name
    a = report.activity
    seconds = report.seconds_per_step
    busy = report.kind_totals().get("compute", 0.0) / report.clock_hz
    p = a["precision"]
    # the per-FLOP constants are stated at the preset's top rates; the same board power at the spec's
    tensor_rate = _top_rate(preset, spec, "matrix_efficiency", "fp16_flops")
    cuda_rate = _top_rate(preset, spec, "vector_efficiency", "fp32_flops")
    tensor_scale = (spec.fp16_flops / spec.tf32_flops if p == "tf32" else 1.0) * tensor_rate
    cuda_scale = (spec.fp32_flops / spec.fp16_vector_flops if p in ("fp16", "bf16") else 1.0) * cuda_rate
    # cuda_fp32_pj_per_flop is board power over the quoted FP32 peak; a strict-FP32 GEMM reaches only
    # fp32_gemm_share of it (GA102/AD102) at that power, so each of its FLOPs costs 1 / share as much
    gemm_extra = a.get("cuda_gemm_flops", 0.0) * (1.0 / spec.fp32_gemm_share - 1.0)

    def parts(get):
        idle = get(f"{name}.idle_w")
        busy_static = max(idle, get("gpu.busy_static_share") * get(f"{name}.max_w"))
        return {
            "static": idle * seconds + (busy_static - idle) * busy,
            "compute": 1e-12 * (a["tensor_flops"] * tensor_scale * get(f"{name}.tensor_pj_per_flop")
                                + (a["cuda_flops"] + gemm_extra) * cuda_scale * get(f"{name}.cuda_fp32_pj_per_flop")),
            "memory": 8e-12 * a["dram_bytes"] * get(f"{name}.dram_pj_per_bit"),
            "host": a["launches"] * get("gpu.launch_uj") * 1e-6
            + 8e-12 * a["host_bytes"] * get("host.pcie_pj_per_bit"),
        }

    def limits(get):  # the board's, the preset's
        return get(f"{name}.idle_w"), get(f"{name}.max_w")

    return energy_section(parts, seconds, report.batch_size, limits, a, name, pinned)
