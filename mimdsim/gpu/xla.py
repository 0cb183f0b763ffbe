"""How XLA:GPU runs one compiled executable: its thunks issued by one host thread onto one stream, its
while loops as ForThunks or WhileThunks, and host copies (docs/gpu-model.md, "`keras-rnn-xla`").
Knows no workload: a program is a sequence of :class:`Kernel` s, :class:`Loop` s and :class:`HostCopy` s.

XLA (TensorFlow 2.8-2.10, the era of the sparse-BPTT study's GPU runs) turns an executable into a thunk
sequence that ``GpuExecutable`` walks on the host, each kernel thunk a ``cuLaunchKernel`` onto the main
stream (stream assignment puts work on other streams only in the entry computation,
tensorflow/compiler/xla/service/gpu/stream_assignment.cc ``AssignStreams``). A while loop becomes

* a **ForThunk** when its trip count is known (``IrEmitterUnnested::HandleWhile`` builds it when
  ``WhileLoopTripCountAnnotator`` found one): the host runs the body's thunks ``trip_count`` times and
  never waits (for_thunk.cc ``ForThunk::ExecuteOnStream``);
* a **WhileThunk** otherwise: per evaluation the host runs the condition's thunks, copies the 1-byte
  predicate to a host ``bool`` and blocks until the stream drains (while_thunk.cc
  ``WhileThunk::ExecuteOnStream``: ``ThenMemcpy`` then ``BlockHostUntilDone``), then issues the body; a
  loop of T iterations evaluates its condition T + 1 times.

The step is costed as a host timeline over one stream (:func:`mimdsim.gpu.framework.synchronised_timeline`):
the host issues op i ``issue_s`` after op i - 1 (``FrameworkSpec.kernel_issue_s``, on the framework's host CPU),
the device runs it ``kernel_seconds + gap_s`` after both it is issued and the previous op ended, and a
WhileThunk's predicate copy is a synchronisation: the device idles for ``loop_sync_s`` (the copy and the
host waking from its wait) and then for the next op's issue.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..arch.gpu import GpuSpec
from ..checks import check_choice, check_int
from .framework import FrameworkSpec, synchronised_timeline
from .model import Kernel, kernel_seconds

THUNKS = ("for", "while")
OP_KINDS = ("compute", "launch", "sync", "host")  # kernel time; waits for the host's issue; loop syncs; host work


@dataclass(frozen=True)
class Loop:
    """An XLA while loop: ``body`` (each kernel ``count`` times per iteration) run ``trips`` times as a
    ``thunk`` ("for": ForThunk, no waits; "while": WhileThunk, ``condition`` and a predicate sync per
    evaluation, ``trips`` + 1 evaluations)."""

    name: str
    phase: str
    trips: int
    body: tuple
    thunk: str = "while"
    condition: tuple = ()

    def __post_init__(self):
        check_int("trips", self.trips, low=0, where=f"loop {self.name!r}: ")
        check_choice("thunk", self.thunk, THUNKS, where=f"loop {self.name!r}: ")

    @property
    def waits(self) -> int:
        """Host waits per run of the loop: one per condition evaluation of a WhileThunk."""
        return self.trips + 1 if self.thunk == "while" else 0


@dataclass(frozen=True)
class HostCopy:
    """A copy between host and device of ``nbytes`` that the host waits for (an input of the executable
    copied from pageable memory before it runs)."""

    name: str
    phase: str
    nbytes: float


@dataclass
class Timeline:
    """Every op of one step in issue order, as ``order`` (indices into the distinct ops: their ``names``,
    ``phases`` and ``kinds`` — "compute" kernels, "sync" predicate copies, "host" copies, "call" the host's
    per-step work before the executable), with each op's device seconds and the seconds the device waited
    for the host before it."""

    order: np.ndarray
    names: np.ndarray  # per distinct op
    phases: np.ndarray
    kinds: np.ndarray
    device_s: np.ndarray  # per op in issue order
    wait_s: np.ndarray
    seconds: float
    kernels: int  # kernel launches per step
    host_waits: int  # times per step the host blocks until the stream drains

    def summary(self, field: str) -> dict:
        """``{value of field: {"count", "phase", "compute", "launch", "sync", "host"}}`` over the ops, ``field``
        "name", "phase" or "kind": kernel and copy time by kind, the device's waits for the host's issue as
        "launch" (for the per-step call, "host")."""
        values = {"name": self.names, "phase": self.phases, "kind": self.kinds}[field]
        keys, code = np.unique(values.astype(str), return_inverse=True)
        per_op = code[self.order]
        kind = self.kinds.astype(str)[self.order]

        def total(weights):
            return np.bincount(per_op, weights=weights, minlength=len(keys))

        call = kind == "call"
        parts = {"count": total(np.ones(per_op.size)),
                 **{k: total(np.where(kind == k, self.device_s, 0.0)) for k in ("compute", "sync")},
                 "launch": total(np.where(call, 0.0, self.wait_s)),
                 "host": total(np.where(kind == "host", self.device_s, 0.0) + np.where(call, self.wait_s, 0.0))}
        phase_of = dict(zip(values.astype(str), self.phases.astype(str)))
        return {key: {"count": int(parts["count"][i]), "phase": phase_of[key],
                      **{k: float(parts[k][i]) for k in OP_KINDS}} for i, key in enumerate(keys)}


def _op_indices(program, table: list) -> np.ndarray:
    """The step's ops in issue order as indices into ``table`` (one row per distinct op: name, phase, kind,
    kernel or bytes, whether the host waits after it); loops repeat their body's indices, not Python objects."""
    def row(entry) -> int:
        table.append(entry)
        return len(table) - 1

    parts = []
    for part in program:
        if isinstance(part, Kernel):
            parts.append(np.full(int(part.count), row((part.name, part.phase, "compute", part, False))))
        elif isinstance(part, HostCopy):
            parts.append(np.array([row((part.name, part.phase, "host", part.nbytes, True))]))
        elif isinstance(part, Loop):
            body = _op_indices(part.body, table)
            if part.thunk == "for":
                parts.append(np.tile(body, part.trips))
            else:
                cond = np.append(_op_indices(part.condition, table),
                                 row((f"{part.name}.predicate", part.phase, "sync", None, True)))
                parts.append(np.concatenate([np.tile(np.concatenate([cond, body]), part.trips), cond]))
        else:
            raise TypeError(f"an XLA program holds Kernel, Loop and HostCopy parts, not {type(part).__name__}")
    return np.concatenate(parts).astype(int) if parts else np.zeros(0, int)


