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

import dataclasses
import functools
import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import ConfigError
from ..validate import check_choice, check_int, check_number, is_int
from .lazy import LazyList
from .neurons import NeuronSpec
from .readout import Readout, as_readout

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
        check_number("alpha", self.alpha, low=0, high=1, fix="a decay factor per step")
        check_number("c", self.c)
        check_number("theta1", self.theta1)
        check_number("surrogate_beta", self.surrogate_beta, low=0, open_low=True, fix="the SuperSpike slope")
        check_number("theta2", self.theta2, high=self.theta1, finite=False,
                     fix=f"candidates lie below the spike threshold theta1={self.theta1} (-inf lists every neuron)")

    def to_spec(self) -> NeuronSpec:
        """This neuron as one configuration of the model zoo (``NeuronSpec.published``)."""
        return NeuronSpec.published(self.alpha, self.c, self.theta1, self.theta2, self.surrogate_beta)


@dataclass(frozen=True)
class Structure:
    """What the compiler needs to know of a network besides its sizes (hashable)."""

    layers: tuple  # NeuronSpec per neuron layer
    bias: tuple  # bool per layer
    delay: int
    readout: Readout
    dense: tuple  # bool per layer: dense activations instead of spike lists


def capacity_for(max_activity: float, size: int, minimum: int = 2) -> int:
    """Static list capacity: the even floor of ``max_activity * size``, at least ``minimum``."""
    k = int(math.floor(max_activity * size + 1e-9))
    k -= k % 2
    return min(max(minimum, k), size)


def _capacities(max_activity, sizes) -> list[int]:
    """``capacity_for`` every layer; an invalid size gets 1 here and is refused by Network."""
    check_number("max_activity", max_activity, low=0, high=1, open_low=True,
                 fix="the largest fraction of a layer's neurons listed per step, e.g. 0.01")
    return [capacity_for(max_activity, n) if is_int(n) and n >= 1 else 1 for n in sizes]


