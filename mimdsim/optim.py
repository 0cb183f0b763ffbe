"""Optimizers: hold their state and apply the ``kernels.optim`` updates to ``net.weights``.

Pass one to :func:`mimdsim.simulate` to train: the update phase is then both costed
with that optimizer's codelet and applied to the weights.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from kernels import optim as _k

from .errors import ConfigError


def _positive(name, v):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        raise ConfigError(f"{name}={v!r} must be a positive finite number")


@dataclass
class SGD:
    lr: float = 1e-2
    kind = "sgd"

    def __post_init__(self):
        _positive("lr", self.lr)

    def apply(self, index, w, g):
        _k.sgd_step(w, g, self.lr)


@dataclass
class Adam:
    lr: float = 1e-3
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    state: dict = field(default_factory=dict, repr=False)  # index -> (m, v, step)
    kind = "adam"

    def __post_init__(self):
        _positive("lr", self.lr)
        _positive("eps", self.eps)
        for name in ("beta1", "beta2"):
            v = getattr(self, name)
            if not 0 <= v < 1:
                raise ConfigError(f"{name}={v!r} must lie in [0, 1)")

    def apply(self, index, w, g):
        import numpy as np
        m, v, step = self.state.get(index, (np.zeros_like(w), np.zeros_like(w), 0))
        step += 1
        _k.adam_step(w, g, m, v, step, self.lr, self.beta1, self.beta2, self.eps)
        self.state[index] = (m, v, step)
