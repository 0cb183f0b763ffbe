"""The Open Neuromorphic benchmark's PyTorch-op-by-op libraries, each call traced as the benchmark builds it
(``mimdsim validate``, source ``snn-libraries-gpu``; docs/validation.md, "The benchmark's other libraries").

The benchmark (open-neuromorphic/open-neuromorphic.github.io @872e38bb,
``content/blog/spiking-neural-network-framework-benchmarking/docker/run_benchmark.py``) times one forward call
and one backward call (``output.sum().backward(retain_graph=True)``, gradients accumulating over the calls) of
``Linear(n, n)`` + a LIF layer, T = 500, B = 16, float32. Each builder below is that function's
``prepare_fn``/``forward_fn``/``backward_fn`` with the real library, on the ``meta`` device (shapes only):

* ``traced:sinabs`` (``sinabs()``): ``nn.Sequential(nn.Linear(n, n), sinabs.layers.LIF(tau_mem=10.0))`` on a
  batch-first ``(B, T, n)`` input, ``sinabs.reset_states`` before each forward call; the LIF loops over T in
  Python.
* ``traced:spikingjelly-torch`` (``spikingjelly()``): ``layer.Linear`` + ``neuron.LIFNode(tau=5.0,
  surrogate.ATan(), step_mode="m")`` (the torch backend: a Python loop over T), ``functional.reset_net``
  before each forward call. Measured 0.0.0.0.15 (a git build); 0.0.0.0.14 is the nearest on the package
  index.
* ``traced:norse`` (``norse()``): ``SequentialState(nn.Linear(n, n), LIFBoxCell(p))`` called once on the whole
  ``(T, B, n)`` input: the cell takes one step over all T·B rows (no time loop). The benchmark wraps it in
  ``torch.compile(mode="reduce-overhead")``, and its rows are costed so (:data:`COMPILE_MODE`,
  :mod:`mimdsim.gpu.trace_compile`: the GEMMs as traced, each run of element-wise ops one fused kernel of its
  external tensors, one CUDA graph launch per graph; the eager figure is kept beside it). ``p.v_leak`` is a 0-dim tensor here, where
  the benchmark's is ``[0.0]``: torch 2.13's ``full`` (``LIFBoxCell.initial_state``) refuses a 1-element
  tensor; the ops are the same, and reading it to the host is the trace's one sync per forward call.
* ``traced:rockpool`` (``rockpool_torch()``): ``Sequential(LinearTorch(shape=(n, n)), LIFTorch(n))`` (Rockpool's
  combinator) on a batch-first ``(B, T, n)`` input, ``model(x)[0]``, no state reset. ``LinearTorch`` has no bias
  by default (one ``mm``). ``LIFTorch.forward`` loops over T in Python, and each step reads ``self.alpha`` and
  ``self.beta``, which ``LIFBaseTorch.__getattr__`` derives from the trainable ``tau_mem``/``tau_syn`` through
  ``_get_all_leak_params`` (every decay and bitshift form: 20 ops on n-vectors, twice per step): 61 device ops
  per step forward, 45 backward. Four of them, ``torch.tensor(nan).repeat(n)`` (``getattr``'s default
  arguments there), act on CPU tensors in the benchmark as here; the trace counts them as device ops, so each
  is charged a 3 µs launch it does not make (6 ms of a forward call).

Norse 1.0.0's wheel ships ``norse_op.so``, built for another torch: it fails to load here (an undefined
symbol), and Norse only skips it when absent, so :func:`import_library` marks it absent first (the LIFBox path
never calls it).
"""
from __future__ import annotations

import functools
import sys

# program -> (module, distribution, the benchmark's version, what is traced)
PROGRAMS = {
    "traced:sinabs": ("sinabs", "sinabs", "1.2.10", "Linear + sinabs.layers.LIF, Python loop over T"),
    "traced:spikingjelly-torch": ("spikingjelly", "spikingjelly", "0.0.0.0.15",
                                  "layer.Linear + neuron.LIFNode(step_mode='m', backend='torch')"),
    "traced:norse": ("norse", "norse", "1.0.0", "Linear + LIFBoxCell in SequentialState, "
                     "torch.compile reduce-overhead"),
    "traced:rockpool": ("rockpool", "rockpool", "2.7", "LinearTorch + LIFTorch in Sequential, Python loop over T"),
}

# how the benchmark runs each program's model: Norse's is wrapped in torch.compile(mode="reduce-overhead")
# (run_benchmark.py's norse prepare_fn); the others run eagerly
COMPILE_MODE = {"traced:norse": "reduce-overhead"}


