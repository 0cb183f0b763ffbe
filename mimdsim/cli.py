"""Command line: ``mimdsim simulate | compare | run FILE | op KIND | validate | chips | gpus``.

The flags of ``simulate`` and ``compare`` come from :mod:`mimdsim.settings`, the same table
that defines the experiment-file keys.
"""
from __future__ import annotations

import argparse
import functools
import os
import sys

from . import arch
from .errors import ConfigError, MimdsimError
from .experiment import tomllib
from .settings import FILE_KEYS, _field_value, add_arguments, check_value, values_from_args

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

    execute(values_from_args(args), "simulate", out=say_report)
    return 0


def cmd_compare(args) -> int:
    from .experiment import execute

    execute(values_from_args(args), "compare", out=say_report)
    return 0


def cmd_run(args) -> int:
    """An experiment file, with any of its keys overridden on the command line: a flag
    (``--tiles 256``, ``--json r.json``) or ``--set KEY=VALUE`` (``model.batch=32``, or a chip field
    such as ``sram_per_tile=1248000``). Flags given win over the file."""
    from .experiment import execute, load_experiment

    values, command = load_experiment(args.file)
    given = values_from_args(args)  # only the flags given: the run parser's defaults are suppressed
    for key, value in given.items():
        values[key] = value
    for key, value in args.run_set or []:
        if key.startswith("chip.set."):
            values["chip.set"] = {**(values["chip.set"] or {}), key.split(".", 2)[2]: value}
        else:
            values[key] = check_value(FILE_KEYS[key], value, where="--set: ")
    if any(k.startswith("gpu.") for k in given) or any(k.startswith("gpu.") for k, _ in args.run_set or []):
        command = "compare"
    execute(values, command, out=say_report)
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


OP_FLAGS = (  # flag, type, help: the shape arguments of mimdsim.op (KIND decides which apply)
    ("--m", int, "matmul: rows of the left operand [m,k]"), ("--k", int, "matmul: inner dimension"),
    ("--n", int, "matmul: columns of the right operand [k,n]"),
    ("--precision", str, "matmul: fp32 or fp16 (default fp16)"),
    ("--elements", int, "elementwise, copy, dynamic-slice: the tensor's elements (spread over --tiles)"),
    ("--operand", str, "elementwise: scalar (default) or vector"), ("--pattern", str,
     "elementwise --operand vector: the vector's length; exchange: point-to-point (default), broadcast, all-to-all"),
    ("--regions", int, "contiguous regions per tile (default 1)"), ("--dtype", str, "float (default) or half"),
    ("--slices", int, "dynamic-slice: slices taken (default 1)"), ("--outputs", int, "reduce: output elements"),
    ("--partials", int, "reduce: inputs summed into each output"), ("--bytes", int, "exchange: bytes per message"),
    ("--bytes-in", int, "host: bytes from the host"), ("--bytes-out", int, "host: bytes to the host"),
    ("--scope", str, "sync: chip (default) or global"), ("--chips", int, "sync: chips the barrier spans"),
    ("--tiles", int, "tiles the op uses (default: every tile of the chip)"),
)


def cmd_op(args) -> int:
    from .poplibs.ops import op
    from .report.outputs import check_file_path

    if args.json:
        check_file_path(args.json, "--json")
    shape = {flag[2:].replace("-", "_"): getattr(args, "op_" + flag[2:].replace("-", "_"))
             for flag, _, _ in OP_FLAGS}
    shape = {k: v for k, v in shape.items() if v is not None}
    if args.update:
        shape["update"] = True
    if args.kind == "elementwise" and "pattern" in shape:
        try:
            shape["pattern"] = int(shape["pattern"])
        except ValueError:
            raise ConfigError(f"--pattern {shape['pattern']!r}: elementwise takes the vector's length, an "
                              f"integer") from None
    try:
        report = op(args.kind, args.chip, **shape)
    except ConfigError as e:  # name the flags, not the Python arguments
        import re
        text = re.sub(r"\b(bytes_in|bytes_out)\b", lambda m: m.group(1).replace("_", "-"), str(e))
        text = re.sub(r"(?<![\w-])(m|k|n|precision|elements|operand|pattern|regions|dtype|slices|outputs|partials|"
                      r"bytes|bytes-in|bytes-out|scope|chips|tiles|update)=", r"--\1 ", text)
        raise ConfigError(text) from None
    say(report.summary())
    if args.json:
        import json
        with open(args.json, "w") as f:
            json.dump(report.to_dict(), f, indent=1)
        say(f"wrote {args.json}")
    return 0


