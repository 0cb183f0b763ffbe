"""GPU estimate: the training step's kernels costed on a :class:`GpuSpec`.

Per kernel launch (roofline with a latency floor and size-dependent efficiencies)::

    t = max(floor, flops / (eff_flops(flops) * peak), bytes / (eff_hbm(bytes) * bandwidth))

where each ratio is capped by the time of the smallest amount at the next efficiency step
(the CALC curves are step functions; without the cap a slightly larger kernel could be
faster).

plus launch overhead: ``launch_overhead_s`` per launch for ``per-step`` and ``sparse``;
``graph_launch_s + launches * graph_node_overhead_s`` for ``fused`` (one CUDA graph).
The result is a :class:`~mimdsim.report.Report` with the MIMD chip's schema.
"""
from __future__ import annotations

from ..arch.gpu import PRECISIONS, GpuSpec, gpu as gpu_spec
from ..errors import ConfigError, OutOfDeviceMemory
from ..report import Report, empty_cycles
from ..snn.network import describe_sizes
from .kernels import STRATEGIES, Kernel, check_step, device_memory, training_step_kernels

GPU_KINDS = ("compute", "launch")


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
    memory = roofline_seconds(k.nbytes, spec.hbm_efficiency, spec.hbm_bytes_per_second)
    return max(floor, compute, memory)


def estimate(net, gpu="a100-40gb", *, timesteps: int, batch_size: int, strategy: str = "fused",
             precision: str = "fp32", activity=None, input_activity=None, optimizer: str = "adam",
             check_memory: bool = True) -> Report:
    """One training step of ``net`` on a GPU under a named execution strategy.

    ``activity`` (spike fraction per neuron layer, one number or a list) and
    ``input_activity`` matter only to the ``sparse`` strategy. Dense strategies do the
    same work whatever the activity.
    """
    spec = gpu if isinstance(gpu, GpuSpec) else gpu_spec(gpu)
    if strategy not in STRATEGIES:
        raise ConfigError(f"unknown GPU strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    if precision not in PRECISIONS:
        raise ConfigError(f"unknown precision {precision!r}; choose one of {', '.join(PRECISIONS)}")
    spec.matrix_flops(precision)  # raises if the GPU lacks this precision
    check_step(timesteps, batch_size, optimizer)
    sizes = list(net.sizes)
    L = len(sizes) - 1
    acts = None
    if strategy == "sparse":
        if activity is None:
            raise ConfigError("the sparse strategy needs activity= (spike fraction per layer) to size its kernels")
        layer_acts = list(activity) if isinstance(activity, (list, tuple)) else [activity] * L
        if len(layer_acts) != L:
            raise ConfigError(f"activity has {len(layer_acts)} entries; give one number or {L}")
        acts = [layer_acts[0] if input_activity is None else input_activity] + layer_acts
        for a in acts:
            if not 0 <= a <= 1:
                raise ConfigError(f"activity value {a!r} must be a fraction in [0, 1]")
    e = spec.bytes_per_element(precision)

    specs = getattr(net, "specs", None)
    memory = device_memory(sizes, timesteps, batch_size, strategy=strategy, e=e, optimizer=optimizer,
                           activity=acts, specs=specs)
    used = sum(memory.values())
    if check_memory and used > spec.hbm_bytes:
        halves = [p for p in ("fp16", "bf16") if p in spec.matrix_precisions]
        hint = "Lower the batch or timesteps" + (f", or use {' or '.join(halves)}" if e == 4 and halves else "")
        raise OutOfDeviceMemory(
            f"{describe_sizes(sizes)} with T={timesteps}, B={batch_size} needs {used:,} B on {spec.name} "
            f"but it has {spec.hbm_bytes:,} B ("
            + ", ".join(f"{k} {v:,} B" for k, v in memory.items() if v) + f"). {hint}.")

    kernels = training_step_kernels(sizes, timesteps, batch_size, strategy=strategy, e=e,
                                    activity=acts, optimizer=optimizer, specs=specs)
    hz = spec.clock_hz
    cycles = empty_cycles(GPU_KINDS)
    steps: dict[str, dict] = {}
    launches = sum(k.count for k in kernels)
    for k in kernels:
        run = kernel_seconds(k, spec, precision) * k.count
        launch = (spec.graph_node_overhead_s if strategy == "fused" else spec.launch_overhead_s) * k.count
        cycles[k.phase]["compute"] += run * hz
        cycles[k.phase]["launch"] += launch * hz
        kind = k.name.split(".", 1)[1] if "." in k.name else k.name
        rec = steps.setdefault(kind, {"count": 0, "phase": k.phase, "compute": 0.0, "launch": 0.0})
        rec["count"] += k.count
        rec["compute"] += run * hz
        rec["launch"] += launch * hz
    if strategy == "fused":
        cycles["forward"]["launch"] += spec.graph_launch_s * hz
        steps["graph_launch"] = {"count": 1, "phase": "forward", "compute": 0.0, "launch": spec.graph_launch_s * hz}
    del cycles["io"]
    notes = [f"strategy {strategy}, precision {precision}, {launches} kernel launches per step",
             "input transfer from the host is not modelled (assumed overlapped with compute)"]
    return Report(
        architecture=spec.name, platform="gpu", model=describe_sizes(sizes), mode=f"{strategy} {precision}",
        timesteps=int(timesteps), batch_size=int(batch_size), clock_hz=hz, cycles=cycles, steps=steps,
        memory={"device_bytes": used, "device_bytes_limit": int(spec.hbm_bytes), "by_category": memory},
        placement={"strategy": strategy, "precision": precision, "optimizer": optimizer,
                   "kernel_launches": launches},
        notes=notes,
    )
