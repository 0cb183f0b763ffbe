"""Mapping: which tiles hold which neurons.

A constant number of neurons per tile (at least 2, for float2 SIMD); each layer takes
a contiguous tile range; whole layers per chip (a layer that does not fit on the rest
of a chip starts on the next one); tile 0 of the first chip may be reserved
(Finkbeiner et al. 2024, ``reference/algorithms.md`` §1 Placement).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ...errors import ConfigError, DoesNotFit, Message, Param
from ...checks import check_int

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

    ``neurons_per_tile=None`` picks the smallest even count (>= 2) that places (the study's mapper
    rule, docs/as-built/graphcore_snn.md §5); :mod:`.placement` searches every count instead.
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
        f"({usable} usable on chip 0; whole layers per chip). Raise ", Param("neurons_per_tile", action="raise"),
        " or use more chips.")


def trim_idle_chips(system, layout: Layout):
    """The system and layout cut to the chips the layers occupy (chips 0..k-1, whole layers per
    chip fill them in order): idle chips hold nothing and run nothing, so they are not
    simulated and no per-tile array is made for them (a million asked-for chips cost nothing).
    :func:`idle_chips_note` says so in the report."""
    used = max(p.chip for p in layout.layers) + 1
    if used >= system.chips:
        return system, layout
    return dataclasses.replace(system, chips=used), dataclasses.replace(layout, chips=used)


def idle_chips_note(asked: int, used: int, tiles_used: int, tiles_per_chip: int, searched: bool = False) -> Message:
    """One line for the report when fewer chips were used than asked for (empty if none)."""
    if used >= asked:
        return Message()
    if searched:
        return Message(f"{asked} chips asked for, {used} used: the placement search found {used} chip(s) (whole layers "
                f"per chip) the fastest placement that fits (placement candidates above), so chips {used}-{asked - 1} stay idle and are "
                f"not simulated; ", Param("chips_used", shown="N"), " pins the chips used")
    return Message(f"{asked} chips asked for, {used} used: the layers fill {tiles_used} of {used * tiles_per_chip} tiles "
            f"on {used} chip(s) and a layer moves to the next chip only when the current one is full (whole "
            f"layers per chip), so chips {used}-{asked - 1} stay idle and are not simulated; to spread the layers, "
            f"lower ", Param("tiles", action="lower"), " (tiles per chip) or ", Param("neurons_per_tile", action="lower"))


def weight_bytes_lower_bound(sizes, *, training: bool = True, optimizer: str = "adam", bytes_per_value: int = 4):
    """Per layer (1..L), the fewest bytes of SRAM its weights need wherever they are placed:
    the weight matrix, and when training its gradient and the optimizer's state (Adam: two
    moments). A lower bound from shapes alone, computed before anything is allocated."""
    copies = 1 + (1 + (2 if optimizer == "adam" else 0) if training else 0)
    return [int(a) * int(b) * bytes_per_value * copies for a, b in zip(sizes[:-1], sizes[1:])]


def _bytes(n: float) -> str:
    """A size in the unit that keeps it readable: "35 MiB", "624 KiB", "512 B" (never "0 MiB")."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:,.3g} {unit}"
    return f"{n:,.0f} B"


def check_layers_fit(sizes, system, *, training: bool = True, optimizer: str = "adam",
                     reserve_tile0: bool = True, bytes_per_value: int = 4) -> None:
    """Refuse, from shapes alone, a network whose weights cannot fit: a layer lives on one chip,
    so its weight bytes (:func:`weight_bytes_lower_bound`) must fit a chip's SRAM. Called before
    the network's weights or the memory plan are allocated, so a 20000-wide layer is refused
    in milliseconds instead of after gigabytes of allocation."""
    chip = system.chip
    usable = (chip.tiles - (1 if reserve_tile0 else 0)) * chip.sram_per_tile
    for l, need in enumerate(weight_bytes_lower_bound(sizes, training=training, optimizer=optimizer,
                                                              bytes_per_value=bytes_per_value), start=1):
        if need > usable:
            what = "weights" + (" with their gradient" + (" and Adam moments" if optimizer == "adam" else "")
                                if training else "")
            tiles = -(-need // chip.sram_per_tile) + (1 if reserve_tile0 else 0)  # a bound: weights alone
            raise DoesNotFit(
                f"layer {l} ({sizes[l - 1]} -> {sizes[l]} neurons) needs at least {_bytes(need)} of SRAM for "
                f"its {what}, but one {chip.name} chip has {_bytes(usable)} for layers ({chip.tiles:,} tile(s) x "
                f"{chip.sram_per_tile:,} B{', tile 0 kept free' if reserve_tile0 else ''}) and a layer lives on one "
                f"chip; make the layer narrower (", Param("sizes", key="model.layers", action="lower"), "), give the chip "
                "more tiles (", Param("tiles", action="raise"), f": at least {tiles:,}, the weights' bound) or more SRAM "
                "per tile (", Param("sram_per_tile", key="chip.set.sram_per_tile", shown="N"), ")",
                remedies=[Param("tiles", tiles), Param("sram_per_tile", key="chip.set.sram_per_tile", action="raise")])
