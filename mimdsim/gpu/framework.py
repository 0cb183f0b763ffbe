"""How a framework drives a GPU: the host side of a training step (docs/gpu-model.md, Frameworks).

The GPU model prices kernels on the device; a framework decides how they are issued. These are
software figures, not hardware: per dispatched op, the host time of Python, the dispatcher,
autograd and the CUDA launch; per call, the host time of the loss and optimizer functions; and
the matmul precision the framework uses for float32 by default.

The host figures are times on the host that drives the GPU: the presets' figures were measured on this
project's machine (``mimdsim.arch.host.MEASUREMENT_HOST``), and :func:`framework` scales them to another host
by its ``op_time_scale`` (docs/gpu-model.md, "Hosts").
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .. import assumptions as A
from ..arch.host import MEASUREMENT_HOST, HostSpec, host as host_preset
from ..kernels.assumed import NOTHING, Pinned
from ..checks import check_choice, check_int, check_number


@dataclass(frozen=True)
class FrameworkSpec:
    name: str
    description: str
    host_forward_op_s: float  # Python module call + dispatcher + autograd recording + CUDA launch, per device op
    host_backward_op_s: float  # autograd engine (C++) + launch, per device op
    loss_call_s: float  # per step: the loss function's Python-level work
    optimizer_call_s: float  # per step: optimizer.step()'s Python-level work
    float32_matmul: str  # the matmul precision of float32 tensors by default: "fp32" or "tf32"
    while_iteration_s: float = 0.0  # per iteration of a device-side time loop (compiled frameworks)
    # An XLA executable's runtime (mimdsim/gpu/xla.py): host time to issue one kernel thunk, device time
    # between two queued kernels, a WhileThunk's predicate copy and host wake-up per evaluation, the host
    # work per training step outside the executable, and the rate of the input's copy to the device
    kernel_issue_s: float = 0.0
    kernel_gap_s: float = 0.0
    loop_sync_s: float = 0.0
    step_call_s: float = 0.0
    input_bytes_per_second: float = 0.0  # 0: the program copies no input per step
    # What the compiler builds (choices, as numbers so a band can span them): the forward time loop as a
    # WhileThunk (1) or a ForThunk (0); whole-buffer copies of each output-gradient list per backward
    # iteration; a weight gradient accumulated inside its GEMM (1, beta = 1) or by a separate add (0);
    # kernels per weight of the optimizer's update
    forward_loop_waits: int = 0
    backward_list_copies: int = 0
    wgrad_in_gemm: int = 1
    update_kernels_per_weight: int = 1
    host: str = MEASUREMENT_HOST  # the host CPU the four host figures above are times on
    host_scale: float = 1.0  # that host's op_time_scale: the figures are the measurement host's times x this

    def __post_init__(self):
        for f in ("host_forward_op_s", "host_backward_op_s", "loss_call_s", "optimizer_call_s", "while_iteration_s",
                  "kernel_issue_s", "kernel_gap_s", "loop_sync_s", "step_call_s", "input_bytes_per_second"):
            check_number(f, getattr(self, f), low=0, where=f"framework {self.name!r}: ")
        for f, high in (("forward_loop_waits", 1), ("backward_list_copies", 2), ("wgrad_in_gemm", 1),
                        ("update_kernels_per_weight", 4)):
            v = getattr(self, f)  # a pinned value arrives as a float: 1.0 is the choice 1, 0.5 no choice
            v = int(v) if isinstance(v, float) and v.is_integer() else v
            object.__setattr__(self, f, check_int(f, v, low=0, high=high, where=f"framework {self.name!r}: "))
        check_number("host_scale", self.host_scale, low=0, open_low=True, where=f"framework {self.name!r}: ")
        check_choice("float32_matmul", self.float32_matmul, ("fp32", "tf32"), where=f"framework {self.name!r}: ")


# Sources (docs/gpu-model.md, Frameworks; docs/as-built/gpu_frameworks.md §2); pytorch-eager's four host
# figures are named assumptions (mimdsim/assumptions.py, eager_*: measured on this CPU, the measurement host
# genoa-vm, with ranges; framework(..., host=) scales them to the host that drives the GPU):
# forward 9 us per device op measured for snnTorch 1.0 / torch 2.13 on this project's machine
# (benchmarks/eager_host.py) + 3.0 us cuLaunchKernel (tritonbench #1017); backward 4.5 + 3.0 us;
# ce_count_loss builds two modules per call (190-290 us measured); Adam.step() 300-480 us
# measured for 4 parameters. PyTorch keeps fp32 matmuls by default (allow_tf32 False since 1.12).
FRAMEWORKS = {
    "pytorch-eager": FrameworkSpec("pytorch-eager", "PyTorch eager (snnTorch 1.0), one stream, async launches",
                                   host_forward_op_s=12e-6, host_backward_op_s=7.5e-6, loss_call_s=250e-6,
                                   optimizer_call_s=400e-6, float32_matmul="fp32"),
    # One XLA executable per training step (Keras steps_per_execution amortises the host loop):
    # no per-op host cost; the time loop is an XLA while loop whose iterations run their condition
    # on the host, ~8 us each (QuantEcon lecture-python-programming PR #437: 100,000 lax.scan
    # iterations in 0.805 s on a GPU; jax-ml/jax #2491, #7024). TensorFlow runs float32 matmuls
    # in TF32 on Ampere and later by default (enable_tensor_float_32_execution, TF >= 2.4).
    "tensorflow-xla": FrameworkSpec("tensorflow-xla", "TensorFlow 2 + XLA (jit_compile, steps_per_execution)",
                                    host_forward_op_s=0.0, host_backward_op_s=0.0, loss_call_s=0.0,
                                    optimizer_call_s=0.0, float32_matmul="tf32", while_iteration_s=8e-6),
    # The sparse-BPTT study's own GPU program (graphcore_snn train_gpu, TensorFlow 2.8-2.10 + XLA, as its
    # code builds it; mimdsim/workloads/snn/baselines/keras_rnn.py): every runtime and build figure below is
    # a named assumption (mimdsim/assumptions.py, xla_* and tf_*), its sources in docs/gpu-model.md
    "tensorflow-keras-xla": FrameworkSpec(
        "tensorflow-keras-xla", "TensorFlow 2.8-2.10 Keras RNN + XLA:GPU (jit_compile, one executable per step)",
        host_forward_op_s=0.0, host_backward_op_s=0.0, loss_call_s=0.0, optimizer_call_s=0.0, float32_matmul="tf32",
        kernel_issue_s=4e-6, kernel_gap_s=1e-6, loop_sync_s=9.4e-6, step_call_s=100e-6, input_bytes_per_second=10e9,
        forward_loop_waits=0, backward_list_copies=0, wgrad_in_gemm=1, update_kernels_per_weight=1),
    # mimdsim's hand-written baselines (per-step, fused CUDA graph, sparse): kernels as a CUDA program
    # would launch them, float32 on the CUDA cores unless asked otherwise
    "cuda": FrameworkSpec("cuda", "hand-written CUDA (kernel launches only)", host_forward_op_s=0.0,
                          host_backward_op_s=0.0, loss_call_s=0.0, optimizer_call_s=0.0, float32_matmul="fp32"),
}

# which framework runs each GPU strategy
STRATEGY_FRAMEWORK = {"eager": "pytorch-eager", "compiled": "tensorflow-xla", "per-step": "cuda", "fused": "cuda",
                      "sparse": "cuda", "keras-rnn-xla": "tensorflow-keras-xla"}


def default_precision(strategy: str, gpu_spec) -> str:
    """The precision a strategy's framework uses for float32 tensors on this GPU."""
    fw = FRAMEWORKS[STRATEGY_FRAMEWORK[strategy]]
    return "tf32" if fw.float32_matmul == "tf32" and gpu_spec.tf32_flops else "fp32"


