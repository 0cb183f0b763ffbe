"""The workloads, one line each: what ``--workload`` (``workload.name``) chooses among.

Each workload is a folder, ``mimdsim/workloads/<name>/``, whose ``workload.py`` declares it
(:class:`~mimdsim.workloads.declaration.Workload`): its settings rows and where they stand in the
table, the settings of others it reads, its entry points (``build`` from settings, ``run``,
``compare``), the outputs it writes and its validation sources. Everything that used to branch on
the workload's name reads the declaration instead:

- the configuration (:mod:`mimdsim.config`) assembles the settings table from its core rows and
  each registered workload's rows (and ``--workload``'s choices and help from the names and
  descriptions here);
- the front door (:mod:`mimdsim.cli.execute`, :mod:`mimdsim.cli.workloads`) refuses a setting the
  chosen workload does not read and runs its ``build`` and ``compare``;
- validation (:mod:`mimdsim.validation`) finds each stored source's runner here.

Why the declarations are data: the settings table sits low (:mod:`mimdsim.config` is read by
everything above the model), so this registry and the declarations sit beside it and import
nothing that runs; an entry point is a ``"module:function"`` name, imported when called. Adding a
workload is its folder (its code and its ``workload.py``) and its name in :data:`REGISTERED`.
"""
from __future__ import annotations

from importlib import import_module

from .declaration import Source, Workload

# Each is mimdsim/workloads/<name>/workload.py's WORKLOAD, in the order of --workload's choices (and of
# groups of rows placed at the same core row).
REGISTERED = (
    "snn",
    "kalman",
    "mlp",
)
WORKLOADS: dict[str, Workload] = {name: import_module(f"{__package__}.{name}.workload").WORKLOAD for name in REGISTERED}
DEFAULT = "snn"  # what runs when no workload is named


def workload_of(values: dict) -> Workload:
    """The workload the settings ``values`` choose."""
    return WORKLOADS[values.get("workload.name", DEFAULT)]


def validation_sources() -> dict[str, Source]:
    """Every registered workload's stored sources by name: the chip's first, then the CPU's, then
    the GPU's, each in registry order."""
    order = ("chip", "cpu", "gpu")
    found = [s for w in WORKLOADS.values() for s in w.validation]
    return {s.name: s for s in sorted(found, key=lambda s: order.index(s.measures))}
