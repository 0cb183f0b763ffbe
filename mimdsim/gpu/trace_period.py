"""A T-step trace from traces of a few timesteps, where the op stream is verified periodic
(docs/gpu-model.md, "A long step from a short trace").

A training step's op stream is, phase by phase, a head, one timestep's ops repeated, and a tail: the
forward loop's first step differs (states created), the steps after it repeat, and the ops after the
loop (``stack`` of T records, the loss) have T in their shapes; the backward pass mirrors it. So
``periodic_trace(build, T)`` traces ``build(t)`` (a zero-argument step of ``t`` timesteps) at
``t = p, p + 1, p + 2`` (``probe``), and in each maximal run of one phase finds, by a diff, the
blocks of ops inserted per timestep (the loop's period; the T ``select`` s that unstack the records'
gradient) and how every op's shapes move with t (each dimension, and the length of a list operand such
as ``stack``'s, affine in t). The rule is then **verified**: it must predict the trace at ``p + 3`` op
for op (name, every shape and dtype, device work, sync, phase). Only then
is the T-step stream built by repeating the period; otherwise (a per-step op whose shape grows with
t, a data-dependent branch, any difference at all) the step is traced in full at T.
tests/test_trace_period.py compares the built stream with full traces op for op.
"""
from __future__ import annotations

import numpy as np

from .torch_trace import Trace, TracedOp, trace_torch

PROBES = 3  # probes at t = 3, 4, 5 build the rule (first step, repeating steps, last step); t = 6 checks it


def periodic_trace(build, timesteps: int, *, probe: int = PROBES, **labels) -> Trace:
    """The trace of ``build(timesteps)()``, built from traces at ``probe``, ``probe + 1``, ``probe + 2``
    timesteps and checked against ``probe + 3``; a full trace at ``timesteps`` where that check fails or
    T is small. ``labels``: ``trace_torch``'s keywords (``batch_size``, ``model``, ``libraries``,
    ``warmup``)."""
    T = int(timesteps)
    ts = (probe, probe + 1, probe + 2, probe + 3)
    if T <= ts[-1] + 2:
        return trace_torch(build(T), timesteps=T, **labels)
    probes = [trace_torch(build(t), timesteps=t, **labels) for t in ts[:3]]
    rule = stream_rule(probes, probe)
    if rule is not None:
        check = trace_torch(build(ts[3]), timesteps=ts[3], **labels)
        if _streams_equal(build_trace(rule, probes[0], ts[3]), check):
            out = build_trace(rule, probes[0], T)
            out.seconds_on_cpu = sum(p.seconds_on_cpu for p in probes) + check.seconds_on_cpu
            out.extrapolated_from = ts
            return out
    return trace_torch(build(T), timesteps=T, **labels)


def _streams_equal(a: Trace, b: Trace) -> bool:
    return len(a) == len(b) and bool((a.phase == b.phase).all()) and all(
        a.table[i] == b.table[j] for i, j in zip(a.sequence.tolist(), b.sequence.tolist()))


def _runs(trace: Trace):
    """(phase, start, end) of each maximal run of one phase."""
    ph = trace.phase
    if not ph.size:
        return []
    cut = np.flatnonzero(ph[1:] != ph[:-1]) + 1
    starts, ends = np.concatenate([[0], cut]), np.concatenate([cut, [ph.size]])
    return [(int(ph[s]), int(s), int(e)) for s, e in zip(starts, ends)]


def _signature(op: TracedOp):
    """What must match for two ops to be one op at two T: all but the dimensions and list lengths."""
    def kinds(operands):
        return tuple(dict.fromkeys((d, len(s)) for s, d in operands))
    return op.name, op.device, op.sync, op.weights, kinds(op.inputs), kinds(op.outputs)


def _diff(x, y):
    """``y`` as ``x`` with blocks inserted: [("equal", x ops, y ops) | ("insert", y ops)], or None. Ops
    are matched exactly first; where they differ, by :func:`_signature` (the ops whose shapes hold T)."""
    out = []
    for tag, i1, i2, j1, j2 in _opcodes(x, y, lambda o: o):
        if tag == "replace":
            inner = [(t, i1 + a1, i1 + a2, j1 + b1, j1 + b2) for t, a1, a2, b1, b2 in
                     _opcodes(x[i1:i2], y[j1:j2], _signature)]
        else:
            inner = [(tag, i1, i2, j1, j2)]
        for t, a1, a2, b1, b2 in inner:
            if t not in ("equal", "insert"):
                return None
            block = ("equal", x[a1:a2], y[b1:b2]) if t == "equal" else ("insert", y[b1:b2])
            if out and out[-1][0] == t:  # one block of each kind between the others
                block = (t,) + tuple(u + v for u, v in zip(out.pop()[1:], block[1:]))
            out.append(block)
    return out


def _opcodes(x, y, key):
    from difflib import SequenceMatcher

    return SequenceMatcher(None, [key(o) for o in x], [key(o) for o in y], autojunk=False).get_opcodes()


