"""A tensor on its linear mapping over the tiles: consecutive equal blocks, one per tile, the last
ones short or empty (how the programs lay out activations, states and histories)."""
from __future__ import annotations

import numpy as np


def block_sizes(X: int, parts: int, block: int) -> np.ndarray:
    """Sizes of the ``parts`` blocks of X (block ``block``; the last ones may be short or empty)."""
    starts = np.minimum(np.arange(parts + 1) * block, X)
    return np.diff(starts)


def spread(total: int, n_tiles: int) -> np.ndarray:
    """Elements per tile of a tensor mapped linearly over ``n_tiles`` tiles."""
    return block_sizes(total, n_tiles, -(-total // n_tiles))


def occupied(total: int, n_tiles: int) -> tuple[np.ndarray, np.ndarray]:
    """The tiles that hold elements of a tensor mapped linearly over ``n_tiles`` tiles, and how many each."""
    per = spread(total, n_tiles)
    hit = np.flatnonzero(per)
    return hit, per[hit]
