"""Per-tile SRAM plan: every tensor's bytes on every tile, checked against the limit.

Byte sizes: float32 values take 4 B; spike ids take 2 B while a layer has fewer than
65,536 neurons (4 B beyond); list counts take two ids' worth. Code and vertex state
come from each codelet's footprint; exchange code from ``EXCHANGE_CODE_BYTES`` per
message a tile sends or receives (see docs/cost-model.md).
"""
from __future__ import annotations

import numpy as np

from ..kernels import CODELETS

from ..errors import OutOfTileMemory, Param
from ..program import Program, TensorAlloc

EXCHANGE_CODE_BYTES = 8  # per message instruction in a tile's exchange program (estimate)


def id_bytes(layer_size: int) -> int:
    return 2 if layer_size < 65536 else 4


def exchange_code(program: Program) -> TensorAlloc:
    """Bytes of exchange code: one instruction per message sent or received per superstep kind."""
    tiles = program.system.tiles
    ends = [e for step in program.supersteps() for tr in step.exchange for e in _message_ends(tr, tiles)]
    counts = np.bincount(np.concatenate(ends), minlength=tiles) if ends else np.zeros(tiles, dtype=np.int64)
    used = np.flatnonzero(counts)
    return TensorAlloc("exchange_code", "code", used, counts[used] * EXCHANGE_CODE_BYTES)


def _message_ends(tr, tiles: int) -> tuple[np.ndarray, np.ndarray]:
    """The tiles sending a message (one per multicast group and sender) and the tiles receiving one,
    in one transfer: a message to itself is a local copy (no exchange code), the host no tile."""
    moved = tr.src != tr.dst
    src, dst, group = (tr.src, tr.dst, tr.group) if moved.all() else (tr.src[moved], tr.dst[moved], tr.group[moved])
    if group.size < 2 or bool(np.all(group[1:] > group[:-1])):  # one message per group: one send each
        send = src
    else:
        n = tiles + 1  # one send per (group, src) pair: a 1-D key, src = -1 (host) included
        keys = group.astype(np.int64) * n + (src + 1)
        if not bool(np.all(keys[1:] >= keys[:-1])):
            keys = np.sort(keys)
        send = keys[np.concatenate([keys[:1] == keys[:1], keys[1:] != keys[:-1]])] % n - 1  # np.unique % n - 1
    return send[send >= 0], dst[dst >= 0]


def add_code(program: Program) -> None:
    """Add code and vertex state (per codelet per tile) and exchange code to the memory plan."""
    vertex_counts: dict[str, np.ndarray] = {}
    tiles = program.system.tiles
    for step in program.supersteps():
        for v in step.compute:
            arr = vertex_counts.setdefault(v.codelet, np.zeros(tiles, dtype=np.int64))
            np.add.at(arr, v.tiles, 1)
    for name, counts in vertex_counts.items():
        fp = CODELETS[name].footprint(counts)
        hit = np.flatnonzero(fp)
        program.tensors.append(TensorAlloc(f"code.{name}", "code", hit, fp[hit]))
    program.tensors.append(exchange_code(program))


def check_fits(program: Program) -> None:
    """Raise :class:`OutOfTileMemory` for the fullest tile over the limit."""
    limit = program.system.chip.sram_per_tile
    used = program.tile_bytes()
    over = np.flatnonzero(used > limit)
    if over.size == 0:
        return
    tile = int(over[np.argmax(used[over])])
    breakdown, category = {}, {}
    for t in program.tensors:
        hit = t.tiles == tile
        if hit.any():
            breakdown[t.name] = breakdown.get(t.name, 0) + int(t.nbytes[hit].sum())
            category[t.name] = t.category
    top = max(breakdown, key=breakdown.get)
    lower = (Param("timesteps", action="lower"), " or ", Param("batch_size", action="lower"))
    hint = {
        "history": ("The BPTT state history grows with timesteps x batch: lower ", *lower, "."),
        "lists": ("The input spike-list history (timesteps x batch x input capacity K) is kept whole on every tile "
                  "of the layer, so spreading the layer over more tiles does not shrink it: lower ", *lower,
                  ", or give the input list a smaller capacity K (", Param("max_activity", action="lower"), ", ",
                  Param("input_capacity", action="lower"), ", capacities=), or run dense activations "
                  "(Network.build(..., dense=True): 1 bit per spike)."),
        "gradients": "Per-worker weight-gradient copies grow with fan-in x neurons per tile: use fewer "
                     "neurons per tile (more tiles or chips).",
        "weights": "Weights grow with fan-in x neurons per tile: use fewer neurons per tile (more tiles or chips).",
    }.get(category[top], "Use fewer neurons per tile (more tiles or chips), or lower timesteps/batch.")
    idle = int(np.count_nonzero(used == 0))
    # what the remedies are, each checked, is the placement search's to say (it tried them)
    idle_text = f" ({idle} tiles are idle.)" if idle else ""
    raise OutOfTileMemory(tile, int(used[tile]), limit, breakdown,
                          (f"{over.size} tile(s) over the limit; largest here: {top}. ", hint, idle_text))
