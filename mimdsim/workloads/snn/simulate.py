"""``simulate``: compile a network onto a chip and run one training step.

Execution-driven (``inputs`` and ``labels`` given): real numerics, exact loss and
gradients. Rate-driven (``timesteps``, ``batch_size`` and ``activity`` given): spike
counts drawn from the activity, no numerics. Both cost the same program the same way.

``simulate`` is a pipeline of stages, each a function with one job: resolve and check the settings
(``_resolve``), choose the program (``_choose_program``: the placement search), build the work
source, run the engine and the band (``_run_and_band``), then the report's layers and placement,
energy and notes.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import warnings
from dataclasses import dataclass, field

import numpy as np

from ... import assumptions as A
from ...arch import as_system
from ...arch.execution import BULK_SYNCHRONOUS, family_of
from ...energy import chip_energy
from ...engine import run_program
from ...engine.band import chip_band, unread_by
from ...errors import CapacityOverflow, ConfigError, Message, MimdsimError, OutOfTileMemory, Param, join, render
from ...kernels.assumed import NOTHING, Pinned
from ...program import Program
from ...report import Report
from ...snn import Network
from ...checks import check_choice, check_fractions, check_int, check_seed
from .placement import Rates, search
from .programs.compile import SCHEDULES, ProgramChoice, choose_program, other_programs
from .step import PRECISIONS, check_step
from .mapping import NEURONS_PER_TILE_FIX, idle_chips_note
from .workload import DEFAULT_ACTIVITY
from .sources import ExecutionSource, RateSource, SpikeStats


@dataclass
class Run:
    """One simulated step: the report, and what the step computed.

    ``stats``: per-layer spike counters over ``[T, B]`` (both modes). Execution-driven runs
    also give ``loss``, ``grads`` (shaped like ``net.weights``; None for inference),
    ``param_grads`` (per layer: weight, bias, recurrent, recurrent_bias, beta, threshold),
    ``counts`` (output spikes per sample and neuron, ``[B, n_out]``), ``lists`` (per layer the
    sent spike ids ``[T, B, K]``, valid up to ``stats.listed``) and :attr:`traces`.
    """

    report: Report
    program: Program
    stats: SpikeStats
    loss: float | None = None
    grads: list | None = None
    param_grads: list | None = None
    counts: np.ndarray | None = None
    lists: list | None = None
    _source: object = field(default=None, repr=False)

    @property
    def traces(self) -> list | None:
        """Execution-driven runs: per neuron layer ``mem``, ``spk`` (``[T, B, n]``) and the
        synaptic states, as snnTorch's neurons return them."""
        return self._source.traces() if isinstance(self._source, ExecutionSource) else None


def _check_inputs(net: Network, inputs, labels, analog=False):
    if labels is None:
        raise ConfigError("execution-driven simulate needs labels (an int array of shape [batch])")
    x = np.asarray(inputs)
    if x.ndim != 3 or x.shape[2] != net.sizes[0]:
        raise ConfigError(f"inputs have shape {x.shape}; expected [timesteps, batch, {net.sizes[0]}] "
                          f"(a 0/1 spike array)")
    if x.shape[0] < 1 or x.shape[1] < 1:
        raise ConfigError(f"inputs have shape {x.shape}; timesteps and batch must be at least 1")
    if x.dtype != bool:
        if not np.issubdtype(x.dtype, np.number):
            raise ConfigError(f"inputs have dtype {x.dtype}; give 0/1 numbers or booleans")
        if not analog and np.issubdtype(x.dtype, np.unsignedinteger) and (x.size == 0 or x.max() <= 1):
            return x, _labels(net, x, labels)  # 0/1 bytes: one pass, no temporaries
        bad = ~((x == 0) | (x == 1)) if not analog else ~np.isfinite(x)
        if bad.any() and analog:
            raise ConfigError(f"inputs hold {np.count_nonzero(bad)} non-finite value(s); give finite numbers")
        if bad.any():
            v = x[bad].flat[0].item()
            raise ConfigError(f"inputs must be binary spikes (0 or 1); found {np.count_nonzero(bad)} other "
                              f"value(s), e.g. {v!r}. Threshold or encode the data as spikes first, or run ",
                              Param("schedule", "poptorch"), " (dense matmuls read real-valued inputs)")
    return x, _labels(net, x, labels)


