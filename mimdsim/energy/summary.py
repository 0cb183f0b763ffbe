"""The energy section of a report: joules per step, watts and samples per joule, each with a band.

Every architecture's model is a function ``parts(corner) -> {component: joules}`` with the
components of :data:`COMPONENTS`. Energy grows with every constant, so the band's ends are the
corners with every constant at its low end and at its high end (``docs/energy.md``).
"""
from __future__ import annotations

from typing import Callable

COMPONENTS = ("static", "compute", "memory", "exchange", "host")


def energy_section(parts: Callable[[str], dict], seconds: float, batch_size: int, limits: tuple,
                   activity: dict, preset: str) -> dict:
    """``Report.energy``: the central figures, their band, joules by component, the power limits."""
    by = {corner: parts(corner) for corner in ("value", "low", "high")}
    joules = {c: float(sum(v.values())) for c, v in by.items()}
    j = joules["value"]
    return {
        "joules_per_step": j,
        "watts": j / seconds,
        "samples_per_joule": batch_size / j,
        "band": {"joules_per_step": [joules["low"], joules["high"]],
                 "watts": [joules["low"] / seconds, joules["high"] / seconds],
                 "samples_per_joule": [batch_size / joules["high"], batch_size / joules["low"]]},
        "by_component": {k: float(by["value"].get(k, 0.0)) for k in COMPONENTS},
        "power_limits_w": {"idle": limits[0], "max": limits[1]},
        "constants": preset,
        "activity": dict(activity),
    }