@dataclass
class Network:
    """A feed-forward SNN: ``sizes = (n_0, n_1, ..., n_L)`` with n_0 inputs.

    ``capacities[l]`` is K of layer l's spike list (K_0 for the input). ``weights[l]`` has
    shape ``[sizes[l], sizes[l + 1]]`` (float32 by default); read and assign freely — they
    are validated when a run starts.

    The neuron model of each layer is ``layers[l - 1]`` (a :class:`NeuronSpec`); an empty
    ``layers`` means the published sparse LIF of ``neuron`` in every layer. ``delay`` is the
    inter-layer delay: 0 (snnTorch: layer l sees layer l-1's spikes of the same step) or 1
    (pipelined: layer l at step t sees layer l-1's spikes of step t-1; the input is seen at
    once). ``biases[l]`` (``[n]`` or None), ``recurrent[l]`` (``[n]`` for one-to-one,
    ``[n, n]`` as ``[from, to]`` for all-to-all, or None) and ``recurrent_biases[l]`` are
    trainable like the weights; ``neuron_params[l]`` holds the current values of learnable
    beta and threshold. ``dense[l]`` runs layer l with dense activations (a matmul per step)
    instead of spike lists.
    """

    sizes: tuple[int, ...]
    capacities: tuple[int, ...]
    neuron: LIFParams = field(default_factory=LIFParams)
    overflow: str = "lowest-index"  # hidden and output layers
    input_overflow: str = "random"
    weights: list = field(default_factory=list)
    dtype: type = np.float32
    layers: tuple = ()
    delay: int = 1
    readout: Readout = field(default_factory=Readout)
    biases: list = field(default_factory=list)
    recurrent: list = field(default_factory=list)
    recurrent_biases: list = field(default_factory=list)
    neuron_params: list = field(default_factory=list)
    dense: tuple = ()

    def __post_init__(self) -> None:
        sizes = tuple(self.sizes)
        if len(sizes) < 2:
            raise ConfigError(f"sizes={list(sizes)} needs at least an input and an output layer")
        self.sizes = tuple(check_int(f"sizes[{i}]", n, low=1, fix=f"layer {i} needs at least one neuron")
                           for i, n in enumerate(sizes))
        caps = tuple(self.capacities)
        if len(caps) != len(sizes):
            raise ConfigError(
                f"{len(caps)} capacities for {len(sizes)} layers; give one K per layer, input included")
        self.capacities = tuple(
            check_int(f"capacities[{i}]", k, low=1, high=n, fix=f"give layer {i} a list capacity K of 1 to "
                      f"its {n} neurons") for i, (k, n) in enumerate(zip(caps, self.sizes)))
        for name in ("overflow", "input_overflow"):
            check_choice(name, getattr(self, name), OVERFLOW_POLICIES)
        if np.dtype(self.dtype) not in (np.dtype(np.float32), np.dtype(np.float64)):
            raise ConfigError(f"dtype={self.dtype!r}: supported are float32 (the chip's) and float64; "
                              f"float16 is a per-run choice: simulate(..., precision='fp16')")
        self.dtype = np.dtype(self.dtype).type
        L = len(self.sizes) - 1
        self.layers = tuple(self.layers)
        if self.layers:
            if len(self.layers) != L:
                raise ConfigError(f"{len(self.layers)} neuron specs for {L} neuron layers; give one per layer")
            for l, spec in enumerate(self.layers, start=1):
                if not isinstance(spec, NeuronSpec):
                    raise ConfigError(f"layers[{l - 1}] is a {type(spec).__name__}; give a mimdsim.NeuronSpec")
                for name in ("beta", "alpha", "threshold"):
                    v = getattr(spec, name)
                    if isinstance(v, tuple) and len(v) != self.sizes[l]:
                        raise ConfigError(f"layer {l}: {name} has {len(v)} values for {self.sizes[l]} neurons; "
                                          f"give one number or one per neuron")
                if not spec.spiking and l < L:
                    raise ConfigError(f"layer {l} is non-spiking (a leaky integrator); only the output layer "
                                      f"may be, since the next layer reads spikes")
        if self.delay not in (0, 1) or isinstance(self.delay, bool):
            raise ConfigError(f"delay={self.delay!r}: the inter-layer delay is 0 (snnTorch: same step) or 1 "
                              f"(pipelined: layer l sees layer l-1's spikes of the previous step)")
        self.readout = as_readout(self.readout)
        self.readout.check(self.sizes[-1])
        out = self.specs[-1]
        if not out.spiking and not self.readout.on_membrane:
            raise ConfigError(f"the output layer is non-spiking (a leaky integrator) but loss "
                              f"{self.readout.loss!r} reads spikes; use loss 'ce_max_membrane'")
        self.dense = tuple(bool(d) for d in self.dense) if self.dense else (False,) * L
        if len(self.dense) != L:
            raise ConfigError(f"dense has {len(self.dense)} flags for {L} neuron layers; give one per layer")
        if any(self.dense):
            if not all(self.dense):
                raise ConfigError(f"dense={list(self.dense)}: dense activations apply to every layer of a network "
                                  f"(a dense layer produces no spike list for a sparse successor); set all or none")
            if self.capacities != self.sizes:
                raise ConfigError(f"dense activations carry every neuron: capacities must equal the sizes "
                                  f"{list(self.sizes)}, got {list(self.capacities)}")
        self.biases = list(self.biases) if self.biases else [None] * L
        self.recurrent_biases = list(self.recurrent_biases) if self.recurrent_biases else [None] * L
        if not self.recurrent:
            self.recurrent = [init_recurrent(spec.recurrence, n, seed=l, dtype=self.dtype)
                              for l, (spec, n) in enumerate(zip(self.specs, self.sizes[1:]), start=1)]
            for l, spec in enumerate(self.specs):
                if spec.recurrence == "all-to-all" and self.recurrent_biases[l] is None:
                    n = self.sizes[l + 1]
                    rng = np.random.default_rng(1000 + l)
                    self.recurrent_biases[l] = rng.uniform(-1, 1, n).astype(self.dtype) / np.float32(math.sqrt(n))
        if not self.neuron_params:
            self.neuron_params = [initial_params(spec, self.dtype) for spec in self.specs]
        for name in ("biases", "recurrent", "recurrent_biases", "neuron_params"):
            if len(getattr(self, name)) != L:
                raise ConfigError(f"net.{name} has {len(getattr(self, name))} entries; the network has {L} layers")
        if not self.weights:  # made on first use (a rate-driven run never reads them)
            self.weights = LazyList(functools.partial(init_weights, self.sizes, seed=0, dtype=self.dtype))

    @property
    def specs(self) -> tuple:
        """The neuron spec of every neuron layer (the published LIF of ``neuron`` by default)."""
        if self.layers:
            return self.layers
        return (self.neuron.to_spec(),) * (len(self.sizes) - 1)

    @property
    def structure(self) -> Structure:
        return Structure(self.specs, tuple(b is not None for b in self.biases), int(self.delay), self.readout,
                         tuple(self.dense))

    @classmethod
    def build(cls, sizes, neuron="leaky", *, delay=0, bias=False, loss="ce_count", num_classes=None,
              max_activity=None, capacities=None, overflow="lowest-index", input_overflow="random", seed=0,
              weight_scale=1.0, dtype=np.float32, dense=False, **neuron_kw) -> "Network":
        """A network of the neuron zoo with snnTorch semantics (inter-layer delay 0 by default).

        ``neuron``: a :class:`NeuronSpec`, a model name with ``neuron_kw`` (``beta=0.9``, ...)
        or a list of specs, one per neuron layer. ``bias=True`` adds a bias per layer (as
        ``nn.Linear``). ``loss``: a loss name or :class:`Readout`; ``num_classes`` makes a
        population code. Capacities default to the layer sizes (every spike listed: exact);
        ``max_activity`` sets ``even floor(max_activity * n)`` instead.
        """
        sizes = list(sizes)
        L = len(sizes) - 1
        if isinstance(neuron, (list, tuple)):
            if neuron_kw:
                raise ConfigError("give neuron keyword arguments with a model name, not with a list of specs")
            specs = tuple(neuron)
        elif isinstance(neuron, NeuronSpec):
            specs = (neuron.replace(**neuron_kw) if neuron_kw else neuron,) * L
        else:
            specs = (NeuronSpec(neuron, **neuron_kw),) * L
        if capacities is None:
            if max_activity is None:
                capacities = [n if is_int(n) and n >= 1 else 1 for n in sizes]
            else:
                capacities = _capacities(max_activity, sizes)
        readout = as_readout(loss)
        if num_classes is not None:
            readout = dataclasses.replace(readout, num_classes=num_classes)
        dense = tuple(dense) if isinstance(dense, (list, tuple)) else (bool(dense),) * L
        if any(dense) and max_activity is None:
            capacities = list(sizes)
        net = cls(sizes=tuple(sizes), capacities=tuple(capacities), overflow=overflow, input_overflow=input_overflow,
                  weights=[], dtype=dtype, layers=specs, delay=delay, readout=readout, dense=dense)
        net.weights = LazyList(functools.partial(init_weights, net.sizes, seed=seed, scale=weight_scale,
                                                 dtype=net.dtype))
        if bias:
            rng = np.random.default_rng(seed + 7)
            net.biases = [(rng.uniform(-1, 1, n) / math.sqrt(n_in)).astype(net.dtype)
                          for n_in, n in zip(net.sizes[:-1], net.sizes[1:])]
        return net

    @classmethod
    def feedforward(cls, sizes, *, alpha=0.95, c=10.0, theta1=1.0, theta2=0.9,
                    surrogate_beta=10.0, max_activity=0.01, capacities=None,
                    input_capacity=None, overflow="lowest-index", input_overflow="random",
                    seed=0, weight_scale=1.0, dtype=np.float32, dense_output=False) -> "Network":
        """Build a network from layer sizes, input first.

        Capacities default to ``even floor(max_activity * n)`` (at least 2) per layer;
        pass ``capacities`` (one per layer, input included) or ``input_capacity`` to set them.
        ``dense_output=True`` keeps the readout layer dense: its list holds every output
        neuron (K = n_out) and its theta2 is -inf, so every output neuron gets its surrogate
        gradient while the hidden layers stay sparse — as the published accuracy runs,
        whose readout is a dense layer (``docs/training.md``).
        """
        sizes = list(sizes)
        caps = _capacities(max_activity, sizes)
        if capacities is None:
            capacities = caps
            if input_capacity is not None:
                capacities[0] = input_capacity
            if dense_output and isinstance(sizes[-1], int):
                capacities[-1] = sizes[-1]
        elif input_capacity is not None:
            raise ConfigError("give either capacities (all layers) or input_capacity, not both")
        elif dense_output and capacities[-1] != sizes[-1]:
            raise ConfigError(f"dense_output=True needs the output capacity K = {sizes[-1]} (the layer size), "
                              f"but capacities gives {capacities[-1]}; drop it or set it to {sizes[-1]}")
        neuron = LIFParams(alpha, c, theta1, theta2, surrogate_beta)
        layers = ()
        if dense_output and len(sizes) >= 2:
            spec = neuron.to_spec()
            layers = (spec,) * (len(sizes) - 2) + (spec.replace(theta2=-math.inf),)
        net = cls(sizes=tuple(sizes), capacities=tuple(capacities), neuron=neuron, layers=layers,
                  overflow=overflow, input_overflow=input_overflow, weights=[], dtype=dtype)
        net.weights = LazyList(functools.partial(init_weights, net.sizes, seed=seed, scale=weight_scale,
                                                 dtype=net.dtype))
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
        self._validate_extra()
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

    def _validate_extra(self) -> None:
        """Biases, recurrent weights and learnable neuron parameters: shapes and finiteness."""
        for l, (spec, n) in enumerate(zip(self.specs, self.sizes[1:])):
            checks = [("biases", self.biases[l], [(n,)])]
            rec = {"one-to-one": [(n,), ()], "all-to-all": [(n, n)], "none": []}[spec.recurrence]
            if spec.recurrence == "none":
                if self.recurrent[l] is not None:
                    raise ConfigError(f"net.recurrent[{l}] is set but layer {l + 1} has no recurrence; "
                                      f"set it to None or give the layer recurrence='one-to-one' or 'all-to-all'")
            else:
                if self.recurrent[l] is None:
                    raise ConfigError(f"layer {l + 1} has {spec.recurrence} recurrence but net.recurrent[{l}] is None")
                checks.append(("recurrent", self.recurrent[l], rec))
            if spec.recurrence == "all-to-all":
                checks.append(("recurrent_biases", self.recurrent_biases[l], [(n,)]))
            elif self.recurrent_biases[l] is not None:
                raise ConfigError(f"net.recurrent_biases[{l}] is set but layer {l + 1} has no all-to-all recurrence")
            for key, v in self.neuron_params[l].items():
                checks.append((f"neuron_params[{l}][{key!r}]", v, [(), (n,)]))
            for name, v, shapes in checks:
                if v is None:
                    continue
                if not isinstance(v, np.ndarray):
                    raise ConfigError(f"net.{name} is a {type(v).__name__}; assign a numpy array of shape {shapes[0]}")
                if v.shape not in shapes:
                    raise ConfigError(f"net.{name} has shape {v.shape}; layer {l + 1} needs {shapes[0]}")
                if not np.all(np.isfinite(v)):
                    raise ConfigError(f"net.{name} holds non-finite values (NaN or inf); fix or re-initialise it")
            if self.biases[l] is not None and self.biases[l].dtype != self.dtype:
                self.biases[l] = self.biases[l].astype(self.dtype)

    def num_parameters(self) -> int:
        """Trainable values: weights, biases, recurrent weights and learnable neuron parameters."""
        count = sum(w.size for w in self.weights)
        for l, spec in enumerate(self.specs):
            count += 0 if self.biases[l] is None else self.biases[l].size
            if spec.recurrence != "none" and spec.learn_recurrent:
                count += self.recurrent[l].size + (0 if self.recurrent_biases[l] is None else self.recurrent_biases[l].size)
            count += sum(v.size for v in self.neuron_params[l].values())
        return int(count)

    def to_dict(self) -> dict:
        d = {"sizes": list(self.sizes), "capacities": list(self.capacities),
             "neuron": vars(self.neuron), "overflow": self.overflow,
             "input_overflow": self.input_overflow, "dtype": np.dtype(self.dtype).name}
        if self.layers or self.delay != 1 or self.readout != Readout() or any(self.dense) \
                or any(b is not None for b in self.biases):
            d.update({"layers": [s.to_dict() for s in self.specs], "delay": self.delay,
                      "readout": self.readout.to_dict(), "bias": [b is not None for b in self.biases],
                      "dense": list(self.dense)})
        return d


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