def _labels(net: Network, x, labels):
    y = np.asarray(labels)
    if y.shape != (x.shape[1],):
        raise ConfigError(f"labels have shape {y.shape}; expected ({x.shape[1]},), one per sample")
    if not np.issubdtype(y.dtype, np.integer):
        raise ConfigError(f"labels have dtype {y.dtype}; expected integers in [0, {net.sizes[-1]})")
    if y.size and (y.min() < 0 or y.max() >= net.sizes[-1]):
        raise ConfigError(f"labels must lie in [0, {net.sizes[-1]}) (one per output neuron); "
                          f"found {int(y.min())}..{int(y.max())}")
    return y.astype(np.int64)


# How the step is placed and lowered on each execution model a chip family declares
# (mimdsim.arch.execution): a second family adds its own placement and lowering here, in folders of its own.
LOWERINGS = {BULK_SYNCHRONOUS: search}


@functools.lru_cache(maxsize=16)
def _compiled(sizes, capacities, system, T, B, neurons_per_tile, reserve_tile0, optimizer, structure=None,
              precision="fp32", training=True, schedule=None, static_input=False, chips_used=None,
              pinned: Pinned = NOTHING, rates=None):
    """Search the placement, compile and check once per shape and rates: programs are static and runs
    never modify them (:mod:`.placement`: the fastest placement that fits, unless pinned; its candidates
    timed at the run's ``rates`` under its ``pinned`` codelet and host assumptions)."""
    family = family_of(system.chip)
    if family.execution not in LOWERINGS:
        raise ConfigError(f"chip {system.chip.name!r} ({family.name}) executes {family.execution}, and the SNN "
                          f"training step has no lowering for it yet; lowerings: {', '.join(LOWERINGS)}")
    return LOWERINGS[family.execution](sizes, capacities, system, timesteps=T, batch_size=B,
                                       neurons_per_tile=neurons_per_tile, chips_used=chips_used,
                                       reserve_tile0=reserve_tile0, optimizer=optimizer, structure=structure,
                                       precision=precision, training=training, schedule=schedule,
                                       static_input=static_input, pinned=pinned, rates=rates)