def cmd_validate(args) -> int:
    from .validation import run_all, summary_table
    from .report.outputs import check_file_path

    if args.json:
        check_file_path(args.json, "--json")
    results = run_all(sources=args.source, quick=args.quick, lists=args.lists)
    say(summary_table(results, points=args.points))
    if args.json:
        import json
        with open(args.json, "w") as f:
            json.dump([r.to_dict() for r in results], f, indent=1)
        say(f"wrote {args.json}")
    return 0


def cmd_sweep(args) -> int:
    from .report.outputs import check_file_path, check_folder_path
    from .report.progress import Progress
    from .sweep import load_results, load_sweep, run_sweep
    from .sweep.runner import pending

    sweep = load_sweep(args.file)
    check_file_path(sweep.results, "sweep.results")  # before any point runs
    if args.plot:
        check_folder_path(args.plot, "--plot")
    if args.scheduler:
        check_scheduler(args.scheduler)
    total, todo = len(sweep.points), len(pending(sweep))
    say(f"sweep {args.file}: {total} points ({sweep.mode}, {sweep.command}, "
        f"{'execution' if sweep.execute else 'rate'}-driven), {todo} to compute -> {sweep.results}")
    progress = Progress("sweep", "point", enabled=not args.quiet, every=5.0)
    INTERRUPTED.append(lambda: f"{len(load_results(sweep.results))} of {total} points are kept in "
                               f"{sweep.results}; run the same command again to compute the rest")
    if todo and not args.serial:
        progress.note(f"starting {'the Dask client at ' + args.scheduler if args.scheduler else 'a Dask LocalCluster'}"
                      f" for {todo} point(s) (--serial runs in this process)")
    try:
        computed = run_sweep(sweep, scheduler=args.scheduler, workers=args.workers, serial=args.serial,
                             progress=progress,
                             # shown with --quiet too: a run waiting on another must not look hung
                             out=lambda text: progress.note(text) if progress.enabled else say(text))
    finally:
        progress.close()
    records = load_results(sweep.results)
    errors = [r for r in records if r.get("status") == "error"]
    written = []
    if args.plot:
        from .sweep.plots import plot_sweep
        written = plot_sweep(sweep, records, args.plot)
    say(f"computed {computed} new point(s); {len(records)} point(s) in {sweep.results}, {len(errors)} with errors")
    for r in errors[:5]:
        say(f"  error at {r['params']}: {r['error']}")
    for p in written:
        say(f"  wrote {p}")
    return 0


