"""A custom PyTorch LIF training loop, for ``mimdsim compare --gpu-trace examples/custom_lif_step.py``.

The file is an ordinary PyTorch training step: the model, data and optimizer at the top level, and
``step()``, one training step (docs/gpu-model.md, "Trace → cost → report"). mimdsim runs the file,
traces ``step()`` once after a warm-up call, and costs every op it dispatched on the ``--gpu``.

The network is compare's default, 2312-978-978-976-10, T = 100, B = 48: leaky integrate-and-fire
layers written by hand (no snnTorch), a fast-sigmoid surrogate as a custom ``autograd.Function``,
reset by subtraction, cross-entropy on the output spike counts, Adam. It is built on PyTorch's
``meta`` device: the ops and shapes are those of a GPU run, and nothing is computed (the trace takes
seconds). Set ``DEVICE = "cpu"`` to run the numbers for real.
"""
import torch

DEVICE = "meta"
SIZES = [2312, 978, 978, 976, 10]
TIMESTEPS, BATCH_SIZE = 100, 48  # what the report's samples/s counts
BETA, THRESHOLD, SLOPE = 0.9, 1.0, 25.0


class FastSigmoidSpike(torch.autograd.Function):
    """Heaviside forward; backward 1 / (1 + slope |v|)^2 (snnTorch's fast_sigmoid)."""

    @staticmethod
    def forward(ctx, v):
        ctx.save_for_backward(v)
        return (v > 0).float()

    @staticmethod
    def backward(ctx, grad):
        (v,) = ctx.saved_tensors
        return grad / (1 + SLOPE * v.abs()) ** 2


torch.manual_seed(0)
layers = [torch.nn.Linear(a, b, device=DEVICE) for a, b in zip(SIZES[:-1], SIZES[1:])]
optimizer = torch.optim.Adam([p for layer in layers for p in layer.parameters()], lr=1e-3, foreach=True)
inputs = (torch.rand(TIMESTEPS, BATCH_SIZE, SIZES[0], device=DEVICE) < 0.05).float()
labels = torch.randint(0, SIZES[-1], (BATCH_SIZE,), device=DEVICE)


def step():
    optimizer.zero_grad()
    mems = [torch.zeros(BATCH_SIZE, n, device=DEVICE) for n in SIZES[1:]]
    counts = 0
    for t in range(TIMESTEPS):
        h = inputs[t]
        for i, layer in enumerate(layers):
            mems[i] = BETA * mems[i] + layer(h)
            h = FastSigmoidSpike.apply(mems[i] - THRESHOLD)
            mems[i] = mems[i] - h.detach() * THRESHOLD  # reset by subtraction, outside the gradient
        counts = counts + h
    loss = torch.nn.functional.cross_entropy(counts, labels)
    loss.backward()
    optimizer.step()
    return loss.item()  # the host reads the loss: one sync per step
