"""The program IR the compiler emits and the engine runs: plain dataclasses.

A program is tensors with tile mappings (their bytes per tile) plus a schedule of
supersteps — sync, exchange, compute — with loops over time. Everything here is
static, as on the chip: shapes, capacities, exchange sizes and vertex placement are
fixed at compile time; only the work inside codelets depends on the data.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

import numpy as np

PHASES = ("io", "forward", "backward", "update")


@dataclass(frozen=True)
class TensorAlloc:
    """A tensor's footprint: ``nbytes[i]`` bytes on tile ``tiles[i]``."""

    name: str
    category: str  # weights, gradients, optimizer, history, state, buffers, code
    tiles: np.ndarray
    nbytes: np.ndarray
    layer: int | None = None


@dataclass(frozen=True)
class Transfer:
    """Messages of one exchange: message m copies ``nbytes[m]`` from ``src[m]`` to ``dst[m]``.

    Messages sharing a ``group`` carry the same data (a multicast): the sender sends
    it once, and a supertile pair receiving the same group shares the broadcast rate.
    ``src = -1`` means the host.
    """

    name: str
    src: np.ndarray
    dst: np.ndarray
    nbytes: np.ndarray
    group: np.ndarray


@dataclass(frozen=True)
class VertexSet:
    """One vertex of ``codelet`` on each of ``tiles`` (a tile may appear more than once).

    ``layer`` binds the vertices to that layer's data; ``geometry`` holds the static
    per-vertex sizes the cost estimator needs (neurons on the tile, jobs, ...).
    """

    codelet: str
    layer: int | None
    tiles: np.ndarray
    geometry: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Superstep:
    name: str
    phase: str
    compute: tuple[VertexSet, ...] = ()
    exchange: tuple[Transfer, ...] = ()
    sync: str = "chip"  # "chip" or "global" (spans several chips)

    def __post_init__(self):
        assert self.phase in PHASES, self.phase


@dataclass(frozen=True)
class Loop:
    """Repeat ``body`` for t = 0..count-1, or count-1..0 when ``reverse``."""

    name: str
    count: int
    body: tuple[Superstep, ...]
    reverse: bool = False


Step = Union[Superstep, Loop]


@dataclass
class Program:
    system: object  # SystemSpec
    layout: object  # compiler.mapping.Layout
    timesteps: int
    batch_size: int
    tensors: list[TensorAlloc]
    schedule: list[Step]
    optimizer: str = "adam"
    meta: dict = field(default_factory=dict)

    def supersteps(self):
        """Every superstep once, in schedule order (loop bodies included)."""
        for step in self.schedule:
            yield from (step.body if isinstance(step, Loop) else (step,))

    def tile_memory(self) -> dict[str, np.ndarray]:
        """Bytes per tile for each tensor category, arrays over all tiles of the system."""
        total = self.system.tiles
        out: dict[str, np.ndarray] = {}
        for t in self.tensors:
            arr = out.setdefault(t.category, np.zeros(total, dtype=np.int64))
            np.add.at(arr, t.tiles, t.nbytes)
        return out

    def tile_bytes(self) -> np.ndarray:
        mem = self.tile_memory()
        return sum(mem.values()) if mem else np.zeros(self.system.tiles, dtype=np.int64)
