"""The SNN training step on a systolic array: its GEMMs on the array, the rest on a vector unit.

The step is the ``fused`` kernel list (T-folded GEMMs, one neuron scan per layer), the
best case for a GEMM engine. Per kernel::

    array:  cycles = max(systolic_gemm_cycles(m, n, k), bytes / DRAM bytes per cycle)
    vector: cycles = max(flops / vector_flops_per_cycle, bytes / DRAM bytes per cycle)

The report splits each kernel into its compute cycles (``array`` or ``vector``) and the
cycles by which DRAM traffic exceeds them (``dram``).
"""
from __future__ import annotations

from ....arch.systolic import SystolicSpec, systolic
from ....energy import gemm_sram_bytes, systolic_energy
from ....gpu.systolic import systolic_gemm_cycles
from ....kernels.assumed import NOTHING, Pinned
from ....report import Report, empty_cycles
from ....snn.network import describe_sizes
from .gpu_kernels import training_step_kernels
from ..step import check_step

SYSTOLIC_KINDS = ("array", "vector", "dram")


def systolic_estimate(net, array="tpu-v1", *, timesteps: int, batch_size: int, optimizer: str = "adam",
                      pinned: Pinned = NOTHING) -> Report:
    """One training step of ``net`` on a systolic array (fused schedule); ``pinned``: the energy constants
    pinned (``--assume``)."""
    spec = array if isinstance(array, SystolicSpec) else systolic(array)
    check_step(timesteps, batch_size, optimizer)
    sizes = list(net.sizes)
    kernels = training_step_kernels(sizes, timesteps, batch_size, strategy="fused", e=spec.bytes_per_element,
                                    optimizer=optimizer)
    cycles = empty_cycles(SYSTOLIC_KINDS)
    del cycles["io"]
    steps: dict[str, dict] = {}
    dram = spec.dram_bytes_per_cycle
    activity = {"macs": 0.0, "vector_ops": 0.0, "sram_bytes": 0.0, "dram_bytes": 0.0}
    for k in kernels:
        activity["dram_bytes"] += k.nbytes * k.count
        if k.kind == "matrix":
            m, n, kk = k.dims
            activity["macs"] += float(m) * n * kk * k.count
            activity["sram_bytes"] += k.count * gemm_sram_bytes(m, n, kk, spec.rows, spec.cols, spec.dataflow,
                                                                spec.bytes_per_element)
            compute, kind = float(systolic_gemm_cycles(m, n, kk, rows=spec.rows, cols=spec.cols,
                                                       dataflow=spec.dataflow)), "array"
        else:
            compute, kind = k.flops / spec.vector_flops_per_cycle, "vector"
            activity["vector_ops"] += k.flops * k.count
        stall = max(0.0, k.nbytes / dram - compute)
        cycles[k.phase][kind] += compute * k.count
        cycles[k.phase]["dram"] += stall * k.count
        name = k.name.split(".", 1)[1]
        rec = steps.setdefault(name, {"count": 0, "phase": k.phase, **dict.fromkeys(SYSTOLIC_KINDS, 0.0)})
        rec["count"] += k.count
        rec[kind] += compute * k.count
        rec["dram"] += stall * k.count
    report = Report(
        architecture=spec.name, platform="systolic", model=describe_sizes(sizes), mode=f"{spec.dataflow} dataflow",
        timesteps=int(timesteps), batch_size=int(batch_size), clock_hz=spec.clock_hz, cycles=cycles,
        steps=steps, memory={}, placement={"rows": spec.rows, "cols": spec.cols, "dataflow": spec.dataflow},
        notes=["fused schedule (T-folded GEMMs); SRAM capacity and double buffering not modelled"],
        activity=activity,
    )
    report.energy = systolic_energy(report, spec, pinned)
    return report
