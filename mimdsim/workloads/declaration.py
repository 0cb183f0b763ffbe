"""What a workload declares (:class:`Workload`), read by the registry
(:mod:`mimdsim.workloads.registry`).

A declaration is data: its settings rows are :class:`~mimdsim.setting.Setting`s, its entry points
are ``"module:function"`` names, imported when called (:meth:`Workload.entry`). So a declaration
sits as low as the settings table that reads its rows (:mod:`mimdsim.config`), while the code it
names stays in the workload's own layers above.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field

from ..setting import Rows, Setting


@dataclass(frozen=True)
class Source:
    """A stored measurement (``mimdsim/validation/data/<name>.json``) and the runner that rebuilds
    its points: ``runner(doc, quick) -> (points, assumption)``, with ``lists=`` too where
    ``takes_lists`` (the study log's list activity). ``measures``: "chip", "cpu" or "gpu"
    (``mimdsim validate`` lists the chip's sources first, then the CPU's, then the GPU's)."""
    name: str
    measures: str
    runner: str
    takes_lists: bool = False


@dataclass(frozen=True)
class Workload:
    name: str  # the value of --workload (workload.name)
    description: str  # what it runs, as --workload's help names it
    settings: tuple[Rows, ...]  # the rows it owns, each group placed next to a core row
    build: str  # settings -> what runs: SNN: (network, system, simulate's keywords); others: compare's keywords
    run: str  # the chip alone
    compare: str  # the chip and the other machines side by side (a mimdsim.report.Comparison)
    reads: tuple[str, ...] = ()  # settings of other rows it reads (a key, or a "table." prefix)
    bounds: dict = field(default_factory=dict)  # limits of its numeric rows, as mimdsim.config.BOUNDS
    outputs: tuple[str, ...] = ("output.json",)  # the output settings it writes
    validation: tuple[Source, ...] = ()
    hints: dict = field(default_factory=dict)  # key -> why a row it does not read is refused

    @property
    def rows(self) -> tuple[Setting, ...]:
        return tuple(s for group in self.settings for s in group.rows)

    def reads_setting(self, key: str) -> bool:
        """Whether a run of this workload reads the setting ``key`` (its own rows or ``reads``)."""
        return any(s.key == key for s in self.rows) or any(
            key == r or (r.endswith(".") and key.startswith(r)) for r in self.reads)

    def entry(self, what: str):
        """The function an entry point ("build", "run", "compare") names, imported now."""
        return resolve(getattr(self, what))


def resolve(name: str):
    """The function ``"package.module:function"`` names."""
    module, _, attr = name.partition(":")
    return getattr(importlib.import_module(module), attr)
