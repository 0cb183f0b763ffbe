"""The SNN training step a run's settings describe: the network, the system and the keyword
arguments of :func:`~mimdsim.workloads.snn.simulate.simulate`, each setting checked against the
others (one the chosen mode would not read is refused, not ignored) and the sizes checked against
the chip's SRAM and this machine's memory before anything large is allocated.

The settings are ``{TOML key: value}`` (:mod:`mimdsim.config`); the command line
(:mod:`mimdsim.cli`) and sweeps (:mod:`mimdsim.sweep`) build their runs here.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ... import assumptions as A
from ...config import build_system
from ...errors import UNSET, ConfigError, Param
from ...checks import check_host_bytes
from .workload import DEFAULT_LAYERS, DEFAULT_MAX_ACTIVITY, DEFAULT_THETA2


def setting(key: str, value=UNSET, **kw) -> Param:
    """The run setting ``key`` as a message names it (its flag on the command line)."""
    return Param(key.rsplit(".", 1)[-1], value, key=key, **kw)


TIMESTEPS, BATCH = setting("model.timesteps"), Param("batch_size", key="model.batch")
INFERENCE = Param("training", False, key="run.inference", setting_value=True)


def check_sizes_fit(values: dict) -> None:
    """Refuse, from the layer sizes alone, a network that cannot fit a chip's SRAM or this
    machine's memory, before its weights (or any per-tile array) are allocated."""
    from .mapping import check_layers_fit, weight_bytes_lower_bound

    sizes = values["model.layers"]
    if not all(isinstance(n, int) and n >= 1 for n in sizes):
        return  # Network.feedforward names the bad size
    check_host_bytes(f"the weights of {'-'.join(map(str, sizes))} (float32, initialised in float64)",
                     3 * sum(weight_bytes_lower_bound(sizes, training=False)),
                     fix=("make the layers narrower (", setting("model.layers"), ")"))
    check_layers_fit(sizes, build_system(values), training=not values.get("run.inference"),
                     optimizer=values.get("run.optimizer", "adam"), reserve_tile0=values["run.reserve_tile0"])


def check_steps_fit(T: int, B: int, input_capacity: int, system, *, training: bool, schedule=None) -> None:
    """Refuse, before compiling, timesteps x batch beyond this machine's memory (the program keeps
    a few numbers per (timestep, sample)) or, when training, beyond a tile's SRAM: the list
    programs' BPTT keeps the input spike list of every (timestep, sample), at least
    ``T x B x K_in x 2 B`` on a layer-1 tile. PopTorch's dense program spreads its input history
    over the whole chip; its planner checks what it keeps."""
    check_host_bytes(f"the per-(timestep, sample) arrays of T={T:,} x B={B:,}", 64.0 * T * B,
                     fix=("lower ", TIMESTEPS, " or ", BATCH))
    need, limit = int(2 * T * B * input_capacity), system.chip.sram_per_tile
    if training and need > limit and schedule != "poptorch":
        from ...errors import OutOfTileMemory
        raise OutOfTileMemory(1, need, limit, {"L1.input_list_history (at least)": need},
                              (f"BPTT keeps the input spike list of every (timestep, sample) on each layer-1 tile: "
                               f"T={T:,} x B={B:,} x input capacity {input_capacity} x 2 B; lower ", TIMESTEPS, " or ",
                               BATCH, " (or ", setting("model.input_capacity"), "), or simulate ", INFERENCE))


def _refuse_execution_on_dataflow(preset, given: Param) -> None:
    """A Tensix chip's step (ttnn's dense ops) costs the same whatever the spikes, and no numerics run on it:
    an execution-driven setting is refused naming the flag given, before random inputs are drawn."""
    from ...arch.execution import DATAFLOW, find_family

    family = find_family(preset)
    if family is not None and family.execution == DATAFLOW:
        raise ConfigError(given, f": {preset}'s step is ttnn's dense op stream, whose time does not depend on the "
                          "spikes, and mimdsim runs no numerics of it; drop ", dataclasses.replace(given, action="drop"),
                          " and give the rates (", setting("run.activity"), ")")


