"""Time a trace of a training step (mimdsim.trace_torch) against the same step run untraced.

    python benchmarks/trace_step.py [--repeats 3]

The step: 784-1000-10, two snnTorch Leaky layers after nn.Linear, T = 25, B = 128, spike and
membrane records stacked, ce_count loss, Adam foreach, loss.item() (the eager baseline's step,
docs/gpu-model.md). Alternates an untraced call and a traced one (``warmup=0``: the trace alone)
and prints both, their ratio per pair, and the trace's op counts and cost on an A100 40GB.
Target (issue 26): a trace under 5 s on this 2-core machine.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import snntorch as snn  # noqa: E402
from snntorch import surrogate  # noqa: E402 (snnTorch 0.7 does not import it with the package)
import torch  # noqa: E402
from snntorch.functional import loss as SF  # noqa: E402

import mimdsim  # noqa: E402


def seed_step(sizes=(784, 1000, 10), T=25, B=128):
    torch.manual_seed(0)
    sg = surrogate.fast_sigmoid()
    fcs = [torch.nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:])]
    lifs = [snn.Leaky(beta=0.9, spike_grad=sg) for _ in sizes[1:]]
    opt = torch.optim.Adam([p for m in fcs + lifs for p in m.parameters()], lr=1e-3, foreach=True)
    x, y, lossf = torch.rand(B, sizes[0]), torch.randint(0, sizes[-1], (B,)), SF.ce_count_loss()

    def step():
        opt.zero_grad()
        for lif in lifs:
            lif.reset_mem()
        spk, mem = [], []
        for _ in range(T):
            h = x
            for fc, lif in zip(fcs, lifs):
                out = lif(fc(h))
                h = out[0]
            spk.append(h)
            mem.append(out[-1])
        loss = lossf(torch.stack(spk), y)
        torch.stack(mem)
        loss.backward()
        opt.step()
        loss.item()
    return step


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    step = seed_step()
    step()  # Adam's state, snnTorch's lazy state
    plain, traced, trace = [], [], None
    for _ in range(args.repeats):
        t = time.perf_counter()
        step()
        plain.append(time.perf_counter() - t)
        t = time.perf_counter()
        trace = mimdsim.trace_torch(step, warmup=0, timesteps=25, batch_size=128, model="784-1000-10 snnTorch Leaky")
        traced.append(time.perf_counter() - t)
    ratios = [b / a for a, b in zip(plain, traced)]
    print(f"untraced step  median {statistics.median(plain):.3f} s  ({min(plain):.3f}-{max(plain):.3f})")
    print(f"traced step    median {statistics.median(traced):.3f} s  ({min(traced):.3f}-{max(traced):.3f})"
          f"  ratio {statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})")
    s = trace.summary()
    r = mimdsim.gpu_estimate_trace(trace, "a100-40gb")
    print(f"trace: {s['ops']} ops, {s['device_ops']} device ops, {s['host_syncs']} host sync(s), "
          f"{trace.nbytes():,} B; A100 40GB eager: {r.seconds_per_step * 1e3:.2f} ms per step, "
          f"host-bound fraction {r.placement['host_bound_fraction']:.2f}")


if __name__ == "__main__":
    main()
