"""The codelet constants a band or ``--assume`` may move, while it holds them.

``mimdsim/assumptions.py`` names them (value, range, reasoning) and pins them here; an estimator
reads ``value(name, default)`` with its own constant as the default, so the codelets import
nothing above them. A test keeps each default equal to its registry entry.
"""
from __future__ import annotations

PINNED: dict[str, float] = {}


def value(name: str, default: float) -> float:
    return PINNED.get(name, default)