def simulate(net: Network, chip="ipu-mk2", *, inputs=None, labels=None, timesteps=None, batch_size=None,
             activity=None, candidate_activity=None, input_activity=None, optimizer=None,
             neurons_per_tile=None, chips_used=None, reserve_tile0=True, seed=0, strict=False, timeline=None,
             progress=None, precision=None, training=True, schedule=None, static_input=False, assume=None,
             band=True, activity_source=None, fidelity=None) -> Run:
    """Compile ``net`` onto ``chip`` (a name, ChipSpec or SystemSpec) and run one training step.

    * execution-driven: ``simulate(net, chip, inputs=spikes, labels=labels)`` with spikes
      ``[T, B, n_in]`` 0/1 and labels ``[B]``; returns ``run.loss``, ``run.grads``, ``run.report``.
      Pass ``optimizer=mimdsim.Adam(...)`` to also apply the update to ``net.weights``.
    * rate-driven: ``simulate(net, chip, timesteps=T, batch_size=B, activity=0.01)``;
      ``activity`` per neuron layer (one number or a list; None: 0.005, the command line's default),
      ``candidate_activity``
      (default: = activity) and ``input_activity`` (default: = activity of layer 1).
    ``strict=True`` raises :class:`CapacityOverflow` if any spike list overflowed.
    ``timeline`` (a list) receives one record per superstep execution, for traces;
    ``progress(done, total)`` is called after every timestep of the loops.
    ``training=False`` runs inference: the forward pass and the loss only (no gradients,
    no update; the memory plan keeps one step of state), ``run.grads`` is None.
    ``schedule``: ``"published"`` runs the program the published study built (its op, counted
    from its source), ``"fused"`` mimdsim's hand-fused supersteps, ``"poptorch"`` the dense program
    PopTorch builds from snnTorch (real-valued inputs allowed; ``report.placement["matmul_plan"]`` shows
    every matmul's split; with ``static_input=True`` one input per sample streamed for all steps, the
    study's pixels). None runs what the model's own software builds (``programs.compile.choose_program``):
    ``"published"`` for the published sparse LIF, ``"poptorch"`` for snnTorch and NIR models, unless a
    setting forces another (fp16 or ``overflow="random"``: the published op cannot; list capacities
    below the layer sizes: PopTorch's program lists every neuron). ``report.placement`` says which ran
    (``"schedule"``), why (``"schedule_reason"``) and what else the network could run (``"other_programs"``).
    ``assume``: ``{name: value}`` pins named assumptions (``mimdsim.assumptions``; ``--assume``);
    ``activity_source``: rate-driven, where the rates were measured (``activity.activity_from_execution``'s
    ``source``); the report's note says so instead of calling them assumed.
    ``band=False`` skips ``report.uncertainty`` (the time when every other assumption moves over its
    range, re-costed from the recorded works: no numerics run again).
    ``neurons_per_tile=None`` and ``chips_used=None`` search the placement (:mod:`.placement`: the
    fastest that fits, scored rate-driven at the run's rates, an execution-driven run at half each
    list's capacity); a number pins either.
    ``report.placement["search"]`` lists the chosen placement and the next two candidates.
    A Tensix chip (``"wormhole-n150"``, ``"blackhole-p150"``) prices ttnn's eager step (docs/tensix.md):
    ``precision`` bf16 (default), bfp8_b or bfp4_b and ``fidelity`` lofi, hifi2 (default), hifi3 or
    hifi4; an IPU's takes fp32 or fp16 and no fidelity.
    """
    if _dataflow(chip):  # a Tensix chip: ttnn's op stream, priced op by op (workloads/snn/tensix)
        return _dataflow_run(net, chip, inputs=inputs, timesteps=timesteps, batch_size=batch_size, activity=activity,
                             input_activity=input_activity, optimizer=optimizer, precision=precision, training=training,
                             assume=assume, band=band, neurons_per_tile=neurons_per_tile, chips_used=chips_used,
                             schedule=schedule, **({} if fidelity is None else {"fidelity": fidelity}))
    if fidelity is not None or (precision is not None and precision not in PRECISIONS):
        from .tensix.step import refuse_tensix_settings
        refuse_tensix_settings(as_system(chip).chip.name, precision, fidelity)
    if activity_source is not None and (inputs is not None or not isinstance(activity_source, str)):
        raise ConfigError(Param("activity_source", python="activity_source="), " says where a rate-driven run's "
                          "rates were measured (a sentence); an execution-driven run (inputs=) measures its own: drop it")
    call = _resolve(net, chip, inputs=inputs, labels=labels, timesteps=timesteps, batch_size=batch_size,
                    activity=activity, candidate_activity=candidate_activity, input_activity=input_activity,
                    optimizer=optimizer, neurons_per_tile=neurons_per_tile, chips_used=chips_used,
                    reserve_tile0=reserve_tile0, seed=seed, precision=precision, training=training,
                    schedule=schedule, static_input=static_input, assume=assume)
    choice = _choose_program(net, call)
    program = choice.program
    source = _work_source(net, call, program)
    report = _run_and_band(call, program, source, timeline=timeline, progress=progress, band=band)
    _add_layers_and_placement(report, choice, source, call.choice.why,
                              other_programs(call.structure, net.sizes, net.capacities, call.precision,
                                             program.plan.schedule, net.overflow == "random"))
    _add_energy(call, report, program)
    _add_notes(net, call, report, choice, source, activity_source)
    if strict:
        _refuse_overflow(report)
    grads = call.execution and call.training
    return Run(report=report, program=program, stats=source.stats, loss=source.loss,
               grads=source.grads if grads else None, param_grads=source.param_grads if grads else None,
               counts=source.counts if call.execution else None, lists=source.ids if call.execution else None,
               _source=source)


