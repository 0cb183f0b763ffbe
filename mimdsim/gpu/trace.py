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
* **device work**: every op launches device work except views and metadata ops (``NO_KERNEL``) and,
  inside ``Optimizer.step``, ops whose tensors are all 0-dim: torch.optim keeps ``state["step"]`` on
  the CPU unless ``capturable`` or ``fused`` (its ``_get_value`` reads it with ``.item()``), so that
  arithmetic and that ``.item()`` run on the host, without a kernel or a sync.
* **host synchronisation**: ``aten._local_scalar_dense`` (``.item()``, ``bool(t)``, ``if t:``,
  ``int(t)``), ``aten.nonzero`` (the host needs the count: also boolean indexing, ``masked_select``),
  and ``Tensor.cpu()`` / ``.numpy()`` / ``.tolist()`` (a copy to the host). On a CPU trace every tensor
  is taken to live on the device except the optimizer's step counters above.

The trace holds shapes, not tensors: each distinct (op, input shapes and dtypes, output shapes and
dtypes, device work, sync) is stored once, and the op stream is an array of indices into that table
with one phase byte per op, so a long trace of a repeating loop stays small.
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
SYNC_OPS = frozenset({"_local_scalar_dense", "nonzero"})
HOST_COPY_METHODS = ("cpu", "numpy", "tolist")  # Tensor methods that copy a device tensor to the host
# libraries whose version the trace names when the step has imported them
LIBRARIES = ("snntorch", "norse", "spikingjelly", "sinabs", "lava", "nir", "nirtorch")


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

    def __len__(self) -> int:
        return int(self.sequence.size)

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
        return int(self.sequence.nbytes + self.phase.nbytes + len(pickle.dumps(self.table)))


def _shapes(torch, values, out):
    for v in values:
        if isinstance(v, torch.Tensor):
            out.append((tuple(v.shape), str(v.dtype).removeprefix("torch.")))
        elif isinstance(v, (list, tuple)):
            _shapes(torch, v, out)
    return out


def trace_torch(step, *, warmup: int = 1, timesteps: int = 0, batch_size: int = 0, model: str | None = None) -> Trace:
    """Run ``step()`` ``warmup`` times untraced (optimizer state, lazy module state), then once traced.

    ``timesteps``, ``batch_size`` and ``model`` only label the report. Returns a :class:`Trace`.
    """
    import time

    from ..validate import check_int

    torch = _torch()
    if not callable(step):
        from ..errors import ConfigError
        raise ConfigError(f"trace_torch needs a zero-argument callable (the training step), got {type(step).__name__}")
    check_int("warmup", warmup, low=0)
    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    for _ in range(warmup):
        step()
    table: list = []
    index: dict = {}
    seq: list = []
    phases: list = []
    state = {"optimizer": 0, "backward_call": 0, "calls": 0}
    current_node = torch._C._current_autograd_node
    Tensor = torch.Tensor

    def record(name, inputs, outputs, device, sync, phase):
        key = (name, inputs, outputs, device, sync)
        i = index.get(key)
        if i is None:
            i = index[key] = len(table)
            table.append(TracedOp(name, inputs, outputs, device, sync))
        seq.append(i)
        phases.append(phase)

    def phase_now():
        if state["backward_call"] or current_node() is not None:
            return 1
        return 2 if state["optimizer"] else 0

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
                record(f"to_host.{name}", _shape_key(t), (), True, "to_host", phase_now())
            return func(*args, **kwargs)

    def _shape_key(t):
        return ((tuple(t.shape), str(t.dtype).removeprefix("torch.")),)

    class Ops(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            name = func.__name__.split(".")[0]
            phase = phase_now()
            inputs = tuple(_shapes(torch, args, []) + _shapes(torch, kwargs.values(), []))
            outputs = tuple(_shapes(torch, (out,), []))
            host = state["optimizer"] and phase != 1 and inputs and all(len(s) == 0 for s, _ in inputs)
            device = not host and name not in NO_KERNEL
            sync = ("item" if name == "_local_scalar_dense" else "nonzero") if device and name in SYNC_OPS else ""
            record(name, inputs, outputs, device, sync, phase)
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
    back = np.flatnonzero(phase == 1)
    if back.size:  # after the last backward pass: the update (zero_grad, a hand-written update, .item())
        tail = phase[back[-1] + 1:]
        tail[tail == 0] = 3
    versions = {"torch": torch.__version__}
    for lib in LIBRARIES:
        mod = sys.modules.get(lib)
        if mod is not None and getattr(mod, "__version__", None):
            versions[lib] = str(mod.__version__)
    return Trace(table=table, sequence=np.array(seq, np.int32), phase=phase, optimizer_calls=state["calls"],
                 versions=versions, timesteps=int(timesteps), batch_size=int(batch_size),
                 model=model or getattr(step, "__name__", "traced step"), seconds_on_cpu=seconds)