def build_run(values: dict):
    """The network, the system and the keyword arguments of :func:`~mimdsim.simulate` that the
    settings ``values`` (SNN workload) describe."""
    v = values
    by_default = poptorch_by_default(v)  # before the defaults fill model.max_activity in
    if v.get("workload.name", "snn") != "snn":  # sweeps build the SNN step only; never run it silently instead
        raise ConfigError(f"workload.name = {v['workload.name']!r} runs through `mimdsim compare` (",
                          setting("workload.name", v["workload.name"]), ") or `mimdsim run`; sweep files sweep the SNN "
                          "step (set workload.name = 'snn')")
    measured = v.get("run.activity_from", "assumed") == "execute"  # rates from one executed step
    if not v["run.execute"] and not measured:  # rate-driven: no numerics, nothing reads the weights or theta2
        for key, what in (("model.weight_scale", "the initial weights"),
                          ("model.theta2", "the gradient-candidate threshold of the dynamics")):
            if v.get(key) is not None and not (key == "model.weight_scale" and v.get("model.nir")):  # (refused there)
                raise ConfigError(setting(key), f" (TOML: {key}) sets {what}, which a rate-driven run does not read (it "
                                  "draws spikes at ", setting("run.activity"), " and candidates at ",
                                  setting("run.candidate_activity"), "): add ", setting("run.execute", True), ", or ",
                                  "drop ", setting(key, action="drop"))
    if by_default and v.get("run.neurons_per_tile") is not None:
        raise ConfigError(setting("run.neurons_per_tile"), " places the spike-list programs' neurons; the default "
                          "program of an snnTorch model, what PopTorch builds, splits every matmul over the chip's tiles "
                          "itself: drop ", setting("run.neurons_per_tile", action="drop"), " or add ",
                          setting("run.schedule", "fused"))
    if v.get("run.schedule") == "poptorch" and v.get("run.neurons_per_tile") is not None:
        raise ConfigError(setting("run.neurons_per_tile"), " places the spike-list programs' neurons; ",
                          setting("run.schedule", "poptorch"), "'s planner splits every matmul over the chip's tiles "
                          "itself: drop ", setting("run.neurons_per_tile", action="drop"))
    if v.get("model.nir"):  # a NIR graph replaces the layer flags (mimdsim.from_nir)
        net = _nir_network(v)
        v = dict(v, **{"model.layers": list(net.sizes)})
    else:
        if v.get("model.nir_reset"):
            raise ConfigError(setting("model.nir_reset", v["model.nir_reset"]), " (TOML: model.nir_reset) applies to "
                              "a ", setting("model.nir"), " graph; drop it or give ",
                              setting("model.nir", shown="FILE.nir"))
        if v.get("run.schedule") == "poptorch":  # the dense program lists every neuron of an snnTorch model
            if v.get("model.neuron", "published") == "published":
                raise ConfigError(setting("run.schedule", "poptorch"), " runs the dense program PopTorch builds from "
                                  "snnTorch: pick a model with ", setting("model.neuron", action="set"), " (leaky, "
                                  "synaptic, ...); the published sparse LIF runs ", setting("run.schedule", "published"),
                                  " or fused")
            if v["model.max_activity"] is not None:
                raise ConfigError(setting("model.max_activity", v["model.max_activity"], shown=f"{v['model.max_activity']:g}"),
                                  " with ", setting("run.schedule", "poptorch"), ": the dense program lists every neuron "
                                  "(K = n); drop ", setting("model.max_activity", action="drop"))
        # the flags left unset (None: so that a --model run can tell them from a default) take their defaults
        v = dict(v, **{"model.layers": DEFAULT_LAYERS if v["model.layers"] is None else v["model.layers"],
                       "model.max_activity": _max_activity(v),
                       "model.theta2": DEFAULT_THETA2 if v["model.theta2"] is None else v["model.theta2"]})
        net = _layer_network(v, dense=by_default or v.get("run.schedule") == "poptorch")
    sys_spec = build_system(v)
    # each pair was checked where it entered (a flag, a file's [assume] table, a sweep axis); the table
    # as a whole once more here, for the relations between pairs (an idle power above the maximum)
    kw = dict(**({"assume": A.check(v["assume"])} if v.get("assume") else {}),
              neurons_per_tile=v["run.neurons_per_tile"], reserve_tile0=v["run.reserve_tile0"], seed=v["run.seed"])
    if v.get("run.chips_used") is not None:
        kw["chips_used"] = v["run.chips_used"]
    if v.get("run.schedule") == "per-op":
        raise ConfigError(setting("run.schedule", "per-op"), " is the Kalman fit's; the SNN step runs 'published' "
                          "(the study's op), 'fused' or 'poptorch'")
    if v.get("run.schedule"):
        kw["schedule"] = v["run.schedule"]
    if v.get("run.static_input"):
        kw["static_input"] = True
    if v.get("run.precision"):
        kw["precision"] = v["run.precision"]
    if v.get("run.fidelity"):
        kw["fidelity"] = v["run.fidelity"]
    if v.get("run.optimizer", "adam") != "adam":  # its kind shapes the program; one step's update is applied
        from ...optim import SGD
        kw["optimizer"] = SGD()
    if v.get("run.inference"):
        kw["training"] = False
    T, B, n_in, n_out = v["model.timesteps"], v["model.batch"], v["model.layers"][0], v["model.layers"][-1]
    check_steps_fit(T, B, net.capacities[0], sys_spec, training=not v.get("run.inference"),
                    schedule="poptorch" if by_default else v.get("run.schedule"))
    if v["run.execute"] and measured:
        raise ConfigError(setting("run.activity_from", "execute"), " measures the rates a rate-driven run draws; ",
                          setting("run.execute", True), " runs the numerics themselves: drop one of them")
    if v["run.execute"] or measured:
        mode = "run.execute" if v["run.execute"] else "run.activity_from"
        _refuse_execution_on_dataflow(v["chip.preset"], setting(mode, True if v["run.execute"] else "execute"))
        for key in ("run.activity", "run.candidate_activity"):
            if v.get(key) is not None:  # the dynamics set the rates: refused, not ignored
                raise ConfigError(setting(key), f" (TOML: {key}) sets the firing rates a rate-driven run assumes; with ",
                                  setting(mode, True if v["run.execute"] else "execute"), " the rates come from the "
                                  "dynamics: drop ", setting(key, action="drop"), ", or drop ",
                                  setting(mode, action="drop"), " (", setting("run.input_activity"), " sets the input "
                                  "rate of an execution-driven run)")
        check_host_bytes(f"the random input spikes ([{T:,} timesteps, {B:,} samples, {n_in:,} inputs])",
                         8.0 * T * B * n_in, fix=("lower ", TIMESTEPS, " or ", BATCH, ", or run rate-driven (no ",
                                                  setting("run.execute", action="drop"), ")"))
        rng = np.random.default_rng(v["run.seed"])
        rate = _input_rate(v)
        steps = 1 if v.get("run.static_input") else T  # --static-input: one input, the same at every step
        x = (rng.random((steps, B, n_in)) < rate).astype(np.uint8)
        kw["inputs"] = np.repeat(x, T, axis=0) if steps == 1 else x
        kw["labels"] = rng.integers(0, n_out, B)
    if measured:  # the executed step's mean list fills set the rate-driven run's rates
        from .activity import activity_from_execution
        rates = activity_from_execution(net, sys_spec, kw.pop("inputs"), kw.pop("labels"),
                                        described=f"random input spikes at {_input_rate(v):.3g} per input and step", **kw)
        kw.update(timesteps=T, batch_size=B, activity=rates["activity"], candidate_activity=rates["candidate_activity"],
                  input_activity=rates["input_activity"], activity_source=rates["source"])
    elif not v["run.execute"]:
        kw.update(timesteps=T, batch_size=B,
                  activity=v["run.activity"] if v["run.activity"] is not None else
                  _max_activity(v) / 2,
                  candidate_activity=v["run.candidate_activity"], input_activity=v["run.input_activity"])
    return net, sys_spec, kw


