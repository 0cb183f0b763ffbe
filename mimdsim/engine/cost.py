"""Compute cost of a vertex set: a dispatch through the codelet registry. The registry entry
routes the vertex set's static geometry and the step's work counts into the codelet's own
cycle estimator; this is the only place the engine learns what compute costs."""
from __future__ import annotations

from ..kernels import CODELETS, Codelet
from ..kernels.tile import Tile

from ..errors import ConfigError
from ..program import VertexSet


def codelet(name: str) -> Codelet:
    try:
        return CODELETS[name]
    except KeyError:
        raise ConfigError(f"the program runs codelet {name!r}, which no kernels module registers; register it "
                          f"with mimdsim.kernels.codelet.register (docs/extending.md)") from None


def vertex_cycles(vs: VertexSet, work: dict, tile: Tile):
    """``(tiles, cycles)`` of one vertex set for one step."""
    return codelet(vs.codelet).cost(vs.tiles, vs.geometry, work, tile)