# what pip installs for each: the benchmark's version, except SpikingJelly's (0.0.0.0.15 was a git build; the package
# index's nearest is 0.0.0.0.14), and pbr, which Sinabs needs at import. Installed in one resolve with the project's
# pinned torch, so pip keeps that torch or refuses (.ci/run installs them without their dependencies instead)
PIP_SPECS = {"traced:sinabs": "sinabs==1.2.10 pbr==7.1.3", "traced:spikingjelly-torch": "spikingjelly==0.0.0.0.14",
             "traced:norse": "norse==1.0.0", "traced:rockpool": "rockpool==2.7"}


def install_line(program: str) -> str:
    """The pip command that installs what tracing ``program`` needs: PyTorch (the CPU build the project pins,
    ``mimdsim[torch]``) and the library at the benchmark's version, in one resolve."""
    return f'pip install "mimdsim[torch]" {PIP_SPECS[program]}'


def version(program: str) -> str | None:
    """The installed version of ``program``'s library, or None where it is absent or does not import."""
    from importlib import metadata

    mod, dist = PROGRAMS[program][:2]
    try:
        v = metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None
    try:
        import_library(program)
    except ImportError:
        return None
    return v


# the modules each builder imports: imported by import_library before the model is built under
# ``torch.device("meta")``, so that tensors a library makes at import (Sinabs's ``LIF(spike_threshold=
# torch.tensor(1.0))`` default, imported by Rockpool's modules) are not made on the meta device
BUILD_MODULES = {
    "traced:sinabs": ("sinabs.layers",),
    "traced:spikingjelly-torch": ("spikingjelly.activation_based.functional", "spikingjelly.activation_based.layer",
                                  "spikingjelly.activation_based.neuron", "spikingjelly.activation_based.surrogate"),
    "traced:norse": ("norse.torch", "norse.torch.module"),
    "traced:rockpool": ("rockpool.nn.modules", "rockpool.nn.combinators"),
}


def import_library(program: str):
    mod = PROGRAMS[program][0]
    if mod == "norse" and "norse_op" not in sys.modules:
        try:
            import norse_op  # noqa: F401  (a C++ op built for another torch)
        except ModuleNotFoundError:
            pass
        except ImportError:
            sys.modules["norse_op"] = None  # Norse then takes its own "absent" path
    import importlib
    lib = importlib.import_module(mod)
    for sub in BUILD_MODULES[program]:
        importlib.import_module(sub)
    return lib


def benchmark_step(program: str, n: int, timesteps: int = 500, batch_size: int = 16, device: str = "meta"):
    """The benchmark's forward call then its backward call as one zero-argument step (``trace_torch`` phases
    split them; the loss is booked to the backward call, as the benchmark times it). The untraced warm-up
    of ``prepare_fn`` (``with torch.no_grad(): model(input)``) is run here."""
    import torch
    from torch import nn

    from ..gpu.torch_trace import booked_to
    from ..checks import check_choice

    check_choice("program", program, tuple(PROGRAMS))
    import_library(program)
    torch.manual_seed(0)
    T, B = int(timesteps), int(batch_size)
    with torch.device(device):  # built on the device: no n x n weight initialised on the CPU first
        forward = _build(program, n, T, B, torch, nn)
    if device != "meta":  # prepare_fn's no-grad call (on meta, trace_torch's warm-up answers .item())
        with torch.no_grad():
            forward()

    def step():
        out = forward()
        with booked_to("backward"):  # the benchmark times `loss = output.sum(); loss.backward()` as one call
            out.sum().backward(retain_graph=True)

    return step


def _build(program, n, T, B, torch, nn):
    """The benchmark's model and input for ``program`` and its forward call (``forward_fn``)."""
    if program == "traced:sinabs":
        import sinabs
        from sinabs.layers import LIF

        model = nn.Sequential(nn.Linear(n, n), LIF(tau_mem=torch.tensor(10.0)))
        x = torch.randn(B, T, n)

        def forward():
            sinabs.reset_states(model)
            return model(x)
    elif program == "traced:spikingjelly-torch":
        from spikingjelly.activation_based import functional, layer, neuron, surrogate

        model = nn.Sequential(layer.Linear(n, n), neuron.LIFNode(tau=5.0, surrogate_function=surrogate.ATan(),
                                                                 step_mode="m"))
        x = torch.randn(T, B, n)

        def forward():
            functional.reset_net(model)
            return model(x)
    elif program == "traced:rockpool":
        from rockpool.nn.combinators import Sequential
        from rockpool.nn.modules import LIFTorch, LinearTorch

        model = Sequential(LinearTorch(shape=(n, n)), LIFTorch(n))
        x = torch.randn(B, T, n)

        def forward():
            return model(x)[0]
    else:
        from norse.torch import SequentialState
        from norse.torch.module import LIFBoxCell, LIFBoxParameters

        one = lambda v: torch.tensor([v])  # noqa: E731  (the benchmark's [v] on the GPU)
        p = LIFBoxParameters(tau_mem_inv=one(100.0), v_leak=torch.tensor(0.0), v_th=one(1.0),
                             v_reset=one(0.0), alpha=one(100.0))
        model = SequentialState(nn.Linear(n, n), LIFBoxCell(p))
        x = torch.randn(T, B, n)

        def forward():
            return model(x)[0]
    return forward


