"""The sparse-BPTT study's own GPU program, as TensorFlow 2.8-2.10 and XLA build it (strategy ``keras-rnn-xla``).

What is costed is ``train_gpu`` of jrfinkbeiner/graphcore_snn (``benchmarking/keras_train_util.py`` at
f46f8a4, unchanged on its GPU path to HEAD 0d81a25; docs/as-built/graphcore_snn.md, docs/gpu-model.md
"The study's GPU program"): a Keras ``RNN`` over ``KerasMultiLIFLayerDenseCell`` (per layer and timestep a
dense ``tf.matmul`` of the previous step's spikes, the LIF update, the super-spike surrogate), float32,
``model.compile(jit_compile=True, steps_per_execution=N)``, Adam, a ``tf.data`` pipeline of dense float32
batches. One training step is one XLA executable:

* the batch ``(B, T, N_0)`` copied to the device (pageable host memory; the host waits) and transposed
  to time-major (``keras.backend.rnn``'s ``swap_batch_timestep``);
* the forward time loop: ``while_v2`` with ``maximum_iterations``, whose condition XLA simplifies to
  ``counter < T`` (checked in TF 2.10.0 and 2.12.1 HLO dumps), so XLA:GPU emits a ForThunk; per iteration
  W GEMMs and the TensorList pushes the gradient needs (5W + 1 dynamic-update-slices: the weights of
  layers 2..W, each layer's decay and threshold, two activations per layer, the input slice, an index),
  W neuron-update fusions, W - 1 spike fusions, 2W - 1 copies;
* loss and metric (spike counts over time, softmax cross-entropy, accuracy);
* the backward time loop: its bound is a run-time value, so a WhileThunk (T + 1 predicate copies and
  host waits); per iteration 2W - 1 GEMMs (W weight gradients, W - 1 input gradients against the popped
  weight copies), 2W - 1 pops, W surrogate and 2W chain-rule fusions, W gradient-list writes, W + 1 adds
  (W weight-gradient accumulations unless the GEMM accumulates with beta = 1), 3W + 1 small copies and
  the whole-buffer copies of each output-gradient list that CPU-XLA inserts (the GPU's
  ``LoopScheduleLinearizer`` probably removes them);
* Adam (``ResourceApplyAdam`` per weight) and the step's scalar updates.

Counts per iteration are those of the HLO dumps (docs/research/study-gpu-program.md §2.3, W = 2, 3, 4);
the choices the evidence leaves open are named assumptions (``xla_*``, ``tf_*``) spanned by the band.
The model knows no GPU here beyond the costing in :mod:`mimdsim.gpu.xla`.
"""
from __future__ import annotations

import dataclasses

from ....energy import gpu_energy, kernel_activity
from ....errors import Param, UnsupportedModel
from ....gpu.framework import FrameworkSpec
from ....gpu.model import Kernel, gemm, weight_gemm
from ....gpu.xla import HostCopy, Loop, kernels_per_step, step_timeline
from ....report import Report, empty_cycles
from ....snn.network import describe_sizes

F32 = 4  # the program keeps every tensor in float32 (tf32 is a GEMM mode, not a storage format)
KINDS = ("compute", "launch", "sync", "host")


def _vector(name, phase, flops, nbytes, count=1) -> Kernel:
    return Kernel(name, phase, "vector", float(flops), float(nbytes), int(count))


