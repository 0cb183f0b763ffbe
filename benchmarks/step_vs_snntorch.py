"""Simulator speed against training the same step on the CPU (issue: faster than snnTorch).

    python benchmarks/step_vs_snntorch.py [--repeats 3] [--threads N]

One execution-driven training step of 2312-978-978-976-10, T = 100, B = 48, max activity 1%
on ipu-mk2 (exact numerics, per-tile timing), against, measured in the same run:
* the same step in snnTorch on the CPU (dense BPTT through Leaky neurons, reset to zero,
  same weights and inputs, Adam), skipped with a message when snnTorch is not installed;
* a plain dense NumPy BPTT of the same equations (tests/reference.py).
Inputs are random spikes at 0.5%; weights are scaled x6 so hidden layers fire at ~1-1.5%.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

import mimdsim  # noqa: E402

SIZES, T, B = [2312, 978, 978, 976, 10], 100, 48


def median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def snntorch_step(weights, x, y, threads):
    try:
        import snntorch as snn
        import torch
    except ImportError:
        return None
    torch.set_num_threads(threads)
    fcs = [torch.nn.Linear(a, b, bias=False) for a, b in zip(SIZES[:-1], SIZES[1:])]
    with torch.no_grad():
        for fc, w in zip(fcs, weights):
            fc.weight.copy_(torch.from_numpy(np.ascontiguousarray(w.T)))
    lifs = [snn.Leaky(beta=0.95, reset_mechanism="zero") for _ in fcs]
    params = [p for fc in fcs for p in fc.parameters()]
    opt = torch.optim.Adam(params, lr=1e-3)
    xs = torch.from_numpy(x.astype(np.float32))
    ys = torch.from_numpy(y)

    def step():
        mems = [lif.init_leaky() for lif in lifs]
        counts = 0
        for t in range(T):
            s = xs[t]
            for i, (fc, lif) in enumerate(zip(fcs, lifs)):
                s, mems[i] = lif(fc(s), mems[i])
            counts = counts + s
        loss = torch.nn.functional.cross_entropy(counts, ys)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    args = ap.parse_args()
    net = mimdsim.Network.feedforward(SIZES, max_activity=0.01, weight_scale=6.0)
    rng = np.random.default_rng(0)
    x = (rng.random((T, B, SIZES[0])) < 0.005).astype(np.uint8)
    y = rng.integers(0, SIZES[-1], B)

    def sim():
        return mimdsim.simulate(net, "ipu-mk2", inputs=x, labels=y)
    rep = sim().report  # numba cache load / compile
    if rep.silent_layers():  # a silent network times nothing: refuse to report a speed for it
        raise SystemExit(f"layers {rep.silent_layers()} never spiked ({rep.activity_line()}); "
                         f"not timing a silent network")
    print(f"activity per layer: {rep.activity_line()}")
    from reference import dense_bptt_numpy
    t_np = median_time(lambda: dense_bptt_numpy(net.weights, x, y, alpha=0.95, c=10.0, theta1=1.0, beta=10.0,
                                                dtype=np.float32), max(1, args.repeats // 2 + 1))
    step = snntorch_step(net.weights, x, y, args.threads)
    print(f"{'-'.join(map(str, SIZES))}, T={T}, B={B}, {os.cpu_count()} cores, torch threads {args.threads}")
    if step is None:
        t_sim = median_time(sim, args.repeats)
        print(f"mimdsim execution-driven step (exact numerics + per-tile timing): {t_sim:.3f} s")
        print(f"dense NumPy BPTT (float32): {t_np:.3f} s  ratio {t_sim / t_np:.2f}")
        print("snnTorch not installed: pip install torch==2.13.0 snntorch  (skipped)")
        return
    step()  # warm-up
    # alternate the two so that both see the same load on a shared machine; a ratio per pair
    sims, snns = [], []
    for _ in range(args.repeats):
        sims.append(median_time(sim, 1))
        snns.append(median_time(step, 1))
    ratios = [a / b for a, b in zip(sims, snns)]
    t_sim, t_snn = statistics.median(sims), statistics.median(snns)
    print(f"mimdsim execution-driven step (exact numerics + per-tile timing): {t_sim:.3f} s "
          f"(runs {', '.join(f'{v:.3f}' for v in sims)})")
    print(f"dense NumPy BPTT (float32):                                      {t_np:.3f} s  ratio {t_sim / t_np:.2f}")
    print(f"snnTorch dense BPTT on the CPU:                                  {t_snn:.3f} s "
          f"(runs {', '.join(f'{v:.3f}' for v in snns)})")
    print(f"ratio mimdsim / snnTorch: median {statistics.median(ratios):.2f} over {len(ratios)} alternating pairs "
          f"(range {min(ratios):.2f}-{max(ratios):.2f}); of medians {t_sim / t_snn:.2f}")


if __name__ == "__main__":
    main()