# the fields that are host time per op or per call: what a host's op_time_scale multiplies (not
# while_iteration_s or loop_sync_s, an XLA loop's device-to-host round trip measured on its own host, nor the
# float32 choice); an XLA thunk's issue and the per-step call are host CPU work like an eager op's
HOST_TIME_FIELDS = ("host_forward_op_s", "host_backward_op_s", "loss_call_s", "optimizer_call_s", "kernel_issue_s",
                    "step_call_s")


def reads_host(fw: FrameworkSpec) -> bool:
    """Whether a framework spends host time per op or per call (so its step moves with the host's speed)."""
    return any(getattr(fw, f) for f in HOST_TIME_FIELDS)


def host_spec(host: str | HostSpec = MEASUREMENT_HOST, pinned: Pinned = NOTHING) -> HostSpec:
    """The host preset (or spec) with the host assumptions ``pinned`` holds for it (``--assume``, a band's corner)
    set on it (``mimdsim.engine.band.host_spec_with`` on a spec); a spec's own ``op_time_scale`` holds otherwise."""
    spec = host if isinstance(host, HostSpec) else host_preset(host)
    held = A.spec_overrides("hostcpu", spec.name, pinned)
    return spec.replace(**held) if held else spec


def framework(name: str | FrameworkSpec = "pytorch-eager", pinned: Pinned = NOTHING,
              host: str | HostSpec | None = None) -> FrameworkSpec:
    """The framework's spec, with the host constants ``pinned`` holds (a band's corner or ``--assume``:
    eager_*) set on it, and its host times on ``host`` (a preset name or HostSpec; None: the spec's own
    host, for a preset the measurement host on which its figures were taken): each per-op and per-call host
    time multiplied by ``host``'s ``op_time_scale`` over that of the host the figures are for. Pinned
    ``eager_*`` values are figures on the measurement host, scaled like the presets'."""
    if isinstance(name, FrameworkSpec):  # a spec of the caller's: the pins that apply to its name still hold
        spec = name
    else:
        check_choice("framework", name, tuple(FRAMEWORKS))
        spec = FRAMEWORKS[name]
    held = A.spec_overrides("framework", spec.name, pinned)
    if held:  # pinned figures are the measurement host's: on a spec already on another host, scaled to it
        spec = dataclasses.replace(spec, **{f: v * spec.host_scale if f in HOST_TIME_FIELDS else v
                                            for f, v in held.items()})
    if host is None:
        return spec
    to = host_spec(host, pinned)
    if (to.name, to.op_time_scale) == (spec.host, spec.host_scale):
        return spec
    ratio = to.op_time_scale / spec.host_scale
    return dataclasses.replace(spec, host=to.name, host_scale=to.op_time_scale,
                               **{f: getattr(spec, f) * ratio for f in HOST_TIME_FIELDS})