def check_scheduler(address: str, timeout: float = 5.0) -> None:
    """Refuse, before the sweep, a Dask scheduler address that is malformed or does not answer."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        host = port = None
    if not host or not port:
        raise ConfigError(f"--scheduler {address!r} is not an address like tcp://host:8786; give the address the "
                          f"Dask scheduler prints, or drop --scheduler to start a LocalCluster")
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as e:
        raise ConfigError(f"--scheduler {address!r}: no Dask scheduler answers at {host}:{port} within {timeout:g} s "
                          f"({e.strerror or e}); start one (`dask scheduler`) or drop --scheduler to start a "
                          f"LocalCluster") from None


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be an integer >= 1 (at least one worker); omit it for one "
                                         f"per core")
    return value


def _run_set(text):
    """``run --set KEY=VALUE``: an experiment key (TOML value) or a chip field (number)."""
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"--set takes KEY=VALUE, e.g. model.batch=32 or sram_per_tile=1248000; "
                                         f"got {text!r}")
    key, value = (p.strip() for p in text.split("=", 1))
    if key in FILE_KEYS and FILE_KEYS[key].kind != "table":
        try:
            parsed = tomllib.loads(f"v = {value}")["v"]
        except tomllib.TOMLDecodeError:
            parsed = value  # a bare word is a string: --set chip.preset=bow
        return key, parsed
    if key.startswith("chip.set."):
        key = key.split(".", 2)[2]
    if "." in key:
        from .validate import did_you_mean
        raise argparse.ArgumentTypeError(f"unknown key {key!r}; give an experiment key (docs/reference.md) or a chip "
                                         f"field." + did_you_mean(key, FILE_KEYS))
    field, num = _field_value(f"{key}={value}")
    return f"chip.set.{field}", num


class Parser(argparse.ArgumentParser):
    """Usage errors in one line (the flag, the value, why) and where to read more."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (`{self.prog} --help` lists the flags)\n")


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="mimdsim", description="Simulate sparse SNN training on MIMD manycore chips.")
    sub = p.add_subparsers(dest="command")
    sub.add_parser("chips", help="list chip presets with their key figures").set_defaults(func=cmd_chips)
    sub.add_parser("gpus", help="list GPU presets with their key figures").set_defaults(func=cmd_gpus)
    fmt = argparse.HelpFormatter  # each flag states its default once (settings.help_text)
    s = sub.add_parser("simulate", help="one training step of a feed-forward SNN on a chip", formatter_class=fmt,
                       description="Compile one training step (or, with --inference, the forward pass) of an SNN for "
                                   "a chip and time it: rate-driven by default, execution-driven with --execute. "
                                   "Prints samples/s, cycles per phase and superstep, memory and activity per layer.")
    add_arguments(s, "simulate")
    s.set_defaults(func=cmd_simulate)
    c = sub.add_parser("compare", help="the same training step on the MIMD chip and on a GPU model",
                       formatter_class=fmt,
                       description="Simulate the step on the chip (the flags of simulate) and estimate it on a GPU "
                                   "under each --strategy, and on a systolic array with --systolic; --workload "
                                   "kalman or mlp compares the particle-physics workloads instead.")
    add_arguments(c, "compare")
    c.set_defaults(func=cmd_compare)
    r = sub.add_parser("run", help="run an experiment file (TOML; see docs/reference.md)",
                       description="Run an experiment file. Any of its keys can be overridden here: by its flag "
                                   "(--tiles 256, --batch 32, --json r.json) or by --set KEY=VALUE.")
    r.add_argument("file", metavar="FILE", help="experiment file (TOML)")
    add_arguments(r, "run", overrides=True)
    r.add_argument("--set", dest="run_set", type=_run_set, action="append", metavar="KEY=VALUE",
                   help="override a key of the file (model.batch=32) or a chip field (sram_per_tile=1248000)")
    r.set_defaults(func=cmd_run)
    w = sub.add_parser("sweep", help="run a sweep file on Dask (or serially); resumable",
                       description="Run a sweep file (an experiment file plus [sweep] axes; docs/reference.md): "
                                   "every point is built and checked first, then run rate-driven (execute = true: "
                                   "execution-driven) and appended to the results file as it finishes; running "
                                   "the same command again computes only the missing points.")
    w.add_argument("file", metavar="FILE", help="sweep file (an experiment file plus [sweep] and [sweep.axes])")
    w.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="address of a running Dask scheduler, e.g. tcp://host:8786 (default: start a LocalCluster)")
    w.add_argument("--workers", type=_positive_int, default=None, metavar="N",
                   help="LocalCluster workers (default: one per core)")
    w.add_argument("--serial", action="store_true", help="run in this process, without Dask")
    w.add_argument("--plot", default=None, metavar="DIR", help="draw the results into this folder")
    w.add_argument("--quiet", action="store_true", help="no progress line")
    w.set_defaults(func=cmd_sweep)
    from .poplibs.ops import KINDS
    o = sub.add_parser("op", help="one Poplar operation on its own: a matmul, element-wise op, copy, slice, "
                                  "reduction, exchange, sync or host transfer",
                       description="Cost one operation with the same planner, codelet estimators and fabric model "
                                   "the programs use: e.g. `mimdsim op matmul --chip bow --m 4096 --k 4096 --n 4096 "
                                   "--precision fp16`. Prints cycles by kind (compute, exchange, sync, host), the "
                                   "matmul's split and each superstep.")
    o.add_argument("kind", metavar="KIND", choices=list(KINDS), help="one of " + ", ".join(KINDS))
    o.add_argument("--chip", default="ipu-mk2", help="chip preset (default ipu-mk2; `mimdsim chips` lists them)")
    o.add_argument("--json", default=None, metavar="FILE", help="write the report as JSON")
    o.add_argument("--update", action="store_true", help="dynamic-slice: a dynamicUpdate instead")
    for flag, kind, text in OP_FLAGS:
        o.add_argument(flag, dest="op_" + flag[2:].replace("-", "_"), type=kind, default=None, help=text)
    o.set_defaults(func=cmd_op)
    v = sub.add_parser("validate", help="every stored measurement against the model: model / measured per point",
                       description="Run every measurement the project stores (mimdsim/validation/data/, each with "
                                   "its provenance) through the model and print model / measured per point, with "
                                   "the median and the worst per source. Nothing is fitted.")
    v.add_argument("--json", default=None, metavar="FILE", help="write every point as JSON")
    v.add_argument("--source", action="append", default=None, metavar="NAME",
                   help="only this source (repeatable; default: all)")
    v.add_argument("--points", action="store_true", help="print every point, not only the summary")
    v.add_argument("--quick", action="store_true", help="a subset of each source's points (for tests)")
    v.add_argument("--lists", choices=("half", "full"), default="half",
                   help="study-log: how full the spike lists are assumed, as its log prints no spike counts "
                        "(half: activity = max activity / 2, the command line's default; full: = max activity)")
    v.set_defaults(func=cmd_validate)
    from .training.cli import add_parser as add_train_parser
    add_train_parser(sub)
    return p


