"""The SNN training step on a GPU: its kernel list per execution strategy, and the estimate.

Each :class:`Kernel` carries its FLOPs, HBM bytes and how many times it runs per step.
The model knows no GPU here: only shapes, precisions and activities.

Strategies (per layer l with n_in inputs and n outputs, T steps, batch B, e bytes/value):

* ``per-step``  what TensorFlow/XLA or PyTorch run for a recurrent cell: per timestep and
  layer a dense GEMM ``X[t] W`` and one fused element-wise neuron kernel; in the reverse
  loop one element-wise surrogate kernel and the GEMMs ``X[t]^T dI`` and ``dI W^T``.
* ``fused``     today's best practice (SpikingJelly multi-step, CUDA graphs): per layer one
  GEMM over all T steps ``X[T*B, n_in] W``, one fused kernel that runs the neuron recurrence
  over time, and in the backward pass one reverse scan and two T-folded GEMMs.
* ``sparse``    per-step with sparse kernels: the binary spike tensor is compacted
  (dense -> index list) and multiplied as a sparse matrix (row gather, CUDA cores); the
  weight gradient is a sparse outer product; ``dI W^T`` stays dense.

Each kernel launch is costed by the GPU model (:mod:`mimdsim.gpu.model`): ``launch_overhead_s``
per launch for ``per-step`` and ``sparse``; ``graph_launch_s + launches * graph_node_overhead_s``
for ``fused`` (one CUDA graph).
"""
from __future__ import annotations

from ....arch.gpu import PRECISIONS, GpuSpec, gpu as gpu_spec
from ....energy import gpu_energy, kernel_activity
from ....errors import ConfigError, OutOfDeviceMemory
from ....gpu.model import Kernel, gemm, kernel_seconds, weight_gemm
from ....kernels.assumed import NOTHING, Pinned
from . import keras_rnn
from .eager import weight_elements
from ....report import Report, empty_cycles
from ....snn.network import describe_sizes
from ....checks import check_choice, check_fractions
from ..step import check_step

STRATEGIES = ("per-step", "fused", "sparse", "eager", "compiled", "keras-rnn-xla")


STATES = {"leaky": 1, "lapicque": 1, "synaptic": 2, "alpha": 3}


def neuron_traits(spec):
    """(state variables per neuron, recurrence) of a layer's neuron spec (None: the sparse LIF)."""
    if spec is None:
        return 1, "none"
    return STATES.get(getattr(spec, "model", "leaky"), 1), getattr(spec, "recurrence", "none")


def layer_parameters(spec, n_in, n):
    """Trained values of a layer: weights, recurrent weights, learnable decay and threshold."""
    _, rec = neuron_traits(spec)
    p = n_in * n + {"all-to-all": n * n, "one-to-one": n}.get(rec, 0)
    if spec is not None:
        p += n * (bool(getattr(spec, "learn_beta", False)) + bool(getattr(spec, "learn_threshold", False)))
    return p


