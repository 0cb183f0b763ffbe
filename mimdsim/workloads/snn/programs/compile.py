"""Which program runs a network: :func:`compile_program` maps the network, checks it fits, picks
the program for the network and schedule (the published op, the hand-fused lists, dense
activations or PopTorch's), lowers it and plans its memory; :func:`forward_only` turns a
training program into inference. This module imports the programs; none of them imports it.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ....compiler.memory import add_code
from ....errors import ConfigError, Message, Param
from ....program import Loop, Program, ProgramMeta, TensorAlloc
from ....snn.network import Structure, describe_sizes
from ....checks import check_choice
from ..mapping import check_layers_fit, map_network, trim_idle_chips
from ..step import PRECISIONS, check_step
from . import dense, fused, poptorch, published
from .lowering import LayerContext, SnnPlan, default_structure

SCHEDULES = ("published", "fused", "poptorch")
# One line per program, as the report lists the programs that did not run
DESCRIPTIONS = {
    "published": "the study's sparse op as built (Finkbeiner et al.'s graphcore_snn, counted from its source)",
    "fused": "mimdsim's hand-fused spike-list supersteps (what hand-optimised code could reach)",
    "poptorch": "the dense program PopTorch builds from snnTorch (poplin-planned matmuls over the chip)",
    "dense": "mimdsim's dense-activation program (a matmul per step; dense=True networks)",
}
# snnTorch's class of each neuron model (recurrent variants: its R-classes)
SNNTORCH_CLASSES = {("leaky", False): "Leaky", ("leaky", True): "RLeaky", ("synaptic", False): "Synaptic",
                    ("synaptic", True): "RSynaptic", ("alpha", False): "Alpha", ("lapicque", False): "Lapicque"}


@dataclasses.dataclass(frozen=True)
class ProgramChoice:
    """The program a step runs and why: the model's default, asked for, or forced by another setting."""
    schedule: str
    why: Message


def model_name(st: Structure) -> str:
    """The network's neuron model as its software names it: the study's sparse LIF, or snnTorch's classes."""
    if all(published.is_published_neuron(s) for s in st.layers):
        return "the study's sparse LIF"
    names = dict.fromkeys(SNNTORCH_CLASSES.get((s.model, s.recurrence != "none"), s.model) for s in st.layers)
    return "snnTorch " + "/".join(names)


def choose_program(st: Structure, sizes, capacities, *, precision="fp32", schedule=None,
                   random_overflow=False) -> ProgramChoice:
    """The program a network runs: ``schedule`` when asked, else what the model's own software builds
    (the published sparse LIF: the study's op; snnTorch and NIR models: what PopTorch builds from
    snnTorch), unless a setting forces another (named with it)."""
    if schedule is not None:
        return ProgramChoice(schedule, Message("asked with ", Param("schedule", schedule)))
    if any(st.dense):
        if any(s.recurrence == "all-to-all" for s in st.layers):  # the dense-activation program refuses it
            return ProgramChoice("poptorch", Message("forced by ", Param("dense", True, python="Network.build(dense=True)"),
                                                     " with all-to-all recurrence, which the dense-activation program "
                                                     "refuses"))
        return ProgramChoice("dense", Message("forced by ", Param("dense", True, python="Network.build(dense=True)")))
    model = model_name(st)
    if published.runs_published(st):
        if precision != "fp32":
            return ProgramChoice("fused", Message("forced by ", Param("precision", precision),
                                                  ": the published op is fp32 only"))
        if random_overflow:
            return ProgramChoice("fused", Message("forced by ", Param("overflow", "random"), ": the published op "
                                                  "keeps the lowest ids of an overflowing list"))
        return ProgramChoice("published", Message(f"default for {model}: the study's op as built"))
    if tuple(capacities) != tuple(sizes):  # PopTorch's dense program carries every neuron
        return ProgramChoice("fused", Message("forced by ", Param("max_activity"), " or ",
                                              Param("input_capacity", key="model.input_capacity"), " (spike lists "
                                              f"shorter than the layers): what PopTorch builds for {model} lists "
                                              "every neuron"))
    return ProgramChoice("poptorch", Message(f"default for {model}: what PopTorch builds"))


