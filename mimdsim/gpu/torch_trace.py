"""Trace a PyTorch training step: the aten ops the framework dispatches, their shapes, phases and host
synchronisations (docs/gpu-model.md, "trace → cost → report").

``trace_torch(step)`` runs ``step()`` (a zero-argument callable: forward over T steps, loss, backward,
optimizer step, whatever the user's code does) once on the CPU under a ``TorchDispatchMode``, which
sees every aten op below autograd, including autograd's backward ops and a custom
``autograd.Function``'s Python backward, and a ``TorchFunctionMode``, which sees the Tensor methods
that never reach the dispatcher on a CPU tensor (``.cpu()``, ``.numpy()``, ``.tolist()``) and
``Tensor.backward`` (whose seed ``ones_like`` runs before autograd's engine starts).

Rules (each decided at dispatch, from the framework's own state, not from op names):

* **phase**: ``backward`` while autograd's engine runs a node (``torch._C._current_autograd_node()``)
  or inside ``Tensor.backward``; ``optimizer`` inside ``torch.optim.Optimizer.step`` (the global step
  hooks of ``torch.optim.optimizer``); ``update`` any other op after the step's last backward pass
  (``zero_grad``, a hand-written update, the loss's ``.item()``); ``forward`` otherwise. Thread
  identity would not do: on the CPU autograd's engine runs on the caller's thread.
* **booked phase**: ops dispatched inside ``with booked_to("backward"):`` that the rules above put in
  the forward pass or the update are booked to the named phase instead: for a benchmark that times a
  call by hand, e.g. ``loss = output.sum(); loss.backward()`` timed together as its "backward" (the
  trace cannot see where a timed call starts; the step's author can).
* **device work**: every op launches device work except views and metadata ops (``NO_KERNEL``) and,
  inside ``Optimizer.step``, ops whose tensors are all 0-dim: torch.optim keeps ``state["step"]`` on
  the CPU unless ``capturable`` or ``fused`` (its ``_get_value`` reads it with ``.item()``), so that
  arithmetic and that ``.item()`` run on the host, without a kernel or a sync.
* **meta device**: a step built on PyTorch's ``meta`` device dispatches the same ops with shapes only
  and computes nothing; its ``.item()`` (``_local_scalar_dense``) is recorded as a sync and answers 0, so
  a step whose control flow reads a tensor's value must be traced on the CPU.
* **host synchronisation**: ``aten._local_scalar_dense`` (``.item()``, ``bool(t)``, ``if t:``,
  ``int(t)``), ``aten.nonzero`` (the host needs the count: also boolean indexing, ``masked_select``),
  and ``Tensor.cpu()`` / ``.numpy()`` / ``.tolist()`` (a copy to the host). On a CPU trace every tensor
  is taken to live on the device except the optimizer's step counters above.

The trace holds shapes, not tensors: each distinct (op, input shapes and dtypes, output shapes and
dtypes, device work, sync) is stored once, and the op stream is an array of indices into that table
with one phase byte per op, so a long trace of a repeating loop stays small. Which tensor each operand
is, is one int32 per operand (``Trace.tensor_ids``: a view and its base are one tensor), for a
compiled costing that needs to know which results a fused kernel keeps inside (:mod:`.trace_compile`).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

PHASES = ("forward", "backward", "optimizer", "update")  # the last two are the report's update phase
# Ops that launch no kernel on a GPU: views, metadata, allocation without initialisation, profiler marks.
NO_KERNEL = frozenset({
    "view", "_unsafe_view", "_reshape_alias", "reshape", "t", "transpose", "permute", "expand", "expand_as",
    "as_strided", "detach", "alias", "unsqueeze", "squeeze", "slice", "select", "narrow", "split",
    "split_with_sizes", "unbind", "chunk", "diagonal", "unfold", "view_as_real", "view_as_complex", "lift_fresh",
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "set_", "sym_size", "sym_stride",
    "sym_numel", "is_same_size", "_record_function_enter_new", "_record_function_exit",
})
# NO_KERNEL ops whose result aliases their first operand (a view, or the tensor itself): one tensor id. Below
# autograd a view's result has no ``_base`` yet, so the id is carried here
ALIASES = NO_KERNEL - {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "sym_size",
                       "sym_stride", "sym_numel", "is_same_size", "_record_function_enter_new",
                       "_record_function_exit"}
SYNC_OPS = frozenset({"_local_scalar_dense", "nonzero"})
GEMMS = frozenset({"mm", "addmm", "bmm", "baddbmm"})
HOST_COPY_METHODS = ("cpu", "numpy", "tolist")  # Tensor methods that copy a device tensor to the host
# libraries whose version the trace names when the step has imported them
LIBRARIES = ("snntorch", "norse", "spikingjelly", "sinabs", "lava", "nir", "nirtorch")


BOOKED = 16  # added to a booked op's phase code while tracing
_BOOKED: list = []  # the phases of the enclosing booked_to() blocks, innermost last


class booked_to:
    """``with booked_to(phase):`` books the ops inside to ``phase`` ("backward", "optimizer", "update"
    or "forward") where :func:`trace_torch`'s rules would put them in the forward pass or the update;
    autograd's backward ops and an ``Optimizer.step`` keep their phase."""

    def __init__(self, phase: str):
        from ..checks import check_choice

        check_choice("phase", phase, PHASES)
        self.phase = PHASES.index(phase)

    def __enter__(self):
        _BOOKED.append(self.phase)
        return self

    def __exit__(self, *exc):
        _BOOKED.pop()


