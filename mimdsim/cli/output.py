"""What the command line prints: report lines that survive a reader closing the pipe, in the
command line's terms (:mod:`.terms`)."""
from __future__ import annotations

import os
import sys

from .terms import cli_text

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


def say_report(text="") -> None:
    """Print a report, a note or a library message, naming each parameter by its flag."""
    say(cli_text(text))
