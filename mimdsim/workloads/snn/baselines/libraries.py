"""The SNN libraries' own GPU programs for one ``Linear(n, n)`` + LIF layer, as each library builds it.

The Open Neuromorphic SNN-library benchmark (``docs/validation.md``, "The benchmark's other libraries") times one
forward call and one backward call (``output.sum().backward()``, no optimizer) of ``Linear(n, n)`` and
a LIF layer over T = 500 steps, batch B = 16. Five of its programs do not run PyTorch op by op (or, for
EXODUS, run their time loop in CUDA kernels that cannot be built here), so a trace of eager PyTorch cannot
stand for them; each is a named strategy here, its kernel list read
from the library's source (file and function in each branch below) and costed by the GPU kernel model
(:func:`mimdsim.gpu.model.kernel_seconds`: GEMMs by the GEMM model, element-wise kernels by bytes over
bandwidth). No constant is new: launches cost the preset's ``launch_overhead_s``, an XLA while-loop
iteration the ``tensorflow-xla`` framework's ``while_iteration_s`` (a measurement of ``lax.scan``).

* ``spyx`` (Spyx 0.1.18, the benchmark's ``spyx_full``/``spyx_half``): ``hk.BatchApply(hk.Linear)`` applies
  the weights to the whole sequence at once (one GEMM ``[T*B, n] x [n, n]`` after converting the uint8
  input), then ``hk.dynamic_unroll(core, x, ..., time_major=False, unroll=5)``: a ``lax.scan`` whose
  body (``spyx.nn.LIF``: ``V = beta*V + x``, spikes = Heaviside(V - threshold), subtract reset) XLA fuses
  into one element-wise kernel per scanned step. With ``time_major=False`` on a ``(T, B, n)`` input the
  scan runs over axis 1, so it has B steps of T*B/B rows each (the same work, B kernels) and
  ceil(B / 5) while-loop iterations. ``jax.grad`` adds the reverse scan (one fused kernel per step) and
  the weight gradient ``x^T dZ`` (the input is a constant: no input gradient).
* ``spikingjelly-cupy`` (SpikingJelly 0.0.0.0.15, ``LIFNode(step_mode="m", backend="cupy")``;
  ``activation_based/auto_cuda/neuron_kernel.py``, ``NeuronFPTTKernel``/``NeuronBPTTKernel``): the
  ``layer.Linear`` is one cuBLAS ``addmm`` over ``[T*B, n]``; the neuron is one CuPy kernel that loops
  over T per neuron, reading ``x_seq`` and writing ``h_seq``, ``v_v_seq`` and ``spike_seq`` (4 values per
  neuron and step); its backward kernel reads ``grad_spike_seq``, ``grad_v_seq`` and ``h_seq`` and writes
  ``grad_x_seq`` (4), after autograd fills the unused ``v_seq`` output's gradient with zeros (1).
* ``lava-dl`` (lava-dl 0.4.0.dev0, ``slayer.block.cuba.Dense``; ``slayer/synapse`` Dense is a 1x1x1
  ``conv3d``, ``slayer/neuron/cuba.py`` runs ``dynamics.leaky_integrator`` twice then ``spike.Spike``): a
  cuDNN convolution that is one GEMM over ``[B*T, n]`` (cuDNN convolutions use TF32 by default), the
  current and the voltage each one CUDA kernel looping over time (read, write: 2 values each), the
  spike kernel (2); backward: the spike's surrogate (read dS and V, write dV: 3), each integrator's
  reverse scan (read the gradient and its own output for the learnable decay, write: 3 each) and the
  weight gradient.
* ``sinabs-exodus`` (sinabs-exodus 1.1.2, the benchmark's ``sinabs_exodus()``: ``nn.Linear`` +
  ``sinabs.exodus.layers.LIF(tau_mem=10.0)`` on a batch-first input; synsense/sinabs-exodus @v1.1.2) and
  ``rockpool-exodus`` (Rockpool 2.7's ``LinearTorch`` + ``LIFExodus``, ``rockpool/nn/modules/sinabs/lif_exodus.py``,
  on the same EXODUS 1.1.2 kernels): the Linear is one cuBLAS GEMM over ``[B*T, n]`` (Rockpool's has no bias),
  then the LIF's whole time loop runs in EXODUS's CUDA kernels (``cuda/lif_kernels.h``, ``cuda/leaky_kernels.h``,
  called through ``cuda/bindings.cu``) on a ``(N = B*n, T)`` copy of the input, with PyTorch element-wise
  kernels around them (:data:`EXODUS_TORCH_OPS`, read from ``sinabs/exodus/layers/lif.py`` ``LIF.forward``,
  ``sinabs/exodus/spike.py`` ``IntegrateAndFire`` and ``lif_exodus.py`` ``LIFExodus.forward``). Forward:
  ``lifForwardKernel`` (one thread per neuron loops over T: reads the input, writes the spikes and the membrane
  potential, 3 values), for Rockpool first ``leakyForwardKernel`` (the synaptic current, 2). Backward:
  ``lifBackwardKernel`` (one thread per neuron and step i, summing over the later steps j > i: O(T^2) work per
  neuron, 6 FLOPs per term, costed at the full triangle; its early stop when the running product reaches 0 is
  data-dependent and not modelled; it reads the surrogate, the output gradient and not-clipped and writes the
  input gradient, 4 values, each from HBM once), ``lifBackwardAlphaKernel`` (the gradient of the trainable decay:
  reads 4 values, writes one per neuron), for Rockpool also ``leakyBackwardAlphaKernel`` (2) and
  ``leakyBackwardKernel`` (2). ``IntegrateAndFire.forward`` checks ``(alpha < 0).any() or (alpha > 1).any()``
  on the host, so each forward call waits for the device (3 syncs in Sinabs's, 4 in Rockpool's). The ops on
  scalars and per-neuron vectors (the decay from tau, Rockpool's ``_get_all_leak_params`` twice, the state
  clones, the checks) are counted as launches of the smallest kernel (:data:`EXODUS_SMALL_OPS`).

Both calls end with the benchmark's loss ``output.sum()`` (read 1 value), booked to the backward pass
as the benchmark times it; PyTorch's bias gradient is one column sum over ``[T*B, n]``, and on the
benchmark's repeated calls PyTorch adds each new weight gradient into ``W.grad`` (read 2, write 1 value per
weight; ``jax.grad`` returns fresh gradients).
"""
from __future__ import annotations

