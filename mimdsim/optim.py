"""Optimizers: hold their state and apply the ``kernels.mimdsim_snn.optim`` updates to ``net.weights``.

Pass one to :func:`mimdsim.simulate` to train: the update phase is then both costed
with that optimizer's codelet and applied to the weights.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .kernels.mimdsim_snn import optim as _k

from .checks import check_number

OPTIMIZERS = ("adam", "sgd")  # the kinds below


@dataclass
class SGD:
    lr: float = 1e-2
    kind = "sgd"

    def __post_init__(self):
        check_number("lr", self.lr, low=0, open_low=True, fix="the learning rate, e.g. 1e-2")

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
        check_number("lr", self.lr, low=0, open_low=True, fix="the learning rate, e.g. 1e-3")
        check_number("eps", self.eps, low=0, open_low=True, fix="e.g. 1e-8")
        for name in ("beta1", "beta2"):
            check_number(name, getattr(self, name), low=0, high=1, open_high=True,
                         fix="a moment's decay per step, e.g. 0.9")

    def apply(self, index, w, g):
        import numpy as np
        m, v, step = self.state.get(index, (np.zeros_like(w), np.zeros_like(w), 0))
        step += 1
        _k.adam_step(w, g, m, v, step, self.lr, self.beta1, self.beta2, self.eps)
        self.state[index] = (m, v, step)
