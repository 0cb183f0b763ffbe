"""The program IR every workload's lowering emits and the one engine runs: plain dataclasses.

A program is tensors with tile mappings (their bytes per tile) plus a schedule of
supersteps — sync, exchange, compute — with loops, and the host's part: streams between
host and tiles (transfers from or to tile ``-1``) and the per-run launch. Everything here is
static, as on the chip: shapes, capacities, exchange sizes and vertex placement are
fixed at compile time; only the work inside codelets depends on the data, and a program's
work source (execution- or rate-driven) supplies it.
"""
from __future__ import annotations

import hashlib

from dataclasses import dataclass, field
from typing import Any, Protocol, Union

import numpy as np

from .arch import SystemSpec
from .errors import ConfigError

PHASES = ("io", "forward", "backward", "update")
# "local": a program with no exchange into it, which Poplar's sync analysis runs without a barrier:
# each tile goes on from where it finished (chip field local_sync_cycles, a named assumption; engine/run.py)
SYNCS = ("chip", "global", "local")
HOST = -1  # the host's "tile" index in transfers


@dataclass(frozen=True)
class TensorAlloc:
    """A tensor's footprint: ``nbytes[i]`` bytes on tile ``tiles[i]``."""

    name: str
    category: str  # weights, gradients, optimizer, history, state, buffers, code
    tiles: np.ndarray
    nbytes: np.ndarray
    layer: int | None = None


def content_digest(*arrays) -> bytes:
    """A digest of the arrays' bytes, types and shapes: a content key that holds none of them. SHA-1 (20
    bytes): a key against accidental collisions, not an attacker; it runs ~2.7x faster than BLAKE2b here
    (hardware SHA instructions), and a new placement's phases are all digested (docs/performance.md)."""
    h = hashlib.sha1(usedforsecurity=False)
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.data)
    return h.digest()


@dataclass(frozen=True)
class Transfer:
    """Messages of one exchange: message m copies ``nbytes[m]`` from ``src[m]`` to ``dst[m]``.

    Messages sharing a ``group`` carry the same data (a multicast): the sender sends
    it once, and a supertile pair receiving the same group shares the broadcast rate.
    ``src = -1`` is a host stream into the tiles, ``dst = -1`` a stream from the tiles
    to the host (a transfer goes one way: not both in one).
    """

    name: str
    src: np.ndarray
    dst: np.ndarray
    nbytes: np.ndarray
    group: np.ndarray

    def content(self) -> tuple:
        """The messages' content as a hashable key (the name left out), made once per transfer: the
        engine's and the memory plan's caches of exchange costs key on it (a transfer is static). A
        20-byte digest of the arrays and their types, not the arrays' bytes: a cache of a sweep's phases
        held every message of every program before (100 MB after three shapes of the default model)."""
        key = self.__dict__.get("_content")
        if key is None:
            key = content_digest(self.src, self.dst, self.nbytes, self.group)
            object.__setattr__(self, "_content", key)
        return key


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
    sync: str = "chip"  # "chip", "global" (spans several chips) or "local" (no exchange: no barrier)

    def __post_init__(self):
        if self.phase not in PHASES:
            raise ConfigError(f"superstep {self.name!r}: phase {self.phase!r} is not one of {', '.join(PHASES)}")
        if self.sync not in SYNCS:
            raise ConfigError(f"superstep {self.name!r}: sync {self.sync!r} is not one of {', '.join(SYNCS)}")


@dataclass(frozen=True)
class Launch:
    """Time the chip spends on the host, no sync: by default the host starting the program (the chip's
    ``run_launch_cycles``). With ``host_call`` (the name of a named assumption in seconds,
    :mod:`mimdsim.assumptions`): that host time instead, once per execution: a framework's own work per
    call (PopTorch's dispatch around the engine run), or, mid-program, the chip waiting for the host at a
    stream copy whose data nothing buffered ahead."""

    name: str = "launch"
    phase: str = "io"
    host_call: str = ""


@dataclass(frozen=True)
class Loop:
    """Repeat ``body`` for t = 0..count-1, or count-1..0 when ``reverse``."""

    name: str
    count: int
    body: tuple[Superstep, ...]
    reverse: bool = False


Step = Union[Superstep, Loop, Launch]


class Mapping(Protocol):
    """A workload's mapping result (which tiles hold what); the engine only asks it for the
    tile groups that timelines and traces draw one track each for."""

    def tile_groups(self, n_tiles: int) -> tuple[np.ndarray, list[str]]:
        """Start tile and label of each group, in tile order, covering every tile."""


@dataclass(frozen=True)
class ProgramMeta:
    """What a report says about the program: the model's description, the workload that
    lowered it, the precision the tiles compute in, training step or inference."""

    model: str
    workload: str = "snn"
    precision: str = "fp32"
    training: bool = True


@dataclass
class Program:
    system: SystemSpec
    mapping: Mapping
    timesteps: int
    batch_size: int
    tensors: list[TensorAlloc]
    schedule: list[Step]
    meta: ProgramMeta
    plan: Any = None  # the workload's own static plan (typed by the workload; the engine never reads it)
    # costs that depend on the program alone (exchange phases, static compute), kept across runs
    static_costs: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def supersteps(self):
        """Every superstep once, in schedule order (loop bodies included; launches left out)."""
        for step in self.schedule:
            for s in (step.body if isinstance(step, Loop) else (step,)):
                if isinstance(s, Superstep):
                    yield s

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
