"""Does numba parallelism pay on this machine? The weight-gradient accumulation, serial against
threads over the six per-worker copies (disjoint, so exact), on layer 1's sizes.

    python benchmarks/parallel_probe.py [--repeats 3]

100 timesteps of B = 48 samples with 12 input spikes each into copies [6, 2312, 978] (float32):
``kernels.mimdsim_snn.bptt.weight_grad`` (serial, updates in (copy, row) order) against a ``prange`` over the
copies, measured alternately in the same process; both must give identical copies.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numba
import numpy as np
from numba import njit, prange

from mimdsim.kernels.mimdsim_snn.bptt import weight_grad


@njit(parallel=True, cache=True)
def weight_grad_threads(dW, worker, ids, spk, dI):
    B, n = dI.shape
    for w in prange(dW.shape[0]):  # one copy per thread: no two threads touch a row
        for b in range(B):
            if worker[b] != w:
                continue
            for k in range(spk[b]):
                row = dW[w, ids[b, k]]
                for i in range(n):
                    row[i] += dI[b, i]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    a, n, B, T = 2312, 978, 48, 100
    serial, threads = np.zeros((6, a, n), np.float32), np.zeros((6, a, n), np.float32)
    worker = (np.arange(B) % 6).astype(np.int64)
    dI = [rng.standard_normal((B, n)).astype(np.float32) for _ in range(T)]
    ids = [np.sort(rng.integers(0, a, (B, 22)), axis=1).astype(np.int32) for _ in range(T)]
    spk = np.full(B, 12)
    weight_grad(serial, worker, ids[0], spk, dI[0])  # compile / cache load
    weight_grad_threads(threads, worker, ids[0], spk, dI[0])
    s, p = [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        for t in range(T):
            weight_grad(serial, worker, ids[t], spk, dI[t])
        t1 = time.perf_counter()
        for t in range(T):
            weight_grad_threads(threads, worker, ids[t], spk, dI[t])
        t2 = time.perf_counter()
        s.append(t1 - t0)
        p.append(t2 - t1)
    print(f"weight-gradient accumulation, {T} steps, {numba.get_num_threads()} threads: serial "
          f"{statistics.median(s):.3f} s (runs {', '.join(f'{x:.3f}' for x in s)}), threads over the copies "
          f"{statistics.median(p):.3f} s (runs {', '.join(f'{x:.3f}' for x in p)}): ratio "
          f"{statistics.median(p) / statistics.median(s):.1f}; identical copies: {np.array_equal(serial, threads)}")


if __name__ == "__main__":
    main()
