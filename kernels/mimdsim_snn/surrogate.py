"""Surrogate spike derivatives, exactly snnTorch 1.0's (``snntorch/surrogate.py``).

Forward, every surrogate is the Heaviside step ``S = H(x) = 1 if x > 0 else 0`` with
``x = U - threshold``. Backward, ``dS/dx`` is replaced by ``sg(x)``:

==================  =================================================  ==================
name                sg(x)                                              defaults
==================  =================================================  ==================
atan                (a / 2) / (1 + (pi / 2 * a * x)^2)                 a = 2 (snnTorch's default surrogate)
fast_sigmoid        1 / (k |x| + 1)^2                                  k = 25
sigmoid             k e^{-k x} / (e^{-k x} + 1)^2                      k = 25
straight_through    1                                                  -
triangular          +t if x < 0, -t if x >= 0  (snnTorch's sign)       t = 1
spike_rate_escape   k exp(-b |x - 1|)                                  b = 1, k = 25
superspike          1 / (b |x| + 1)^2  (fast_sigmoid with slope b)     b = 10 (Finkbeiner et al.)
==================  =================================================  ==================

``sigmoid`` is evaluated as ``k e^{-k|x|} / (e^{-k|x|} + 1)^2``, which is the same
function (it is even in x) without the overflow of ``e^{-kx}`` for large negative x
(snnTorch's float32 form returns NaN below x = -88/k).
"""
from __future__ import annotations

import math

from .._jit import njit
import numpy as np

NAMES = ("atan", "fast_sigmoid", "sigmoid", "straight_through", "triangular", "spike_rate_escape", "superspike")
CODES = {name: i for i, name in enumerate(NAMES)}
ATAN, FAST_SIGMOID, SIGMOID, STRAIGHT_THROUGH, TRIANGULAR, SPIKE_RATE_ESCAPE, SUPERSPIKE = range(7)


@njit(cache=True, inline="always")
def sg(x, kind, p1, p2):
    """Surrogate derivative at ``x = U - threshold`` (p1, p2: the surrogate's parameters)."""
    if kind == ATAN:
        y = math.pi / 2 * p1 * x
        return p1 / 2 / (1 + y * y)
    if kind == FAST_SIGMOID or kind == SUPERSPIKE:
        d = p1 * abs(x) + 1
        return 1 / (d * d)
    if kind == SIGMOID:
        e = math.exp(-p1 * abs(x))
        return p1 * e / ((e + 1) * (e + 1))
    if kind == STRAIGHT_THROUGH:
        return x * 0 + 1
    if kind == TRIANGULAR:
        return -p1 if x >= 0 else p1
    # SPIKE_RATE_ESCAPE: p1 = beta, p2 = slope
    return p2 * math.exp(-p1 * abs(x - 1))


def surrogate_numpy(x, name, p1, p2=0.0):
    """Reference (numpy) form of each surrogate, for tests and documentation."""
    x = np.asarray(x, dtype=np.float64)
    if name == "atan":
        return p1 / 2 / (1 + (np.pi / 2 * p1 * x) ** 2)
    if name in ("fast_sigmoid", "superspike"):
        return 1 / (p1 * np.abs(x) + 1) ** 2
    if name == "sigmoid":
        e = np.exp(-p1 * np.abs(x))
        return p1 * e / (e + 1) ** 2
    if name == "straight_through":
        return np.ones_like(x)
    if name == "triangular":
        return np.where(x >= 0, -p1, p1)
    if name == "spike_rate_escape":
        return p2 * np.exp(-p1 * np.abs(x - 1))
    raise ValueError(f"unknown surrogate {name!r}; expected one of {', '.join(NAMES)}")


# Instruction counts of sg(x) for one listed id, after x = U - theta is formed (see
# docs/cost-model.md; software sequences: reciprocal/divide 4, exp 12).
SURROGATE_INSTRUCTIONS = {
    "atan": 8,  # mul (pi/2 a); square; add 1; recip (4); mul a/2
    "fast_sigmoid": 8,  # abs; mul k; add 1; square; recip (4)
    "superspike": 8,  # as fast_sigmoid
    "sigmoid": 21,  # abs; mul -k; exp (12); add 1; square; recip (4); mul k*e
    "straight_through": 1,  # constant 1
    "triangular": 2,  # cmp; select
    "spike_rate_escape": 16,  # sub 1; abs; mul -b; exp (12); mul k
}