def _torch():
    try:
        import torch
    except ImportError:
        from ..errors import ConfigError
        raise ConfigError('tracing a training step needs PyTorch: pip install "mimdsim[torch]"') from None
    return torch


@dataclass(frozen=True)
class TracedOp:
    """One distinct op of a trace: its aten name, the shapes and dtypes it read and wrote, whether it
    launches device work, and ``sync``: "" or how the host waited for the device ("item", "nonzero",
    "to_host")."""

    name: str
    inputs: tuple  # ((shape, dtype), ...) of its tensor operands, list operands flattened
    outputs: tuple
    device: bool
    sync: str = ""
    weights: tuple = ()  # a GEMM's operands (indices into ``inputs``) that are parameters: re-read every step

    def input_bytes(self) -> int:
        return sum(_numel(s) * _itemsize(d) for s, d in self.inputs)

    def output_bytes(self) -> int:
        return sum(_numel(s) * _itemsize(d) for s, d in self.outputs)


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


ITEMSIZE = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4, "int16": 2,
            "int8": 1, "uint8": 1, "bool": 1, "complex64": 8, "complex128": 16}


def _itemsize(dtype: str) -> int:
    return ITEMSIZE.get(dtype, 4)


@dataclass
class Trace:
    """The ops of one traced step: ``table`` of distinct :class:`TracedOp` s, ``sequence`` (index into
    the table per dispatched op, in issue order), ``phase`` (index into PHASES per op)."""

    table: list
    sequence: np.ndarray
    phase: np.ndarray
    optimizer_calls: int
    versions: dict
    timesteps: int = 0
    batch_size: int = 0
    model: str = "traced step"
    seconds_on_cpu: float = 0.0
    gemm_weight_bytes: int = 0  # bytes of the distinct parameters GEMMs read: the L2 working set of the weights
    extrapolated_from: tuple = ()  # the timesteps traced where the stream was built by repeating a period (trace_period.py)
    # per dispatched op, its operands' tensor ids, inputs then outputs (len(op.inputs) + len(op.outputs) each),
    # in one flat int32 array; a view has its base's id. None where unknown (a trace built from a period)
    tensor_ids: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.sequence.size)

    def derived(self, name: str, build):
        """``build()`` computed once per trace while its ops are the same objects: what costing derives from
        the trace alone (no GPU, framework or host), which a band's re-costs would otherwise redo each time.
        Kept with the trace, never pickled; replacing its sequence, phases, table or tensor ids, or changing the
        table's length or the GEMMs' weight bytes, drops it. Writing into those arrays or the table in place is not
        seen: a trace is a record of a step, built whole (replace a field to change it)."""
        cache = self.__dict__.setdefault("_derived", {})
        held, values = (self.sequence, self.phase, self.table, self.tensor_ids), (len(self.table), self.gemm_weight_bytes)
        hit = cache.get(name)
        if hit is None or hit[1] != values or any(a is not b for a, b in zip(hit[0], held)):
            hit = cache[name] = (held, values, build())
        return hit[2]

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_derived", None)  # derived from the rest: rebuilt where needed
        return state

    def ops(self):
        """(TracedOp, phase name) of every dispatched op, in order."""
        for i, p in zip(self.sequence.tolist(), self.phase.tolist()):
            yield self.table[i], PHASES[p]

    def _per_op(self, attr) -> np.ndarray:
        return np.array([bool(getattr(op, attr)) for op in self.table], bool)[self.sequence] if len(self) else \
            np.zeros(0, bool)

    @property
    def device_mask(self) -> np.ndarray:
        return self._per_op("device")

    @property
    def sync_mask(self) -> np.ndarray:
        return self._per_op("sync")

    @property
    def backward_passes(self) -> int:
        """Maximal runs of backward-phase ops: one per ``loss.backward()`` (or ``autograd.grad``)."""
        b = self.phase == PHASES.index("backward")
        return int(np.count_nonzero(b[1:] & ~b[:-1]) + (1 if b.size and b[0] else 0))

    def summary(self) -> dict:
        dev, syn = self.device_mask, self.sync_mask
        return {"ops": len(self), "device_ops": int(dev.sum()), "host_syncs": int(syn.sum()),
                "device_ops_by_phase": {p: int(np.count_nonzero(dev & (self.phase == i))) for i, p in enumerate(PHASES)},
                "host_syncs_by_phase": {p: int(np.count_nonzero(syn & (self.phase == i))) for i, p in enumerate(PHASES)},
                "backward_passes": self.backward_passes, "optimizer_calls": self.optimizer_calls,
                "versions": dict(self.versions)}

    def nbytes(self) -> int:
        """Bytes the trace holds: its per-op arrays and its table of distinct ops (as pickled)."""
        import pickle
        ids = getattr(self, "tensor_ids", None)
        return int(self.sequence.nbytes + self.phase.nbytes + (0 if ids is None else ids.nbytes) +
                   len(pickle.dumps(self.table)))

    def operand_ids(self):
        """(input ids, output ids) of every dispatched op, in order (see ``tensor_ids``); None where unknown."""
        ids = getattr(self, "tensor_ids", None)
        if ids is None:
            return None
        n_in = np.array([len(op.inputs) for op in self.table], np.int64)[self.sequence]
        n_out = np.array([len(op.outputs) for op in self.table], np.int64)[self.sequence]
        ends = np.cumsum(n_in + n_out)
        if ends.size and ends[-1] != ids.size:
            raise ValueError(f"tensor_ids holds {ids.size} ids, the ops have {int(ends[-1])} operands")
        flat = ids.tolist()
        starts = (ends - n_in - n_out).tolist()
        return [(tuple(flat[a:a + i]), tuple(flat[a + i:e])) for a, i, e in zip(starts, n_in.tolist(), ends.tolist())]