def _dataflow(chip) -> bool:
    """Whether ``chip`` (a name, spec or system) is of a dataflow family (its step priced op by op)."""
    from ...arch.chip import SystemSpec
    from ...arch.execution import DATAFLOW, find_family

    family = find_family(chip.chip if isinstance(chip, SystemSpec) else chip)
    return family is not None and family.execution == DATAFLOW


def _dataflow_run(net: Network, chip, *, inputs, training, neurons_per_tile, chips_used, schedule, **kw) -> Run:
    """The step on a Tensix chip (:mod:`.tensix`): rate-driven, a training step, on one chip."""
    from ...arch.chip import SystemSpec
    from .tensix import tensix_simulate
    from .tensix.step import refuse_ipu_settings

    if inputs is not None:
        raise ConfigError(Param("inputs", python="inputs="), ": ttnn's dense step on a Tensix chip costs the same "
                          "whatever the spikes; run it rate-driven (", Param("timesteps"), ", ", Param("batch_size"),
                          ", ", Param("activity"), ")")
    if training is not True:
        raise ConfigError(Param("training", False, key="run.inference", setting_value=True), ": a Tensix chip "
                          "prices the training step only; drop it")
    refuse_ipu_settings(neurons_per_tile=neurons_per_tile, chips_used=chips_used, schedule=schedule)
    if isinstance(chip, SystemSpec):
        if chip.chips != 1:
            raise ConfigError(Param("chips", chip.chips), ": one Tensix chip only (no multi-chip model yet); drop it")
        chip = chip.chip
    if kw["timesteps"] is None or kw["batch_size"] is None or kw["activity"] is None:
        raise ConfigError("a Tensix chip's step is rate-driven: give ", Param("timesteps"), ", ", Param("batch_size"),
                          " and ", Param("activity"))
    report = tensix_simulate(net, chip, **kw)
    return Run(report=report, program=None, stats=None)


@dataclass
class _Call:
    """One ``simulate`` call's settings, checked and resolved: the system (with pinned chip
    assumptions), the mode and its data or rates, the step's shape and the program's settings."""
    system: object
    assume: Pinned
    training: bool
    optimizer: object
    opt_kind: str
    execution: bool
    x: np.ndarray | None  # execution-driven: the input spikes [T, B, n_in] and labels [B]
    y: np.ndarray | None
    activity: object  # rate-driven: as given (checked when the source is built)
    candidate_activity: object
    input_activity: object
    T: int
    B: int
    seed: int
    precision: str
    structure: object  # the network's structure, theta2 left out (it shapes nothing in the program)
    choice: ProgramChoice  # the program and why it runs
    static_input: bool
    neurons_per_tile: int | None
    chips_used: int | None
    reserve_tile0: bool


