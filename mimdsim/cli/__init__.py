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
    checkpoint = getattr(args, "train_checkpoint", None)
    # a resumed run rewrites its checkpoint every few epochs: checked too, where there is one to resume
    if checkpoint is not None and (not getattr(args, "train_resume", False) or os.path.exists(checkpoint)):
        check_file_path(checkpoint, output("train.checkpoint"))


DEBUG_VARIABLE = "MIMDSIM_DEBUG"  # set to 1: an internal error prints its traceback too

REPORT = ("this is a bug in mimdsim, not in your input: please report it to the maintainers with the command line "
          "and the traceback (run again with MIMDSIM_DEBUG=1 to print it)")


def main(argv=None) -> int:
    """Run a command; every failure ends in one line on stderr, never a traceback: a usage or
    configuration error, or out of memory (exit 2: the input is to change), Ctrl-C (exit 130, saying
    what was kept), a file the system could not read or write (exit 1, naming it), an internal error
    (exit 1: what failed and how to report it; its traceback only with ``MIMDSIM_DEBUG=1``).
    A reader that closes stdout early (``| head``) loses no output file (exit 0)."""
    args = None
    import warnings
    shown = warnings.showwarning
    warnings.showwarning = _one_line_warning
    try:
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
        if args.command == "train":
            _check_train_outputs(args)
        return args.func(args)
    except MimdsimError as e:
        print(f"mimdsim: error: {cli_text(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\nmimdsim: interrupted; {_kept(args)}", file=sys.stderr)
        return 130
    except MemoryError as e:  # a size no check found from the shapes first (the traceback shows which)
        _debug_traceback()
        print(f"mimdsim: error: this machine ran out of memory ({e or 'MemoryError'}); lower the sizes given (the "
              f"integer flags that size the run's arrays)", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into a pager or `head` that closed early
        _stdout_to_devnull()
        return 0
    except OSError as e:  # the system refused a file or device: not the input's fault, not a bug
        _debug_traceback()
        print(f"mimdsim: error: {_os_error_text(e)}", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 - a bug: one line that says so, the traceback only on request
        _debug_traceback()
        print(f"mimdsim: internal error: {_internal_error_text(e)}; {REPORT}", file=sys.stderr)
        return 1
    finally:
        warnings.showwarning = shown


def _debug_traceback() -> None:
    """The traceback of the exception being handled, on stderr, when ``MIMDSIM_DEBUG`` is set."""
    if os.environ.get(DEBUG_VARIABLE, "") not in ("", "0"):
        import traceback
        traceback.print_exc(file=sys.stderr)


def _os_error_text(error: OSError) -> str:
    """An operating-system error in one line: the file, what the system said and what to check."""
    what = error.strerror or str(error) or type(error).__name__
    if error.filename is None:
        return f"{what} (the operating system refused an operation; check free disk space and permissions)"
    names = repr(str(error.filename)) + ("" if error.filename2 is None else f" -> {str(error.filename2)!r}")
    return f"{names}: {what}; check the path, its permissions and free disk space, then run again"


def _internal_error_text(error: BaseException) -> str:
    """What failed, in one line: the exception, its message and the innermost mimdsim source line."""
    import traceback
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f"{os.sep}mimdsim{os.sep}" in f.filename]
    where = ""
    if frames:
        frame = frames[-1]
        where = f" at {frame.filename[frame.filename.rindex(os.sep + 'mimdsim' + os.sep) + 1:]}:{frame.lineno}"
    message = " ".join(str(error).split())
    if len(message) > 200:
        message = message[:197] + "..."
    return f"{type(error).__name__}{': ' + message if message else ''}{where}"


def _one_line_warning(message, category, filename, lineno, file=None, line=None):
    """A warning on the command line: one line in its terms, not the source line that raised it."""
    try:
        print(f"mimdsim: warning: {' '.join(cli_text(message).split())}", file=file or sys.stderr)
    except (OSError, ValueError):
        pass