from ....gpu.model import Kernel, gemm, kernel_seconds

PROGRAMS = ("spyx", "spikingjelly-cupy", "lava-dl", "sinabs-exodus", "rockpool-exodus")
# the matmul precision each library's GEMM runs a float32 model in (JAX: TF32 by default on GPUs with
# tensor cores; cuDNN convolutions: torch.backends.cudnn.allow_tf32 True; cuBLAS matmuls: fp32)
FLOAT32_MATMUL = {"spyx": "tf32", "spikingjelly-cupy": "fp32", "lava-dl": "tf32", "sinabs-exodus": "fp32",
                  "rockpool-exodus": "fp32"}
# Each EXODUS call in issue order: the PyTorch element-wise kernels over all N*T values as (name, values read +
# written per neuron and step), and EXODUS's own CUDA kernels by name (EXODUS_KERNELS). "contiguous" copies of an
# expanded gradient or bias only write; the Heaviside surrogate's comparison and cast move 1-byte booleans
# (1.25 values of 4 bytes).
_SURROGATE_TO_INPUT = (("not_clipped_ones", 1), ("grad_contiguous", 1), ("surr_x_grad", 3), ("plus_grad_v_mem", 3))
_ALPHA_GRAD_INPUT = (("v_mem_post_mul", 2), ("v_mem_post_sub", 3), ("alpha_grad_contiguous", 1),
                     ("alpha_surr_x_grad", 3), ("alpha_plus_grad_v_mem", 3))  # lifBackwardAlpha's operands