def training_step_kernels(sizes, timesteps, batch, *, strategy, e, activity=None, optimizer="adam", specs=None):
    """Kernels of one training step of a feed-forward SNN (input first in ``sizes``).

    ``activity[l]`` (l = 0 for the input) is the spike fraction per step, used by the
    sparse strategy only (nnz = activity * B * n per step). ``specs`` (one neuron spec per
    layer, optional) sets each layer's state variables s (leaky and lapicque 1, synaptic 2,
    alpha 3) and recurrence: the element-wise kernels move (2 + 3s) values per neuron and step
    (fused scans 2 + s), and an all-to-all recurrence adds a GEMM per step that no strategy can
    fold over time, which also keeps that layer's neuron update per step.
    """
    T, B = int(timesteps), int(batch)
    L = len(sizes) - 1
    specs = list(specs) if specs is not None else [None] * L
    ks: list[Kernel] = []
    check_choice("strategy", strategy, STRATEGIES)
    wset = e * weight_elements(sizes, specs)  # every weight the time loop re-reads: L2-resident if it fits
    if strategy == "eager":
        raise ConfigError("the eager strategy is an op stream with host costs, not a kernel list: use "
                          "mimdsim.workloads.snn.baselines.eager.step_ops, or estimate(..., strategy='eager')")
    for l in range(1, L + 1):
        n_in, n = sizes[l - 1], sizes[l]
        s, rec = neuron_traits(specs[l - 1])
        if strategy == "fused":
            ks.append(gemm(f"L{l}.fwd_gemm", "forward", T * B, n, n_in, e, 1))
        elif strategy in ("per-step", "compiled"):
            ks.append(weight_gemm(f"L{l}.fwd_gemm", "forward", B, n, n_in, e, T, e * n_in * n, wset))
        else:
            nnz = activity[l - 1] * B * n_in
            # compaction: read the dense spike tensor, write ids (4 B) and row offsets
            ks.append(Kernel(f"L{l}.fwd_to_sparse", "forward", "vector", 2.0 * B * n_in,
                             e * B * n_in + 4 * (nnz + B + 1), T))
            ks.append(Kernel(f"L{l}.fwd_spmm", "forward", "gather", 2.0 * nnz * n,
                             e * (nnz * n + B * n) + 4 * (nnz + B + 1), T))
        if rec == "all-to-all":
            ks.append(weight_gemm(f"L{l}.fwd_recurrent_gemm", "forward", B, n, n, e, T, e * n * n, wset))
        if strategy == "fused" and rec != "all-to-all":
            # the recurrence over T inside one kernel: reads I, writes state histories and S
            ks.append(Kernel(f"L{l}.fwd_neuron_scan", "forward", "vector", (4.0 + 2 * s) * T * B * n,
                             e * (2 + s) * T * B * n, 1))
        else:
            # one step: reads I and the states, writes states, their history and S
            ks.append(Kernel(f"L{l}.fwd_neuron", "forward", "vector", (4.0 + 2 * s) * B * n,
                             e * (2 + 3 * s) * B * n, T))
    # readout: spike counts over time and softmax cross-entropy
    n_out = sizes[-1]
    ks.append(Kernel("loss.counts", "forward", "vector", 1.0 * T * B * n_out, e * (T + 1) * B * n_out, 1))
    ks.append(Kernel("loss.softmax_ce", "forward", "vector", 10.0 * B * n_out, e * 3 * B * n_out, 1))
    for l in range(L, 0, -1):
        n_in, n = sizes[l - 1], sizes[l]
        s, rec = neuron_traits(specs[l - 1])
        if strategy == "fused" and rec != "all-to-all":
            ks.append(Kernel(f"L{l}.bwd_neuron_scan", "backward", "vector", (8.0 + 2 * s) * T * B * n,
                             e * (2 + s) * T * B * n, 1))
        else:
            # surrogate, carry and dI: reads state histories, dS, carried grads; writes them and dI
            ks.append(Kernel(f"L{l}.bwd_neuron", "backward", "vector", (8.0 + 2 * s) * B * n,
                             e * (2 + 3 * s) * B * n, T))
        if rec == "all-to-all":
            ks.append(weight_gemm(f"L{l}.bwd_recurrent_input_gemm", "backward", B, n, n, e, T, e * n * n,
                                  wset))  # dI V^T, per step
            ks.append(gemm(f"L{l}.bwd_recurrent_wgrad_gemm", "backward", n, n, T * B, e, 1))  # S^T dI, folded
        if strategy == "fused":
            ks.append(gemm(f"L{l}.bwd_wgrad_gemm", "backward", n_in, n, T * B, e, 1))
            if l > 1:
                ks.append(gemm(f"L{l}.bwd_input_gemm", "backward", T * B, n_in, n, e, 1))
            continue
        if strategy in ("per-step", "compiled"):
            # dW += X[t]^T dI[t]: the accumulation reads and writes dW (XLA: one GEMM with beta = 1)
            k = gemm(f"L{l}.bwd_wgrad_gemm", "backward", n_in, n, B, e, T)
            ks.append(Kernel(k.name, k.phase, k.kind, k.flops, k.nbytes + e * n_in * n, T, k.dims))
        else:
            nnz = activity[l - 1] * B * n_in
            ks.append(Kernel(f"L{l}.bwd_wgrad_scatter", "backward", "gather", 2.0 * nnz * n,
                             e * (2 * nnz * n + B * n) + 4 * (nnz + B + 1), T))
        if l > 1:
            ks.append(weight_gemm(f"L{l}.bwd_input_gemm", "backward", B, n_in, n, e, T, e * n_in * n, wset))
    for l in range(1, L + 1):
        p = layer_parameters(specs[l - 1], sizes[l - 1], sizes[l])
        if optimizer == "adam":  # reads w, g, m, v; writes w, m, v
            ks.append(Kernel(f"L{l}.adam", "update", "vector", 12.0 * p, e * 7 * p, 1))
        else:  # reads w, g; writes w
            ks.append(Kernel(f"L{l}.sgd", "update", "vector", 2.0 * p, e * 3 * p, 1))
    return ks


