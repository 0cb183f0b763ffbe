"""Readout and loss of the output layer, with snnTorch's definitions (``snntorch.functional``).

Over output spikes ``S[T, B, N]`` (or membranes ``M[T, B, N]``), labels ``y[B]``:

* ``ce_count``: ``C = sum_t S`` (population code: the N outputs form ``num_classes``
  contiguous groups ``[int(N c / K), int(N (c + 1) / K))`` whose counts are summed);
  ``L = mean_b(logsumexp(C[b]) - C[b, y_b])``.
* ``ce_rate``: ``L = (1 / T) sum_t mean_b(logsumexp(S[t, b]) - S[t, b, y_b])``.
* ``mse_count``: targets ``on = int(T * correct_rate)`` for the label, ``off = int(T *
  incorrect_rate)`` otherwise (population code: both times N / num_classes);
  ``L = mean_{b, c}((C[b, c] - target[b, c])^2) / T``.
* ``ce_max_membrane``: ``L = mean_b(logsumexp(max_t M[t, b]) - max_t M[t, b, y_b])``; the
  gradient flows to the step of the maximum (the first one on a tie).

``activity_l1`` (λ ≥ 0) adds snnTorch's ``l1_rate_sparsity(Lambda=λ)`` of every hidden
layer's sent spikes to the loss, ``L += λ sum_{l < L} sum_{t, b, i} S_l[t, b, i]``: each sent
hidden spike costs λ, so the network learns activity that fits its lists. Its gradient
``dL/dS = λ`` reaches a neuron, like every gradient of sparse BPTT, only where it is listed.

snnTorch's ``ce_rate_loss`` with a population code fails unless class weights are given,
so mimdsim accepts ``num_classes`` only for ``ce_count`` and ``mse_count``.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..kernels.mimdsim_snn.loss import KINDS

from ..errors import ConfigError
from ..checks import check_choice, check_int, check_number

LOSSES = KINDS  # the losses kernels/mimdsim_snn/loss.py computes
MEMBRANE_LOSSES = ("ce_max_membrane",)


@dataclass(frozen=True)
class Readout:
    loss: str = "ce_count"
    num_classes: int | None = None  # population code: None = one output neuron per class
    correct_rate: float = 1.0  # mse_count
    incorrect_rate: float = 0.0  # mse_count
    activity_l1: float = 0.0  # lambda of the L1 penalty on hidden spikes

    def __post_init__(self):
        check_number("activity_l1", self.activity_l1, low=0, fix="0: no penalty; e.g. 2e-5")
        check_choice("loss", self.loss, LOSSES)
        if self.num_classes is not None:
            object.__setattr__(self, "num_classes", check_int(
                "num_classes", self.num_classes, low=2, fix="a population code has 2 classes or more (None: one "
                "output neuron per class)"))
            if self.loss not in ("ce_count", "mse_count"):
                raise ConfigError(f"a population code (num_classes={self.num_classes}) applies to ce_count and "
                                  f"mse_count, not {self.loss!r}")
        for name in ("correct_rate", "incorrect_rate"):
            check_number(name, getattr(self, name), low=0, high=1, fix="a spike rate per step (mse_count's target)")

    @property
    def on_membrane(self) -> bool:
        return self.loss in MEMBRANE_LOSSES

    def classes(self, n_out: int) -> int:
        return self.num_classes or n_out

    def check(self, n_out: int) -> None:
        if self.num_classes is not None and n_out % self.num_classes:
            raise ConfigError(f"the output layer has {n_out} neurons, not a multiple of num_classes="
                              f"{self.num_classes}; use {self.num_classes * max(1, n_out // self.num_classes)} "
                              f"outputs or another num_classes")

    def to_dict(self) -> dict:
        return {"loss": self.loss, "num_classes": self.num_classes, "correct_rate": self.correct_rate,
                "incorrect_rate": self.incorrect_rate, "activity_l1": self.activity_l1}


def as_readout(r) -> Readout:
    if isinstance(r, Readout):
        return r
    if isinstance(r, str):
        return Readout(r)
    if isinstance(r, dict):
        return Readout(**r)
    raise ConfigError(f"loss={r!r}: give a loss name ({', '.join(LOSSES)}) or a Readout")
