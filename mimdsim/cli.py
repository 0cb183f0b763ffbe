"""Command line: ``mimdsim simulate`` and ``mimdsim chips``."""
from __future__ import annotations

import argparse
import dataclasses
import sys

import numpy as np

from . import arch
from .errors import MimdsimError

DEFAULT_LAYERS = "2312,978,978,976,10"


def _int_list(text):
    try:
        vals = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers, e.g. {DEFAULT_LAYERS}")
    if len(vals) < 2:
        raise argparse.ArgumentTypeError(f"{text!r}: give at least an input and an output size")
    return vals


def _fraction_list(text):
    try:
        vals = [float(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number or comma-separated list of numbers")
    return vals[0] if len(vals) == 1 else vals


def _override(text):
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"--set takes FIELD=VALUE, got {text!r}")
    key, value = text.split("=", 1)
    fields = {f.name: f for f in dataclasses.fields(arch.ChipSpec)}
    if key not in fields or key == "name":
        raise argparse.ArgumentTypeError(f"unknown chip field {key!r}; valid: {', '.join(sorted(set(fields) - {'name'}))}")
    try:
        num = float(value.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--set {key}: {value!r} is not a number")
    return key, (int(num) if fields[key].type in ("int", int) and num == int(num) else num)


def _chip_from_args(args):
    overrides = dict(args.set or [])
    if args.tiles is not None:
        overrides["tiles"] = args.tiles
    return arch.system(args.chip, chips=args.chips, **overrides)


def cmd_chips(args) -> int:
    header = f"{'preset':<9}{'tiles':>7}{'SRAM/tile':>12}{'SRAM total':>12}{'clock':>10}{'workers':>9}" \
             f"{'FP32 peak':>12}{'FP16 peak':>12}{'exch B/cyc':>12}{'sync':>7}{'links':>11}  description"
    print(header)
    for name in arch.PRESETS:
        c = arch.chip(name)
        print(f"{name:<9}{c.tiles:>7}{c.sram_per_tile / 1024:>9.0f} KiB{c.sram_bytes / 2**20:>8.0f} MiB"
              f"{c.clock_hz / 1e9:>7.3f} GHz{c.workers:>9}{c.peak_fp32_flops / 1e12:>7.1f} TFLOP"
              f"{c.peak_fp16_flops / 1e12:>7.1f} TFLOP{c.exchange_recv_bytes_per_cycle:>12.0f}"
              f"{c.sync_cycles:>7}{c.link_bytes_per_second / 1e9:>7.0f} GB/s  {arch.chip_description(name)}")
    print("\nOverride any field: mimdsim simulate --chip ipu-mk2 --set sram_per_tile=1248000; "
          "sources in docs/cost-model.md")
    return 0


def _model_and_run(args):
    """The Network, system and simulate() keyword arguments that the model flags describe."""
    from .snn import Network

    net = Network.feedforward(args.layers, max_activity=args.max_activity, input_capacity=args.input_capacity,
                              theta2=args.theta2, overflow=args.overflow, seed=args.seed,
                              weight_scale=args.weight_scale)
    system = _chip_from_args(args)
    kw = dict(neurons_per_tile=args.neurons_per_tile, reserve_tile0=not args.no_reserve_tile0, seed=args.seed)
    if args.execute:
        rng = np.random.default_rng(args.seed)
        rate = args.input_activity if args.input_activity is not None else args.max_activity / 2
        kw["inputs"] = (rng.random((args.timesteps, args.batch, args.layers[0])) < rate).astype(np.uint8)
        kw["labels"] = rng.integers(0, args.layers[-1], args.batch)
    else:
        kw.update(timesteps=args.timesteps, batch_size=args.batch,
                  activity=args.activity if args.activity is not None else args.max_activity / 2,
                  candidate_activity=args.candidate_activity, input_activity=args.input_activity)
    return net, system, kw


def cmd_simulate(args) -> int:
    from .simulate import simulate

    net, system, kw = _model_and_run(args)
    run = simulate(net, system, **kw)
    print(run.report.format())
    if run.loss is not None:
        print(f"\n  loss {run.loss:.6f}; gradient norms " +
              ", ".join(f"{np.linalg.norm(g):.3g}" for g in run.grads))
    if args.json:
        run.report.to_json(args.json)
        print(f"\n  wrote {args.json}")
    return 0


def cmd_compare(args) -> int:
    from .compare import compare

    net, system, kw = _model_and_run(args)
    result = compare(net, system, args.gpu, strategies=args.strategy, precision=args.precision,
                     systolic=args.systolic, **kw)
    print(result.format())
    if args.json:
        result.to_json(args.json)
        print(f"\n  wrote {args.json}")
    return 0


def cmd_gpus(args) -> int:
    from .gpu import spec as gpu_spec

    print(f"{'preset':<11}{'SMs':>5}{'clock':>10}{'FP32':>9}{'TF32':>9}{'FP16':>9}{'BF16':>9}"
          f"{'HBM':>9}{'HBM B/s':>11}{'L2':>8}  description")
    for name in gpu_spec.PRESETS:
        g = gpu_spec.gpu(name)
        tf = lambda v: f"{v / 1e12:>6.1f} TF" if v else "     -   "  # noqa: E731
        print(f"{name:<11}{g.sms:>5}{g.clock_hz / 1e9:>6.2f} GHz{tf(g.fp32_flops)}{tf(g.tf32_flops)}"
              f"{tf(g.fp16_flops)}{tf(g.bf16_flops)}{g.hbm_bytes / 2**30:>5.0f} GiB{g.hbm_bytes_per_second / 1e12:>7.2f} TB/s"
              f"{g.l2_bytes / 2**20:>5.0f} MiB  {gpu_spec.DESCRIPTIONS.get(name, '')}")
    print("\nTensor-core figures are dense (no 2:4 sparsity). Sources in docs/gpu-model.md.")
    return 0


def _strategies(text):
    from .gpu.kernels import STRATEGIES

    vals = [v.strip() for v in text.split(",") if v.strip()]
    bad = [v for v in vals if v not in STRATEGIES]
    if bad or not vals:
        raise argparse.ArgumentTypeError(f"unknown strategy {bad or text!r}; choose from {', '.join(STRATEGIES)}")
    return vals


def _add_model_flags(s):
    s.add_argument("--layers", type=_int_list, default=_int_list(DEFAULT_LAYERS), help="layer sizes, input first")
    s.add_argument("--timesteps", type=int, default=100)
    s.add_argument("--batch", type=int, default=48)
    s.add_argument("--max-activity", type=float, default=0.01, help="sets each list's capacity K = even floor(a*n)")
    s.add_argument("--input-capacity", type=int, default=None, help="K of the input list (default: from max activity)")
    s.add_argument("--activity", type=_fraction_list, default=None,
                   help="rate-driven spike fraction per step, one or per layer (default: max activity / 2)")
    s.add_argument("--candidate-activity", type=_fraction_list, default=None,
                   help="rate-driven fraction of gradient candidates (default: = activity)")
    s.add_argument("--input-activity", type=float, default=None, help="input spike fraction (default: = activity)")
    s.add_argument("--execute", action="store_true",
                   help="execution-driven: real numerics on random input spikes (rate --input-activity)")
    s.add_argument("--theta2", type=float, default=0.9, help="gradient-candidate threshold")
    s.add_argument("--overflow", choices=["lowest-index", "random"], default="lowest-index")
    s.add_argument("--weight-scale", type=float, default=1.0, help="init std = scale / sqrt(fan-in)")
    s.add_argument("--chip", default="ipu-mk2", help="preset name (see `mimdsim chips`)")
    s.add_argument("--tiles", type=int, default=None, help="override tiles per chip")
    s.add_argument("--chips", type=int, default=1, help="chips in the system (whole layers per chip)")
    s.add_argument("--set", type=_override, action="append", metavar="FIELD=VALUE",
                   help="override any chip field, e.g. --set sram_per_tile=1248000")
    s.add_argument("--neurons-per-tile", type=int, default=None, help="default: smallest even count that fits")
    s.add_argument("--no-reserve-tile0", action="store_true", help="use tile 0 of the first chip too")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--json", metavar="FILE", help="write the full report as JSON")


def build_parser() -> argparse.ArgumentParser:
    from .gpu.kernels import STRATEGIES

    p = argparse.ArgumentParser(prog="mimdsim", description="Simulate sparse SNN training on MIMD manycore chips.")
    sub = p.add_subparsers(dest="command")
    sub.add_parser("chips", help="list chip presets with their key figures").set_defaults(func=cmd_chips)
    sub.add_parser("gpus", help="list GPU presets with their key figures").set_defaults(func=cmd_gpus)
    fmt = argparse.ArgumentDefaultsHelpFormatter
    s = sub.add_parser("simulate", help="one training step of a feed-forward SNN on a chip", formatter_class=fmt)
    _add_model_flags(s)
    s.set_defaults(func=cmd_simulate)
    c = sub.add_parser("compare", help="the same training step on the MIMD chip and on a GPU model",
                       formatter_class=fmt)
    _add_model_flags(c)
    c.add_argument("--gpu", default="a100-40gb", help="GPU preset (see `mimdsim gpus`)")
    c.add_argument("--strategy", type=_strategies, default=list(STRATEGIES),
                   help=f"GPU execution strategies, comma-separated: {', '.join(STRATEGIES)}")
    c.add_argument("--precision", default="fp32", choices=["fp32", "tf32", "fp16", "bf16"],
                   help="GPU precision (the chip runs float32)")
    c.add_argument("--systolic", default=None, metavar="ARRAY",
                   help="also estimate a systolic array preset (tpu-v1, scalesim-google, scalesim-32x32)")
    c.set_defaults(func=cmd_compare)
    return p


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return args.func(args)
    except MimdsimError as e:
        print(f"mimdsim: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
