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
from ..checks import check_choice, check_fractions, check_host_bytes, check_int, check_number, check_seed, is_int
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
                     fix=f"candidates lie below the spike threshold ({self.theta1}); -inf lists every neuron")

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
    max_activity: float | None = None  # the spike-list bound it was built with (None: given as capacities, or dense)

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
                      f"its {n} neurons", key="model.input_capacity" if i == 0 else "")
            for i, (k, n) in enumerate(zip(caps, self.sizes)))
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
        if not (isinstance(self.weights, LazyList) and self.weights.pending) and not self.weights:
            self.weights = _initial_weights(self, 0, None, None, None, DEFAULT_INIT_ACTIVITY)

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
              weight_scale=None, init_activity=None, input_activity=None, dtype=np.float32, dense=False,
              **neuron_kw) -> "Network":
        """A network of the neuron zoo with snnTorch semantics (inter-layer delay 0 by default).

        ``neuron``: a :class:`NeuronSpec`, a model name with ``neuron_kw`` (``beta=0.9``, ...)
        or a list of specs, one per neuron layer. ``bias=True`` adds a bias per layer (as
        ``nn.Linear``). ``loss``: a loss name or :class:`Readout`; ``num_classes`` makes a
        population code. Capacities default to the layer sizes (every spike listed: exact);
        ``max_activity`` sets ``even floor(max_activity * n)`` instead.

        Initial weights: by default the activity rule (:func:`activity_stds`) for a spike
        fraction ``init_activity`` per step in every layer (default: half the max activity,
        or ``DEFAULT_INIT_ACTIVITY`` = 5% without one) with inputs at ``input_activity``
        (default: the same); ``weight_scale=s`` uses the fan-in rule ``std = s / sqrt(fan_in)``
        instead.
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
                  weights=[], dtype=dtype, layers=specs, delay=delay, readout=readout, dense=dense,
                  max_activity=max_activity)
        default = DEFAULT_INIT_ACTIVITY if max_activity is None else max_activity / 2
        net.weights = _initial_weights(net, seed, weight_scale, init_activity, input_activity, default)
        if bias:
            rng = np.random.default_rng(seed + 7)
            net.biases = [(rng.uniform(-1, 1, n) / math.sqrt(n_in)).astype(net.dtype)
                          for n_in, n in zip(net.sizes[:-1], net.sizes[1:])]
        return net

    @classmethod
    def feedforward(cls, sizes, *, alpha=0.95, c=10.0, theta1=1.0, theta2=0.9,
                    surrogate_beta=10.0, max_activity=0.01, capacities=None,
                    input_capacity=None, overflow="lowest-index", input_overflow="random",
                    seed=0, weight_scale=None, init_activity=None, input_activity=None, dtype=np.float32,
                    dense_output=False) -> "Network":
        """Build a network from layer sizes, input first.

        Capacities default to ``even floor(max_activity * n)`` (at least 2) per layer;
        pass ``capacities`` (one per layer, input included) or ``input_capacity`` to set them.
        ``dense_output=True`` keeps the readout layer dense: its list holds every output
        neuron (K = n_out) and its theta2 is -inf, so every output neuron gets its surrogate
        gradient while the hidden layers stay sparse — as the published accuracy runs,
        whose readout is a dense layer (``docs/training.md``).

        Initial weights: by default the activity rule (:func:`activity_stds`): every layer
        spikes at about ``init_activity`` per step (one number or one per neuron layer;
        default half the max activity, the rate-driven runs' default, so lists start half
        full) when the input spikes at ``input_activity`` per step (default: the same).
        ``weight_scale=s`` uses the fan-in rule ``std = s / sqrt(fan_in)`` instead, which
        assumes every input spikes and leaves sparse layers silent unless s is large.
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
                  overflow=overflow, input_overflow=input_overflow, weights=[], dtype=dtype,
                  max_activity=max_activity)
        net.weights = _initial_weights(net, seed, weight_scale, init_activity, input_activity, max_activity / 2)
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

    def __repr__(self) -> str:
        """One line: sizes, neuron models, list capacities, delay and loss (the weights left out)."""
        kinds = ["published sparse LIF"] if not self.layers else dict.fromkeys(
            s.model + ("" if s.recurrence == "none" else f"+{s.recurrence} recurrence") for s in self.specs)
        dense = all(k == n for k, n in zip(self.capacities, self.sizes))
        lists = "every neuron listed" if dense else f"list capacities {'-'.join(map(str, self.capacities))}"
        return (f"Network({self.describe()}, {'/'.join(kinds)}, {lists}, delay {self.delay}, "
                f"loss {self.readout.loss}, {np.dtype(self.dtype).name})")

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


