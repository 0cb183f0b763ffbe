"""The ``mimdsim`` argument parser: a subcommand per command, the flags of ``simulate``,
``compare``, ``run`` and ``train`` from the settings table (:mod:`mimdsim.cli.flags`)."""
from __future__ import annotations

import argparse

from ..config import FILE_KEYS, tomllib
from . import commands
from .terms import OP_FLAGS
from .flags import _field_value, add_arguments


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be an integer >= 1 (at least one worker); omit it for one "
                                         f"per core")
    return value


def _op_int(text):
    """An op's integer shape flag: a whole number up to the ceiling every integer setting has."""
    from ..config import INT_LIMIT, INT_LIMIT_WHY
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value > INT_LIMIT:
        raise argparse.ArgumentTypeError(f"{value} must be an integer <= {INT_LIMIT:,} ({INT_LIMIT_WHY}); give a "
                                         f"smaller value")
    return value


def _run_set(text):
    """``run --set KEY=VALUE``: an experiment key (TOML value), ``assume.NAME`` (a named assumption) or a chip
    field (number)."""
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
    if key.startswith("assume."):  # a named assumption, as the file's [assume] table and --assume give it
        from .flags import _assume_value
        try:
            name, checked = _assume_value(f"{key.removeprefix('assume.')}={value}")
        except argparse.ArgumentTypeError as e:  # in this flag's terms
            raise argparse.ArgumentTypeError(str(e).replace("--assume ", "assume.", 1)) from None
        return f"assume.{name}", checked
    if key.startswith("chip.set."):
        key = key.split(".", 2)[2]
    if "." in key:
        from ..checks import did_you_mean
        raise argparse.ArgumentTypeError(f"unknown key {key!r}; give an experiment key (docs/reference.md) or a chip "
                                         f"field." + did_you_mean(key, FILE_KEYS))
    field, num = _field_value(f"{key}={value}")
    return f"chip.set.{field}", num


class Parser(argparse.ArgumentParser):
    """Usage errors in one line (the flag, the value, why) and where to read more."""

    command = None  # the subcommand being parsed, for a flag that belongs to another (elsewhere)

    def parse_args(self, args=None, namespace=None):
        ns, extras = self.parse_known_args(args, namespace)
        if extras:
            self.command = getattr(ns, "command", None)
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return ns

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}{elsewhere(self, message)} (`{self.prog} --help` lists the "
                     f"flags)\n")


