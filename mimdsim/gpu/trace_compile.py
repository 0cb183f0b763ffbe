"""A traced step as ``torch.compile(mode="reduce-overhead")`` runs it: Inductor's fusion of the op stream and
one CUDA graph launch per compiled graph (docs/gpu-model.md, "Compiled: Inductor and a CUDA graph").

The rules (torch 2.13, ``torch/_inductor``), kept simple and stated:

* **extern kernels stay as traced**: a GEMM (``mm``, ``addmm``, ``bmm``, ``baddbmm``) or convolution is an
  extern kernel, cuBLAS/cuDNN through ATen (``kernel/mm.py`` ``tuned_mm``/``tuned_addmm``: without
  ``max_autotune`` the only choice is ``aten_mm``/``aten_addmm``; ``kernel/bmm.py`` ``aten_bmm``;
  ``kernel/conv.py`` ``aten_convolution``), and Inductor fuses nothing into it (``scheduler.py``
  ``Scheduler._can_fuse_impl``: "node1 is extern but not a triton kernel"). Priced as in the eager costing.
* **element-wise and reduction ops fuse**: each maximal run of them between two extern kernels, host syncs
  or phase changes is one kernel (``scheduler.py`` ``Scheduler.fuse_nodes``; pointwise producers are also
  inlined into their consumers at lowering, ``lowering.py`` ``make_pointwise``). That is an upper bound on
  fusion: Inductor splits a run where loop shapes do not match (a reduction followed by a pointwise op on
  its input's shape). Its bytes are the run's external tensors only: every tensor it reads that no op of
  the run wrote, and every tensor it writes that is read after the run or never read (a result of the
  program); a tensor written and last read inside the run is not stored (``codegen/common.py``
  ``Kernel.remove_kernel_local_buffers``, ``scheduler.py`` ``can_buffer_be_removed_through_fusion``). Its
  FLOPs are its ops' (one per element of each op's largest tensor, as eager). Views are free.
* **host syncs break the graph**: ``.item()`` is a graph break (``_dynamo/config.py``
  ``capture_scalar_outputs`` is False by default), so a sync runs eagerly between two graphs, with its
  eager dispatch and device cost.
* **one CUDA graph launch per graph** (``mode="reduce-overhead"`` sets ``triton.cudagraphs``,
  ``torch/_inductor/__init__.py`` ``list_mode_options``; ``cudagraph_trees.py`` ``cudagraphify``): a graph is
  a maximal run of kernels of one phase between syncs (AOTAutograd compiles the forward and the backward as
  two graphs); the host pays ``GpuSpec.graph_launch_s`` per graph instead of the framework's per-op
  dispatch, and each kernel node ``graph_node_overhead_s`` on the device. The framework's per-call costs
  (a loss call, ``Optimizer.step``) stay. Dynamo's guard evaluation per call has no source here and is left
  out (a lower bound on the host).

Tensor identity comes from the trace (``Trace.tensor_ids``): a trace without it (one built by repeating a
period) cannot be costed compiled.
"""
from __future__ import annotations

import numpy as np

from ..arch.gpu import GpuSpec
from .model import Kernel, kernel_seconds
from .torch_trace import GEMMS, PHASES, Trace, _itemsize, _numel

EXTERN = GEMMS | {"convolution", "_convolution", "convolution_backward"}
MODES = ("eager", "reduce-overhead")


def fusion_groups(trace: Trace):
    """The traced step's kernels as Inductor runs them: a list of (kind, positions) in issue order, ``kind``
    "extern", "sync" or "fused", ``positions`` the indices (into the dispatched ops) of its ops."""
    groups, run = [], []
    last_phase = None
    for k, (op, ph) in enumerate(trace.ops()):
        if not op.device:
            continue
        if run and (ph != last_phase or op.name in EXTERN or op.sync):
            groups.append(("fused", run))
            run = []
        last_phase = ph
        if op.name in EXTERN:
            groups.append(("extern", [k]))
        elif op.sync:
            groups.append(("sync", [k]))
        else:
            run.append(k)
    if run:
        groups.append(("fused", run))
    return groups


def external_bytes(trace: Trace, positions, ids=None, sizes=None, last_read=None) -> tuple:
    """(bytes read, bytes written) of a fused run of the ops at ``positions``: its external inputs and outputs."""
    ids = ids if ids is not None else _operand_ids(trace)
    if sizes is None or last_read is None:
        sizes, last_read = tensor_sizes(trace, ids)
    end = positions[-1]
    read, written = {}, {}
    for k in positions:
        ins, outs = ids[k]
        for t in ins:
            if t not in written:
                read.setdefault(t, None)
        for t in outs:
            written[t] = k
    kept = [t for t, w in written.items() if not w < last_read.get(t, -1) <= end]
    return sum(sizes[t] for t in read), sum(sizes[t] for t in kept)


