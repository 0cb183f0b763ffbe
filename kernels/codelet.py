"""The codelet registry: every tile program with its cycle estimator, its cost route and its
memory footprint — the only way the engine learns what compute costs.

As in poplibs, every codelet carries its own cycle estimator next to its functional
implementation. A codelet module registers each codelet with :func:`register`, giving

* ``cycles``: the estimator, work arrays + :class:`~kernels.tile.Tile` -> cycles per vertex;
* ``cost``: how a vertex set reaches the estimator, ``cost(tiles, geometry, work, tile) ->
  (tiles, cycles)`` — ``tiles`` the vertex set's tiles (one entry per vertex), ``geometry``
  its static sizes from the lowering, ``work`` the step's data-dependent counts from the
  program's work source (empty for static codelets);
* ``static``: the cost depends on the geometry alone, so the engine evaluates it once per
  vertex set and reuses it in every iteration;
* ``batched``: the cost route also takes work arrays with a leading loop-iteration axis and
  returns cycles ``[iterations, vertices]``, so the engine costs a whole loop in one call;
* ``code_bytes``: machine code, once per tile that runs the codelet.
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
    cost: Callable  # (tiles, geometry, work, tile) -> (tiles, cycles)
    static: bool = False  # cost depends on the geometry only
    batched: bool = False  # the cost route takes a leading loop-iteration axis
    doc: str = ""

    def footprint(self, vertices_on_tile):
        """Bytes of code and vertex state on a tile running ``vertices_on_tile`` vertices."""
        v = np.asarray(vertices_on_tile)
        return np.where(v > 0, self.code_bytes + VERTEX_STATE_BYTES * v, 0)


def register(name: str, cycles: Callable, code_bytes: int, *, cost: Callable, static: bool = False,
             batched: bool = False) -> Codelet:
    if name in CODELETS:
        raise ValueError(f"codelet {name!r} is registered twice")
    c = Codelet(name=name, cycles=cycles, code_bytes=code_bytes, cost=cost, static=static, batched=batched,
                doc=(cycles.__doc__ or "").strip())
    CODELETS[name] = c
    return c