def _layer_network(v, dense: bool):
    """The network of ``--layers`` (defaults resolved): the published sparse LIF, or an
    snnTorch model of the zoo (``--neuron``), every neuron listed when ``dense`` (what PopTorch builds)."""
    from ...snn import Network

    init = {}
    if v["model.weight_scale"] is None and (v["run.execute"] or v.get("run.activity_from") == "execute"):
        # the activity rule, at the input rate the executed step draws (else a layer can fall silent)
        init["input_activity"] = _input_rate(v)
    if v.get("model.neuron", "published") != "published":  # an snnTorch model (snn/zoo.py)
        from ...snn.zoo import ZOO
        return Network.build(v["model.layers"], ZOO[v["model.neuron"]], bias=True, loss="ce_count",
                             max_activity=None if dense else v["model.max_activity"], seed=v["run.seed"],
                             weight_scale=v["model.weight_scale"], **init)
    check_sizes_fit(v)  # from shapes alone, before the weights are allocated
    return Network.feedforward(v["model.layers"], max_activity=v["model.max_activity"],
                               input_capacity=v["model.input_capacity"], theta2=v["model.theta2"],
                               overflow=v["model.overflow"], seed=v["run.seed"],
                               weight_scale=v["model.weight_scale"], **init)


def poptorch_by_default(v) -> bool:
    """Whether the settings run an snnTorch model (``--neuron``) on its default program, what PopTorch builds:
    no ``--schedule`` and no ``--max-activity`` (spike lists shorter than the layers run the fused program)."""
    return (v.get("model.neuron", "published") != "published" and not v.get("model.nir")
            and v.get("run.schedule") is None and v.get("model.max_activity") is None)


