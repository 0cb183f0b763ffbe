"""The Open Neuromorphic benchmark's snnTorch 0.7 step, reproduced for a trace (``mimdsim validate``,
source ``snntorch-gpu``; docs/validation.md).

The benchmark (open-neuromorphic/open-neuromorphic.github.io,
``content/blog/spiking-neural-network-framework-benchmarking/docker/run_benchmark.py``, ``snntorch()``) ran
snnTorch 0.7.0: ``nn.Linear(n, n)`` and ``snn.Leaky(beta=0.95)`` (atan surrogate) in a Python loop over
T = 500 steps, B = 16, the spikes stacked; ``output.sum().backward(retain_graph=True)``, timed call after
call with the gradients accumulating. 0.7 cannot be installed beside 1.0, and a test cannot depend on a
second environment, so :class:`Leaky07` reproduces its ``Leaky.forward`` op for op (snntorch 0.7.0,
``_neurons/leaky.py`` ``forward``, ``mem_reset``, ``_build_state_function``, ``_base_state_function``;
``_neurons/neurons.py`` ``fire``; ``surrogate.py`` ``ATan``): its state values are 0-dim tensors, and
``_build_state_function`` tests ``if self.reset_mechanism_val == 0:``, a buffer that lives on the GPU,
so the host waits for the device once per step. docs/gpu-model.md shows this module's trace has the ops
and syncs of the real 0.7 traced in a second environment.

Built on the ``meta`` device (nothing computed); there the tested value is unknown, so the branch 0.7
takes for its default reset ("subtract") is taken explicitly after the same ``eq`` and ``.item()``.
"""
from __future__ import annotations

import math


def _modules():
    import torch

    class ATan(torch.autograd.Function):
        """snnTorch 0.7's ``surrogate.ATan``: Heaviside forward; backward alpha/2 / (1 + (pi/2 alpha x)^2)."""

        @staticmethod
        def forward(ctx, input_, alpha=2.0):
            ctx.save_for_backward(input_)
            ctx.alpha = alpha
            return (input_ > 0).float()

        @staticmethod
        def backward(ctx, grad_output):
            (input_,) = ctx.saved_tensors
            grad_input = grad_output.clone()
            return ctx.alpha / 2 / (1 + (math.pi / 2 * ctx.alpha * input_).pow_(2)) * grad_input, None

    class Leaky07(torch.nn.Module):
        """``snn.Leaky(beta)`` of snnTorch 0.7.0 with its defaults (threshold 1, subtract reset, atan)."""

        def __init__(self, beta=0.95):
            super().__init__()
            self.register_buffer("beta", torch.as_tensor(beta))
            self.register_buffer("threshold", torch.as_tensor(1.0))
            self.register_buffer("graded_spikes_factor", torch.as_tensor(1.0))
            self.register_buffer("reset_mechanism_val", torch.as_tensor(0))

        def forward(self, input_, mem=None):
            if mem is None:  # _SpikeTorchConv of the init_leaky() state: zeros like the input
                mem = torch.zeros_like(input_, requires_grad=True)
            self.reset = ATan.apply(mem - self.threshold, 2.0).clone().detach()  # mem_reset
            subtract = self.reset_mechanism_val == 0  # _build_state_function's test of a device tensor
            if bool(subtract) or subtract.is_meta:  # bool(): an .item(), the host waits for the device
                reset = mem - self.reset * self.threshold  # the argument first, then the clamp, as 0.7 calls it
                mem = self.beta.clamp(0, 1) * reset + input_
            else:
                mem = self.beta.clamp(0, 1) * mem + input_
            spk = ATan.apply(mem - self.threshold, 2.0) * self.graded_spikes_factor  # fire
            return spk, mem

    return Leaky07


def benchmark_step(n: int, timesteps: int = 500, batch_size: int = 16, device: str = "meta"):
    """The benchmark's forward call and backward call as one zero-argument step (``trace_torch`` phases
    split them): ``fc`` and the 0.7 Leaky per step, the spikes stacked (its ``forward_fn``), then its
    ``backward_fn``, ``loss = output.sum(); loss.backward(retain_graph=True)`` into gradients that
    already exist (the benchmark's calls after the first), booked to the backward pass as the benchmark
    times it (``booked_to``)."""
    import torch

    from ..gpu.torch_trace import booked_to

    Leaky07 = _modules()
    torch.manual_seed(0)
    fc = torch.nn.Linear(n, n, device=device)
    lif = Leaky07(beta=0.95).to(device)
    x = torch.randn(timesteps, batch_size, n, device=device)

    def step():
        mem, out = None, []
        for inp in x:
            spk, mem = lif(fc(inp), mem)
            out.append(spk)
        output = torch.stack(out)
        with booked_to("backward"):  # the benchmark times `loss = output.sum(); loss.backward()` as one call
            output.sum().backward(retain_graph=True)

    return step