def other_programs(st: Structure, sizes, capacities, precision, ran: str, random_overflow=False) -> tuple:
    """``(name, description)`` of every other program this network could run with ``--schedule``."""
    runs = ["fused"] if not any(st.dense) else ["dense"]
    if published.runs_published(st) and precision == "fp32" and not random_overflow:
        runs.insert(0, "published")
    if tuple(capacities) == tuple(sizes) and not published.runs_published(st):
        runs.append("poptorch")
    return tuple((name, DESCRIPTIONS[name]) for name in runs if name != ran)


def compile_program(sizes, capacities, system, *, timesteps: int, batch_size: int,
                    neurons_per_tile=None, reserve_tile0=True, optimizer="adam",
                    scan_chunk=64, structure: Structure | None = None, precision: str = "fp32",
                    training: bool = True, schedule: str | None = None, static_input: bool = False,
                    weight_grad_copies: int | None = None, random_overflow: bool = False) -> Program:
    """Map, plan memory and lower one training step. ``sizes``/``capacities`` include the input.

    ``schedule``: ``"published"`` lowers the program the published study ran (its op as built,
    :mod:`.published`), ``"fused"`` mimdsim's hand-fused spike-list supersteps (:mod:`.fused`;
    what a hand-optimised implementation could reach), ``"poptorch"`` the dense program PopTorch
    builds from snnTorch (:mod:`.poptorch`: poplin-planned matmuls over the whole chip). None picks
    what the model's own software builds (:func:`choose_program`): ``"published"`` for the published
    sparse LIF, ``"poptorch"`` for snnTorch and NIR models, unless a setting forces another
    (fp16, ``random_overflow``, spike lists shorter than the layers). Dense activations (``structure.dense``) have their own program, except with all-to-all
    recurrence, which that program refuses: then ``"poptorch"``.

    ``structure`` (``Network.structure``) gives each layer's neuron model, bias, the
    inter-layer delay and the loss; None means the published sparse LIF (delay 1,
    ce_count). ``precision`` ("fp32" or "fp16") sets the bytes of every value.
    ``training=False`` lowers inference instead: the same forward pass and loss, no
    backward pass or update, and only what the forward pass keeps (:func:`forward_only`).
    ``weight_grad_copies`` (``"published"`` only): 6 forces the op's per-worker weight-gradient
    copies, 1 its single-thread vertex; None takes six where the whole program fits, else one.
    ``static_input=True`` (``"poptorch"`` only): the same input at every step, streamed once
    (``[B, n_in]``), as the study fed one image per sample to ``fc1`` at every step.
    """
    check_step(timesteps, batch_size, optimizer)
    check_choice("precision", precision, tuple(PRECISIONS))
    chip = system.chip
    check_layers_fit(sizes, system, training=training, optimizer=optimizer, reserve_tile0=reserve_tile0,
                     bytes_per_value=PRECISIONS[precision])  # from shapes, before any per-tile array
    layout = map_network(sizes[1:], chips=system.chips, tiles_per_chip=chip.tiles,
                         neurons_per_tile=neurons_per_tile, reserve_tile0=reserve_tile0)
    system, layout = trim_idle_chips(system, layout)  # chips no layer reaches are not simulated
    L = len(layout.layers)
    st = structure if structure is not None else default_structure(L)
    if len(st.layers) != L:
        raise ConfigError(f"structure describes {len(st.layers)} layers; the sizes give {L}")
    if schedule is not None and schedule not in SCHEDULES:
        raise ConfigError(Param("schedule", schedule), f" is not one of {', '.join(map(repr, SCHEDULES))}: 'published' "
                          f"is the study's op as built, 'fused' mimdsim's hand-fused supersteps, 'poptorch' the dense "
                          f"program PopTorch builds", param=Param("schedule", schedule), limit=SCHEDULES)
    choice = choose_program(st, sizes, capacities, precision=precision, schedule=schedule,
                            random_overflow=random_overflow)
    schedule, reason = choice.schedule, choice.why
    if weight_grad_copies is not None and (schedule != "published" or weight_grad_copies not in (1, 6)):
        raise ConfigError(f"weight_grad_copies={weight_grad_copies!r}: the published op's weight gradient runs "
                          f"6 per-worker copies or 1 single-thread vertex; it applies to ", Param("schedule", "published"),
                          " only (got ", Param("schedule", schedule), ")")
    if static_input and schedule != "poptorch":
        raise ConfigError(Param("static_input", True), " streams one input for every step, which only ",
                          Param("schedule", "poptorch"), " models; got ", Param("schedule", schedule))
    low = LayerContext(tuple(sizes), tuple(capacities), system, layout, st, int(timesteps), int(batch_size),
                       optimizer, precision)
    chunk, copies, matmuls = scan_chunk, None, ()
    if schedule == "poptorch":
        tensors, steps, loss_tile, matmuls = poptorch.lower(low, static_input=static_input)
    elif any(st.dense):
        tensors, steps, loss_tile = dense.lower(low)
        schedule, chunk = "dense", 64
    elif schedule == "published":
        tensors, steps, loss_tile, copies = published.lower(low, copies=weight_grad_copies)
    else:
        tensors, steps, loss_tile = fused.lower(low, scan_chunk)

    def assemble(tensors, steps, loss_tile, copies):
        program = Program(system, layout, low.T, low.B, tensors, steps,
                          ProgramMeta(describe_sizes(sizes), "snn", precision),
                          SnnPlan(tuple(sizes), tuple(capacities), st, optimizer, chunk, loss_tile,
                                  dense=any(st.dense), schedule=schedule, weight_grad_copies=copies,
                                  matmuls=matmuls, schedule_reason=reason))
        if not training:
            forward_only(program)
        add_code(program)
        return program

    program = assemble(tensors, steps, loss_tile, copies)
    if weight_grad_copies is None and copies is not None and copies > 1 and training and not fits(program):
        # the op's single-thread weight gradient, as the study's runs that cannot hold six copies
        program = assemble(*published.lower(low, copies=1))
    return program