def _resolve(net: Network, chip, *, inputs, labels, timesteps, batch_size, activity, candidate_activity,
             input_activity, optimizer, neurons_per_tile, chips_used, reserve_tile0, seed, precision, training,
             schedule, static_input, assume) -> _Call:
    """Stage 1: check the arguments and resolve the settings (the system, assumptions, mode, shape)."""
    if not isinstance(net, Network):
        raise ConfigError(f"simulate needs a mimdsim.Network, got {type(net).__name__}")
    system = as_system(chip)
    assume = A.check(assume)
    A.refuse_unread(assume, {k: (system.chip.name,) for k in A.CHIP_KINDS + ("energy",)}, f"simulate on {system.chip.name}")
    fields = A.spec_overrides("chip", system.chip.name, assume)
    if fields:  # a pinned chip assumption is its spec field
        system = type(system)(chip=system.chip.replace(**fields), chips=system.chips)
    if not isinstance(training, bool):
        raise ConfigError(f"training={training!r} must be True (a training step) or False (inference)")
    if optimizer is not None and not training:
        raise ConfigError(Param("optimizer", python="optimizer="), " given with ",
                          Param("training", False, key="run.inference", setting_value=True), ": inference computes no "
                          "gradients to apply; drop the optimizer or run a training step")
    opt_kind = optimizer.kind if optimizer is not None else "adam"
    if precision is None:
        precision = "fp32"
    check_choice("precision", precision, tuple(PRECISIONS))
    if precision == "fp16" and np.dtype(net.dtype) != np.float32:
        raise ConfigError(Param("precision", "fp16"), " needs a float32 network (its weights are rounded to half "
                          "precision for the run); got dtype float64")
    # theta2 moves every training step (the schedule) but shapes nothing in the program: the
    # numerics read it from net.specs, so it is left out of the compiled program's key
    st = net.structure
    st = dataclasses.replace(st, layers=tuple(dataclasses.replace(s, theta2=-math.inf) for s in st.layers))
    if net.overflow == "random" and schedule == "published":  # the op keeps the lowest ids: a random subset is another program
        raise ConfigError(Param("schedule", "published"), " keeps the lowest ids of an overflowing list, as the "
                          "op does; this network drops a random subset (", Param("overflow", "random"), "): use ",
                          Param("schedule", "fused"), " or ", Param("overflow", "lowest-index"))
    if schedule is not None:
        check_choice("schedule", schedule, SCHEDULES)
    # the program: asked for, else what the model's own software builds, unless a setting forces another
    choice = choose_program(st, net.sizes, net.capacities, precision=precision, schedule=schedule,
                            random_overflow=net.overflow == "random")
    execution = inputs is not None
    x = y = None
    if execution:
        if activity is not None or timesteps is not None or batch_size is not None:
            raise ConfigError("give either inputs/labels (execution-driven) or timesteps/batch_size/activity "
                              "(rate-driven), not both")
        net.validate_weights()
        x, y = _check_inputs(net, inputs, labels, analog=choice.schedule == "poptorch")
        if static_input and not (x == x[:1]).all():
            raise ConfigError(Param("static_input", True), " streams one input per sample for every step, but "
                              "inputs[t] differs from inputs[0]; give the same input at every step or ",
                              Param("static_input", False))
        T, B = x.shape[:2]
    else:
        if labels is not None:
            raise ConfigError("labels given without inputs; pass inputs=[T, B, n_in] spikes too")
        if timesteps is None or batch_size is None:
            raise ConfigError("rate-driven simulate needs timesteps= and batch_size= (activity= defaults to half the "
                              f"network's max activity, else {DEFAULT_ACTIVITY:g}, as on the command line), or pass inputs= and labels= for an "
                              "execution-driven run")
        if activity is None:  # the command line's default rate: half the max activity the network was built with
            activity = DEFAULT_ACTIVITY if net.max_activity is None else net.max_activity / 2
        T, B = timesteps, batch_size
    check_step(T, B, opt_kind)
    check_seed("seed", seed)
    if neurons_per_tile is not None:
        check_int("neurons_per_tile", neurons_per_tile, low=1, fix=NEURONS_PER_TILE_FIX)
    if chips_used is not None:
        check_int("chips_used", chips_used, low=1, fix=("the chips the layers use, at most ", Param("chips")))
    return _Call(system, assume, training, optimizer, opt_kind, execution, x, y, activity, candidate_activity,
                 input_activity, T, B, seed, precision, st, choice, static_input, neurons_per_tile, chips_used,
                 reserve_tile0)