INTERRUPTED: list = []  # callables saying what an interrupted command kept (set as it runs)
STDOUT_CLOSED: list = []  # set once a reader closed stdout


def say(text: str = "") -> None:
    """Print a line of the report; a reader that closed the pipe (``| head``) stops the printing,
    never the run or its outputs."""
    if STDOUT_CLOSED:
        return
    try:
        print(text, flush=True)
    except BrokenPipeError:
        _stdout_to_devnull()


def _stdout_to_devnull() -> None:
    STDOUT_CLOSED.append(True)
    try:  # later writes, and the flush at exit, go nowhere instead of raising again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        sys.stdout = open(os.devnull, "w")


def _kept(args) -> str:
    """What an interrupted command kept, in words."""
    if INTERRUPTED:
        return INTERRUPTED[-1]()
    if getattr(args, "command", "") == "train" and getattr(args, "train_checkpoint", None):
        if os.path.exists(args.train_checkpoint):
            return f"the last checkpoint is in {args.train_checkpoint} (continue with --resume)"
        return f"no checkpoint was written yet (one is written every {args.train_checkpoint_every} epoch(s))"
    return "nothing was written (outputs are written when the run finishes)"


def _check_train_outputs(args) -> None:
    from .report.outputs import check_file_path
    if getattr(args, "train_json", None) is not None:  # "" is asked for, and refused
        check_file_path(args.train_json, "--json")
    if getattr(args, "train_checkpoint", None) is not None and not getattr(args, "train_resume", False):
        check_file_path(args.train_checkpoint, "--checkpoint")


def main(argv=None) -> int:
    """Run a command; every failure a user can cause ends in one line on stderr: a usage or
    configuration error (exit 2), Ctrl-C (exit 130, saying what was kept), out of memory (exit 2).
    A reader that closes stdout early (``| head``) loses no output file (exit 0)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # a usage error (one line, already printed) or --help: its exit code
        return e.code if isinstance(e.code, int) else 2
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    INTERRUPTED.clear()
    STDOUT_CLOSED.clear()
    import warnings
    shown = warnings.showwarning
    warnings.showwarning = _one_line_warning
    try:
        if args.command == "train":
            _check_train_outputs(args)
        return args.func(args)
    except MimdsimError as e:
        print(f"mimdsim: error: {cli_terms(str(e))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\nmimdsim: interrupted; {_kept(args)}", file=sys.stderr)
        return 130
    except MemoryError as e:
        print(f"mimdsim: error: this machine ran out of memory ({e or 'MemoryError'}); use a smaller model, fewer "
              f"timesteps, a smaller batch or fewer chips", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into a pager or `head` that closed early
        _stdout_to_devnull()
        return 0
    finally:
        warnings.showwarning = shown


def _one_line_warning(message, category, filename, lineno, file=None, line=None):
    """A warning on the command line: one line in its terms, not the source line that raised it."""
    try:
        print(f"mimdsim: warning: {cli_terms(' '.join(str(message).split()))}", file=file or sys.stderr)
    except (OSError, ValueError):
        pass


# Python argument names in messages that reach the command line, and the flags that set them
# (a library message's precision= is the chip program's: the GPU's messages name their GPU).
CLI_NAMES = {"batch_size": "--batch", "neurons_per_tile": "--neurons-per-tile", "max_activity": "--max-activity",
             "input_capacity": "--input-capacity", "weight_scale": "--weight-scale", "input_activity": "--input-activity",
             "candidate_activity": "--candidate-activity", "activity": "--activity", "timesteps": "--timesteps",
             "schedule": "--schedule", "optimizer": "--optimizer", "precision": "--chip-precision", "chips": "--chips",
             "tiles": "--tiles", "seed": "--seed", "strategies": "--strategy", "systolic": "--systolic",
             "overflow": "--overflow", "theta2": "--theta2", "reserve_tile0": "--reserve-tile0",
             "checkpoint": "--checkpoint", "epochs": "--epochs", "lr": "--lr"}


@functools.lru_cache(maxsize=None)
def api_names() -> dict:
    """Python argument names and the flags that set them: :data:`CLI_NAMES`, and each setting's own
    name where it is a Python argument too (``max_rate`` -> ``--max-rate``, ``planes`` -> ``--planes``),
    where that name is one setting's only."""
    from .settings import SETTINGS

    last: dict = {}
    for s in SETTINGS:
        last.setdefault(s.key.rsplit(".", 1)[-1], set()).add(s.flag)
    plain = ("planes", "variant", "covariance", "encoding", "classes", "hidden")  # one-word names that are arguments
    derived = {name: next(iter(flags)) for name, flags in last.items()
               if len(flags) == 1 and ("_" in name or name in plain)}
    return {**derived, **CLI_NAMES}