def step_timeline(program, spec: GpuSpec, precision: str, fw: FrameworkSpec) -> Timeline:
    """The step of ``program`` (a sequence of Kernel, Loop, HostCopy) on ``spec`` as XLA:GPU issues it:
    each kernel ``fw.kernel_issue_s`` of host time (already on ``fw``'s host: :func:`~.framework.framework`), ``kernel_seconds + fw.kernel_gap_s`` on
    the device; each WhileThunk evaluation a predicate copy the host waits for (``fw.loop_sync_s``);
    each host copy ``nbytes / fw.input_bytes_per_second``, waited for."""
    table: list = [("step.call", "io", "call", None, False)]  # the host's work before the executable
    order = np.concatenate([[0], _op_indices(program, table)]).astype(int)
    kinds_t = np.array([r[2] for r in table], dtype=object)
    if not fw.input_bytes_per_second and (kinds_t == "host").any():
        raise ValueError(f"framework {fw.name!r} has no input_bytes_per_second to cost a host copy")
    device_t = np.array([kernel_seconds(what, spec, precision) + fw.kernel_gap_s if kind == "compute"
                         else fw.loop_sync_s if kind == "sync" else what / fw.input_bytes_per_second if kind == "host"
                         else 0.0 for _, _, kind, what, _ in table])
    issue_t = np.where(kinds_t == "compute", fw.kernel_issue_s, np.where(kinds_t == "call", fw.step_call_s, 0.0))
    syncs_t = np.array([r[4] for r in table], dtype=bool)
    kinds = kinds_t[order]
    total, wait = synchronised_timeline(issue_t[order], device_t[order], syncs_t[order])
    return Timeline(order, np.array([r[0] for r in table], dtype=object), np.array([r[1] for r in table], dtype=object),
                    kinds_t, device_t[order], wait, total, int((kinds == "compute").sum()), int((kinds == "sync").sum()))


def kernels_per_step(program) -> list:
    """Every kernel of ``program`` with ``count`` its launches per step (loop bodies times their trips, a
    WhileThunk's condition times its evaluations): what the energy model reads."""
    out = []
    for part in program:
        if isinstance(part, Kernel):
            out.append(part)
        elif isinstance(part, Loop):
            evaluations = part.trips + 1 if part.thunk == "while" else 0
            for k, times in [(k, part.trips) for k in part.body] + [(k, evaluations) for k in part.condition]:
                if times:
                    out.append(dataclasses.replace(k, count=k.count * times))
    return out
