"""The neuron model zoo with snnTorch 1.0 semantics: one validated spec per layer.

Every layer of a :class:`~mimdsim.snn.network.Network` is described by a frozen
:class:`NeuronSpec`. All models are one family: the same forward codelet shape
(gather-sum of weight rows for the active inputs, then an element-wise state update),
the same sparse spike lists, the same backward codelet shape. The sparse LIF of
Finkbeiner et al. (``Network.feedforward``) is the configuration
``NeuronSpec.published(alpha, c, theta1, theta2, beta)``.

Notation (per neuron, step t): ``I[t]`` the input current (weight rows of the active
inputs, plus bias and recurrent current), ``J[t] = gain * I[t]``, threshold theta,
``R[t] = H(m[t-1] - theta)`` the delayed reset (detached from the gradient, as in
snnTorch), ``S[t] = H(u[t] - theta)`` with the surrogate derivative ``sg`` (see
``kernels/mimdsim_snn/surrogate.py``). ``beta`` and ``alpha`` are clamped to [0, 1] in the forward
pass (snnTorch); a clamped value gets no gradient.

leaky (snnTorch ``Leaky``; ``RLeaky`` with recurrence)::

    subtract  u = beta m[t-1] + J - R theta
    zero      u = beta (1 - R) m[t-1] + J              (Leaky: only the old state resets)
              u = (1 - R) (beta m[t-1] + J)            (RLeaky: the whole new value resets)
    none      u = beta m[t-1] + J

synaptic (``Synaptic``, ``RSynaptic``)::

    s = alpha s[t-1] + J
    subtract  u = beta m[t-1] + s - R theta
    zero      u = (1 - R) (beta m[t-1] + s)            (s itself is not reset)
    none      u = beta m[t-1] + s

alpha (``Alpha``; needs alpha > beta; default reset zero)::

    e' = alpha e[t-1] + J,  h' = beta h[t-1] - J,  tau = ln alpha / (ln beta - ln alpha) + 1
    zero      e = (1 - R) e',  h = (1 - R) h',  u = (1 - R) tau (e' + h')
    subtract  e = e' - R theta,  h = (1 - R) h',  u = tau (e' + h') + R h[t-1]
    none      e = e',  h = h',  u = tau (e' + h')

lapicque (``Lapicque``; RC circuit, forward Euler with time_step dt; beta is not clamped)::

    u = J dt / C + (1 - dt / (R C)) m[t-1] - R theta       (subtract; zero: (1 - R) (...))
    given beta only: R = 1, C = dt / ln(1 / beta); beta and R: C = dt / (R ln(1 / beta)); ...

Spikes and reset delay: ``S[t] = H(u - theta)``. With ``reset_delay=True`` (snnTorch's
default) ``m[t] = u``. With ``reset_delay=False`` (leaky and synaptic only) the reset is
applied in the spiking step with ``D = S - R`` and the gradient flows through S:
subtract ``m[t] = u - D theta``; zero ``m[t] = u - D u``.

Recurrence: ``I[t] += V * S[t-1]`` (one-to-one, V per neuron) or
``I[t] += S[t-1] @ V + v_b`` (all-to-all, snnTorch's ``nn.Linear`` with bias), with the
gradient through ``S[t-1]``.

``reset_in_gradient=False`` is the published sparse code's convention: every reset
factor keeps its forward value but is a constant in the backward pass (the backward is
that of reset "none" at the same forward values; e.g. dU[t]/dU[t-1] = beta).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

import numpy as np

from ..kernels.mimdsim_snn import surrogate as _sg

from ..errors import ConfigError
from ..checks import check_choice, check_number

MODELS = ("leaky", "synaptic", "alpha", "lapicque")
RESETS = ("subtract", "zero", "none")
RECURRENCES = ("none", "one-to-one", "all-to-all")

# snnTorch's defaults of each surrogate's parameters (name -> ordered (param, default)).
SURROGATE_PARAMS = {
    "atan": (("alpha", 2.0),),
    "fast_sigmoid": (("slope", 25.0),),
    "sigmoid": (("slope", 25.0),),
    "straight_through": (),
    "triangular": (("threshold", 1.0),),
    "spike_rate_escape": (("beta", 1.0), ("slope", 25.0)),
    "superspike": (("beta", 10.0),),
}


def _finite(name, v, where, positive=False):
    """``v`` as a float, if it is a finite number (> 0 when ``positive``)."""
    return float(check_number(name, v, low=0 if positive else None, open_low=positive, where=f"{where}: "))


def _vector(name, v, where, allow_none=False):
    """A float or a tuple of floats (one per neuron), validated finite."""
    if v is None:
        if allow_none:
            return None
        raise ConfigError(f"{where}: {name} is required")
    if isinstance(v, (list, tuple, np.ndarray)):
        arr = np.asarray(v, dtype=np.float64).ravel()
        if arr.size == 0:
            raise ConfigError(f"{where}: {name} is empty; give one number or one per neuron")
        if not np.all(np.isfinite(arr)):
            raise ConfigError(f"{where}: {name} holds non-finite values; give finite numbers")
        if np.all(arr == arr[0]):
            return float(arr[0])
        return tuple(float(x) for x in arr)
    return _finite(name, v, where)


def _values(v) -> np.ndarray:
    return np.atleast_1d(np.asarray(v, dtype=np.float64))


@dataclass(frozen=True)
class Surrogate:
    """A surrogate spike derivative by name with its parameters (snnTorch's defaults).

    ``Surrogate("atan")``, ``Surrogate("fast_sigmoid", slope=10)``,
    ``Surrogate("spike_rate_escape", beta=1, slope=25)``; formulas in ``kernels/mimdsim_snn/surrogate.py``.
    """

    name: str = "atan"
    params: tuple = ()  # ((param, value), ...) in the order of SURROGATE_PARAMS[name]

    def __init__(self, name: str = "atan", params=(), **kw):
        check_choice("surrogate", name, tuple(SURROGATE_PARAMS))
        given = dict(params)
        given.update(kw)
        allowed = dict(SURROGATE_PARAMS[name])
        unknown = sorted(set(given) - set(allowed))
        if unknown:
            raise ConfigError(f"surrogate {name!r} takes {', '.join(allowed) or 'no parameters'}; got {unknown}")
        vals = []
        for p, default in SURROGATE_PARAMS[name]:  # a slope must be > 0
            slope = p in ("slope", "alpha") or name == "superspike"
            vals.append((p, _finite(p, given.get(p, default), f"surrogate {name!r}", positive=slope)))
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "params", tuple(vals))

    def __getitem__(self, key):
        return dict(self.params)[key]

    def code(self) -> tuple[int, float, float]:
        """``(kind, p1, p2)`` for the numba kernels (``kernels.mimdsim_snn.surrogate.sg``)."""
        vals = [v for _, v in self.params] + [0.0, 0.0]
        return _sg.CODES[self.name], vals[0], vals[1]

    def __call__(self, x):
        kind, p1, p2 = self.code()
        return _sg.surrogate_numpy(x, self.name, p1, p2)

    def to_dict(self) -> dict:
        return {"name": self.name, **dict(self.params)}


def as_surrogate(s) -> Surrogate:
    if isinstance(s, Surrogate):
        return s
    if isinstance(s, str):
        return Surrogate(s)
    if isinstance(s, dict):
        d = dict(s)
        return Surrogate(d.pop("name"), **d)
    raise ConfigError(f"surrogate={s!r}: give a name ({', '.join(SURROGATE_PARAMS)}) or a Surrogate")


@dataclass(frozen=True)
class NeuronSpec:
    """One layer's neuron model (snnTorch semantics; equations in the module docstring).

    ``beta``, ``alpha`` and ``threshold`` are one number or one per neuron (a tuple).
    ``theta2`` is the sparse list's gradient-candidate threshold: neurons with
    ``theta2 < u <= threshold`` are listed for a surrogate gradient after the spikes
    (``-inf``, the default, lists every neuron the capacity allows). ``surrogate`` defaults to the snnTorch IPU
    study's fast sigmoid (slope 25), as ``--neuron``'s models (:mod:`mimdsim.snn.zoo`); snnTorch's classes default to
    ``surrogate="atan"``.
    """

    model: str = "leaky"
    beta: float | tuple | None = None
    alpha: float | tuple | None = None
    threshold: float | tuple = 1.0
    reset: str | None = None  # default: "zero" for alpha, "subtract" otherwise (snnTorch)
    reset_delay: bool = True
    learn_beta: bool = False
    learn_threshold: bool = False
    # the snnTorch IPU study's surrogate (surrogate.fast_sigmoid(), slope 25), so that NeuronSpec("leaky") is
    # the model --neuron leaky runs and what PopTorch builds counts; snnTorch's own class default is atan
    surrogate: Surrogate | str = "fast_sigmoid"
    gain: float = 1.0
    recurrence: str = "none"
    learn_recurrent: bool = True
    reset_in_gradient: bool = True
    spiking: bool = True  # False: a leaky integrator (NIR LI) whose output is its membrane
    R: float | None = None  # lapicque
    C: float | None = None  # lapicque
    time_step: float = 1.0  # lapicque
    theta2: float = -math.inf

    def __post_init__(self) -> None:
        where = f"neuron model {self.model!r}"
        check_choice("model", self.model, MODELS, where="neuron ")
        reset = self.reset if self.reset is not None else ("zero" if self.model == "alpha" else "subtract")
        if not self.spiking and self.reset is None:
            reset = "none"
        object.__setattr__(self, "reset", check_choice("reset", reset, RESETS, where=f"{where}: "))
        check_choice("recurrence", self.recurrence, RECURRENCES, where=f"{where}: ")
        for flag in ("reset_delay", "learn_beta", "learn_threshold", "learn_recurrent", "reset_in_gradient",
                     "spiking"):
            if not isinstance(getattr(self, flag), (bool, np.bool_)):
                raise ConfigError(f"{where}: {flag}={getattr(self, flag)!r} must be True or False")
        object.__setattr__(self, "surrogate", as_surrogate(self.surrogate))
        object.__setattr__(self, "threshold", _vector("threshold", self.threshold, where))
        object.__setattr__(self, "gain", _finite("gain", self.gain, where))
        check_number("theta2", self.theta2, high=_values(self.threshold).min(), finite=False, where=f"{where}: ",
                     fix=f"gradient candidates lie below the spike threshold={self.threshold} (-inf lists every "
                         f"neuron)")
        if self.model == "lapicque":
            self._lapicque_check(where)
        else:
            object.__setattr__(self, "beta", _vector("beta", self.beta, where, allow_none=True))
            if self.beta is None:
                raise ConfigError(f"{where} needs beta, the membrane decay per step in [0, 1] "
                                  f"(e.g. NeuronSpec({self.model!r}, beta=0.9))")
            self._unit("beta", self.beta, where)
        if self.model in ("synaptic", "alpha"):
            object.__setattr__(self, "alpha", _vector("alpha", self.alpha, where, allow_none=True))
            if self.alpha is None:
                raise ConfigError(f"{where} needs alpha, the synaptic decay per step in [0, 1] "
                                  f"(e.g. NeuronSpec({self.model!r}, alpha=0.8, beta=0.7))")
            self._unit("alpha", self.alpha, where)
        elif self.alpha is not None:
            raise ConfigError(f"{where} has no synaptic current; alpha={self.alpha!r} applies to synaptic and alpha")
        if self.model == "alpha":
            a, b = np.broadcast_arrays(_values(self.alpha), _values(self.beta))
            if np.any(a <= b):
                i = int(np.argmax(a <= b))
                raise ConfigError(f"{where}: alpha={a[i]} must be greater than beta={b[i]} (the alpha kernel "
                                  f"rises with alpha and decays with beta); swap them or raise alpha")
            if np.any(b >= 1) or np.any(b <= 0) or np.any(a >= 1):
                raise ConfigError(f"{where}: needs 0 < beta < alpha < 1 (tau = ln alpha / (ln beta - ln alpha) + 1 "
                                  f"is undefined otherwise); got alpha={self.alpha}, beta={self.beta}")
        if not self.reset_delay and self.model in ("alpha", "lapicque"):
            raise ConfigError(f"{where}: reset_delay=False exists only for leaky and synaptic neurons "
                              f"(snnTorch's Alpha and Lapicque always reset one step later)")
        if not self.spiking:
            if self.reset != "none" or self.recurrence != "none" or self.model not in ("leaky", "synaptic"):
                raise ConfigError(f"{where}: a non-spiking layer (a leaky integrator, NIR LI/CubaLI) needs "
                                  f"model leaky or synaptic, reset 'none' and no recurrence")
        if self.learn_beta and self.model == "lapicque":
            raise ConfigError(f"{where}: learn_beta has no effect on Lapicque (beta only sets C); learn R or C "
                              f"is not supported either; use model 'leaky' for a learnable decay")

    @staticmethod
    def _unit(name, v, where):
        arr = _values(v)
        bad = (arr < 0) | (arr > 1)
        if bad.any():
            x = float(arr[np.argmax(bad)])
            raise ConfigError(f"{where}: {name}={x} lies outside [0, 1] (a decay per step; snnTorch would clamp it "
                              f"to {min(max(x, 0.0), 1.0)}); give a value in [0, 1]")

    def _lapicque_check(self, where):
        dt = _finite("time_step", self.time_step, where, positive=True)
        beta = _vector("beta", self.beta, where, allow_none=True)
        R = None if self.R is None else _finite("R", self.R, where, positive=True)
        C = None if self.C is None else _finite("C", self.C, where, positive=True)
        if beta is None and (R is None or C is None):
            raise ConfigError(f"{where}: give beta, or R and C (snnTorch: 'Either beta or 2 of beta, R and C')")
        if beta is not None:
            b = _values(beta)
            if np.any(b <= 0) or np.any(b >= 1):
                raise ConfigError(f"{where}: beta={beta} must lie in (0, 1) to derive R C = dt / ln(1 / beta)")
        object.__setattr__(self, "beta", beta)
        object.__setattr__(self, "R", R)
        object.__setattr__(self, "C", C)
        object.__setattr__(self, "time_step", dt)

    # ---- constructors -------------------------------------------------------------------
    @classmethod
    def published(cls, alpha=0.95, c=10.0, theta1=1.0, theta2=0.9, beta=10.0) -> "NeuronSpec":
        """The sparse LIF of Finkbeiner et al. (2024): leaky, reset to zero excluded from the
        gradient, input gain c (1 - alpha), SuperSpike surrogate with slope beta."""
        return cls("leaky", beta=alpha, threshold=theta1, reset="zero", reset_in_gradient=False,
                   gain=c * (1 - alpha), surrogate=Surrogate("superspike", beta=beta), theta2=theta2)

    def replace(self, **changes) -> "NeuronSpec":
        return replace(self, **changes)

    # ---- derived quantities -------------------------------------------------------------
    @property
    def zero_resets_everything(self) -> bool:
        """snnTorch's Leaky resets only the old state; every other model the whole new value."""
        return not (self.model == "leaky" and self.recurrence == "none")

    def lapicque_rc(self) -> tuple[np.ndarray, np.ndarray]:
        """(R, C) as snnTorch's ``Lapicque._lapicque_cases`` derives them."""
        dt = self.time_step
        if self.R is not None and self.C is not None:
            return _values(self.R), _values(self.C)
        b = _values(self.beta)
        if self.R is not None:
            return _values(self.R), dt / (self.R * np.log(1 / b))
        if self.C is not None:
            return dt / (self.C * np.log(1 / b)), _values(self.C)
        return np.ones_like(b), dt / (1.0 * np.log(1 / b))

    def decay(self) -> np.ndarray:
        """The membrane's factor on m[t-1] (beta, or 1 - dt/(R C) for lapicque)."""
        if self.model == "lapicque":
            R, C = self.lapicque_rc()
            return 1 - self.time_step / (R * C)
        return _values(self.beta)

    def input_gain(self) -> float | np.ndarray:
        """Factor on the input current: ``gain`` (times dt / C for lapicque)."""
        if self.model == "lapicque":
            R, C = self.lapicque_rc()
            g = self.gain * (R * (1 / (R * C)) * self.time_step)
            return float(g[0]) if np.all(g == g[0]) else g
        return self.gain

    @property
    def state_variables(self) -> tuple[str, ...]:
        return {"leaky": ("mem",), "lapicque": ("mem",), "synaptic": ("syn", "mem"),
                "alpha": ("syn_exc", "syn_inh", "mem")}[self.model]

    @property
    def histories(self) -> tuple[str, ...]:
        """State histories [T, B, n] the backward pass reads (besides the spike lists).

        ``u`` (membrane before any same-step reset: the surrogate's argument and, through
        R, the reset of the next step); ``m`` (after the reset) with reset_delay=False;
        the alpha neuron's ``exc``/``inh`` currents when beta is learnable (d tau / d beta).
        """
        h = ["u"]
        if not self.reset_delay:
            h.append("m")
        if self.model == "alpha" and self.learn_beta:
            h += ["exc", "inh"]
        return tuple(h)

    @property
    def carries(self) -> int:
        """Adjoint state arrays carried between backward steps (dL/dm, dL/ds, ...)."""
        return {"leaky": 1, "lapicque": 1, "synaptic": 2, "alpha": 2}[self.model]

    def to_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["surrogate"] = self.surrogate.to_dict()
        for k in ("beta", "alpha", "threshold"):
            if isinstance(d[k], tuple):
                d[k] = list(d[k])
        return {k: v for k, v in d.items() if v is not None}

    @classmethod
    def from_dict(cls, d: dict) -> "NeuronSpec":
        d = dict(d)
        unknown = sorted(set(d) - {f.name for f in fields(cls)})
        if unknown:
            raise ConfigError(f"unknown neuron field(s) {unknown}; valid: {', '.join(f.name for f in fields(cls))}")
        if isinstance(d.get("surrogate"), dict):
            d["surrogate"] = as_surrogate(d["surrogate"])
        for k in ("beta", "alpha", "threshold"):
            if isinstance(d.get(k), list):
                d[k] = tuple(d[k])
        return cls(**d)


def neuron(model: str = "leaky", **kw) -> NeuronSpec:
    """Shorthand: ``neuron("synaptic", alpha=0.8, beta=0.7, reset="zero")``."""
    return NeuronSpec(model, **kw)


__all__ = ["NeuronSpec", "Surrogate", "neuron", "MODELS", "RESETS", "RECURRENCES", "SURROGATE_PARAMS"]