def device_memory(sizes, timesteps, batch, *, strategy, e, optimizer="adam", activity=None, specs=None) -> dict:
    """Bytes the step keeps on the device, by category (``activity``, ``specs`` as for the kernels)."""
    T, B = int(timesteps), int(batch)
    specs = list(specs) if specs is not None else [None] * (len(sizes) - 1)
    params = sum(layer_parameters(sp, a, b) for sp, a, b in zip(specs, sizes[:-1], sizes[1:]))
    # BPTT keeps every step's spikes and state variables of every layer
    stored = sum((1 + neuron_traits(sp)[0]) * n for sp, n in zip(specs, sizes[1:]))
    mem = {
        "weights": e * params,
        "gradients": e * params,
        "optimizer": (2 * e * params) if optimizer == "adam" else 0,
        "inputs": e * T * B * sizes[0],
        "activations": e * T * B * stored,
        # the largest per-layer temporary: I (and dI) over the folded steps, or one step's
        "workspace": e * (2 * T * B if strategy == "fused" else 2 * B) * max(sizes[1:]),
    }
    if strategy == "sparse":  # the forward pass's index lists (4 B ids + row offsets) are kept for the backward pass
        mem["sparse_indices"] = sum(4 * T * (activity[l] * B * sizes[l] + B + 1) for l in range(len(sizes) - 1))
    return {k: int(v) for k, v in mem.items()}


GPU_KINDS = ("compute", "launch")


def estimate(net, gpu="a100-40gb", *, timesteps: int, batch_size: int, strategy: str = "fused",
             precision: str | None = None, activity=None, input_activity=None, optimizer: str = "adam",
             check_memory: bool = True, eager_source: str | None = None, pinned: Pinned = NOTHING,
             host=None) -> Report:
    """One training step of ``net`` on a GPU under a named execution strategy.

    ``activity`` (spike fraction per neuron layer, one number or a list) and
    ``input_activity`` matter only to the ``sparse`` strategy. Dense strategies do the
    same work whatever the activity. ``eager_source`` (the ``eager`` strategy only): "trace"
    (the real snnTorch step traced, the default where torch and snnTorch are installed) or
    "census" (the hand census of snnTorch 1.0, the default without them); ``eager_trace.py``.
    ``pinned``: the framework host constants, host speeds and energy constants pinned (``--assume``, a band's
    corner). ``host``: the CPU that drives the GPU (a host preset or HostSpec, ``mimdsim.arch.host``; None: the
    GPU preset's default host): the framework's per-op and per-call host times are times on it.
    """
    from ....arch.host import default_host
    from ....gpu.framework import STRATEGY_FRAMEWORK, default_precision, framework

    spec = gpu if isinstance(gpu, GpuSpec) else gpu_spec(gpu)
    check_choice("strategy", strategy, STRATEGIES, where="GPU ")
    host = default_host(spec.name) if host is None else host
    fw = framework(STRATEGY_FRAMEWORK[strategy], pinned, host=host)
    if precision is None:  # the framework's float32 matmul precision on this GPU
        precision = default_precision(strategy, spec)
    check_choice("precision", precision, PRECISIONS)
    spec.matrix_flops(precision)  # raises if the GPU lacks this precision
    check_step(timesteps, batch_size, optimizer)
    sizes = list(net.sizes)
    L = len(sizes) - 1
    acts = None
    if strategy == "sparse":
        if activity is None:
            raise ConfigError("the sparse strategy needs activity= (spike fraction per layer) to size its kernels")
        layer_acts = check_fractions("activity", activity, L)
        acts = check_fractions("input_activity", layer_acts[0] if input_activity is None else input_activity, 1) \
            + layer_acts
    e = spec.bytes_per_element(precision)

    specs = getattr(net, "specs", None)
    if strategy == "keras-rnn-xla":
        keras_rnn.check_network(net)
        memory = keras_rnn.device_memory(sizes, timesteps, batch_size, optimizer)
    else:
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

    if strategy == "keras-rnn-xla":
        return keras_rnn.keras_rnn_report(net, spec, int(timesteps), int(batch_size), precision, optimizer, fw, memory,
                                          pinned)
    if strategy == "eager":
        from . import eager_trace
        if eager_trace.source(eager_source) == "trace":
            return _eager_trace_report(net, spec, sizes, int(timesteps), int(batch_size), precision, optimizer,
                                       memory, used, pinned, host)
        return _eager_report(net, spec, sizes, int(timesteps), int(batch_size), precision, optimizer, e, memory,
                             used, pinned, host)
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
    if fw.while_iteration_s:  # the time loops as device-side while loops: a host round trip per iteration
        for phase in ("forward", "backward"):
            c = timesteps * fw.while_iteration_s * hz
            cycles[phase]["launch"] += c
            steps[f"{phase}.while_loop"] = {"count": int(timesteps), "phase": phase, "compute": 0.0, "launch": c}
    del cycles["io"]
    notes = [f"strategy {strategy} ({fw.description}), precision {precision}, {launches} kernel launches per step",
             "input transfer from the host is not modelled (assumed overlapped with compute)"]
    report = Report(
        architecture=spec.name, platform="gpu", model=describe_sizes(sizes), mode=f"{strategy} {precision}",
        timesteps=int(timesteps), batch_size=int(batch_size), clock_hz=hz, cycles=cycles, steps=steps,
        memory={"device_bytes": used, "device_bytes_limit": int(spec.hbm_bytes), "by_category": memory},
        placement={"strategy": strategy, "framework": fw.name, "host": fw.host, "precision": precision,
                   "optimizer": optimizer, "kernel_launches": launches},
        notes=notes, activity=kernel_activity(kernels, precision),
    )
    report.energy = gpu_energy(report, spec, pinned)
    return report


