"""Time a trace of a training step (mimdsim.trace_torch) against the same step run untraced.

    python benchmarks/trace_step.py [--repeats 3]

The step: 784-1000-10, two snnTorch Leaky layers after nn.Linear, T = 25, B = 128, spike and
membrane records stacked, ce_count loss, Adam foreach, loss.item() (the eager baseline's step,
docs/gpu-model.md; ``tutorial_step`` of tests/snntorch_reference.py, the step the trace tests use). Alternates an untraced call and a traced one (``warmup=0``: the trace alone)
and prints both, their ratio per pair, and the trace's op counts and cost on an A100 40GB.
Target (issue 26): a trace under 5 s on this 2-core machine.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))  # the tutorial step the trace tests use

import mimdsim  # noqa: E402
from snntorch_reference import tutorial_step  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    step = tutorial_step((784, 1000, 10), 25, 128)
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