def _max_activity(v) -> float:
    return DEFAULT_MAX_ACTIVITY if v["model.max_activity"] is None else v["model.max_activity"]


def _input_rate(v) -> float:
    """The input spike fraction of an execution-driven run: --input-activity, else half the max activity."""
    if v["run.input_activity"] is not None:
        return v["run.input_activity"]
    return _max_activity(v) / 2


def _nir_network(v):
    """The network of ``--model FILE.nir`` with every model flag applied, or refused when the
    graph fixes what the flag would set."""
    from ...snn.nir_io import from_nir
    from ...checks import check_number

    given = lambda key: v.get(key) is not None  # noqa: E731
    for key, why in (("model.layers", "the graph gives the layer sizes"),
                     ("model.weight_scale", "the graph brings its trained weights")):
        if given(key):
            raise ConfigError(setting(key, v[key], shown=str(v[key])), " with ", setting("model.nir", v["model.nir"]),
                              f": {why}; drop ", setting(key, action="drop"), f" (TOML: {key}) or ",
                              setting("model.nir", action="drop"))
    net = from_nir(v["model.nir"], max_activity=v["model.max_activity"], reset=v.get("model.nir_reset"),
                   input_capacity=v["model.input_capacity"])
    net.overflow = v["model.overflow"]
    if given("model.theta2"):
        spec_th = min(float(np.min(s.threshold)) for s in net.specs)
        check_number("theta2", v["model.theta2"], high=spec_th, finite=False, key="model.theta2",
                     fix=f"candidates lie below the graph's lowest spike threshold {spec_th:g}")
        net.layers = tuple(s.replace(theta2=v["model.theta2"]) for s in net.specs)
    return net
