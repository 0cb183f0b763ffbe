"""Host cost per dispatched op of eager snnTorch on this machine's CPU (the Python, dispatcher and
autograd part of mimdsim's ``pytorch-eager`` framework constants; docs/gpu-model.md, Frameworks).

    python benchmarks/eager_host.py [--repeats 7]

Tiny tensors (784-32-10, B = 2), so kernel time is negligible and the time per op is the host's:
snnTorch's Python, PyTorch's dispatcher and autograd recording (forward) and the autograd engine
(backward). The device ops are counted with a dispatch mode (views and detach excluded). Reports
the median and the spread over repeats; the CUDA launch (about 3 us, cuLaunchKernel) comes on top
on a GPU and is not measured here.
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch
import snntorch as snn
from torch.utils._python_dispatch import TorchDispatchMode

NO_KERNEL = {"detach", "view", "t", "alias", "expand", "unsqueeze", "select", "_unsafe_view", "lift_fresh",
             "empty", "empty_like", "as_strided", "squeeze"}


class Count(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.n = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.__name__.split(".")[0] not in NO_KERNEL:
            self.n += 1
        return func(*args, **(kwargs or {}))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--timesteps", type=int, default=25)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    fc1, fc2 = torch.nn.Linear(784, 32), torch.nn.Linear(32, 10)
    grad = snn.surrogate.fast_sigmoid()
    lif1, lif2 = snn.Leaky(beta=0.9, spike_grad=grad), snn.Leaky(beta=0.9, spike_grad=grad)
    x = torch.rand(2, 784)

    def forward():
        m1, m2 = lif1.init_leaky(), lif2.init_leaky()
        out = []
        for _ in range(args.timesteps):
            s1, m1 = lif1(fc1(x), m1)
            s2, m2 = lif2(fc2(s1), m2)
            out.append(s2)
        return torch.stack(out).sum()

    with Count() as c:
        loss = forward()
    fwd_ops = c.n
    with Count() as c:
        loss.backward()
    bwd_ops = c.n
    fwd, bwd = [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        loss = forward()
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        fwd.append((t1 - t0) / fwd_ops * 1e6)
        bwd.append((t2 - t1) / bwd_ops * 1e6)
    for name, v, n in (("forward", fwd, fwd_ops), ("backward", bwd, bwd_ops)):
        print(f"{name}: {n} device ops per step, {statistics.median(v):.1f} us per op "
              f"(median of {len(v)}; spread {min(v):.1f}-{max(v):.1f})")


if __name__ == "__main__":
    main()