DEFAULT_INIT_ACTIVITY = 0.05  # Network.build's initial spike fraction per step without a max activity


def _initial_weights(net, seed, weight_scale, init_activity, input_activity, default) -> list:
    """The fan-in rule when ``weight_scale`` is given, else the activity rule: inputs checked now,
    the weights drawn on first use."""
    check_seed("seed", seed)
    if weight_scale is not None:
        check_number("weight_scale", weight_scale, low=0, open_low=True,
                     fix="the fan-in rule's std = weight_scale / sqrt(fan_in); omit it for the activity rule")
        if init_activity is not None or input_activity is not None:
            raise ConfigError(f"weight_scale={weight_scale} (the fan-in rule) and init_activity/input_activity "
                              f"(the activity rule) choose different initialisations; give one")
        return LazyList(functools.partial(init_weights, net.sizes, seed=seed, scale=weight_scale, dtype=net.dtype))
    fix = "a spike fraction per step, e.g. 0.01"
    targets = check_fractions("init_activity", default if init_activity is None else init_activity,
                              net.num_layers, open_low=True, open_high=True, fix=fix)
    a_in = targets[0] if input_activity is None else check_fractions(
        "input_activity", input_activity, 1, open_low=True, open_high=True, fix=fix)[0]
    sizes, capacities, specs, dtype = net.sizes, net.capacities, net.specs, net.dtype

    def draw():
        return init_weights(sizes, seed=seed, dtype=dtype, stds=activity_stds(sizes, capacities, specs, targets, a_in))
    return LazyList(draw)  # checked now, drawn on first use (a rate-driven run never reads the weights)


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
        return np.full(n, ONE_TO_ONE_V, dtype=dtype)
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


def init_weights(sizes, *, seed=0, scale=1.0, dtype=np.float32, stds=None) -> list:
    """Normal weights, one matrix per layer, seeded: std ``stds[l]`` (the activity rule,
    :func:`activity_stds`) or, without ``stds``, the fan-in rule ``scale / sqrt(fan_in)``.
    Both draw the same standard-normal numbers; only their scale differs."""
    rng = np.random.default_rng(check_seed("seed", seed))
    # from the shapes, before the draw: each matrix is drawn in float64, scaled, then kept in dtype
    elements = sum(int(a) * int(b) for a, b in zip(sizes[:-1], sizes[1:]))
    check_host_bytes(f"the weights of {'-'.join(map(str, sizes))} ({np.dtype(dtype).name}, drawn in float64)",
                     elements * (16.0 + np.dtype(dtype).itemsize), fix="make the layers narrower")
    if stds is None:
        stds = [scale / math.sqrt(n_in) for n_in in sizes[:-1]]
    return [(rng.standard_normal((n_in, n_out)) * float(std)).astype(dtype)
            for n_in, n_out, std in zip(sizes[:-1], sizes[1:], stds)]


INIT_STEPS, INIT_NEURONS = 100, 1000  # the activity rule's model populations: T = 100 steps from rest
INIT_GRID = 24  # current scales tried at once per refinement (three refinements: to 0.1%)
FIXED_AFTER = 4  # a run of identical layers reuses its 4th layer's scale (the chain has settled)


ONE_TO_ONE_V = 1.0  # snnTorch's RLeaky/RSynaptic default V (all_to_all=False)


