"""Mapping: which tiles hold which neurons.

A constant number of neurons per tile (at least 2, for float2 SIMD); each layer takes
a contiguous tile range; whole layers per chip (a layer that does not fit on the rest
of a chip starts on the next one); tile 0 of the first chip may be reserved
(Finkbeiner et al. 2024, ``reference/algorithms.md`` §1 Placement).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import ConfigError
from ...validate import check_int

NEURONS_PER_TILE_FIX = "2 or more uses the float2 SIMD lanes"


@dataclass(frozen=True)
class LayerPlacement:
    layer: int  # 1..L
    neurons: int
    first_tile: int  # global tile index
    tiles: int
    neurons_per_tile: int
    chip: int

    @property
    def tile_ids(self) -> np.ndarray:
        return np.arange(self.first_tile, self.first_tile + self.tiles)

    @property
    def neuron_starts(self) -> np.ndarray:
        """Neuron index where each tile's slice starts, plus the end: ``[tiles + 1]``."""
        return np.minimum(np.arange(self.tiles + 1) * self.neurons_per_tile, self.neurons)

    @property
    def n_local(self) -> np.ndarray:
        return np.diff(self.neuron_starts)

    def local_tile(self, neuron_ids):
        return np.asarray(neuron_ids) // self.neurons_per_tile

    def sample_tile(self, batch: int) -> np.ndarray:
        """The tile that owns per-sample work of this layer (combine, final reduce)."""
        return self.first_tile + np.arange(batch) % self.tiles


@dataclass(frozen=True)
class Layout:
    layers: tuple[LayerPlacement, ...]
    neurons_per_tile: int
    reserved_tiles: tuple[int, ...]
    chips: int
    tiles_per_chip: int

    @property
    def tiles_used(self) -> int:
        return sum(p.tiles for p in self.layers)

    @property
    def chips_used(self) -> int:
        return len({p.chip for p in self.layers})

    def chip_of(self, tiles) -> np.ndarray:
        return np.asarray(tiles) // self.tiles_per_chip

    def tile_groups(self, n_tiles: int) -> tuple[np.ndarray, list[str]]:
        """Start tile and label of each group: before the first layer, each layer, after the last."""
        starts, labels = [0], ["other tiles"]
        for p in self.layers:
            starts.append(p.first_tile)
            labels.append(f"layer {p.layer} (tiles {p.first_tile}-{p.first_tile + p.tiles - 1})")
        end = self.layers[-1].first_tile + self.layers[-1].tiles
        if end < n_tiles:
            starts.append(end)
            labels.append("other tiles")
        keep = [i for i, s in enumerate(starts) if i == len(starts) - 1 or starts[i + 1] > s]
        return np.array([starts[i] for i in keep]), [labels[i] for i in keep]


def _place(sizes, npt, chips, tiles_per_chip, reserve_tile0):
    """Greedy placement; returns (placements, None) or (None, (layer, neurons, tiles needed))."""
    placements, chip, cursor = [], 0, (1 if reserve_tile0 else 0)
    for l, n in enumerate(sizes, start=1):
        need = -(-n // npt)
        if cursor + need > tiles_per_chip:  # whole layers per chip: start on the next one
            chip, cursor = chip + 1, 0
            if chip >= chips or need > tiles_per_chip:
                return None, (l, n, need)
        placements.append(LayerPlacement(l, n, chip * tiles_per_chip + cursor, need, npt, chip))
        cursor += need
    return placements, None


def map_network(layer_sizes, *, chips: int, tiles_per_chip: int, neurons_per_tile=None,
                reserve_tile0: bool = True) -> Layout:
    """Place neuron layers (sizes n_1..n_L) on ``chips`` chips of ``tiles_per_chip`` tiles.

    ``neurons_per_tile=None`` picks the smallest even count (>= 2) that fits.
    """
    sizes = [int(n) for n in layer_sizes]
    if neurons_per_tile is None:
        candidates = range(2, max(sizes) + 2, 2)
    else:
        candidates = [check_int("neurons_per_tile", neurons_per_tile, low=1, fix=NEURONS_PER_TILE_FIX)]
    failure = None
    for npt in candidates:
        placements, failure = _place(sizes, npt, chips, tiles_per_chip, reserve_tile0)
        if placements is not None:
            reserved = (0,) if reserve_tile0 else ()
            return Layout(tuple(placements), npt, reserved, chips, tiles_per_chip)
    l, n, need = failure
    usable = tiles_per_chip - (1 if reserve_tile0 else 0)
    raise ConfigError(
        f"layer {l} ({n} neurons) needs {need} tiles at {candidates[-1] if neurons_per_tile is None else neurons_per_tile}"
        f" neurons per tile, but the layers do not fit on {chips} chip(s) of {tiles_per_chip} tiles "
        f"({usable} usable on chip 0; whole layers per chip). Raise neurons_per_tile or use more chips.")
