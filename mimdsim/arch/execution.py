"""How a chip family executes a program: the seam a second MIMD family plugs into.

Each chip family declares its execution model and its spec family (spec dataclass and presets).
The IPU family runs bulk-synchronous supersteps (compute, exchange, sync across every tile); a
family whose cores stream data to each other through buffers while they compute (a dataflow
model) registers its own specs here, from a module of its own, and the workloads choose their
lowering and costs by the model (``mimdsim.workloads.snn.simulate.LOWERINGS``), so the IPU's code
is not touched. Knows no model and no workload.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..errors import ConfigError
from ..checks import did_you_mean
from .presets import Family

BULK_SYNCHRONOUS = "bulk-synchronous"  # Valiant's BSP as the IPU runs it: compute, exchange, sync
DATAFLOW = "dataflow"  # cores stream through circular buffers while they compute (Tenstorrent Tensix, arch/tensix.py)


@dataclass(frozen=True)
class ChipFamily:
    """A family of MIMD chips: how they execute and which specs and presets they have."""

    name: str  # e.g. "graphcore-ipu"
    execution: str  # the execution model the workloads lower to, e.g. BULK_SYNCHRONOUS
    specs: Family  # the spec dataclass and its presets
    description: str


FAMILIES: dict[str, ChipFamily] = {}


def register(family: ChipFamily) -> ChipFamily:
    """Add a chip family; its preset names must be new (a preset name picks its family)."""
    for other in FAMILIES.values():
        clash = set(other.specs.presets) & set(family.specs.presets)
        if clash:
            raise ValueError(f"chip family {family.name}: presets {sorted(clash)} are {other.name}'s already")
    FAMILIES[family.name] = family
    return family


def find_family(chip) -> ChipFamily | None:
    """The family of a chip spec (by its dataclass) or of a preset name; None if no family has it."""
    for f in FAMILIES.values():
        if isinstance(chip, f.specs.spec) or (isinstance(chip, str) and chip in f.specs.presets):
            return f
    return None


def family_of(chip) -> ChipFamily:
    """The family of a chip spec (by its dataclass) or of a preset name; refused if none has it."""
    found = find_family(chip)
    if found is not None:
        return found
    names = [p for f in FAMILIES.values() for p in f.specs.presets]
    raise ConfigError(f"unknown chip {chip!r}: no chip family has it; presets are {', '.join(names)}."
                      + (did_you_mean(chip, names) if isinstance(chip, str) else ""))


def check_chip_fields(chip, fields, *, where: str = "") -> None:
    """Refuse (prefixed by ``where``, a file and line) a chip field the family of ``chip`` (a preset name or
    spec) lacks: one of another family's is named with that family and its presets, any other as the
    family's spec names its unknown fields. An unknown chip is left to the preset's own check."""
    family = find_family(chip)
    if family is None:
        return
    own = {f.name for f in dataclasses.fields(family.specs.spec)}
    name = chip if isinstance(chip, str) else chip.name
    for field in fields:
        if field in own:
            continue
        theirs = [f for f in FAMILIES.values() if f is not family
                  and field in {x.name for x in dataclasses.fields(f.specs.spec)}]
        if theirs:
            other = theirs[0]
            raise ConfigError(f"{where}chip field {field!r} is a {other.name} chip's (presets "
                              f"{', '.join(other.specs.presets)}), not {family.name}'s: {name} has no such field; "
                              f"drop it, or choose a {other.name} chip; {name}'s fields: {', '.join(sorted(own - {'name'}))}")
    family.specs.check_fields(fields, where=where)
