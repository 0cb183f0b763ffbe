"""The energy section of a report: joules per step, watts and samples per joule, each with a band.

Every architecture's model is a function ``parts(get) -> {component: joules}`` with the
components of :data:`COMPONENTS`, ``get(name)`` giving each energy constant. The band is the time
band's shape (``mimdsim.engine.band``): the constants it read that are named assumptions (kind
"energy", ``mimdsim.assumptions``) and not pinned by ``--assume`` each move over their range
one at a time (the drivers, largest swing first), and the corners set each at the end that
lowers, or raises, the joules (``docs/energy.md``). The step's time is the point estimate's.
"""
from __future__ import annotations

from typing import Callable

from .. import assumptions as A
from ..kernels.assumed import NOTHING, Pinned
from .constants import constant

COMPONENTS = ("static", "compute", "memory", "exchange", "host")


def energy_section(parts: Callable[[str], dict], seconds: float, batch_size: int, limits: tuple,
                   activity: dict, preset: str, pinned: Pinned = NOTHING) -> dict:
    """``Report.energy``: the central figures, their band, joules by component, the power limits;
    ``pinned`` holds the constants ``--assume`` pins (they do not move in the band)."""
    used: dict = {}

    def central(name):  # the value used (or pinned), recording what the model reads
        used[name] = constant(name, pinned=pinned)
        return used[name]

    by = parts(central)
    j = float(sum(by.values()))

    def joules(values: dict) -> float:
        return float(sum(parts(lambda n: values.get(n, used[n])).values()))

    held = {n: v for n, v in used.items() if n in A.REGISTRY and n in pinned}
    drivers = [A.REGISTRY[n] for n in used if n in A.REGISTRY and n not in held]
    rows, low_corner, high_corner = [], {}, {}
    for a in drivers:
        at_low, at_high = joules({a.name: a.low}), joules({a.name: a.high})
        low_corner[a.name], high_corner[a.name] = (a.low, a.high) if at_low <= at_high else (a.high, a.low)
        rows.append({"name": a.name, "value": a.value, "range": [a.low, a.high], "unit": a.unit,
                     "joules_per_step": [min(at_low, at_high), max(at_low, at_high)], "at_low": at_low,
                     "at_high": at_high})
    rows.sort(key=lambda r: -(r["joules_per_step"][1] - r["joules_per_step"][0]))
    lo, hi = min(joules(low_corner), j), max(joules(high_corner), j)
    band = {"joules_per_step": [lo, hi], "watts": [lo / seconds, hi / seconds],
            "samples_per_joule": [batch_size / hi, batch_size / lo], "assumptions": len(rows), "drivers": rows}
    if held:
        band["pinned"] = held
    return {
        "joules_per_step": j,
        "watts": j / seconds,
        "samples_per_joule": batch_size / j,
        "band": band,
        "by_component": {k: float(by.get(k, 0.0)) for k in COMPONENTS},
        "power_limits_w": {"idle": limits[0], "max": limits[1]},
        "constants": preset,
        "activity": dict(activity),
    }