def fits(program: Program) -> bool:
    """Whether every tile's planned bytes fit its SRAM."""
    return bool(np.all(program.tile_bytes() <= program.system.chip.sram_per_tile))


# What inference leaves out of a training program's memory plan: everything of the
# backward pass and the update, and the per-step histories that only BPTT reads back.
TRAINING_ONLY_CATEGORIES = ("gradients", "optimizer")
TRAINING_ONLY_SUFFIXES = (".dU_dI", ".grad_in", ".partials", ".reduce_buffers", ".recurrent_dS",
                          ".surrogate_rows", ".sliced_dS")  # the last two: the published program's backward


def forward_only(program: Program) -> None:
    """Turn a lowered training step into inference, in place: keep the io, forward and loss
    supersteps (the forward pass is the training one, so its cost is too); drop gradients,
    optimizer state and backward buffers; keep one step of every history (the state and the
    lists the next step reads) except the first layer's inputs, which the host streams in
    for all T steps at once."""
    T, L = program.timesteps, len(program.mapping.layers)
    # a per-step loss (ce_rate) or the membrane maximum reads the output layer's whole record; the
    # published program's sparse2dense, after the loop, reads the output's whole list history
    whole_output = program.plan.structure.readout.loss in ("ce_rate", "ce_max_membrane")
    whole_list = program.plan.schedule == "published"
    program.schedule = [s for s in program.schedule
                        if all(b.phase in ("io", "forward") for b in (s.body if isinstance(s, Loop) else (s,)))]
    kept = []
    for a in program.tensors:
        if a.category in TRAINING_ONLY_CATEGORIES or a.name.endswith(TRAINING_ONLY_SUFFIXES):
            continue
        streamed = a.layer == 1 and a.name.endswith(("input_list_history", "input_history"))
        one_step = a.category == "history" or a.name.endswith("list_history")
        whole = a.layer == L and (whole_output or (whole_list and a.name.endswith("list_history")))
        if one_step and not streamed and not whole:
            a = TensorAlloc(a.name, a.category, a.tiles, a.nbytes // T, a.layer)
        kept.append(a)
    program.tensors = kept
    program.meta = dataclasses.replace(program.meta, training=False)