def _model_spikes(spec: NeuronSpec, unit: np.ndarray, sigmas: np.ndarray) -> np.ndarray:
    """Spikes ``[steps, len(sigmas), neurons]`` of populations of ``spec`` neurons whose input
    current is ``sigma * unit`` (``unit``: [steps, neurons]), one population per sigma: the
    spec's input gain, decay (beta, snnTorch's clamp to [0, 1]), synaptic or alpha filter,
    threshold and reset (zero; subtract, after the decay of the next step when the reset is
    delayed, as snnTorch's; none) and one-to-one recurrence at its initial V. Vectorised over
    sigmas and neurons; a loop over the steps."""
    g = float(np.mean(spec.input_gain()))
    beta = float(np.clip(np.mean(spec.decay()), 0, 1))
    a = float(np.clip(np.mean(spec.alpha), 0, 1)) if spec.model in ("synaptic", "alpha") else 0.0
    theta = float(np.mean(spec.threshold))
    tau = 1.0
    if spec.model == "alpha" and 0 < beta < a < 1:
        tau = math.log(a) / (math.log(beta) - math.log(a)) + 1
    shape = (len(sigmas), unit.shape[1])
    scale = g * np.asarray(sigmas, dtype=np.float64)[:, None]
    u, s, e, h = (np.zeros(shape) for _ in range(4))
    out = np.zeros((unit.shape[0],) + shape, dtype=bool)
    fired = np.zeros(shape, dtype=bool)
    late = spec.reset == "subtract" and spec.reset_delay and spec.model != "alpha"  # u = beta m + J - R theta
    self_excitation = g * ONE_TO_ONE_V if spec.recurrence == "one-to-one" else 0.0
    for t in range(unit.shape[0]):
        J = scale * unit[t] + self_excitation * fired  # one-to-one recurrence: V S[t-1]
        if spec.model == "synaptic":
            s = a * s + J
            u = beta * u + s
        elif spec.model == "alpha":
            e, h = a * e + J, beta * h - J
            u = tau * (e + h)
        else:
            u = beta * u + J
        if late:
            u -= fired * theta
        fired = out[t] = u > theta
        if spec.reset == "zero":
            u[fired] = 0.0
            if spec.model == "alpha":
                e[fired], h[fired] = 0.0, 0.0
        elif spec.reset == "subtract" and not late:
            u -= fired * theta
            if spec.model == "alpha":
                e -= fired * (theta / tau)
    return out


def _listed(spikes, fraction):
    """The spikes a list of capacity ``fraction`` of the population passes per step (lowest
    index first, as the published op keeps them; vectorised)."""
    if fraction >= 1:
        return spikes
    return spikes & (np.cumsum(spikes, axis=-1) <= int(round(fraction * spikes.shape[-1])))


def _solve_sigma(spec, unit, target) -> float:
    """The current scale at which the population spikes at ``target``: a grid of ``INIT_GRID``
    log-spaced scales from 1e-3 to 1e3, refined three times around the crossing."""
    lo, hi = 1e-3, 1e3
    for _ in range(3):
        grid = np.geomspace(lo, hi, INIT_GRID)
        rates = _model_spikes(spec, unit, grid).mean(axis=(0, 2))
        i = int(np.searchsorted(rates, target))  # rates grow with the scale
        lo, hi = grid[max(i - 1, 0)], grid[min(i, INIT_GRID - 1)]
        if i == 0 or i == INIT_GRID:
            break
    return float(math.sqrt(lo * hi))


_POPULATIONS: dict = {}