def step_program(sizes, timesteps: int, batch: int, fw: FrameworkSpec, optimizer: str = "adam") -> list:
    """The executable of one training step (input first in ``sizes``) as XLA parts: a host copy, kernels
    and two time loops, with ``fw``'s build choices (forward loop thunk, list copies, where weight
    gradients accumulate, optimizer kernels per weight)."""
    T, B, e = int(timesteps), int(batch), F32
    n = list(sizes)
    W = len(n) - 1
    weights = [n[l] * n[l - 1] for l in range(1, W + 1)]  # |W_l|, l = 1..W
    wset = e * sum(weights)  # every weight the forward loop re-reads: L2-resident if it fits
    layers = range(1, W + 1)

    forward = []
    for l in layers:
        forward.append(weight_gemm(f"L{l}.fwd_gemm", "forward", B, n[l], n[l - 1], e, 1, e * weights[l - 1], wset))
    # TensorList pushes (dynamic-update-slice in place: read and write the slice)
    for l in layers:
        if l > 1:  # the cell reads its weight variable inside the body: while_v2 keeps each step's copy
            forward.append(_vector(f"L{l}.fwd_push_weight", "forward", 0, 2 * e * weights[l - 1]))
        forward.append(_vector(f"L{l}.fwd_push_decay_threshold", "forward", 0, 2 * e * n[l], 2))
        forward.append(_vector(f"L{l}.fwd_push_activations", "forward", 0, 2 * e * B * n[l], 2))
    forward.append(_vector("L0.fwd_push_input", "forward", 0, 2 * e * B * n[0]))
    forward.append(_vector("fwd_push_index", "forward", 0, 8))
    for l in layers:  # state - reset, decay, input: reads syn, state, decay, threshold; writes the state
        forward.append(_vector(f"L{l}.fwd_neuron", "forward", 6 * B * n[l], 5 * e * B * n[l]))
        if l < W:  # the spike (heaviside) of the layers the next step reads
            forward.append(_vector(f"L{l}.fwd_spike", "forward", 2 * B * n[l], 3 * e * B * n[l]))
        forward.append(_vector(f"L{l}.fwd_copy_state", "forward", 0, 2 * e * B * n[l], 2 if l < W else 1))

    backward = []
    for l in layers:
        g = gemm(f"L{l}.bwd_wgrad_gemm", "backward", n[l - 1], n[l], B, e, 1)
        if fw.wgrad_in_gemm:  # dW += x^T dI as one GEMM with beta = 1: it also reads dW
            backward.append(dataclasses.replace(g, nbytes=g.nbytes + e * weights[l - 1]))
        else:
            backward.append(g)
            backward.append(_vector(f"L{l}.bwd_wgrad_add", "backward", weights[l - 1], 3 * e * weights[l - 1]))
        if l > 1:  # dI_l W_l against this step's copy of W_l, popped (materialised: a cuBLAS operand) just before
            backward.append(_vector(f"L{l}.bwd_pop_weight", "backward", 0, 2 * e * weights[l - 1]))
            backward.append(weight_gemm(f"L{l}.bwd_input_gemm", "backward", B, n[l - 1], n[l], e, 1,
                                        e * weights[l - 1], e * weights[l - 1]))  # read from L2 if the copy fits
        backward.append(_vector(f"L{l}.bwd_pop_activations", "backward", 0, 2 * e * B * n[l]))
        backward.append(_vector(f"L{l}.bwd_surrogate", "backward", 6 * B * n[l], 3 * e * B * n[l]))
        backward.append(_vector(f"L{l}.bwd_chain", "backward", 2 * B * n[l], 3 * e * B * n[l], 2))
        backward.append(_vector(f"L{l}.bwd_grad_list_write", "backward", 0, 2 * e * B * n[l]))
        backward.append(_vector(f"L{l}.bwd_copy_state", "backward", 0, 2 * e * B * n[l], 3))
        if fw.backward_list_copies:  # the whole [T, B, N_l] output-gradient list, read and written
            backward.append(_vector(f"L{l}.bwd_list_copy", "backward", 0, 2 * e * T * B * n[l],
                                    fw.backward_list_copies))
    backward.append(_vector("bwd_counter", "backward", 1, 8, 2))  # the loop's add and its one small copy

    program = [
        HostCopy("input.h2d", "io", e * B * T * n[0] + 4 * B),  # spikes and the integer targets
        _vector("input.transpose", "forward", 0, 2 * e * B * T * n[0]),
        _vector("state.init", "forward", 0, 2 * e * B * sum(n[1:])),
        Loop("forward.time_loop", "forward", T, tuple(forward), "while" if fw.forward_loop_waits else "for",
             (_vector("forward.loop_condition", "forward", 2, 8),)),
        _vector("loss.output_transpose", "forward", 0, 2 * e * T * B * n[W]),
        _vector("loss.spike_counts", "forward", T * B * n[W], e * (T + 1) * B * n[W]),
        _vector("loss.softmax_ce", "forward", 10 * B * n[W], 3 * e * B * n[W]),
        _vector("metric.accuracy", "forward", 3 * B * n[W], e * B * n[W], 2),
        _vector("loss.grad_over_time", "backward", T * B * n[W], e * (T + 1) * B * n[W]),
        Loop("backward.time_loop", "backward", T, tuple(backward), "while",
             (_vector("backward.loop_condition", "backward", 2, 8),)),
    ]
    k = fw.update_kernels_per_weight
    for l in layers:
        p = weights[l - 1]
        if optimizer == "adam":  # ResourceApplyAdam: reads w, g, m, v; writes w, m, v
            program.append(_vector(f"L{l}.adam", "update", 12 * p / k, 7 * e * p / k, k))
        else:  # ResourceApplyGradientDescent: reads w, g; writes w
            program.append(_vector(f"L{l}.sgd", "update", 2 * p / k, 3 * e * p / k, k))
    program.append(_vector("update.scalars", "update", 8, 32, 3))  # beta powers, iteration, train counter
    return program