# Phrases of report notes written for the Python API, and their command-line words.
NOTE_PHRASES = {"raise max_activity/capacity to keep them": "raise --max-activity (--input-capacity for the input "
                                                           "list) to keep them",
                "run with inputs= for rates from the dynamics": "run with --execute for rates from the dynamics"}


def report_in_cli_terms(text: str) -> str:
    """A report's notes in command-line terms (its tables are left as they are)."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if "note:" in line:
            for api, cli in NOTE_PHRASES.items():
                line = line.replace(api, cli)
            lines[i] = cli_terms(line)
    return "\n".join(lines)


def say_report(text: str = "") -> None:
    say(report_in_cli_terms(text))


def cli_terms(message: str) -> str:
    """A library message in command-line terms: ``batch_size=0`` -> ``--batch 0``,
    ``schedule='fused'`` -> ``--schedule fused``, ``system('ipu-mk2', chips=2)`` -> ``--chips 2``,
    ``training=False`` -> ``--inference``, ``Network.feedforward(weight_scale=...)`` -> ``--weight-scale``."""
    import re

    if message.startswith("chip '"):  # a chip field: set on the command line by --set FIELD=VALUE
        msg = re.sub(r"chip\('[^']*', (\w+)=([^)]*)\)", r"--set \1=\2", message)
        return re.sub(r"^(chip '[^']*': )(\w+)=", r"\1--set \2=", msg)
    msg = re.sub(r"system\([^()]*?chips=(\d+)\)", r"--chips \1", message)
    msg = re.sub(r"capacities\[0\]=", "--input-capacity ", msg)
    msg = re.sub(r"\b(resume|dense|inference)=True\b", r"--\1", msg)
    msg = re.sub(r"\bstatic_input=True\b", "--static-input", msg)
    msg = msg.replace("from_nir(..., reset='subtract')", "--nir-reset subtract")
    msg = re.sub(r"(?<![\w-])(--[a-z][\w-]*)=(?=[^\s=])", r"\1 ", msg)  # check_int('--flag', ...): flag and value
    # a silent layer's remedy: on the command line the initial weights target half of --max-activity
    msg = msg.replace("(Network.feedforward(init_activity=...), mimdsim.training.calibrate_activity; ",
                      "(--input-activity; the initial weights target half of --max-activity; ")
    msg = re.sub(r"Network\.feedforward\((\w+)=\.\.\.\)(, --[\w-]+)?",
                 lambda m: CLI_NAMES.get(m.group(1), m.group(0)), msg)
    msg = re.sub(r"\btraining=False\b", "--inference", msg)
    msg = re.sub(r"\bstrict=False\b", "the default (not strict)", msg)
    known = api_names()
    names = "|".join(sorted(known, key=len, reverse=True))
    msg = re.sub(rf"(?<![\w.\-])({names})=(['\"]?)([^\s,;'\")]*)\2",
                 lambda m: m.group(0) if m.string[:m.start()].endswith("--set ")  # a chip field: --set FIELD=V
                 else f"{known[m.group(1)]} {m.group(3)}".rstrip(), msg)
    return re.sub(r"(?<![\w.\-])(neurons_per_tile|max_activity|input_capacity|weight_scale|batch_size)\b",
                  lambda m: CLI_NAMES[m.group(1)], msg)


if __name__ == "__main__":
    sys.exit(main())
