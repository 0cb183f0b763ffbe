"""Pinned assumptions as a value: the named constants a band or ``--assume`` moves, passed where costs
are computed (a codelet reads them from its :class:`~mimdsim.kernels.tile.Tile`).

``mimdsim/assumptions.py`` names the assumptions (value, range, reasoning) and checks what a user pins;
a :class:`Pinned` holds only the values moved away from their entries. An estimator reads
``tile.pinned.get(name, default)`` with its own constant as the default, so the codelets import
nothing above them (a test keeps each default equal to its registry entry). There is no process-wide
state: two runs with different pins, in two threads, each cost their own.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


_MISSING = object()


@dataclass(frozen=True)
class Pinned(Mapping):
    """An immutable ``{name: value}`` of pinned assumptions (hashable: part of cost caches' keys)."""

    items_: tuple[tuple[str, float], ...] = ()

    @classmethod
    def of(cls, values: Mapping | None = None) -> "Pinned":
        if isinstance(values, Pinned):
            return values
        return cls(tuple(sorted((str(k), float(v)) for k, v in (values or {}).items())))

    def get(self, name: str, default=None):
        """``name``'s value, else ``default`` (an estimator's own constant): no exception on a miss, since
        the codelets' cost routes ask on every call and usually nothing is pinned."""
        for k, v in self.items_:
            if k == name:
                return v
        return default

    def __getitem__(self, name: str) -> float:
        value = self.get(name, _MISSING)
        if value is _MISSING:
            raise KeyError(name)
        return value

    def __iter__(self):
        return (k for k, _ in self.items_)

    def __len__(self) -> int:
        return len(self.items_)

    def __or__(self, other: Mapping) -> "Pinned":
        """These values with ``other``'s on top."""
        return Pinned.of({**dict(self.items_), **dict(other)})

    def only(self, names) -> "Pinned":
        """The values whose names are in ``names``."""
        names = frozenset(names)
        return Pinned(tuple(kv for kv in self.items_ if kv[0] in names))

    def __repr__(self) -> str:
        return f"Pinned({dict(self.items_)})"


NOTHING = Pinned()