def tensor_sizes(trace: Trace, ids):
    """Bytes of each tensor id (its first appearance: a view's base where the base is seen first) and the
    position of its last read by a device op."""
    sizes, last_read = {}, {}
    for k, (op, _) in enumerate(trace.ops()):
        ins, outs = ids[k]
        for t, (s, d) in zip(ins + outs, op.inputs + op.outputs):
            if t not in sizes:
                sizes[t] = _numel(s) * _itemsize(d)
        if op.device:
            for t in ins:
                last_read[t] = k
    return sizes, last_read


def _operand_ids(trace: Trace):
    ids = trace.operand_ids()
    if ids is None:
        from ..errors import ConfigError
        raise ConfigError(f"costing {trace.model!r} as torch.compile runs it needs which tensor each op reads and "
                          "writes, and this trace was built by repeating a period (trace_period.py), which does "
                          "not keep them: trace the step in full (mimdsim.trace_torch)")
    return ids


def _compiled_plan(trace: Trace, eager_kernels: list) -> list:
    """What :func:`compiled_stream` takes from the trace alone (no GPU, framework or host), per kernel in issue
    order: (kind, its ops' indices in the eager device stream, phase, whether it starts a CUDA graph, its first
    op, the fused run's kernel or None); kept with the trace (``Trace.derived``)."""
    ids = _operand_ids(trace)
    sizes, last_read = tensor_sizes(trace, ids)
    ops = list(trace.ops())
    dev = np.flatnonzero(trace.device_mask)
    at = {int(k): i for i, k in enumerate(dev)}  # dispatched position -> index in the eager device stream
    plan, prev = [], None
    for kind, pos in fusion_groups(trace):
        i = np.array([at[k] for k in pos], dtype=np.intp)
        ph = ops[pos[0]][1]
        fused = None
        if kind == "fused":
            r, w = external_bytes(trace, pos, ids, sizes, last_read)
            flops = sum(eager_kernels[j].flops for j in i.tolist())
            fused = Kernel(f"{ph}.fused", ph, "vector", float(flops), float(r + w), 1)
        new_graph = kind != "sync" and (prev is None or prev[0] == "sync" or prev[1] != ph)
        plan.append((kind, i, ph, new_graph, ops[pos[0]][0], fused))
        prev = (kind, ph)
    return plan


def compiled_stream(trace: Trace, spec: GpuSpec, host_op_s: np.ndarray, eager_host: np.ndarray,
                    eager_device: np.ndarray, eager_kernels: list, precision_of):
    """The compiled step's kernels in issue order, from the eager stream of its device ops (``eager_host``,
    ``eager_device``, ``eager_kernels``, and ``host_op_s``, each op's per-op dispatch within ``eager_host``; both
    already times on the run's host, :func:`~.framework.framework`'s ``host``: the per-call costs that stay are
    that host's, and a graph launch, ``GpuSpec.graph_launch_s``, is the GPU's measured figure, not scaled):
    (host seconds, device seconds, sync, kernel, phase code) per kernel, and the number of graphs.
    ``precision_of(op)``: the precision a fused run of ``op`` s is priced in. ``eager_kernels`` must be the trace's
    own (:func:`~.trace_cost.op_stream`'s): the fused runs' FLOPs are taken from them once and kept with the trace."""
    plan = trace.derived("compiled_plan", lambda: _compiled_plan(trace, eager_kernels))
    calls = eager_host - host_op_s  # per-call costs (loss call, Optimizer.step) stay
    host, device, syncs, kernels, phase = [], [], [], [], []
    graphs = 0
    for kind, i, ph, new_graph, first_op, fused in plan:
        h = float(calls[i].sum())
        if kind == "sync":
            h += float(host_op_s[i[0]])
            d, k = float(eager_device[i[0]]), eager_kernels[i[0]]
        else:
            if new_graph:
                graphs += 1
                h += spec.graph_launch_s
            if kind == "extern":
                d, k = float(eager_device[i[0]]), eager_kernels[i[0]]
            else:
                k = fused
                d = kernel_seconds(k, spec, precision_of(first_op))
            d += spec.graph_node_overhead_s
        host.append(h)
        device.append(d)
        syncs.append(kind == "sync")
        kernels.append(k)
        phase.append(PHASES.index(ph))
    return (np.array(host, float), np.array(device, float), np.array(syncs, bool), kernels,
            np.array(phase, np.int8), graphs)