def _choose_program(net: Network, call: _Call):
    """Stage 2: the program, its placement searched (or pinned), compiled and checked once per shape;
    an assumption pinned that it never reads is refused."""
    rates = None if call.execution or call.neurons_per_tile is not None else _rates(net, call)

    def compiled(schedule):
        return _compiled(net.sizes, net.capacities, call.system, int(call.T), int(call.B),
                         call.neurons_per_tile, bool(call.reserve_tile0), call.opt_kind, call.structure,
                         call.precision, call.training, schedule, bool(call.static_input), call.chips_used,
                         A.of_kind(call.assume, "codelet", "host"), rates)

    try:
        choice = compiled(_compiled_schedule(call.choice))
    except OutOfTileMemory as e:  # name every program of this network that does fit, or that none does
        raise _with_programs_that_fit(e, net, call, compiled) from None
    program, assume = choice.program, call.assume
    unread = unread_by(program, assume)
    if unread:  # pinned, it would change nothing: refused, not dropped (as refuse_unread does for presets)
        readers = "; ".join(f"{n} is read by {', '.join(A.REGISTRY[n].codelets) or 'its framework call'}"
                            for n in unread)
        raise ConfigError(*join(*(Param(n, key="assume." + n) for n in unread), sep=", "),
                          f": this program ({program.plan.schedule} schedule) runs no codelet and makes no host call "
                          f"that reads it, so it would change nothing ({readers}); drop it, or run a schedule that uses "
                          f"it", remedies=[Param(n, key="assume." + n, action="drop") for n in unread])
    return choice


def _with_programs_that_fit(error: OutOfTileMemory, net: Network, call: _Call, compiled) -> OutOfTileMemory:
    """``error`` with the other programs of this network that fit the chip (each compiled and checked), or
    the note that none does."""
    fit = []
    for name, _ in other_programs(call.structure, net.sizes, net.capacities, call.precision, call.choice.schedule,
                                  net.overflow == "random"):
        try:
            compiled(None if name == "dense" else name)
        except MimdsimError:
            continue
        fit.append(name)
    tail = (("the other programs that fit: ", *join(*(Param("schedule", n) for n in fit), sep=", ")) if fit else
            ("no other program of this network fits either",))
    out = error.prefixed()
    out.parts = join(*error.parts, f" That is the {call.choice.schedule} program; ", *tail)
    Exception.__init__(out, render(out.parts))
    return out


def _compiled_schedule(choice: ProgramChoice) -> str | None:
    """The schedule the compiler is given: the chosen one (None lets a dense=True network lower its own)."""
    return None if choice.schedule == "dense" else choice.schedule


def _work_source(net: Network, call: _Call, program: Program):
    """Stage 3: where the run's work counts come from: the numerics on the inputs, or draws from the rates."""
    L = net.num_layers
    if call.execution:
        source_class = ExecutionSource
        if program.plan.schedule == "poptorch":
            from .sources.poptorch import PoptorchExecutionSource as source_class
        return source_class(program, net, call.x, call.y, seed=call.seed, optimizer=call.optimizer)
    return _rates(net, call).source(program, net.sizes, net.capacities)


def _rates(net: Network, call: _Call) -> Rates:
    """A rate-driven run's rates (input first), seed and overflow policy: what it draws and what its
    placement is scored at."""
    L = net.num_layers
    act = check_fractions("activity", call.activity, L)
    cand = check_fractions("candidate_activity", act if call.candidate_activity is None else call.candidate_activity, L)
    inp = check_fractions("input_activity", act[0] if call.input_activity is None else call.input_activity, 1)
    return Rates(tuple(inp + act), (0.0,) + tuple(cand), int(call.seed),
                 (net.input_overflow == "random", net.overflow == "random"))


def _run_and_band(call: _Call, program: Program, source, *, timeline, progress, band) -> Report:
    """Stage 4: the engine runs the program against the source; the band re-costs what it recorded."""
    assume = call.assume
    recorded = [] if band else None
    report = run_program(program, source, timeline=timeline, progress=progress, record=recorded,
                         pinned=A.of_kind(assume, "codelet", "host"))
    if band:
        report.uncertainty = chip_band(program, report, recorded, assume)
    return report


def _add_layers_and_placement(report: Report, choice, source, why, others) -> None:
    """Stage 5: the workload's report sections: per-layer spike statistics, the placement and its search,
    the program that ran and why (``schedule_reason``), and the others the network could run."""
    program = choice.program
    report.layers, report.placement = layer_statistics(program, source.stats), placement(program)
    report.placement["schedule_reason"] = why
    report.placement["other_programs"] = [{"schedule": name, "about": about} for name, about in others]
    if choice.searched:
        report.placement["search"] = [c.describe() for c in choice.candidates[:3]]


