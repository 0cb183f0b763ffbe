"""Neuron models' simulated training throughput on the MIMD chip and on the GPU model, in
float32 and float16, with and without a population code — the snnTorch IPU study's setup
(Sun et al., arXiv 2211.10725; reference/algorithms.md §2): MNIST-sized 784-1000-10, two
layers, beta 0.9, 25 steps, batch 128, ce_count loss, Adam.

The chip runs each model with sparse spike lists (rate-driven at the given activity) and,
where it fits, with dense activations (a matmul per step: AMP in fp16, SIMD in fp32). The
GPU model (``mimdsim.gpu``) counts a Leaky neuron's element-wise work whatever the model,
so its column is the same for every model: read it as the dense GPU baseline.

    python examples/neuron_zoo.py            # the full table (about a minute)
    python examples/neuron_zoo.py --quick    # small batch and few steps, for a smoke test
"""
from __future__ import annotations

import argparse

import mimdsim
from mimdsim import NeuronSpec
from mimdsim.errors import OutOfDeviceMemory, OutOfTileMemory

MODELS = {
    "Leaky": NeuronSpec("leaky", beta=0.9),
    "Synaptic": NeuronSpec("synaptic", alpha=0.8, beta=0.9),
    "Alpha": NeuronSpec("alpha", alpha=0.95, beta=0.9),
    "Lapicque": NeuronSpec("lapicque", beta=0.9),
    "RLeaky 1-1": NeuronSpec("leaky", beta=0.9, recurrence="one-to-one"),
    "RLeaky all": NeuronSpec("leaky", beta=0.9, recurrence="all-to-all"),
}


def rows(T=25, B=128, activity=0.02, max_activity=0.05, chip="ipu-mk2", gpu="a100-40gb"):
    out = []
    for pop in (False, True):
        sizes = [784, 1000, 100 if pop else 10]
        for name, spec in MODELS.items():
            for precision in ("fp32", "fp16"):
                kw = dict(timesteps=T, batch_size=B, activity=activity, precision=precision)
                net = mimdsim.Network.build(sizes, spec, bias=True, num_classes=10 if pop else None,
                                            max_activity=max_activity)
                try:
                    sparse = mimdsim.simulate(net, chip, **kw).report.samples_per_second
                except OutOfTileMemory:
                    sparse = "n/a"
                try:
                    dense_net = mimdsim.Network.build(sizes, spec, bias=True, num_classes=10 if pop else None,
                                                      dense=True)
                    dense = mimdsim.simulate(dense_net, chip, **kw).report.samples_per_second
                except (OutOfTileMemory, mimdsim.ConfigError) as e:
                    dense = "n/a"  # does not fit the tiles (or no dense all-to-all recurrence)
                g = {}
                for strategy in ("eager", "fused"):  # snnTorch as the study ran it; the hand-fused best case
                    try:  # eager PyTorch runs float32 (the seed study's GPU baseline), the fused program both
                        p = "fp32" if strategy == "eager" else precision
                        g[strategy] = mimdsim.gpu_estimate(net, gpu, timesteps=T, batch_size=B, strategy=strategy,
                                                           precision=p).samples_per_second
                    except OutOfDeviceMemory:
                        g[strategy] = float("nan")
                out.append({"model": name, "population": pop, "precision": precision, "mimd_sparse": sparse,
                            "mimd_dense": dense, "gpu_eager": g["eager"], "gpu_fused": g["fused"]})
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="T=5, B=16 (smoke test)")
    args = ap.parse_args(argv)
    kw = dict(T=5, B=16) if args.quick else {}
    table = rows(**kw)
    fmt = lambda v: f"{v:>12,.0f}" if isinstance(v, float) else f"{v:>12}"  # noqa: E731
    print(f"{'model':<12}{'pop':>5}{'prec':>6}{'MIMD sparse':>12}{'MIMD dense':>12}{'A100 eager':>12}"
          f"{'A100 fused':>12}{'sparse/eager':>13}")
    for r in table:
        ratio = f"{r['mimd_sparse'] / r['gpu_eager']:.2f}x" if isinstance(r["mimd_sparse"], float) else "-"
        print(f"{r['model']:<12}{'yes' if r['population'] else 'no':>5}{r['precision']:>6}{fmt(r['mimd_sparse'])}"
              f"{fmt(r['mimd_dense'])}{fmt(r['gpu_eager'])}{fmt(r['gpu_fused'])}{ratio:>13}")
    print("samples/s per training step; MIMD: ipu-mk2, rate-driven at 2% activity (lists sized for 5%); "
          "GPU: eager = snnTorch in PyTorch eager mode, float32, as Sun et al. compared; fused = a hand-fused "
          "CUDA graph (the best case); n/a: dense does not fit or is not supported")
    return table


if __name__ == "__main__":
    main()
