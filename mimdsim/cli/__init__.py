"""The front door: the command line ``mimdsim simulate | compare | run FILE | sweep FILE | train |
op KIND | validate | chips | gpus`` (the console script and ``python -m mimdsim`` run :func:`main`).

Everything a user types lands here and nowhere else: the parser (:mod:`.parser`, its flags built by
:mod:`.flags` from the settings table of :mod:`mimdsim.config`), the commands (:mod:`.commands`,
:mod:`.train`), the execution of a run's settings (:mod:`.execute`, :mod:`.workloads`), and what is
printed (:mod:`.output`). It is the top of the house: nothing in the package imports it.

Imported by: __main__, trace_seed (its writer runs a default compare); nothing else.
"""
from __future__ import annotations

import os
import sys

from ..errors import MimdsimError
from .output import INTERRUPTED, STDOUT_CLOSED, _stdout_to_devnull
from .terms import cli_text
from .parser import build_parser

__all__ = ["main", "build_parser"]


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
    from ..report.outputs import check_file_path, output
    if getattr(args, "train_json", None) is not None:  # "" is asked for, and refused
        check_file_path(args.train_json, output("train.json"))
    if getattr(args, "train_checkpoint", None) is not None and not getattr(args, "train_resume", False):
        check_file_path(args.train_checkpoint, output("train.checkpoint"))


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
        print(f"mimdsim: error: {cli_text(e)}", file=sys.stderr)
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
        print(f"mimdsim: warning: {' '.join(cli_text(message).split())}", file=file or sys.stderr)
    except (OSError, ValueError):
        pass