def _add_energy(call: _Call, report: Report, program: Program) -> None:
    """Stage 6: the energy of the step, from the report's counts."""
    report.energy = chip_energy(report, program.system, A.of_kind(call.assume, "energy"))


def _add_notes(net: Network, call: _Call, report: Report, choice, source, activity_source=None) -> None:
    """Stage 7: what the reader should know about the run: idle chips, assumed rates, the program's
    number format, layers the step never reaches or that never spiked (those also warn)."""
    program, system, T, L = choice.program, call.system, call.T, net.num_layers
    idle = idle_chips_note(system.chips, program.system.chips, program.mapping.tiles_used, system.chip.tiles,
                           searched=choice.searched)
    if idle:  # more chips asked for than the layers reach: say so, never silently the one-chip answer
        report.notes.append(idle)
    note = workers_note(system.chip)
    if note:
        report.notes.append(note)
    if not call.execution:  # capacity (max activity) and firing rate are different numbers: say which was assumed
        pct = lambda v: ", ".join(f"{100 * a:.3g}%" for a in v)  # noqa: E731
        if activity_source:  # measured, not assumed: say where (the mode heads simulate's and compare's tables)
            report.mode = "rate-driven, measured rates"
            report.notes.append(
                f"rate-driven with measured rates: firing rates per layer (input first) {pct(source.activity)} and "
                f"gradient-candidate rates {pct(source.candidate[1:])} reproduce the mean list fills of "
                f"{activity_source}; list capacities K = {', '.join(map(str, net.capacities))}")
    if not call.execution and not activity_source:
        report.notes.append(Message(
            f"rate-driven: assumed firing rates per layer (input first) {pct(source.activity)} and gradient-candidate "
            f"rates {pct(source.candidate[1:])}; list capacities K = {', '.join(map(str, net.capacities))} (max "
            f"activity); run with ", Param("inputs", key="run.execute", setting_value=True, python="inputs="),
            " for rates from the dynamics"))
    late = [l for l in range(1, L + 1) if net.delay * (l - 1) >= T]  # the pipelined delay: input from step l-1
    if call.choice.schedule == "fused" and call.precision != "fp32" and call.choice.why.startswith("forced"):
        report.notes.append(Message(f"{call.precision} runs the fused program (the published op is fp32 only), so a "
                                    f"gain over the published program's fp32 step mixes the number format with the "
                                    f"program; ", Param("schedule", "fused"), ", ", Param("precision", "fp32"),
                                    " holds the program fixed"))
    if late:
        report.notes.append(Message(f"layer(s) {', '.join(map(str, late))} receive no input within T = {T} steps (with "
                                    f"the inter-layer delay of 1, layer l's first input arrives at step l-1): they stay "
                                    f"silent; use ", Param("timesteps"), f" >= {L} to reach them"))
    if call.execution:  # a silent layer times nothing and trains nothing: say so, naming it
        silent = [ly["layer"] for ly in report.layers[1:] if ly["spikes"] == 0 and net.specs[ly["layer"] - 1].spiking
                  and ly["layer"] not in late]
        if silent:
            msg = Message(f"layer(s) {', '.join(map(str, silent))} never spiked in this step: they pass no spikes and "
                          f"no gradient; raise the input rate or the initial activity (",
                          Param("init_activity", key="run.input_activity", python="Network.feedforward(init_activity="
                                "...), mimdsim.training.calibrate_activity"),
                          "; the initial weights target half of ", Param("max_activity"), "; ",
                          Param("weight_scale", shown="S"), " is the fan-in rule, docs/user-guide.md)")
            report.notes.append(msg)
            warnings.warn(msg, stacklevel=3)  # at simulate's caller
        elif call.training and source.grads is not None and not any(np.any(g) for g in source.grads):
            msg = "every weight gradient is zero in this step: no listed neuron received a surrogate gradient"
            report.notes.append(msg)
            warnings.warn(msg, stacklevel=3)


