"""One run setting (its TOML key, command-line flag, type, default and help) and a group of them
placed in the settings table.

It sits at the bottom of the package (it imports nothing of it) so that the configuration
(:mod:`mimdsim.config`) and each workload's declaration (``mimdsim/workloads/<name>/workload.py``)
can both build rows; :mod:`mimdsim.config` assembles the table and is where they are read.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

FILE_COMMANDS = ("simulate", "compare")  # the commands whose settings experiment files take
TRAIN = ("train",)
# The help sections of train's flags (Setting.group)
DATA, NETWORK, TRAINING, CHIP = "data (nothing is downloaded)", "network", "training", "chip and GPU model"


@dataclass(frozen=True)
class Setting:
    key: str  # TOML key: "table.name"
    flag: str  # command-line flag
    kind: str  # int, float, str, bool, int_list, size_list, fraction_list, str_list, table
    default: Any
    help: str  # help text (argparse's: a literal % is written %%)
    choices: tuple = ()
    commands: tuple = FILE_COMMANDS  # which commands take it
    group: str = ""  # the help section of the flag (train), "" for none
    metavar: str | None = None  # default: the flag's name in capitals
    api: str = ""  # the Python keyword it sets, where not its key's last part (errors name it so)

    @property
    def dest(self) -> str:
        return self.key.replace(".", "_")

    @property
    def in_files(self) -> bool:
        """Whether experiment files take it (the settings of simulate and compare)."""
        return bool(set(FILE_COMMANDS) & set(self.commands))


@dataclass(frozen=True)
class Rows:
    """Settings a workload owns, and where they stand in the table (docs/reference.md and
    ``--help`` list the settings in the table's order): right ``after`` or ``before`` the row
    of the core table (:data:`mimdsim.config.CORE`) with that key, or at the top when neither
    is given. Groups placed at the same row follow the order of the workload registry."""
    rows: tuple[Setting, ...]
    after: str = ""
    before: str = ""