def timeline(host_s: np.ndarray, device_s: np.ndarray) -> tuple[float, np.ndarray]:
    """Step time of ops issued by the host (``host_s[i]`` each, in order) onto one device stream
    (``device_s[i]`` each), and the time the device waits for the host before each op.

    op i ends at E_i = max(H_i, E_{i-1}) + d_i with H_i the host's issue time (cumulative host
    cost): E_n = max over i (H_i + d_i + ... + d_n). The step ends at the sync after the last op.
    """
    H = np.cumsum(host_s)
    D = np.cumsum(device_s)
    start = np.maximum.accumulate(H - (D - device_s))  # E_i - D_i, the latest constraint so far
    end = start + D
    prev_end = np.concatenate([[0.0], end[:-1]])
    wait = np.maximum(H - prev_end, 0.0)
    return float(end[-1]), wait


def synchronised_timeline(host_s: np.ndarray, device_s: np.ndarray, syncs: np.ndarray) -> tuple[float, np.ndarray]:
    """:func:`timeline` with host synchronisations: after op i with ``syncs[i]`` (an ``.item()``, a
    ``nonzero``, a copy to the host) the host waits for the device queue to drain, so the ops up to
    and including it form one segment and the next segment starts with both streams idle. The step
    is the sum of its segments; the last one ends when its last op ends on the device."""
    host_s, device_s = np.asarray(host_s, float), np.asarray(device_s, float)
    if host_s.size == 0:
        return 0.0, np.zeros(0)
    cuts = np.flatnonzero(np.asarray(syncs, bool)[:-1]) + 1
    total, waits = 0.0, []
    for h, d in zip(np.split(host_s, cuts), np.split(device_s, cuts)):
        t, w = timeline(h, d)
        total += t
        waits.append(w)
    return total, np.concatenate(waits)
