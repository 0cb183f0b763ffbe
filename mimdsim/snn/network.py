"""The model: a feed-forward spiking network with sparse spike lists. Knows no hardware.

Neuron model (Finkbeiner et al. 2024, ``reference/algorithms.md`` §1), per layer l,
neuron i, timestep t::

    I_i[t] = sum_{j in ids(S^{l-1}[t-d])} W_{j,i}        d = 0 for layer 1, else 1
    U_i[t] = alpha * U_i[t-1] * (1 - H(U_i[t-1] - theta1)) + c * (1 - alpha) * I_i[t]
    S_i[t] = H(U_i[t] - theta1)

The reset factor is detached from the gradient (dU[t]/dU[t-1] = alpha) and the spike's
derivative is the SuperSpike surrogate ``1 / (beta |U - theta1| + 1)^2``. Each layer's
spikes travel as a list of at most K ids: real spikes first, then near-threshold
gradient candidates (theta2 < U <= theta1). Only listed ids get a surrogate gradient.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import ConfigError

OVERFLOW_POLICIES = ("lowest-index", "random")


@dataclass(frozen=True)
class LIFParams:
    """Parameters of the sparse LIF neuron (shared by all layers)."""

    alpha: float = 0.95  # membrane decay per step
    c: float = 10.0  # input scale
    theta1: float = 1.0  # spike threshold
    theta2: float = 0.9  # gradient-candidate threshold (-inf: every neuron listed)
    surrogate_beta: float = 10.0  # SuperSpike slope

    def __post_init__(self) -> None:
        for name in ("alpha", "c", "theta1", "surrogate_beta"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ConfigError(f"{name}={v!r} must be a finite number")
        if not 0.0 <= self.alpha <= 1.0:
            raise ConfigError(f"alpha={self.alpha} must lie in [0, 1] (a decay factor per step)")
        if self.surrogate_beta <= 0:
            raise ConfigError(f"surrogate_beta={self.surrogate_beta} must be > 0")
        if not isinstance(self.theta2, (int, float)) or math.isnan(self.theta2):
            raise ConfigError(f"theta2={self.theta2!r} must be a number (use -inf to list every neuron)")
        if self.theta2 > self.theta1:
            raise ConfigError(
                f"theta2={self.theta2} must be <= theta1={self.theta1}: candidates lie below the spike threshold")


def capacity_for(max_activity: float, size: int, minimum: int = 2) -> int:
    """Static list capacity: the even floor of ``max_activity * size``, at least ``minimum``."""
    k = int(math.floor(max_activity * size + 1e-9))
    k -= k % 2
    return min(max(minimum, k), size)


@dataclass
class Network:
    """A feed-forward SNN: ``sizes = (n_0, n_1, ..., n_L)`` with n_0 inputs.

    ``capacities[l]`` is K of layer l's spike list (K_0 for the input). ``weights[l]`` has
    shape ``[sizes[l], sizes[l + 1]]`` (float32 by default); read and assign freely — they
    are validated when a run starts.
    """

    sizes: tuple[int, ...]
    capacities: tuple[int, ...]
    neuron: LIFParams = field(default_factory=LIFParams)
    overflow: str = "lowest-index"  # hidden and output layers
    input_overflow: str = "random"
    weights: list = field(default_factory=list)
    dtype: type = np.float32

    def __post_init__(self) -> None:
        sizes = tuple(self.sizes)
        if len(sizes) < 2:
            raise ConfigError(f"sizes={list(sizes)} needs at least an input and an output layer")
        for i, n in enumerate(sizes):
            if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
                raise ConfigError(f"layer {i} size {n!r} must be a positive integer")
        self.sizes = tuple(int(n) for n in sizes)
        caps = tuple(self.capacities)
        if len(caps) != len(sizes):
            raise ConfigError(
                f"{len(caps)} capacities for {len(sizes)} layers; give one K per layer, input included")
        for i, (k, n) in enumerate(zip(caps, sizes)):
            if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
                raise ConfigError(f"capacity of layer {i} is {k!r}; it must be an integer >= 1")
            if k > n:
                raise ConfigError(
                    f"capacity of layer {i} is {k} but the layer has only {n} neurons; use K <= {n}")
        self.capacities = tuple(int(k) for k in caps)
        for name in ("overflow", "input_overflow"):
            if getattr(self, name) not in OVERFLOW_POLICIES:
                raise ConfigError(
                    f"{name}={getattr(self, name)!r}; choose one of {', '.join(OVERFLOW_POLICIES)}")
        if np.dtype(self.dtype) not in (np.dtype(np.float32), np.dtype(np.float64)):
            raise ConfigError(f"dtype={self.dtype!r}: supported are float32 (the chip's) and float64")
        self.dtype = np.dtype(self.dtype).type
        if not self.weights:
            self.weights = init_weights(self.sizes, seed=0, dtype=self.dtype)

    @classmethod
    def feedforward(cls, sizes, *, alpha=0.95, c=10.0, theta1=1.0, theta2=0.9,
                    surrogate_beta=10.0, max_activity=0.01, capacities=None,
                    input_capacity=None, overflow="lowest-index", input_overflow="random",
                    seed=0, weight_scale=1.0, dtype=np.float32) -> "Network":
        """Build a network from layer sizes, input first.

        Capacities default to ``even floor(max_activity * n)`` (at least 2) per layer;
        pass ``capacities`` (one per layer, input included) or ``input_capacity`` to set them.
        """
        sizes = list(sizes)
        if not isinstance(max_activity, (int, float)) or not 0 < max_activity <= 1:
            raise ConfigError(f"max_activity={max_activity!r} must lie in (0, 1]")
        if capacities is None:
            # Invalid sizes get capacity 1 here and are rejected with a clear message below.
            capacities = [capacity_for(max_activity, n) if isinstance(n, int) and n >= 1 else 1
                          for n in sizes]
            if input_capacity is not None:
                capacities[0] = input_capacity
        elif input_capacity is not None:
            raise ConfigError("give either capacities (all layers) or input_capacity, not both")
        net = cls(sizes=tuple(sizes), capacities=tuple(capacities),
                  neuron=LIFParams(alpha, c, theta1, theta2, surrogate_beta),
                  overflow=overflow, input_overflow=input_overflow, weights=[], dtype=dtype)
        net.weights = init_weights(net.sizes, seed=seed, scale=weight_scale, dtype=net.dtype)
        return net

    # Shape helpers.
    @property
    def num_layers(self) -> int:
        """Number of neuron (weight) layers L."""
        return len(self.sizes) - 1

    @property
    def num_neurons(self) -> int:
        return sum(self.sizes[1:])

    def describe(self) -> str:
        return describe_sizes(self.sizes)

    def validate_weights(self) -> None:
        if len(self.weights) != self.num_layers:
            raise ConfigError(f"net.weights has {len(self.weights)} matrices; the network needs {self.num_layers}")
        for l, w in enumerate(self.weights):
            shape = (self.sizes[l], self.sizes[l + 1])
            if not isinstance(w, np.ndarray):
                raise ConfigError(f"net.weights[{l}] is a {type(w).__name__}; assign a numpy array of shape {shape}")
            if w.shape != shape:
                raise ConfigError(f"net.weights[{l}] has shape {w.shape}; layer {l} -> {l + 1} needs {shape}")
            bad = int(np.count_nonzero(~np.isfinite(w)))
            if bad:
                raise ConfigError(
                    f"net.weights[{l}] holds {bad} non-finite value(s) (NaN or inf); re-initialise or fix that layer")
            if w.dtype != self.dtype:
                self.weights[l] = w.astype(self.dtype)

    def to_dict(self) -> dict:
        return {"sizes": list(self.sizes), "capacities": list(self.capacities),
                "neuron": vars(self.neuron), "overflow": self.overflow,
                "input_overflow": self.input_overflow, "dtype": np.dtype(self.dtype).name}


def describe_sizes(sizes) -> str:
    """``700-976x192-20``: layer sizes with runs of three or more equal sizes folded."""
    parts, i = [], 0
    sizes = list(sizes)
    while i < len(sizes):
        j = i
        while j < len(sizes) and sizes[j] == sizes[i]:
            j += 1
        run = j - i
        parts += [f"{sizes[i]}x{run}"] if run >= 3 else [str(sizes[i])] * run
        i = j
    return "-".join(parts)


def init_weights(sizes, *, seed=0, scale=1.0, dtype=np.float32) -> list:
    """Normal weights with std ``scale / sqrt(fan_in)``, one matrix per layer, seeded."""
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((n_in, n_out)) * (scale / math.sqrt(n_in))).astype(dtype)
            for n_in, n_out in zip(sizes[:-1], sizes[1:])]