def elsewhere(parser: argparse.ArgumentParser, message: str) -> str:
    """For a flag the subcommand does not take, the subcommands that do: ``simulate --gpu`` -> compare's."""
    if not message.startswith("unrecognized arguments:"):
        return ""
    subs = next((a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction)), {})
    here = getattr(parser, "command", None)
    hints = []
    for flag in dict.fromkeys(t.split("=", 1)[0] for t in message.split(":", 1)[1].split() if t.startswith("--")):
        owners = [name for name, sp in subs.items() if name != here and flag in sp._option_string_actions]
        if owners:
            hints.append(f"{flag} is a flag of {', '.join(f'`mimdsim {o}`' for o in owners)}"
                         + (f", not of `mimdsim {here}`: run `mimdsim {owners[0]} ... {flag} ...`" if here else ""))
    return "; " + "; ".join(hints) if hints else ""


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="mimdsim", description="Simulate sparse SNN training on MIMD manycore chips.")
    sub = p.add_subparsers(dest="command")
    sub.add_parser("chips", help="list chip presets with their key figures").set_defaults(func=commands.cmd_chips)
    sub.add_parser("gpus", help="list GPU presets with their key figures").set_defaults(func=commands.cmd_gpus)
    fmt = argparse.HelpFormatter  # each flag states its default once (settings.help_text)
    s = sub.add_parser("simulate", help="one training step of a feed-forward SNN on a chip", formatter_class=fmt,
                       description="Compile one training step (or, with --inference, the forward pass) of an SNN for "
                                   "a chip and time it: rate-driven by default, execution-driven with --execute. "
                                   "Prints samples/s, cycles per phase and superstep, memory and activity per layer.")
    add_arguments(s, "simulate")
    s.set_defaults(func=commands.cmd_simulate)
    c = sub.add_parser("compare", help="the same training step on the MIMD chip and on a GPU model",
                       formatter_class=fmt,
                       description="Simulate the step on the chip (the flags of simulate) and estimate it on a GPU "
                                   "under each --strategy, and on a systolic array with --systolic; --workload "
                                   "kalman or mlp compares the particle-physics workloads instead.")
    add_arguments(c, "compare")
    c.set_defaults(func=commands.cmd_compare)
    r = sub.add_parser("run", help="run an experiment file (TOML; see docs/reference.md)",
                       description="Run an experiment file. Any of its keys can be overridden here: by its flag "
                                   "(--tiles 256, --batch 32, --json r.json) or by --set KEY=VALUE.")
    r.add_argument("file", metavar="FILE", help="experiment file (TOML)")
    add_arguments(r, "run", overrides=True)
    r.add_argument("--set", dest="run_set", type=_run_set, action="append", metavar="KEY=VALUE",
                   help="override a key of the file (model.batch=32) or a chip field (sram_per_tile=1248000)")
    r.set_defaults(func=commands.cmd_run)
    w = sub.add_parser("sweep", help="run a sweep file on local processes, Dask or serially; resumable",
                       description="Run a sweep file (an experiment file plus [sweep] axes; docs/reference.md): "
                                   "every point is built and checked first, then run rate-driven (execute = true: "
                                   "execution-driven) and appended to the results file as it finishes; running "
                                   "the same command again computes only the missing points.")
    w.add_argument("file", metavar="FILE", help="sweep file (an experiment file plus [sweep] and [sweep.axes])")
    w.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="address of a running Dask scheduler, e.g. tcp://host:8786 (default: local worker processes)")
    w.add_argument("--workers", type=_positive_int, default=None, metavar="N",
                   help="local worker processes (default: one per core; a sweep of fewer than 3 points a worker "
                        "runs serially)")
    w.add_argument("--serial", action="store_true", help="run in this process, without workers")
    w.add_argument("--no-cache", action="store_true",
                   help="search every point's placement again instead of reusing searches kept on disk by earlier "
                        "runs of the same code (in $MIMDSIM_CACHE_DIR, default ~/.cache/mimdsim)")
    w.add_argument("--plot", default=None, metavar="DIR", help="draw the results into this folder")
    w.add_argument("--quiet", action="store_true", help="no progress line")
    w.set_defaults(func=commands.cmd_sweep)
    from ..poplibs.ops import KINDS
    o = sub.add_parser("op", help="one Poplar operation on its own: a matmul, element-wise op, copy, slice, "
                                  "reduction, exchange, sync or host transfer",
                       description="Cost one operation with the same planner, codelet estimators and fabric model "
                                   "the programs use: e.g. `mimdsim op matmul --chip bow --m 4096 --k 4096 --n 4096 "
                                   "--precision fp16`. Prints cycles by kind (compute, exchange, sync, host), the "
                                   "matmul's split and each superstep.")
    o.add_argument("kind", metavar="KIND", choices=list(KINDS), help="one of " + ", ".join(KINDS))
    o.add_argument("--chip", default="ipu-mk2", help="chip preset (default ipu-mk2; `mimdsim chips` lists them)")
    o.add_argument("--json", default=None, metavar="FILE", help="write the report as JSON")
    o.add_argument("--update", action="store_true", help="dynamic-slice: write the slices into the tensor instead "
                                                          "of reading them")
    for flag, kind, text in OP_FLAGS:
        o.add_argument(flag, dest="op_" + flag[2:].replace("-", "_"), type=_op_int if kind is int else kind,
                       default=None, help=text, metavar="N" if kind is int else flag[2:].upper())
    o.set_defaults(func=commands.cmd_op)
    v = sub.add_parser("validate", help="every stored measurement against the model: model / measured per point",
                       description="Run every measurement the project stores (mimdsim/validation/data/, each with "
                                   "its provenance) through the model and print model / measured per point, with "
                                   "the median and the worst per source, predicted and fitted rows apart; every "
                                   "stored row is counted (suspect, not run with its install line, left out).")
    v.add_argument("--json", default=None, metavar="FILE", help="write every point as JSON")
    v.add_argument("--source", action="append", default=None, metavar="NAME",
                   help="only this source (repeatable; default: all)")
    v.add_argument("--points", action="store_true", help="print every point, not only the summary")
    v.add_argument("--quick", action="store_true", help="a subset of each source's points (for tests)")
    v.add_argument("--lists", choices=("executed", "half", "full"), default="executed",
                   help="study-log: how full the spike lists are (its log prints no spike counts): executed (the "
                        "default: the study's network executed, stored in mimdsim/validation/data/executed/study_activity.json),"
                        " half (activity = max activity / 2) or full (= max activity)")
    v.set_defaults(func=commands.cmd_validate)
    from .train import add_parser as add_train_parser
    add_train_parser(sub)
    return p

