"""Building transfers for a lowering: multicasts, point-to-point messages and host streams."""
from __future__ import annotations

import numpy as np

from ..program import HOST, Transfer


def broadcast(name, src_per_sample, dst_tiles, nbytes, group_base=0) -> Transfer:
    """Each sample's data from its source tile to every tile in ``dst_tiles`` (multicast)."""
    B, D = len(src_per_sample), len(dst_tiles)
    return Transfer(name, np.repeat(np.asarray(src_per_sample), D), np.tile(dst_tiles, B),
                    np.full(B * D, nbytes, dtype=np.int64), group_base + np.repeat(np.arange(B), D))


def point_to_point(name, src, dst, nbytes) -> Transfer:
    src, dst = np.asarray(src), np.asarray(dst)
    return Transfer(name, src, dst, np.broadcast_to(np.asarray(nbytes, dtype=np.int64), src.shape).copy(),
                    np.arange(src.size))


def host_stream(name, tiles, nbytes, to_host=False) -> Transfer:
    """One host stream: a distinct message between the host and each of ``tiles`` (empty ones left out)."""
    tiles = np.asarray(tiles, dtype=np.int64)
    nbytes = np.asarray(nbytes, dtype=np.float64)
    keep = nbytes > 0
    tiles, nbytes = tiles[keep], nbytes[keep]
    host = np.full(tiles.shape, HOST, dtype=np.int64)
    if to_host:
        return Transfer(name, src=tiles, dst=host, nbytes=nbytes, group=tiles.copy())
    return Transfer(name, src=host, dst=tiles, nbytes=nbytes, group=tiles.copy())
