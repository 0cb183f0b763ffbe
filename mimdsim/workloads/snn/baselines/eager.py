"""The SNN training step as eager PyTorch (snnTorch) runs it on a GPU: strategy ``"eager"``.

Counted from the framework as built (``docs/as-built/gpu_frameworks.md`` §1, a census of the
aten ops snnTorch 1.0 and torch 2.13 dispatch for one training step):

* per layer and timestep, forward: the ``nn.Linear`` GEMM (bias in the cuBLASLt epilogue) and
  the neuron's element-wise ops (``EAGER_NEURON_OPS``; e.g. ``snn.Leaky``: 9 element-wise on
  B x n values, one 0-dim ``beta.clamp`` and 3 copies — ``leaky.py`` ``forward``,
  ``_base_state_function``, ``mem_reset``, ``fire`` and the surrogate's ``forward``);
* per layer and timestep, backward: autograd replays each op's backward (the surrogate's
  Python ``backward`` is 6 kernels), the weight gradient of every step (``mm``) and its
  accumulation into the running sum (an ``add`` over |W|: autograd's ``InputBuffer``),
  ``dI W^T`` for layers past the first;
* per step: the records' ``stack``, the loss (3 ops) and its backward seed (3), the optimizer
  (``torch.optim.Adam`` foreach: 7 launches; SGD foreach: 1) and the ``.item()`` that
  synchronises host and device.

Every device op costs the host a dispatch (Python, PyTorch's dispatcher and autograd, and the
CUDA launch: ``FrameworkSpec``) and the device its kernel (the GPU model's roofline). Host and
device run asynchronously on one stream: op i starts on the device when it has been issued and
op i-1 has finished, so the step takes ``max over i (host issue time of op i + the device time
of ops i..end)`` — the slower stream plus the waits the other imposes — and ends at the sync.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ....gpu.framework import FrameworkSpec, timeline  # noqa: F401 (the overlap rule, re-exported)
from ....gpu.model import Kernel, gemm, kernel_seconds, weight_gemm
from ....report import empty_cycles

# Device ops of each neuron module (snnTorch 1.0, defaults; census in docs/as-built/gpu_frameworks.md
# §1.4, taken at T = 25): forward per timestep (element-wise on B x n, 0-dim, copies, extra GEMMs
# of an all-to-all recurrence); backward as (per timestep, per run) pairs, the per-run part being
# the first or last step's difference (e.g. Leaky: 8 element-wise per step, 2 fewer over the run:
# 198 = 8 x 25 - 2 in the census).
EAGER_NEURON_OPS = {
    #            fwd: ew, ew0, copy, gemm    bwd: ew, copy, reduce, gemm, ew0 as (per step, per run)
    "leaky": ((9, 1, 3, 0), ((8, -2), (1, 0), (0, 0), (0, 0), (0, 0))),
    "synaptic": ((11, 2, 3, 0), ((10, -4), (1, 0), (0, 0), (0, 0), (0, 0))),
    "alpha": ((23, 22, 3, 0), ((29, -14), (1, 0), (0, 0), (0, 0), (0, 0))),
    "lapicque": ((12, 6, 3, 0), ((11, -2), (1, 0), (0, 0), (0, 0), (0, 0))),
    "rleaky": ((10, 1, 3, 1), ((10, -4), (1, 0), (1, 0), (2, -1), (0, 0))),
    "rsynaptic": ((12, 2, 3, 1), ((12, -6), (1, 0), (1, 0), (2, -1), (0, 0))),
    # RLeaky(all_to_all=False), snnTorch's default learnable scalar V: V * spk and its add forward;
    # backward the product's two grads, sum(grad * spk) for V and V's per-step accumulation (0-dim)
    "rleaky-one-to-one": ((11, 1, 3, 0), ((10, -3), (1, 0), (1, 0), (0, 0), (1, -1))),
}
ACCUMULATE = (1, -1)  # autograd sums a parameter's T per-step gradients with T - 1 adds
# per layer and step: zeros_like of each initial state (init_leaky: mem; init_synaptic: syn, mem;
# init_alpha: syn_exc, syn_inh, mem), and of the spikes for a recurrent layer (init_rleaky, init_rsynaptic)
RESET_OPS = {"leaky": 1, "synaptic": 2, "alpha": 3, "lapicque": 1}
OUTPUT_RECORD_OPS = 2  # torch.stack of the output's spike and membrane records
LOSS_OPS = 3  # ce_count_loss: sum over time, log_softmax, nll_loss
LOSS_BACKWARD_OPS = 3  # backward seed ones_like, nll_loss_backward, log_softmax_backward
OPTIMIZER_LAUNCHES = {"adam": 7, "sgd": 1}  # foreach kernels per parameter group (MultiTensorApply)
SYNC_OPS = 1  # loss.item(): a device-to-host copy that waits for the stream


@dataclass(frozen=True)
class Op:
    """One dispatched device op: its kernel and the phase whose host cost it carries."""

    kernel: Kernel
    phase: str
    host: str  # "forward", "backward", or "loss" / "optimizer": a per-call cost spread over the call's ops


def neuron_key(spec) -> str:
    if spec is None:
        return "leaky"
    model = getattr(spec, "model", "leaky")
    recurrence = getattr(spec, "recurrence", "none")
    if recurrence == "all-to-all" and model in ("leaky", "synaptic"):
        return "r" + model
    if recurrence == "one-to-one" and model == "leaky":
        return "rleaky-one-to-one"
    return model


def weight_elements(sizes, specs=None) -> int:
    """Elements of every weight matrix a per-step GEMM reads: the layers' and the all-to-all recurrences'."""
    specs = list(specs) if specs is not None else [None] * (len(sizes) - 1)
    return sum(a * b + (b * b if getattr(sp, "recurrence", "none") == "all-to-all" else 0)
               for sp, a, b in zip(specs, sizes[:-1], sizes[1:]))


def step_ops(sizes, timesteps, batch, *, e, specs=None, bias=None, optimizer="adam") -> list[Op]:
    """The device ops of one eager training step, in issue order (forward over time, loss,
    autograd's reverse pass, the optimizer, the sync). Backward counts are (per timestep, per
    run) pairs: issued ``per_step x T + per_run`` times."""
    T, B = int(timesteps), int(batch)
    L = len(sizes) - 1
    specs = list(specs) if specs is not None else [None] * L
    bias = list(bias) if bias is not None else [False] * L
    ops: list[Op] = []
    wset = e * weight_elements(sizes, specs)  # the weights every step re-reads: L2-resident where they fit

    def times(pair):
        return pair[0] * T + pair[1]

    def ew(name, phase, elements, count, reads=2, host="forward"):
        n = int(count)
        if n > 0:
            ops.append(Op(Kernel(name, phase, "vector", float(elements), e * (reads + 1) * elements, n), phase, host))

    def recurrent(l):
        return getattr(specs[l - 1], "recurrence", "none") != "none"

    for l in range(1, L + 1):  # init_rleaky / init_rsynaptic also zero the spikes
        model = getattr(specs[l - 1], "model", "leaky")
        ew(f"L{l}.reset_mem", "forward", B * sizes[l], RESET_OPS.get(model, 1) + recurrent(l), reads=0)
    for l in range(1, L + 1):  # the Python loop over time issues layer by layer, step by step
        n_in, n = sizes[l - 1], sizes[l]
        (f_ew, f_ew0, f_copy, f_gemm), _ = EAGER_NEURON_OPS[neuron_key(specs[l - 1])]
        ops.append(Op(weight_gemm(f"L{l}.fwd_linear", "forward", B, n, n_in, e, T, e * n_in * n, wset), "forward",
                      "forward"))
        if f_gemm:
            ops.append(Op(weight_gemm(f"L{l}.fwd_recurrent", "forward", B, n, n, e, T, e * n * n, wset), "forward",
                          "forward"))
        ew(f"L{l}.fwd_neuron_ew", "forward", B * n, f_ew * T)
        ew(f"L{l}.fwd_neuron_scalar", "forward", 1, f_ew0 * T, reads=1)
        ew(f"L{l}.fwd_neuron_copy", "forward", B * n, f_copy * T, reads=1)
    ew("loss.records", "forward", T * B * sizes[-1], OUTPUT_RECORD_OPS, reads=1)
    ew("loss.ce_count", "forward", T * B * sizes[-1], LOSS_OPS, reads=1, host="loss")
    ew("loss.backward_seed", "backward", B * sizes[-1], LOSS_BACKWARD_OPS, reads=1)
    for l in range(L, 0, -1):
        n_in, n = sizes[l - 1], sizes[l]
        _, (b_ew, b_copy, b_red, b_gemm, b_ew0) = EAGER_NEURON_OPS[neuron_key(specs[l - 1])]
        ew(f"L{l}.bwd_neuron_ew", "backward", B * n, times(b_ew), host="backward")
        ew(f"L{l}.bwd_neuron_scalar", "backward", 1, times(b_ew0), reads=1, host="backward")
        if recurrent(l):  # S[t] feeds the next layer (or the loss) and the recurrence: autograd adds the two
            ew(f"L{l}.bwd_spike_grad_accumulate", "backward", B * n, times(ACCUMULATE), host="backward")
        ew(f"L{l}.bwd_neuron_copy", "backward", B * n, times(b_copy), reads=1, host="backward")
        ew(f"L{l}.bwd_recurrent_reduce", "backward", B * n, times(b_red), reads=1, host="backward")
        if times(b_gemm) > 0:
            ops.append(Op(weight_gemm(f"L{l}.bwd_recurrent", "backward", B, n, n, e, times(b_gemm), e * n * n, wset),
                          "backward", "backward"))
        # the Linear: weight gradient of every step, accumulated into the running sum (reads 2|W|, writes |W|)
        ops.append(Op(gemm(f"L{l}.bwd_wgrad", "backward", n_in, n, B, e, T), "backward", "backward"))
        ew(f"L{l}.bwd_wgrad_accumulate", "backward", n_in * n, times(ACCUMULATE), host="backward")
        if bias[l - 1]:
            ew(f"L{l}.bwd_bias_reduce", "backward", B * n, T, reads=1, host="backward")
            ew(f"L{l}.bwd_bias_accumulate", "backward", n, times(ACCUMULATE), host="backward")
        if l > 1:
            ops.append(Op(weight_gemm(f"L{l}.bwd_dgrad", "backward", B, n_in, n, e, T, e * n_in * n, wset), "backward",
                          "backward"))
    params = sum(a * b + (b if bb else 0) for a, b, bb in zip(sizes[:-1], sizes[1:], bias))
    reads = 4 if optimizer == "adam" else 2
    ew(f"{optimizer}.foreach", "update", params / OPTIMIZER_LAUNCHES[optimizer], OPTIMIZER_LAUNCHES[optimizer],
       reads=reads, host="optimizer")
    ew("loss.item", "update", 1, SYNC_OPS, reads=1)
    return ops


def host_seconds(ops, fw: FrameworkSpec) -> np.ndarray:
    """Host cost of every launch of every op (a call's own cost spread over its launches)."""
    per = {"forward": fw.host_forward_op_s, "backward": fw.host_backward_op_s}
    call = {"loss": fw.loss_call_s, "optimizer": fw.optimizer_call_s}
    out = []
    for op in ops:
        n = op.kernel.count
        if op.host in call:
            out.append(np.full(n, fw.host_forward_op_s + call[op.host] / max(n, 1)))
        else:
            out.append(np.full(n, per[op.host]))
    return np.concatenate(out)


def device_seconds(ops, spec, precision) -> np.ndarray:
    return np.concatenate([np.full(op.kernel.count, kernel_seconds(op.kernel, spec, precision)) for op in ops])


def cycles_by_phase_and_kernel(ops, device, wait, hz: float) -> tuple[dict, dict]:
    """The report's per-phase cycles (device time as compute, the device's wait for the host as host) and
    per-kernel steps of an op stream, from each launch's ``device`` and ``wait`` seconds (in ``ops``' order)."""
    cycles = empty_cycles(("compute", "host"))
    steps: dict[str, dict] = {}
    at = 0
    for op in ops:
        n = op.kernel.count
        d, w = float(device[at:at + n].sum()) * hz, float(wait[at:at + n].sum()) * hz
        at += n
        cycles[op.phase]["compute"] += d
        cycles[op.phase]["host"] += w
        rec = steps.setdefault(op.kernel.name, {"count": 0, "phase": op.phase, "compute": 0.0, "host": 0.0})
        rec["count"] += n
        rec["compute"] += d
        rec["host"] += w
    del cycles["io"]
    return cycles, steps