def population_model(specs, targets, input_activity, list_fractions=None) -> tuple[list, list]:
    """Per layer, the current scale ``sigma`` (input current per unit weight, in units of the
    square root of the listed input spikes per step) at which a model population of the
    layer's neurons spikes at its target, and the fraction of each layer's neurons (the input
    first) its list passes per step.

    The populations form a chain like the network: layer 1 is driven by Bernoulli input
    spikes at ``input_activity``, layer l by the spikes of layer l-1's population, each
    through N(0, 1) weights from every neuron of the previous population, so a layer sees the
    burstiness of its inputs (a neuron that fires tends to fire again); ``list_fractions[l]``
    (K / n, the input first) cuts each population's spikes per step as the layer's list
    would. The populations run ``INIT_STEPS`` steps from rest (the default T). A run of
    identical layers settles to a fixed point within a few layers: from the
    ``FIXED_AFTER``-th on, the run reuses that layer's scale (a 192-layer network takes no
    longer than a 5-layer one). The draws are seeded, so the answer is deterministic; cached."""
    fractions = [1.0] * (len(specs) + 1) if list_fractions is None else [float(f) for f in list_fractions]
    key = (tuple(specs), tuple(float(t) for t in targets), float(input_activity), tuple(fractions))
    if key in _POPULATIONS:
        return _POPULATIONS[key]
    rng = np.random.default_rng(12345)
    pre = _listed(rng.random((INIT_STEPS, INIT_NEURONS)) < input_activity, fractions[0])
    sigmas, listed = [], [float(np.mean(pre))]
    w = rng.standard_normal((INIT_NEURONS, INIT_NEURONS))
    fixed, last, run = None, None, 0
    for l, (spec, target) in enumerate(zip(specs, targets), start=1):
        layer = (spec, float(target), fractions[l], fractions[l - 1])
        if fixed is not None and fixed[0] == layer:  # the chain's fixed point
            sigmas.append(fixed[1])
            listed.append(fixed[2])
            continue
        per_step = max(float(np.mean(np.sum(pre, axis=1))), 1e-3)  # listed input spikes per step
        unit = (pre.astype(np.float64) @ w) / math.sqrt(per_step)  # unit-variance current per step
        sigma = _solve_sigma(spec, unit, target)
        pre = _listed(_model_spikes(spec, unit, [sigma])[:, 0], fractions[l])
        run = run + 1 if layer == last else 1
        last = layer
        if run == FIXED_AFTER:
            fixed = (layer, sigma, float(np.mean(pre)))
        sigmas.append(sigma)
        listed.append(float(np.mean(pre)))
    _POPULATIONS[key] = (sigmas, listed)
    return sigmas, listed


def activity_stds(sizes, capacities, specs, target, input_activity=None) -> list:
    """Weight std per layer for which layer l spikes at about ``target[l-1]`` of its neurons per step.

    The root cause of silent layers: the fan-in rule ``std = 1 / sqrt(fan_in)`` assumes
    every input spikes, but in an SNN only ``m`` of the ``n`` inputs do per step, so the
    input current has standard deviation ``sqrt(m) * std``, far below what the threshold
    needs when m << n (a 1% list). The activity rule: layer l's inputs send
    ``m`` spikes per step: about ``a n`` (``a`` = ``input_activity`` for the input, the
    previous layer's target after that), less what its list capacity K cuts.
    :func:`population_model` finds the current scale ``sigma`` at which a model population
    of the layer's neurons (gain, decay, filter, threshold, reset), driven by the previous
    layer's model population through its list, spikes at the target, and the ``m`` the
    list passes; then::

        std_l = sigma_l / sqrt(m_{l-1})

    A model (the data's own temporal structure, a list capacity that cuts the input, and
    recurrence shift the rate), but every layer starts alive; for a data-dependent
    refinement, run :func:`mimdsim.training.calibrate_activity` (``mimdsim train`` does).
    """
    L = len(sizes) - 1
    targets = [float(t) for t in (target if isinstance(target, (list, tuple)) else [target] * L)]
    acts = [targets[0] if input_activity is None else float(input_activity)] + targets
    sigmas, listed = population_model(list(specs), targets, acts[0], [k / n for k, n in zip(capacities, sizes)])
    return [sigma / math.sqrt(max(f * n, 1e-6)) for sigma, f, n in zip(sigmas, listed, sizes)]
