"""The energy section of a report: joules per step, watts and samples per joule, each with a band.

Every architecture's model is a function ``parts(get) -> {component: joules}`` with the
components of :data:`COMPONENTS`, ``get(name)`` giving each energy constant. The band is
:func:`mimdsim.engine.band.energy_band`, where every band lives: the constants it read that are named
assumptions (kind "energy") and not pinned each move over their range (``docs/energy.md``).
"""
from __future__ import annotations

from typing import Callable

from ..engine.band import energy_band
from ..kernels.assumed import NOTHING, Pinned
from .constants import constant

COMPONENTS = ("static", "compute", "memory", "exchange", "host")


def size_factor(get: Callable[[str], float], share: str, ratio: float) -> float:
    """A spec's static power over its preset's when its sized part (a chip's tiles, an array's MACs) is
    ``ratio`` times the preset's: ``1 + share x (ratio - 1)``, ``share`` the constant naming the part's
    share of the power. Read only off the preset's size, so a preset's band has no such driver."""
    return 1.0 if ratio == 1 else 1.0 + get(share) * (ratio - 1.0)


def energy_section(parts: Callable[[str], dict], seconds: float, batch_size: int, limits: Callable[[str], tuple],
                   activity: dict, preset: str, pinned: Pinned = NOTHING) -> dict:
    """``Report.energy``: the central figures, their band, joules by component, the power limits
    (``limits(get) -> (idle, max)`` watts of the spec priced, at the central or pinned constants);
    ``pinned`` holds the constants ``--assume`` pins (they do not move in the band)."""
    used: dict = {}

    def central(name):  # the value used (or pinned), recording what the model reads
        used[name] = constant(name, pinned=pinned)
        return used[name]

    by = parts(central)
    j = float(sum(by.values()))

    def joules(values: dict) -> float:
        return float(sum(parts(lambda n: values.get(n, used[n])).values()))

    band = energy_band(joules, j, used, pinned, seconds, batch_size)
    return {
        "joules_per_step": j,
        "watts": j / seconds,
        "samples_per_joule": batch_size / j,
        "band": band,
        "by_component": {k: float(by.get(k, 0.0)) for k in COMPONENTS},
        "power_limits_w": dict(zip(("idle", "max"), limits(lambda n: constant(n, pinned=pinned)))),
        "constants": preset,
        "activity": dict(activity),
    }