def trace(program: str, n: int, timesteps: int = 500, batch_size: int = 16):
    """The trace of the benchmark's two calls at width ``n`` (periodic: built from T = 3-6 and verified, else
    in full), cached per shape and library version."""
    from ..gpu.trace_period import periodic_trace
    from ..workloads.snn.baselines import eager_trace

    v = version(program)
    if v is None:
        from ..errors import ConfigError
        mod, dist, measured = PROGRAMS[program][:3]
        raise ConfigError(f"tracing {program} needs {dist} (the benchmark measured {measured}): "
                          f"pip install {dist}=={measured} without its dependencies (pip's no-deps option, as .ci/run "
                          f"does)")
    lib = PROGRAMS[program][0]
    key = eager_trace.digest((program, v, int(n), int(timesteps), int(batch_size)), [__file__])

    def make():
        tr = periodic_trace(lambda t: benchmark_step(program, n, t, batch_size), timesteps, batch_size=batch_size,
                            libraries=(lib,), model=f"Linear({n}, {n}) + {lib} {v} ({PROGRAMS[program][3]})")
        tr.versions[lib] = v  # SpikingJelly has no __version__: the installed distribution's
        return tr

    return eager_trace.cached(key, make)


def framework(host=None):
    """PyTorch eager's host costs, no loss-call cost (``output.sum()`` builds nothing), as for snnTorch 0.7, on
    ``host`` (a host preset; None: the measurement host, the figures as measured)."""
    import dataclasses

    from ..gpu.framework import FRAMEWORKS, framework as on_host

    return on_host(dataclasses.replace(FRAMEWORKS["pytorch-eager"], loss_call_s=0.0), host=host)


@functools.lru_cache(maxsize=None)
def phase_seconds(program: str, n: int, gpu="rtx-4090", host=None) -> dict:
    """Seconds of the forward and backward calls: the trace costed by :func:`mimdsim.gpu.trace_cost.costed_trace`
    in the benchmark's mode (:data:`COMPILE_MODE`; host and device streams overlapped, the trace's syncs
    breaking them), and per phase its host seconds alone and its GEMMs' FLOPs at the GPU's GEMM peak
    (``matrix_flops``: strict fp32 at the measured ``fp32_gemm_share``); for a compiled program also
    ``eager``, the same trace costed eagerly, for comparison. ``host``: the host preset that drives the GPU (None:
    the GPU's default host)."""
    from ..arch.gpu import gpu as gpu_spec
    from ..gpu.torch_trace import PHASES
    from ..gpu.trace_cost import costed_trace, stream

    from ..arch.host import default_host

    tr = trace(program, n)
    spec, fw = gpu_spec(gpu), framework(default_host(gpu) if host is None else host)
    mode = COMPILE_MODE.get(program, "eager")
    rep, kernels = costed_trace(tr, spec, framework=fw, mode=mode)
    host, _, _, _, phase, _ = stream(tr, spec, fw, rep.placement["precision"], mode)
    peak = spec.matrix_flops(rep.placement["precision"])
    out = {"model": rep.phase_seconds(), "host": {}, "gemm_peak": {}, "mode": mode}
    if mode != "eager":
        out["eager"] = costed_trace(tr, spec, framework=fw)[0].phase_seconds()
    for i, p in enumerate(PHASES[:2]):
        out["host"][p] = float(host[phase == i].sum())
        out["gemm_peak"][p] = sum(k.flops * k.count for k, ph in zip(kernels, phase.tolist())
                                  if ph == i and k.kind == "matrix") / peak
    out["summary"] = tr.summary()
    out["per_step"] = {p: _per_step(tr, i) for i, p in enumerate(PHASES[:2])}
    return out


def _per_step(tr, phase: int) -> float:
    """Device ops per timestep of one phase: from the trace's length in that phase over T."""
    import numpy as np

    n = int(np.count_nonzero(tr.device_mask & (tr.phase == phase)))
    return n / tr.timesteps if tr.timesteps else float(n)
