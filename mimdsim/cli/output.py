"""What the command line prints: report lines that survive a reader closing the pipe, and library
messages and notes in the command line's terms."""
from __future__ import annotations

import functools
import os
import sys

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
    from ..config import SETTINGS

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