EXODUS_TORCH_OPS = {
    "sinabs-exodus": {
        "forward": (("movedim_copy", 2), ("norm_input_mul", 2), "lif_forward", ("reset_mul", 2), ("reset_sub", 3),
                    ("firing_rate_sum", 1)),
        "backward": (("loss_sum", 1), ("grad_v_mem_zeros", 1))
        + tuple((f"single_exponential_{op}", 2) for op in ("sub", "abs", "neg", "div", "exp", "mul"))
        + _SURROGATE_TO_INPUT + ("lif_backward",) + _ALPHA_GRAD_INPUT + ("lif_backward_alpha",)
        + (("norm_input_grad_mul", 2), ("alpha_grad_mul", 3), ("alpha_grad_sum", 1), ("movedim_grad_copy", 2),
           ("bias_grad_sum", 1)),
    },
    "rockpool-exodus": {
        "forward": (("movedim_copy", 2), ("beta_mul", 2), ("bias_expand_copy", 1), "leaky_forward", ("bias_add", 3),
                    ("synapse_sum", 2), "lif_forward", ("reset_mul", 2), ("reset_sub", 3)),
        "backward": (("loss_sum", 1), ("grad_v_mem_zeros", 1), ("heaviside_ge", 1.25), ("heaviside_float", 1.25),
                     ("heaviside_div", 2)) + _SURROGATE_TO_INPUT + ("lif_backward",) + _ALPHA_GRAD_INPUT
        + ("lif_backward_alpha", ("bias_grad_sum", 1), "leaky_backward_alpha", "leaky_backward",
           ("beta_input_grad_mul", 2), ("beta_grad_mul", 3), ("beta_grad_sum", 1), ("movedim_grad_copy", 2)),
    },
}
# EXODUS's CUDA kernels (cuda/lif_kernels.h, cuda/leaky_kernels.h): (values moved per neuron and step, FLOPs per
# value); lifBackwardKernel's O(T^2) work is costed in _exodus
EXODUS_KERNELS = {
    "leaky_forward": (2, 1.0),  # v = beta v + x: 2 FLOPs per 2 values
    "lif_forward": (3, 5 / 3),  # 5 FLOPs per neuron and step
    "lif_backward": (4, None),  # reads the surrogate, the output gradient and not-clipped, writes the input gradient
    "lif_backward_alpha": (4, 7 / 4),  # 7 FLOPs per neuron and step
    "leaky_backward_alpha": (2, 1.5),
    "leaky_backward": (2, 1.0),
}
# ops on scalars and per-neuron vectors per call (forward, backward), each the smallest kernel: Sinabs's
# state zeroing, alpha = exp(-1/tau), the (N,) alpha and subtract vectors, the .any() checks, the state clone,
# firing_rate's division; backward their gradients. Rockpool's forward adds _auto_batch's state expansion and
# _get_all_leak_params for self.alpha and self.beta (20 ops each; 4 repeats on CPU tensors counted as launches,
# as in the traced Rockpool)
EXODUS_SMALL_OPS = {"sinabs-exodus": (16, 17), "rockpool-exodus": (58, 23)}
SCAN_UNROLL = 5  # the benchmark's hk.dynamic_unroll(..., unroll=5)


def benchmark_kernels(program: str, n: int, timesteps: int = 500, batch: int = 16, e: int = 4) -> list[Kernel]:
    """The kernels of the benchmark's forward call and backward call of ``program`` (see the module)."""
    from ....checks import check_choice

    check_choice("program", program, PROGRAMS)
    T, B = int(timesteps), int(batch)
    rows = T * B  # every step's rows at once
    vals = rows * n  # one value per neuron and step
    ks: list[Kernel] = []

    def vector(name, phase, values, flops_per_value=1.0, count=1):
        ks.append(Kernel(name, phase, "vector", flops_per_value * values / count, e * values / count, count))

    if program == "spyx":
        # uint8 input -> float (read 1 B, write e B), then the GEMM over the whole sequence, no bias
        ks.append(Kernel("convert_input", "forward", "vector", float(vals), (1 + e) * vals, 1))
        ks.append(gemm("fwd_gemm", "forward", rows, n, n, e, 1))
        # the scan over axis 1 (B steps of T rows): one fusion per step reads x and V, writes V and S
        vector("fwd_lif_step", "forward", 4 * vals, 1.5, B)
        vector("fwd_sum", "forward", vals)  # traces.sum()
        # jax.grad: the reverse scan (reads dS, V, the carried dV; writes dV and dX) and x^T dX
        vector("bwd_lif_step", "backward", 5 * vals, 2.0, B)
        ks.append(gemm("bwd_wgrad_gemm", "backward", n, n, rows, e, 1))
    elif program == "spikingjelly-cupy":
        ks.append(gemm("fwd_gemm", "forward", rows, n, n, e, 1))  # addmm: bias folded into C
        vector("fwd_neuron_fptt", "forward", 4 * vals, 1.5)
        vector("loss_sum", "backward", vals)
        vector("grad_v_seq_zeros", "backward", vals, 0.0)
        vector("bwd_neuron_bptt", "backward", 4 * vals, 3.0)
        ks.append(gemm("bwd_wgrad_gemm", "backward", n, n, rows, e, 1))
        vector("bwd_bias_sum", "backward", vals)
        ks.append(_accumulate(n, e))
    elif program in EXODUS_TORCH_OPS:
        _exodus(ks, program, rows, n, T, B, e, vector)
    else:  # lava-dl
        ks.append(gemm("fwd_conv_gemm", "forward", rows, n, n, e, 1))
        vector("fwd_current_scan", "forward", 2 * vals, 1.0)
        vector("fwd_voltage_scan", "forward", 2 * vals, 2.0)
        vector("fwd_spike", "forward", 2 * vals, 1.0)
        vector("loss_sum", "backward", vals)
        vector("bwd_spike", "backward", 3 * vals, 3.0)
        vector("bwd_voltage_scan", "backward", 3 * vals, 2.0)
        vector("bwd_current_scan", "backward", 3 * vals, 2.0)
        ks.append(gemm("bwd_wgrad_gemm", "backward", n, n, rows, e, 1))
        ks.append(_accumulate(n, e))
    return ks