def _eager_report(net, spec, sizes, T, B, precision, optimizer, e, memory, used, pinned, host) -> Report:
    """The ``eager`` strategy: snnTorch's op stream from Python, host and device asynchronous
    (:mod:`.eager`); ``compute`` is the device's kernel time, ``host`` the time it waits for the host."""
    from ....gpu.framework import framework
    from . import eager

    fw = framework("pytorch-eager", pinned, host=host)
    bias = [b is not None for b in getattr(net, "biases", [None] * (len(sizes) - 1))]
    ops = eager.step_ops(sizes, T, B, e=e, specs=getattr(net, "specs", None), bias=bias, optimizer=optimizer)
    host = eager.host_seconds(ops, fw)
    device = eager.device_seconds(ops, spec, precision)
    total, wait = eager.timeline(host, device)
    hz = spec.clock_hz
    cycles, steps = eager.cycles_by_phase_and_kernel(ops, device, wait, hz)
    launches = int(host.size)
    bound = "host" if wait.sum() > 0.5 * total else "device"
    notes = [f"strategy eager ({fw.description}), precision {precision}, {launches} device ops per step; "
             f"{bound}-bound: the device waits {100 * wait.sum() / total:.0f}% of the step for the host "
             f"(on {fw.host}: {fw.host_forward_op_s * 1e6:.1f} us per forward op, {fw.host_backward_op_s * 1e6:.1f} "
             f"us per backward op; docs/gpu-model.md)"]
    report = Report(
        architecture=spec.name, platform="gpu", model=describe_sizes(sizes), mode=f"eager {precision}",
        timesteps=T, batch_size=B, clock_hz=hz, cycles=cycles, steps=steps,
        memory={"device_bytes": used, "device_bytes_limit": int(spec.hbm_bytes), "by_category": memory},
        placement={"strategy": "eager", "framework": fw.name, "host": fw.host, "precision": precision,
                   "optimizer": optimizer, "kernel_launches": launches, "bound": bound, "eager_source": "census"},
        notes=notes + ["eager op stream: the hand census of snnTorch 1.0 (eager.py; torch and snnTorch not "
                       "traced: pip install \"mimdsim[torch]\" to trace the installed versions)"],
        activity=kernel_activity([op.kernel for op in ops], precision),
    )
    report.energy = gpu_energy(report, spec, pinned)
    return report


def _eager_trace_report(net, spec, sizes, T, B, precision, optimizer, memory, used, pinned, host) -> Report:
    """The ``eager`` strategy from a trace of the real snnTorch step on the installed versions
    (:mod:`.eager_trace`), costed by :func:`mimdsim.gpu.trace_cost.costed_trace`."""
    from ....gpu.framework import framework
    from ....gpu.trace_cost import costed_trace
    from . import eager_trace

    trace = eager_trace.step_trace(net, T, B, optimizer)
    r, kernels = costed_trace(trace, spec, framework=framework("pytorch-eager", pinned, host=host),
                              precision=precision)
    traced = ", ".join(f"{k} {v}" for k, v in trace.versions.items())
    r.model, r.mode, r.batch_size, r.timesteps = describe_sizes(sizes), f"eager {precision}", B, T
    r.memory = {"device_bytes": used, "device_bytes_limit": int(spec.hbm_bytes), "by_category": memory}
    r.placement = {"strategy": "eager", **{k: v for k, v in r.placement.items() if k != "strategy"},
                   "optimizer": optimizer, "eager_source": "trace"}
    r.notes = [f"strategy eager: the snnTorch training step traced ({traced}; the real modules on the meta "
               f"device, eager_trace.py), precision {precision}"] + r.notes
    r.activity = kernel_activity(kernels, precision)
    r.energy = gpu_energy(r, spec, pinned)
    return r
