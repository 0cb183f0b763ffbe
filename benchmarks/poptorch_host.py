"""Host work of one PopTorch training call that runs without an IPU, timed on this machine's CPU:
the parts of ``poptorch_model(data, labels)`` (SDK 2.5) that are plain PyTorch or memory copies,
for Sun et al.'s seed call (docs/as-built/poptorch.md §4; the ``poptorch_call_s`` and
``host_memcpy_bytes_per_second`` assumptions in mimdsim/assumptions.py).

    python benchmarks/poptorch_host.py [--repeats 7]

Per call, graphcore/poptorch at sdk/poptorch/2.5.1:

* ``poptorch/source/PoplarExecutable.cpp`` ``PoplarExecutable::run``: the int64 labels converted
  to int32 (``toType``), one ``at::empty`` per output (``spk2_rec`` [25, 128, 10] fp32, the loss);
* PopART's stream callbacks copy the inputs into Poplar's stream buffers and the outputs back
  (the half input [128, 784] = 200,704 B, the labels 512 B, ``spk2_rec`` 128,000 B, the loss 4 B).

Not timed (no IPU, no PopTorch here): the Python of ``PoplarExecutor.__call__``, pybind11's
argument conversion, PopART's ``Session::run`` and Poplar's ``Engine::run`` (the chip's
``run_launch_s``). Reports the median per call and per byte over repeats.
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch


def _per_call(fn, n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--calls", type=int, default=2000)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)  # PopART's stream callbacks run on one thread by default (singleThread)
    labels = torch.randint(0, 10, (128,))
    data = torch.rand(128, 784).half()
    spk = torch.rand(25, 128, 10)
    in_buf, out_buf = torch.empty_like(data), torch.empty_like(spk)

    def aten():  # PoplarExecutable::run's ATen work
        labels.to(torch.int32)
        torch.empty((25, 128, 10), dtype=torch.float32)
        torch.empty((), dtype=torch.float32)

    def copies():  # the stream callbacks' copies, input in and output out
        in_buf.copy_(data)
        out_buf.copy_(spk)

    nbytes = data.numel() * 2 + spk.numel() * 4
    rows = {"aten ops (3)": [], "copies": []}
    for _ in range(args.repeats):
        rows["aten ops (3)"].append(_per_call(aten, args.calls))
        rows["copies"].append(_per_call(copies, args.calls))
    for name, vals in rows.items():
        print(f"{name:14s} median {statistics.median(vals) * 1e6:7.2f} us  "
              f"(min {min(vals) * 1e6:.2f}, max {max(vals) * 1e6:.2f})")
    med = statistics.median(rows["copies"])
    print(f"copied bytes   {nbytes:,} per call: {nbytes / med / 1e9:.1f} GB/s")


if __name__ == "__main__":
    main()