def _exodus(ks, program, rows, n, T, B, e, vector):
    """The EXODUS programs' kernels (the module's ``sinabs-exodus``/``rockpool-exodus``), in issue order."""
    vals, neurons = rows * n, B * n
    small = dict(zip(("forward", "backward"), EXODUS_SMALL_OPS[program]))
    for phase in ("forward", "backward"):
        if phase == "forward":
            ks.append(gemm("fwd_gemm", "forward", rows, n, n, e, 1))  # addmm (Sinabs's nn.Linear) or mm (no bias)
        tag = {"forward": "fwd", "backward": "bwd"}[phase]
        for step in EXODUS_TORCH_OPS[program][phase]:
            if isinstance(step, tuple):  # a PyTorch element-wise kernel
                vector(f"{tag}_{step[0]}", phase, step[1] * vals)
            elif step == "lif_backward":  # 6 FLOPs per (i, j > i) term of each neuron, plus the first term
                flops = neurons * (6.0 * T * (T - 1) / 2 + 2.0 * T)
                ks.append(Kernel(f"{tag}_{step}", phase, "vector", flops, float(EXODUS_KERNELS[step][0]) * e * vals, 1))
            else:  # one of EXODUS's CUDA kernels
                values, flops_per_value = EXODUS_KERNELS[step]
                vector(f"{tag}_{step}", phase, values * vals, flops_per_value)
        if phase == "backward":
            ks.append(gemm("bwd_wgrad_gemm", "backward", n, n, rows, e, 1))
        ks.append(Kernel(f"{tag}_small_ops", phase, "vector", 0.0, 0.0, small[phase]))
    ks.append(_accumulate(n, e))


def _accumulate(n, e):
    """PyTorch's AccumulateGrad on the benchmark's repeated calls: ``W.grad += dW`` (read 2, write 1)."""
    return Kernel("bwd_accumulate_grad", "backward", "vector", float(n * n), 3.0 * e * n * n, 1)


def precision_of(program: str, half: bool = False) -> str:
    return "fp16" if half else FLOAT32_MATMUL[program]


def phase_seconds(program: str, n: int, gpu, *, timesteps: int = 500, batch: int = 16, half: bool = False) -> dict:
    """Seconds of the benchmark's forward and backward calls: every launch (kernel time + the preset's
    ``launch_overhead_s``), and for Spyx the scan's while-loop iterations (``while_iteration_s`` of the
    ``tensorflow-xla`` framework, a measurement of ``lax.scan``) in each pass."""
    import math

    from ....arch.gpu import GpuSpec, gpu as gpu_spec
    from ....gpu.framework import FRAMEWORKS

    spec = gpu if isinstance(gpu, GpuSpec) else gpu_spec(gpu)
    precision = precision_of(program, half)
    e = spec.bytes_per_element(precision)
    out = {"forward": 0.0, "backward": 0.0}
    for k in benchmark_kernels(program, n, timesteps, batch, e):
        out[k.phase] += (kernel_seconds(k, spec, precision) + spec.launch_overhead_s) * k.count
    if program == "spyx":
        loop = math.ceil(int(batch) / SCAN_UNROLL) * FRAMEWORKS["tensorflow-xla"].while_iteration_s
        out["forward"] += loop
        out["backward"] += loop
    return out


def gemm_peak_seconds(program: str, n: int, gpu, *, timesteps: int = 500, batch: int = 16,
                      half: bool = False) -> dict:
    """Per pass, the time of its GEMMs' FLOPs at the GPU's peak for the program's precision: no call that
    runs them can take less, so a measured call faster than this did not wait for the GPU."""
    from ....arch.gpu import GpuSpec, gpu as gpu_spec

    spec = gpu if isinstance(gpu, GpuSpec) else gpu_spec(gpu)
    precision = precision_of(program, half)
    peak = spec.matrix_flops(precision)
    out = {"forward": 0.0, "backward": 0.0}
    for k in benchmark_kernels(program, n, timesteps, batch, spec.bytes_per_element(precision)):
        if k.kind == "matrix":
            out[k.phase] += k.flops * k.count / peak
    return out
