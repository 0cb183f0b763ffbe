"""The published study's benchmark configurations (Finkbeiner et al. 2024), as its scripts build them.

From github jrfinkbeiner/graphcore_snn ``benchmarking/benchmarking_script.py`` (``main``,
``HIDDEN_LAYER_DENSE_SIZES(_LAST)``) and the ``runfile_*.sh`` sweeps; see
``docs/as-built/graphcore_snn.md`` §6:

* multi-layer: NMNIST (2312 inputs, input K = 32, 10 classes), 2-5 hidden layers filling one
  chip at 2 neurons per tile, T = 100, B = 48, Adam, max activity 0.5-50 %;
* multi-neuron: SHD (700 inputs, input K = 48, 20 classes), npt/2 x {2, 3, 4} hidden layers at
  8, 16 or 32 neurons per tile, T = 10, B = 24, SGD, max activity 1-10 %;
* multi-chip: SHD, npt/2 x 3 hidden layers per chip at 2, 4 or 8 neurons per tile on 1-16
  chips, T = 10, B = 24, SGD, max activity 5 %.

Capacities are the scripts' K = 2 floor(a N / 2) (output at least 2), which is
:func:`mimdsim.snn.network.capacity_for`.
"""
from __future__ import annotations

from dataclasses import dataclass

TILES_PER_CHIP = 1472
MULTI_LAYER_ACTIVITIES = (0.005, 0.01, 0.02, 0.025, 0.05, 0.1, 0.2, 0.25, 0.5)
MULTI_NEURON_ACTIVITIES = (0.01, 0.025, 0.05, 0.1)


@dataclass(frozen=True)
class StudyConfig:
    name: str
    sizes: tuple  # input first
    input_capacity: int
    max_activity: float
    neurons_per_tile: int
    timesteps: int
    batch_size: int
    optimizer: str  # "adam" or "sgd"
    chips: int = 1


def hidden_sizes(hidden: int, npt: int, classes: int, last: bool) -> list[int]:
    """``HIDDEN_LAYER_DENSE_SIZES``: NTS = 1471 npt neurons over ``hidden`` layers, multiples of
    npt; the ``_LAST`` variant (the last or only chip) leaves room for the output layer."""
    nts = (TILES_PER_CHIP - 1) * npt
    if last:
        nts -= -(-classes // npt) * npt
    base = nts // hidden // npt
    return [npt * (base + int(nts % (hidden * npt) > npt * i)) for i in range(hidden)]


def multi_layer() -> list[StudyConfig]:
    out = []
    for hidden in (2, 3, 4, 5):
        sizes = (2312, *hidden_sizes(hidden, 2, 10, last=True), 10)
        for act in MULTI_LAYER_ACTIVITIES:
            out.append(StudyConfig(f"multi-layer {hidden} hidden, {act:.1%}", sizes, 32, act, 2, 100, 48, "adam"))
    return out


def multi_neuron() -> list[StudyConfig]:
    """The runfile's sweep (npt = 16) at the other neuron counts its comment lists (8, 32), over
    npt/2 x {2, 3, 4} hidden layers — without the layer counts the stored op cannot build: it
    puts each (layer, sample)'s surrogate vertex on tile 1 + B layer + b, so more than
    (1471 - 1) / B layers on a chip do not place (64 hidden + output at B = 24), and no runfile
    asks for them (docs/as-built/graphcore_snn.md §6)."""
    out = []
    for npt in (8, 16, 32):
        for k in (2, 3, 4):
            hidden = npt // 2 * k
            if (hidden + 1) * 24 + 1 > TILES_PER_CHIP:
                continue
            sizes = (700, *hidden_sizes(hidden, npt, 20, last=True), 20)
            for act in MULTI_NEURON_ACTIVITIES:
                out.append(StudyConfig(f"multi-neuron {npt}/tile, {hidden} hidden, {act:.1%}", sizes, 48, act, npt,
                                       10, 24, "sgd"))
    return out


def multi_chip() -> list[StudyConfig]:
    out = []
    for npt in (2, 4, 8):
        per_chip = npt // 2 * 3
        for chips in (1, 2, 4, 8, 16):
            hidden = [*hidden_sizes(per_chip, npt, 20, last=False) * (chips - 1),
                      *hidden_sizes(per_chip, npt, 20, last=True)]
            out.append(StudyConfig(f"multi-chip {chips} chips, {npt}/tile", (700, *hidden, 20), 48, 0.05, npt, 10, 24,
                                   "sgd", chips))
    return out


def configurations() -> list[StudyConfig]:
    """Every configuration of the study's benchmarks."""
    return multi_layer() + multi_neuron() + multi_chip()
