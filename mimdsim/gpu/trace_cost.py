"""Cost a traced training step (:mod:`.torch_trace`) on a GPU: each op's kernel by the GPU model, the host
by the framework's per-op costs, and the two streams by the eager overlap rule with the trace's host
syncs breaking it (docs/gpu-model.md, "trace → cost → report").

* device: a GEMM (``mm``, ``addmm``, ``bmm``, ``baddbmm``) is a :func:`~.model.gemm` kernel on its
  shapes; every other op that launches work is element-wise or a reduction, priced by its bytes
  (the recorded operands read, the results written) and one FLOP per element of its largest tensor;
  a copy to the host (``.cpu()``) moves its bytes over the host link. Each launch by
  :func:`~.model.kernel_seconds` (roofline, floors, efficiency curves), in the dtype it ran in
  (float32 GEMMs in the framework's float32 matmul precision, or ``precision=``).
* host: per device op the framework's dispatch and launch cost (``host_forward_op_s`` in the forward
  pass and the update, ``host_backward_op_s`` in the backward pass); per ``Optimizer.step`` call
  ``optimizer_call_s`` spread over its ops; per backward pass ``loss_call_s`` on the last forward op
  before it (the preset's figure is snnTorch's ``ce_count_loss``; pass a framework with
  ``loss_call_s=0`` for a loss that builds nothing per call). These are times on the host that drives the
  GPU: ``host=`` (a host preset or spec; by default the GPU preset's own host, ``mimdsim.arch.host.default_host``)
  scales the framework's figures by its ``op_time_scale`` (:func:`~.framework.framework`).
* overlap: :func:`~.framework.synchronised_timeline`: one stream, asynchronous launches, and at every
  host sync the host waits for the device queue to drain.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..arch.gpu import PRECISIONS, GpuSpec, gpu as gpu_spec
from ..arch.host import HostSpec, default_host
from ..report import Report, empty_cycles
from ..checks import check_choice
from .framework import FrameworkSpec, framework as framework_spec, synchronised_timeline
from .model import Kernel, gemm, host_link_bytes_per_second, kernel_seconds
from .torch_trace import PHASES, Trace, TracedOp

REPORT_PHASE = {"forward": "forward", "backward": "backward", "optimizer": "update", "update": "update"}
DTYPE_PRECISION = {"float16": "fp16", "bfloat16": "bf16"}


def op_kernel(op: TracedOp, phase: str, working_set: float = 0.0) -> Kernel:
    """The GPU kernel of one traced op (a view or host op has none: call only for ``op.device``). A GEMM's
    parameter operands (``op.weights``) are re-read every step: L2-resident where ``working_set`` (all the
    step's GEMM weights, ``Trace.gemm_weight_bytes``) fits the GPU's L2 (:func:`~.model.kernel_seconds`)."""
    k = _op_kernel(op, phase)
    if op.weights and working_set:
        resident = sum(_numel(op.inputs[i][0]) * _e(op.inputs[i][1]) for i in op.weights if i < len(op.inputs))
        k = Kernel(k.name, k.phase, k.kind, k.flops, k.nbytes, k.count, k.dims, float(resident), float(working_set))
    return k


def _op_kernel(op: TracedOp, phase: str) -> Kernel:
    e = max((_e(d) for _, d in op.inputs + op.outputs), default=4)
    shapes = [s for s, _ in op.inputs]
    if op.name in ("mm", "addmm") and len(shapes) >= 2:
        (m, k), (_, n) = shapes[-2], shapes[-1]
        g = gemm(f"{phase}.{op.name}", phase, m, n, k, e, 1)
        return Kernel(g.name, phase, "matrix", g.flops, g.nbytes + (op.input_bytes() - _gemm_in(shapes, e)
                                                                     if op.name == "addmm" else 0), 1, g.dims)
    if op.name in ("bmm", "baddbmm") and len(shapes) >= 2:
        (b, m, k), (_, _, n) = shapes[-2], shapes[-1]
        g = gemm(f"{phase}.{op.name}", phase, m, n, k, e, 1)
        return Kernel(g.name, phase, "matrix", b * g.flops, b * g.nbytes, 1, (b * m, n, k))
    elements = max((_numel(s) for s, _ in op.inputs + op.outputs), default=1)
    return Kernel(f"{phase}.{op.name}", phase, "vector", float(elements),
                  float(op.input_bytes() + op.output_bytes()), 1)


def _gemm_in(shapes, e):
    (m, k), (_, n) = shapes[-2], shapes[-1]
    return e * (m * k + k * n)


def _numel(shape):
    return int(np.prod(shape, dtype=np.int64)) if shape else 1


def _e(dtype):
    from .torch_trace import _itemsize
    return _itemsize(dtype)


def op_stream(trace: Trace, spec: GpuSpec, fw: FrameworkSpec, precision: str):
    """The traced step's device ops in issue order: (host seconds, device seconds, sync) per op, and
    (kernel, phase code) per op."""
    ops = trace.derived("device_ops", lambda: _device_ops(trace))
    link = host_link_bytes_per_second(spec)
    # device seconds of each distinct (op, phase): a trace repeats a few dozen of them
    cost = np.array([k.nbytes / link if k.kind == "host" else kernel_seconds(k, spec, _op_precision(op, precision))
                     for op, k in zip(ops.distinct_ops, ops.distinct_kernels)], dtype=np.float64)
    device = cost[ops.index] if ops.index.size else np.zeros(0)
    host = np.where(ops.phase == PHASES.index("backward"), fw.host_backward_op_s, fw.host_forward_op_s).astype(float)
    _add_call_costs(trace, ops, host, fw)
    return host, device, ops.syncs, list(ops.kernels), ops.phase


class _DeviceOps(NamedTuple):
    """What :func:`op_stream` needs of a trace that no GPU, framework or host moves (``Trace.derived``)."""
    phase: np.ndarray  # phase code per device op, in issue order
    index: np.ndarray  # per device op, its distinct (op, phase) in distinct_*
    distinct_ops: list
    distinct_kernels: list  # a copy to the host: a "host" kernel of its bytes
    kernels: tuple  # per device op
    syncs: np.ndarray
    loss_ops: list  # the device op each backward pass's loss call lands on (the last forward op before it)
    optimizer_ops: np.ndarray  # the device ops inside Optimizer.step


def _device_ops(trace: Trace) -> _DeviceOps:
    dev_mask = trace.device_mask
    seq, phase = trace.sequence[dev_mask], trace.phase[dev_mask]
    keys = list(zip(seq.tolist(), phase.tolist()))
    at = {}
    for k in keys:
        at.setdefault(k, len(at))
    ops, kernels = [], []
    for i, ph in at:
        op, name = trace.table[i], PHASES[ph]
        ops.append(op)
        kernels.append(Kernel(f"{name}.{op.name}", name, "host", 0.0, float(op.input_bytes()), 1)
                       if op.sync == "to_host" else op_kernel(op, name, getattr(trace, "gemm_weight_bytes", 0)))
    index = np.array([at[k] for k in keys], dtype=np.intp)
    back = phase == PHASES.index("backward")
    starts = np.flatnonzero(back & ~np.concatenate([[False], back[:-1]]))
    loss_ops = [int(before[-1]) for before in (np.flatnonzero(~back[:s]) for s in starts) if before.size]
    syncs = np.array([bool(trace.table[s].sync) for s in seq.tolist()], bool)
    for a in (phase, index, syncs):
        a.flags.writeable = False
    return _DeviceOps(phase, index, ops, kernels, tuple(kernels[i] for i in index.tolist()), syncs, loss_ops,
                      np.flatnonzero(phase == PHASES.index("optimizer")))


def stream(trace: Trace, spec: GpuSpec, fw: FrameworkSpec, precision: str, mode: str = "eager"):
    """(host seconds, device seconds, sync, kernel, phase code) per kernel in issue order, and the number of
    CUDA graphs: :func:`op_stream` (each device op a kernel, no graph) for ``mode="eager"``, else its
    compiled form (:func:`~.trace_compile.compiled_stream`)."""
    from .trace_compile import compiled_stream

    host, device, syncs, kernel_list, phase = op_stream(trace, spec, fw, precision)
    if mode == "eager":
        return host, device, syncs, kernel_list, phase, 0
    per_op = np.where(phase == PHASES.index("backward"), fw.host_backward_op_s, fw.host_forward_op_s)
    return compiled_stream(trace, spec, per_op, host, device, kernel_list, lambda op: _op_precision(op, precision))


def _op_precision(op: TracedOp, precision: str) -> str:
    """The precision ``op`` runs in: fp16/bf16 where it holds such a tensor, else ``precision``."""
    return next((DTYPE_PRECISION[d] for _, d in op.inputs + op.outputs if d in DTYPE_PRECISION), precision)


def estimate_trace(trace: Trace, gpu="a100-40gb", *, framework: str | FrameworkSpec = "pytorch-eager",
                   precision: str | None = None, mode: str = "eager", host: str | HostSpec | None = None) -> Report:
    """One traced training step on a GPU: the :class:`~mimdsim.report.Report` of the GPU strategies,
    ``compute`` the device's kernel time and ``host`` the time the device waits for the host, per
    phase; ``placement`` names the versions traced, the host syncs and the host-bound fraction. ``mode``:
    "eager" (each op a kernel, dispatched from Python) or "reduce-overhead" (:func:`costed_trace`). ``host``: as
    for :func:`costed_trace`."""
    return costed_trace(trace, gpu, framework=framework, precision=precision, mode=mode, host=host)[0]


def costed_trace(trace: Trace, gpu="a100-40gb", *, framework: str | FrameworkSpec = "pytorch-eager",
                 precision: str | None = None, mode: str = "eager", host: str | HostSpec | None = None):
    """:func:`estimate_trace`'s Report and the kernel of every device op (for energy and callers).
    ``mode="reduce-overhead"``: the step as ``torch.compile(mode="reduce-overhead")`` runs it, its element-wise
    runs fused and each graph one CUDA graph launch (:mod:`.trace_compile`); its kernels, not ops, listed.
    ``host`` (a host preset or HostSpec) the CPU that drives the GPU; None: a framework spec's own host, a framework
    named by its preset on the GPU's default host (``default_host``)."""
    from .trace_compile import MODES

    spec = gpu if isinstance(gpu, GpuSpec) else gpu_spec(gpu)
    if host is None and not isinstance(framework, FrameworkSpec):
        host = default_host(spec.name)
    fw = framework_spec(framework, host=host)
    check_choice("mode", mode, MODES)
    if precision is None:
        precision = "tf32" if fw.float32_matmul == "tf32" and spec.tf32_flops else "fp32"
    check_choice("precision", precision, PRECISIONS)
    spec.matrix_flops(precision)  # raises if the GPU lacks this precision
    host, device, syncs, kernel_list, phase, graphs = stream(trace, spec, fw, precision, mode)
    n = len(kernel_list)
    total, wait = synchronised_timeline(host, device, syncs)

    hz = spec.clock_hz
    cycles = empty_cycles(("compute", "host"))
    steps: dict[str, dict] = {}
    for i, p in enumerate(PHASES):
        sel = phase == i
        cycles[REPORT_PHASE[p]]["compute"] += float(device[sel].sum()) * hz
        cycles[REPORT_PHASE[p]]["host"] += float(wait[sel].sum()) * hz
    groups, gemms = trace.derived(f"kernel_groups.{mode}", lambda: _kernel_groups(kernel_list))
    for name, at in groups:
        steps[name] = {"count": int(at.size), "phase": REPORT_PHASE[name.split(".", 1)[0]],
                       "compute": float(device[at].sum()) * hz, "host": float(wait[at].sum()) * hz}
    del cycles["io"]
    summary = trace.summary()
    host_bound = float(wait.sum() / total) if total else 0.0
    bound = "host" if host_bound > 0.5 else "device"
    versions = ", ".join(f"{k} {v}" for k, v in trace.versions.items())
    if mode == "eager":
        notes = [f"traced ({versions}): {n} device ops ({gemms} GEMMs) of {len(trace)} dispatched, "
                 f"{summary['host_syncs']} host sync(s) per step; {bound}-bound: the device waits "
                 f"{100 * host_bound:.0f}% of the step for the host ({fw.name} on {fw.host}: "
                 f"{fw.host_forward_op_s * 1e6:.1f} us per forward op, {fw.host_backward_op_s * 1e6:.1f} us per "
                 f"backward op; docs/gpu-model.md)"]
    else:
        notes = [f"traced ({versions}), costed as torch.compile(mode=\"{mode}\") runs it: {n} kernels ({gemms} "
                 f"GEMMs, {sum(k.name.endswith('.fused') for k in kernel_list)} fused element-wise runs) from "
                 f"{int(trace.device_mask.sum())} device ops, {graphs} CUDA graph launch(es) of "
                 f"{spec.graph_launch_s * 1e6:.0f} us, {summary['host_syncs']} host sync(s) per step; {bound}-bound "
                 f"({100 * host_bound:.0f}% host); Dynamo guards not costed (docs/gpu-model.md)"]
    notes.append("device memory is not traced")
    label = "eager-trace" if mode == "eager" else "compiled-trace"
    return Report(
        architecture=spec.name, platform="gpu", model=trace.model, mode=f"{label} {precision}",
        timesteps=int(trace.timesteps), batch_size=int(trace.batch_size) or 1, clock_hz=hz, cycles=cycles,
        steps=steps, memory={},
        placement={"strategy": label, "framework": fw.name, "host": fw.host, "precision": precision,
                   "kernel_launches": n,
                   "gemms": gemms, "host_syncs": summary["host_syncs"], "host_syncs_by_phase":
                   summary["host_syncs_by_phase"], "backward_passes": summary["backward_passes"],
                   "optimizer_calls": summary["optimizer_calls"], "host_bound_fraction": host_bound,
                   "bound": bound, "traced": dict(trace.versions),
                   **({} if mode == "eager" else {"compile_mode": mode, "cuda_graphs": graphs})},
        notes=notes), kernel_list


def _kernel_groups(kernel_list) -> tuple:
    """``([(name, positions)], GEMMs)`` of a step's kernel list: each kernel name, in order of first issue, with the
    positions (ascending) of its kernels; the names and kinds follow from the trace and the mode alone."""
    at: dict = {}
    for i, k in enumerate(kernel_list):
        at.setdefault(k.name, []).append(i)
    return [(name, np.array(pos, dtype=np.intp)) for name, pos in at.items()], \
        sum(1 for k in kernel_list if k.kind == "matrix")


def _add_call_costs(trace: Trace, ops: _DeviceOps, host: np.ndarray, fw: FrameworkSpec) -> None:
    """Per-call host costs onto the device ops (``host`` is per device op, in order): each
    ``Optimizer.step``'s spread over the device ops inside it, each backward pass's loss call on the
    last device op before it."""
    for i in ops.loss_ops:
        host[i] += fw.loss_call_s
    if trace.optimizer_calls and fw.optimizer_call_s:
        inside = ops.optimizer_ops
        if inside.size:
            host[inside] += trace.optimizer_calls * fw.optimizer_call_s / inside.size
