"""The codelet record: a tile program with its cycle estimator and memory footprint.

As in poplibs, every codelet carries its own cycle estimator next to its functional
implementation. A codelet module registers itself with :func:`register`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

CODELETS: dict[str, "Codelet"] = {}

VERTEX_STATE_BYTES = 32  # per vertex: field pointers and sizes (see docs/cost-model.md)


@dataclass(frozen=True)
class Codelet:
    name: str
    cycles: Callable  # work arrays + Tile -> cycles per vertex
    code_bytes: int  # machine code, once per tile that runs the codelet
    doc: str = ""

    def footprint(self, vertices_on_tile):
        """Bytes of code and vertex state on a tile running ``vertices_on_tile`` vertices."""
        v = np.asarray(vertices_on_tile)
        return np.where(v > 0, self.code_bytes + VERTEX_STATE_BYTES * v, 0)


def register(name: str, cycles: Callable, code_bytes: int) -> Codelet:
    c = Codelet(name=name, cycles=cycles, code_bytes=code_bytes, doc=(cycles.__doc__ or "").strip())
    CODELETS[name] = c
    return c