def _shapes(torch, values, out):
    for v in values:
        if isinstance(v, torch.Tensor):
            out.append((tuple(v.shape), str(v.dtype).removeprefix("torch.")))
        elif isinstance(v, (list, tuple)):
            _shapes(torch, v, out)
    return out


def _ids(torch, values, out, tid):
    """The tensor ids of ``values`` in :func:`_shapes`' order."""
    for v in values:
        if isinstance(v, torch.Tensor):
            out.append(tid(v))
        elif isinstance(v, (list, tuple)):
            _ids(torch, v, out, tid)
    return out


def _flat(torch, values, out):
    for v in values:
        if isinstance(v, torch.Tensor):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            _flat(torch, v, out)
    return out


def _meta_scalar(torch, t):
    """What ``.item()`` of a meta tensor answers: a zero of its kind (a meta tensor has no value)."""
    return False if t.dtype == torch.bool else (0.0 if t.dtype.is_floating_point else 0)


def trace_torch(step, *, warmup: int = 1, timesteps: int = 0, batch_size: int = 0, model: str | None = None,
                libraries=None) -> Trace:
    """Run ``step()`` ``warmup`` times untraced (optimizer state, lazy module state), then once traced.

    ``timesteps``, ``batch_size`` and ``model`` only label the report. ``libraries``: the SNN libraries
    whose versions the trace names (default: those of :data:`LIBRARIES` imported in this process).
    Returns a :class:`Trace`.
    """
    import time

    from ..checks import check_int

    torch = _torch()
    if not callable(step):
        from ..errors import ConfigError
        raise ConfigError(f"trace_torch needs a zero-argument callable (the training step), got {type(step).__name__}")
    check_int("warmup", warmup, low=0)
    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    class MetaScalars(TorchDispatchMode):  # the untraced warm-up: only a meta tensor's .item() answered
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func.__name__.startswith("_local_scalar_dense") and args[0].is_meta:
                return _meta_scalar(torch, args[0])
            return func(*args, **(kwargs or {}))

    for _ in range(warmup):
        with MetaScalars():
            step()
    table: list = []
    index: dict = {}
    seq: list = []
    phases: list = []
    state = {"optimizer": 0, "backward_call": 0, "calls": 0}
    current_node = torch._C._current_autograd_node
    Tensor = torch.Tensor

    params: dict = {}  # id of a parameter a GEMM read -> its bytes
    from torch.utils.weak import WeakIdKeyDictionary

    known = WeakIdKeyDictionary()  # tensor -> its id: weak, so a freed tensor's id() reused later is a new tensor
    tids: list = []
    fresh = iter(range(1 << 31))

    def tid(t):
        base = t._base if t._is_view() else t
        i = known.get(base)
        if i is None:
            i = known[base] = next(fresh)
        return i

    def record(name, inputs, outputs, device, sync, phase, weights=(), ids=()):
        tids.extend(ids)
        key = (name, inputs, outputs, device, sync, weights)
        i = index.get(key)
        if i is None:
            i = index[key] = len(table)
            table.append(TracedOp(name, inputs, outputs, device, sync, weights))
        seq.append(i)
        phases.append(phase)

    def phase_now():
        if state["backward_call"] or current_node() is not None:
            return 1
        if state["optimizer"]:
            return 2
        return BOOKED + _BOOKED[-1] if _BOOKED else 0  # marked: the update rule below leaves it

    class Functions(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func is Tensor.backward:
                state["backward_call"] += 1
                try:
                    return func(*args, **kwargs)
                finally:
                    state["backward_call"] -= 1
            name = getattr(func, "__name__", "")
            if name in HOST_COPY_METHODS and args and isinstance(args[0], Tensor) and func is getattr(Tensor, name):
                t = args[0]
                record(f"to_host.{name}", _shape_key(t), (), True, "to_host", phase_now(), ids=(tid(t),))
            return func(*args, **kwargs)

    def _shape_key(t):
        return ((tuple(t.shape), str(t.dtype).removeprefix("torch.")),)

    class Ops(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            name = func.__name__.split(".")[0]
            if name == "_local_scalar_dense" and args[0].is_meta:  # a meta tensor has no value: 0, still a sync
                record(name, _shape_key(args[0]), (), True, "item", phase_now(), ids=(tid(args[0]),))
                return _meta_scalar(torch, args[0])
            out = func(*args, **kwargs)
            phase = phase_now()
            inputs = tuple(_shapes(torch, args, []) + _shapes(torch, kwargs.values(), []))
            outputs = tuple(_shapes(torch, (out,), []))
            host = state["optimizer"] and phase != 1 and inputs and all(len(s) == 0 for s, _ in inputs)
            device = not host and name not in NO_KERNEL
            sync = ("item" if name == "_local_scalar_dense" else "nonzero") if device and name in SYNC_OPS else ""
            weights = _gemm_weights(torch, args, params) if device and name in GEMMS else ()
            ids = _ids(torch, args, [], tid) + _ids(torch, kwargs.values(), [], tid)
            if name in ALIASES and ids:  # the result (each piece of a split) is its operand's storage
                for o in _flat(torch, (out,), []):
                    known[o] = ids[0]
            ids += _ids(torch, (out,), [], tid)
            record(name, inputs, outputs, device, sync, phase, weights, ids)
            return out

    def pre(opt, args, kwargs):
        state["optimizer"] += 1
        state["calls"] += 1

    def post(opt, args, kwargs):
        state["optimizer"] -= 1

    handles = [register_optimizer_step_pre_hook(pre), register_optimizer_step_post_hook(post)]
    t0 = time.perf_counter()
    try:
        with Functions(), Ops():
            step()
    finally:
        for h in handles:
            h.remove()
    seconds = time.perf_counter() - t0
    phase = np.array(phases, np.int8)
    booked = phase >= BOOKED
    phase[booked] -= BOOKED
    back = np.flatnonzero(phase == 1)
    if back.size:  # after the last backward pass: the update (zero_grad, a hand-written update, .item())
        tail = phase[back[-1] + 1:]
        tail[(tail == 0) & ~booked[back[-1] + 1:]] = 3
    versions = {"torch": str(torch.__version__)}  # a str: TorchVersion would pickle a torch import
    for lib in (LIBRARIES if libraries is None else [x for x in LIBRARIES if x in set(libraries)]):
        mod = sys.modules.get(lib)
        if mod is not None and getattr(mod, "__version__", None):
            versions[lib] = str(mod.__version__)
    return Trace(table=table, sequence=np.array(seq, np.int32), phase=phase, optimizer_calls=state["calls"],
                 versions=versions, timesteps=int(timesteps), batch_size=int(batch_size),
                 model=model or getattr(step, "__name__", "traced step"), seconds_on_cpu=seconds,
                 gemm_weight_bytes=int(sum(params.values())), tensor_ids=np.array(tids, np.int32))


def _gemm_weights(torch, args, params) -> tuple:
    """Indices (among the tensor operands) of a GEMM's parameters: leaves that require grad, or views of
    one (``weight.t()`` in ``nn.Linear``, ``W.t()`` in autograd's input gradient); noted in ``params``."""
    out, i = [], 0
    for a in args:
        if isinstance(a, torch.Tensor):
            base = a._base if a._is_view() else a
            if base.is_leaf and base.requires_grad:
                out.append(i)
                params[id(base)] = base.numel() * base.element_size()
            i += 1
    return tuple(out)