def workers_note(chip) -> str | None:
    """What a worker count other than the preset's means: a tile issues one instruction per cycle, round robin
    over its workers, so more workers split the work finer at the same issue rate and add per-worker overhead."""
    from ...arch import PRESETS, chip as preset
    if chip.name not in PRESETS or chip.workers == preset(chip.name).workers:
        return None
    base = preset(chip.name).workers
    return (f"workers = {chip.workers} ({chip.name}: {base}): a tile issues one instruction per cycle, round robin "
            f"over its workers (barrel threading), so each of {chip.workers} workers issues every {chip.workers} "
            f"cycles and a vertex costs {chip.workers} x its busiest worker's instructions: "
            f"{'more' if chip.workers > base else 'fewer'} workers change how the work divides (idle issue slots where "
            f"it divides unevenly), never how many instructions a tile runs per cycle (docs/cost-model.md, 1.2); a "
            f"faster tile is a higher clock_hz")


def _refuse_overflow(report: Report) -> None:
    """``strict=True``: a spike list that overflowed is an error."""
    over = [(ly["layer"], ly["dropped_spikes"]) for ly in report.layers if ly["dropped_spikes"]]
    if over:
        raise CapacityOverflow(
            "spike lists overflowed: " + ", ".join(f"layer {l}: {d} spikes dropped" for l, d in over)
            + "; raise the capacity (max_activity) of those layers or run with strict=False")


def layer_statistics(program: Program, stats) -> list[dict]:
    """The report's per-layer rows: placement, capacity, activity, kept and dropped spikes."""
    T, B = program.timesteps, program.batch_size
    plan, layout = program.plan, program.mapping
    layers = []
    fc_tiles = {m.name: m.tiles for m in plan.matmuls}  # poptorch: a layer's forward matmul spans these tiles
    for l, (n, cap) in enumerate(zip(plan.sizes, plan.capacities)):
        p = layout.layers[l - 1] if l else None
        steps = T * B
        layers.append({
            "layer": l, "neurons": n, "tiles": fc_tiles.get(f"L{l}.fc", p.tiles if p else 0),
            "first_tile": p.first_tile if p else None, "chip": p.chip if p else None,
            "capacity": cap,
            "activity": float(stats.spikes[l].sum() / (n * steps)),
            "listed_fraction": float(stats.listed[l].sum() / (n * steps)),
            "spikes": int(stats.spikes[l].sum()),
            "kept_spikes": int(stats.kept[l].sum()),
            "dropped_spikes": int(stats.dropped_spikes[l].sum()),
            "dropped_candidates": int(stats.dropped_candidates[l].sum()),
            "overflowed_lists": int((stats.dropped_spikes[l] > 0).sum()),
        })
    return layers


def placement(program: Program) -> dict:
    lay, plan = program.mapping, program.plan
    if plan.matmuls:  # the PopTorch-built program maps every tensor over the tiles of one chip
        used = max(max(m.tiles for m in plan.matmuls), program.system.chip.tiles)
        return {"tiles_used": used, "chips_used": 1, "optimizer": plan.optimizer, "precision": program.meta.precision,
                "delay": plan.delay, "program": "training" if program.meta.training else "inference",
                "schedule": plan.schedule, "host_io": "one step per host call (PopTorch deviceIterations=1)",
                "matmul_plan": [m.describe() for m in plan.matmuls]}
    return {"tiles_used": lay.tiles_used, "chips_used": lay.chips_used, "neurons_per_tile": lay.neurons_per_tile,
            "reserved_tiles": list(lay.reserved_tiles), "optimizer": plan.optimizer,
            "precision": program.meta.precision, "delay": plan.delay,
            "program": "training" if program.meta.training else "inference", "schedule": plan.schedule,
            **({"weight_grad_copies": plan.weight_grad_copies} if plan.weight_grad_copies else {})}