def stream_rule(probes, t: int):
    """How the stream grows with the timesteps, from traces at ``t``, ``t + 1``, ``t + 2``: per phase run,
    its segments: ("fixed", templates) and ("period", templates), a period inserted once per timestep.
    None where the three do not line up that way."""
    runs = [_runs(p) for p in probes]
    if len({tuple(r[0] for r in rs) for rs in runs}) != 1 or len({p.optimizer_calls for p in probes}) != 1:
        return None
    rule = []
    for k in range(len(runs[0])):
        x, y, z = ([p.table[i] for i in p.sequence[rs[k][1]:rs[k][2]].tolist()] for p, rs in zip(probes, runs))
        xy, yz = _diff(x, y), _diff(y, z)
        if xy is None or yz is None or [b[0] for b in xy] != [b[0] for b in yz]:
            return None
        segments = []
        for a, b in zip(xy, yz):
            if a[0] == "equal":
                tms = [_template(u, v, t) for u, v in zip(a[1], a[2])]
            elif len(a[1]) != len(b[1]):
                return None
            else:  # the block inserted from t to t + 1, paired with the one from t + 1 to t + 2
                tms = [_template(u, v, t + 1) for u, v in zip(a[1], b[1])]
            if any(tm is None for tm in tms):
                return None
            segments.append(("fixed" if a[0] == "equal" else "period", tms))
        rule.append((runs[0][k][0], segments))
    return rule


def build_trace(rule, like: Trace, T: int) -> Trace:
    """The trace the rule gives at ``T`` timesteps (labels and parameters from ``like``, the first probe)."""
    table, index, seqs, phases = [], {}, [], []

    def ids(ops):
        out = []
        for op in ops:
            i = index.get(op)
            if i is None:
                i = index[op] = len(table)
                table.append(op)
            out.append(i)
        return np.array(out, np.int32)

    reps = T - like.timesteps  # a period per timestep beyond the first probe's
    for phase, segments in rule:
        s = np.concatenate([ids(_at(tm, T) for tm in tms) if kind == "fixed" else
                            np.tile(ids(_at(tm, T) for tm in tms), reps) for kind, tms in segments] or
                           [np.zeros(0, np.int32)])
        seqs.append(s)
        phases.append(np.full(s.size, phase, np.int8))
    out = Trace(table=table, sequence=np.concatenate(seqs) if seqs else np.zeros(0, np.int32),
                phase=np.concatenate(phases) if phases else np.zeros(0, np.int8), optimizer_calls=like.optimizer_calls,
                versions=dict(like.versions), timesteps=T, batch_size=like.batch_size, model=like.model,
                gemm_weight_bytes=like.gemm_weight_bytes)
    # tensor ids: the probe's where no period repeats (the same ops, one for one, T only in their shapes);
    # a repeated period would need its tensors renumbered per repeat, which is not built: unknown (None)
    ids = getattr(like, "tensor_ids", None)
    if ids is not None and all(kind == "fixed" for _, segments in rule for kind, _ in segments) and \
            len(out) == len(like) and sum(len(op.inputs) + len(op.outputs) for op, _ in out.ops()) == ids.size:
        out.tensor_ids = ids.copy()
    return out


# A template is an op (constant in t) or ("affine", op, inputs template, outputs template, t0): the op at t0
# with each dimension d0 + slope * (t - t0) and each repeated list operand t-affine in length.

def _template(u: TracedOp, v: TracedOp, t: int):
    if u == v:
        return u
    if (u.name, u.device, u.sync, u.weights) != (v.name, v.device, v.sync, v.weights):
        return None
    ins, outs = _operands(u.inputs, v.inputs), _operands(u.outputs, v.outputs)
    if ins is None or outs is None:
        return None
    return ("affine", u, ins, outs, t)


def _operands(x: tuple, y: tuple):
    """Template of a tuple of (shape, dtype): per operand, each dimension (d0, slope); or, where the
    count differs, one operand repeated (count0, slope)."""
    if len(x) == len(y):
        out = []
        for (sx, dx), (sy, dy) in zip(x, y):
            if dx != dy or len(sx) != len(sy):
                return None
            out.append((dx, tuple((int(a), int(b) - int(a)) for a, b in zip(sx, sy))))
        return ("each", tuple(out))
    if not x or len(set(x) | set(y)) != 1:
        return None
    return ("repeat", x[0], len(x), len(y) - len(x))


def _at(tm, T: int):
    if isinstance(tm, TracedOp):
        return tm
    _, op, ins, outs, t0 = tm
    return TracedOp(op.name, _operands_at(ins, T - t0), _operands_at(outs, T - t0), op.device, op.sync, op.weights)


def _operands_at(tm, dt: int) -> tuple:
    if tm[0] == "each":
        return tuple((tuple(d0 + s * dt for d0, s in dims), dtype) for dtype, dims in tm[1])
    _, one, n0, slope = tm
    return (one,) * (n0 + slope * dt)