def init_recurrent(recurrence, n, *, seed=0, dtype=np.float32):
    """Initial recurrent weights: one-to-one V = 1 (snnTorch's default V=1.0, one per
    neuron); all-to-all uniform in [-1/sqrt(n), 1/sqrt(n)] (``nn.Linear``'s default), as
    ``[from, to]``."""
    if recurrence == "one-to-one":
        return np.ones(n, dtype=dtype)
    if recurrence == "all-to-all":
        rng = np.random.default_rng(seed + 500)
        return (rng.uniform(-1, 1, (n, n)) / math.sqrt(n)).astype(dtype)
    return None


def initial_params(spec: NeuronSpec, dtype=np.float32) -> dict:
    """Current values of the learnable neuron parameters (``beta``, ``threshold``)."""
    out = {}
    if spec.learn_beta:
        out["beta"] = np.asarray(spec.beta, dtype=dtype).copy()
    if spec.learn_threshold:
        out["threshold"] = np.asarray(spec.threshold, dtype=dtype).copy()
    return out


def init_weights(sizes, *, seed=0, scale=1.0, dtype=np.float32) -> list:
    """Normal weights with std ``scale / sqrt(fan_in)``, one matrix per layer, seeded."""
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((n_in, n_out)) * (scale / math.sqrt(n_in))).astype(dtype)
            for n_in, n_out in zip(sizes[:-1], sizes[1:])]
