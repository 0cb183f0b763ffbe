"""Command line: ``mimdsim simulate | compare | run FILE | chips | gpus``.

The flags of ``simulate`` and ``compare`` come from :mod:`mimdsim.settings`, the same table
that defines the experiment-file keys.
"""
from __future__ import annotations

import argparse
import os
import sys

from . import arch
from .errors import MimdsimError
from .settings import add_arguments, values_from_args

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


def cmd_simulate(args) -> int:
    from .experiment import execute

    execute(values_from_args(args), "simulate")
    return 0


def cmd_compare(args) -> int:
    from .experiment import execute

    execute(values_from_args(args), "compare")
    return 0


def cmd_run(args) -> int:
    from .experiment import execute, load_experiment

    values, command = load_experiment(args.file)
    for key, value in values_from_args(args).items():  # flags given on the command line win
        if value is not None and value is not False:
            values[key] = value
    execute(values, command)
    return 0


def cmd_gpus(args) -> int:
    from .arch.gpu import PRESETS, gpu, gpu_description

    print(f"{'preset':<11}{'SMs':>5}{'clock':>10}{'FP32':>9}{'TF32':>9}{'FP16':>9}{'BF16':>9}"
          f"{'HBM':>9}{'HBM B/s':>11}{'L2':>8}  description")
    for name in PRESETS:
        g = gpu(name)
        tf = lambda v: f"{v / 1e12:>6.1f} TF" if v else "     -   "  # noqa: E731
        print(f"{name:<11}{g.sms:>5}{g.clock_hz / 1e9:>6.2f} GHz{tf(g.fp32_flops)}{tf(g.tf32_flops)}"
              f"{tf(g.fp16_flops)}{tf(g.bf16_flops)}{g.hbm_bytes / 2**30:>5.0f} GiB{g.hbm_bytes_per_second / 1e12:>7.2f} TB/s"
              f"{g.l2_bytes / 2**20:>5.0f} MiB  {gpu_description(name)}")
    print("\nTensor-core figures are dense (no 2:4 sparsity). Sources in docs/gpu-model.md.")
    return 0


def cmd_sweep(args) -> int:
    from .sweep import load_results, load_sweep, run_sweep

    sweep = load_sweep(args.file)
    total = len(sweep.points)
    print(f"sweep {args.file}: {total} points ({sweep.mode}, {sweep.command}, "
          f"{'execution' if sweep.execute else 'rate'}-driven) -> {sweep.results}")
    bar = None
    if not args.quiet and sys.stderr.isatty():
        try:
            from tqdm import tqdm
            bar = tqdm(unit="point", desc="sweep")
        except ImportError:
            bar = None

    def progress(done, todo):
        if bar is not None:
            bar.total = todo
            bar.n = done
            bar.refresh()
    computed = run_sweep(sweep, scheduler=args.scheduler, workers=args.workers, serial=args.serial,
                         progress=progress)
    if bar is not None:
        bar.close()
    records = load_results(sweep.results)
    errors = [r for r in records if r.get("status") == "error"]
    print(f"computed {computed} new point(s); {len(records)} in {sweep.results}, {len(errors)} with errors")
    for r in errors[:5]:
        print(f"  error at {r['params']}: {r['error']}")
    if args.plot:
        from .sweep.plots import plot_sweep
        for p in plot_sweep(sweep, records, args.plot):
            print(f"  wrote {p}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mimdsim", description="Simulate sparse SNN training on MIMD manycore chips.")
    sub = p.add_subparsers(dest="command")
    sub.add_parser("chips", help="list chip presets with their key figures").set_defaults(func=cmd_chips)
    sub.add_parser("gpus", help="list GPU presets with their key figures").set_defaults(func=cmd_gpus)
    fmt = argparse.HelpFormatter  # each flag states its default once (settings.help_text)
    s = sub.add_parser("simulate", help="one training step of a feed-forward SNN on a chip", formatter_class=fmt)
    add_arguments(s, "simulate")
    s.set_defaults(func=cmd_simulate)
    c = sub.add_parser("compare", help="the same training step on the MIMD chip and on a GPU model",
                       formatter_class=fmt)
    add_arguments(c, "compare")
    c.set_defaults(func=cmd_compare)
    r = sub.add_parser("run", help="run an experiment file (TOML; see docs/reference.md)")
    r.add_argument("file", help="experiment file")
    r.add_argument("--json", dest="output_json", default=None, help="write the full report as JSON")
    r.add_argument("--csv", dest="output_csv", default=None, help="write one row per superstep kind and phase")
    r.add_argument("--plot", dest="output_plot", default=None, help="write figures into this folder")
    r.add_argument("--trace", dest="output_trace", default=None, help="write a Perfetto trace")
    r.add_argument("--quiet", dest="output_quiet", action="store_true", help="no progress bar")
    r.set_defaults(func=cmd_run)
    w = sub.add_parser("sweep", help="run a sweep file on Dask (or serially); resumable")
    w.add_argument("file", help="sweep file (an experiment file plus [sweep] and [sweep.axes])")
    w.add_argument("--scheduler", default=None, help="address of an existing Dask scheduler (default: a LocalCluster)")
    w.add_argument("--workers", type=int, default=None, help="LocalCluster workers (default: one per core)")
    w.add_argument("--serial", action="store_true", help="run in this process, without Dask")
    w.add_argument("--plot", default=None, metavar="DIR", help="draw the results into this folder")
    w.add_argument("--quiet", action="store_true", help="no progress bar")
    w.set_defaults(func=cmd_sweep)
    from .training.cli import add_parser as add_train_parser
    add_train_parser(sub)
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
    except BrokenPipeError:  # output piped into a pager or `head` that closed early
        sys.stdout = open(os.devnull, "w")
        return 0


if __name__ == "__main__":
    sys.exit(main())