def device_memory(sizes, timesteps: int, batch: int, optimizer: str = "adam") -> dict:
    """Bytes the program keeps on the device, by category: the loop's TensorList accumulators hold every
    step's pushed values, including a copy of each weight of layers 2..W per step."""
    T, B, e = int(timesteps), int(batch), F32
    n = list(sizes)
    params = sum(a * b for a, b in zip(n[:-1], n[1:]))
    hidden = sum(n[1:])
    return {"weights": e * params, "gradients": e * params, "optimizer": 2 * e * params if optimizer == "adam" else 0,
            "inputs": 2 * e * T * B * n[0],  # the batch and its time-major transpose
            "activations": e * T * (2 * B * hidden + 2 * hidden + B * n[0]) + e * T * B * hidden,  # pushes, outputs
            "loop_weight_copies": e * T * sum(a * b for a, b in zip(n[1:-1], n[2:])),
            "workspace": 2 * e * T * B * hidden}  # the output-gradient lists


def _unlike_the_study(net) -> list:
    """What in ``net`` the study's cell (a feed-forward stack of leaky layers without biases, recurrence or
    trained decays and thresholds) cannot be; empty if it can."""
    specs = [s for s in (getattr(net, "specs", None) or ()) if s is not None]
    return sorted({f"{s.model} neurons" for s in specs if s.model != "leaky"}
                  | {f"{s.recurrence} recurrence" for s in specs if s.recurrence != "none"}
                  | {"a trained decay or threshold" for s in specs if s.learn_beta or s.learn_threshold}
                  | ({"biases"} if any(b is not None for b in (getattr(net, "biases", None) or ())) else set()))


def builds(net) -> bool:
    """Whether the study's Keras program can be ``net``."""
    return not _unlike_the_study(net)


def check_network(net) -> None:
    """Refuse a model the study's cell cannot be rather than cost a program its software never builds."""
    odd = _unlike_the_study(net)
    if odd:
        raise UnsupportedModel(f"strategy keras-rnn-xla is the sparse-BPTT study's own Keras program (a feed-forward "
                               f"LIF cell without biases); this network has {', '.join(odd)}: use strategy compiled "
                               f"(a generic XLA time loop) or eager for it")


def keras_rnn_report(net, spec, timesteps: int, batch: int, precision: str, optimizer: str, fw: FrameworkSpec,
                     memory: dict, pinned) -> Report:
    """One training step of the study's program on ``spec`` (:func:`step_program`, costed by
    :func:`mimdsim.gpu.xla.step_timeline` with ``fw``'s figures on its host); ``compute`` is kernel time, ``launch`` the device's waits for the
    host's thunk issue, ``sync`` the WhileThunks' predicate round trips, ``host`` the input copy and the
    host's per-step call."""
    check_network(net)
    if precision not in ("fp32", "tf32"):  # the program keeps float32 tensors; TF32 is how cuBLAS runs its GEMMs
        given = Param("precision", precision, key="gpu.precision")
        raise UnsupportedModel(f"strategy keras-rnn-xla is the sparse-BPTT study's float32 program: its GEMMs run "
                               f"tf32 (TensorFlow's default on Ampere and later) or fp32, not {precision}; drop ",
                               Param("precision", key="gpu.precision", action="drop"), ", or use strategy compiled or "
                               f"fused for a {precision} program", param=given)
    sizes = list(net.sizes)
    program = step_program(sizes, timesteps, batch, fw, optimizer)
    tl = step_timeline(program, spec, precision, fw)
    hz = spec.clock_hz
    cycles = empty_cycles(KINDS)
    for phase, rec in tl.summary("phase").items():
        cycles[phase] = {k: rec[k] * hz for k in KINDS}
    steps = {name: {"count": rec["count"], "phase": rec["phase"], **{k: rec[k] * hz for k in KINDS}}
             for name, rec in tl.summary("name").items()}
    kernels = kernels_per_step(program)
    thunk = "WhileThunk" if fw.forward_loop_waits else "ForThunk"
    waited = sum(rec[k] for rec in tl.summary("kind").values() for k in ("launch", "sync", "host"))
    bound = "host" if waited > 0.5 * tl.seconds else "device"  # as for eager: who the step waits on
    used = sum(memory.values())
    report = Report(
        architecture=spec.name, platform="gpu", model=describe_sizes(sizes), mode=f"keras-rnn-xla {precision}",
        timesteps=int(timesteps), batch_size=int(batch), clock_hz=hz, cycles=cycles, steps=steps,
        memory={"device_bytes": used, "device_bytes_limit": int(spec.hbm_bytes), "by_category": memory},
        placement={"strategy": "keras-rnn-xla", "framework": fw.name, "precision": precision, "optimizer": optimizer,
                   "kernel_launches": tl.kernels, "host_waits": tl.host_waits, "forward_loop": thunk,
                   "bound": bound, "host": fw.host, "host_scale": fw.host_scale},
        notes=[f"the study's Keras RNN under XLA ({fw.description}), precision {precision}: {tl.kernels} kernels "
               f"and {tl.host_waits} host waits per step (forward loop a {thunk}, backward a WhileThunk); "
               f"input {program[0].nbytes / 1e6:.1f} MB copied from the host per step (docs/gpu-model.md)"],
        activity=kernel_activity(kernels, precision),
    )
    report.energy = gpu_energy(report, spec, pinned)
    return report
