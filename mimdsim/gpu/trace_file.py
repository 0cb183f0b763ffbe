"""A PyTorch training step from a Python file, for ``mimdsim compare --gpu-trace FILE.py``.

The file is the training step a PyTorch user writes anyway: its top level builds the model, the data
and the optimizer, and it defines

* ``step()``: one training step (forward over the time loop, loss, ``backward``, the optimizer), or
* ``make_step()``: a factory returning that zero-argument callable (when building is best kept out of
  the module's top level);

and optionally ``BATCH_SIZE`` and ``TIMESTEPS`` (what the report's samples/s counts; default: the
compared run's). The file runs once, as a script would (``runpy.run_path``), then its step is traced by
:func:`mimdsim.trace_torch` (docs/gpu-model.md, "Trace → cost → report"; examples/custom_lif_step.py).
"""
from __future__ import annotations

from ..errors import ConfigError, Param
from ..checks import check_input_file


def named(path) -> Param:
    """The file as the messages name it: the setting that gave it (``gpu_trace=``), with its path."""
    return Param("gpu_trace", key="gpu.trace", shown=str(path))


def load_step(path: str):
    """``(step, batch_size or None, timesteps or None, SNN libraries it uses)`` of the file at ``path``."""
    import runpy

    check_input_file(path, (Param("gpu_trace", key="gpu.trace"), " file"), "a Python file defining step() or make_step()")
    if not str(path).endswith(".py"):
        raise ConfigError(named(repr(path)), f" is not a Python file; give a .py file defining step() or make_step()")
    try:
        ns = runpy.run_path(str(path), run_name="__mimdsim_trace__")
    except ConfigError:
        raise
    except Exception as e:  # the user's code: say where, keep its own words
        raise ConfigError(named(path), f": running the file raised {type(e).__name__}: {e}") from e
    if callable(ns.get("step")):
        step = ns["step"]
    elif callable(ns.get("make_step")):
        step = ns["make_step"]()
        if not callable(step):
            raise ConfigError(named(path), f": make_step() returned {type(step).__name__}, not the step; "
                              "return the zero-argument training-step function")
    else:
        raise ConfigError(named(path), f" defines neither step() nor make_step(); define step(), one training "
                          "step (forward over time, loss, backward, optimizer), or make_step() returning it")
    return step, ns.get("BATCH_SIZE"), ns.get("TIMESTEPS"), _libraries(ns)


def _libraries(ns) -> set:
    """The SNN libraries the file uses: top-level packages of the modules, classes and functions it names."""
    import types

    from .torch_trace import LIBRARIES

    found = set()
    for v in ns.values():
        name = v.__name__ if isinstance(v, types.ModuleType) else getattr(v, "__module__", None)
        if isinstance(name, str) and name.split(".")[0] in LIBRARIES:
            found.add(name.split(".")[0])
        elif not isinstance(v, type) and isinstance(getattr(type(v), "__module__", None), str):
            top = type(v).__module__.split(".")[0]  # an instance: snn.Leaky(...), norse's LIFCell(...)
            if top in LIBRARIES:
                found.add(top)
    return found


def trace_file(path: str, *, batch_size: int = 0, timesteps: int = 0):
    """The :class:`~mimdsim.gpu.torch_trace.Trace` of the file's step (its ``BATCH_SIZE``/``TIMESTEPS`` first)."""
    import os

    from .torch_trace import trace_torch

    step, b, t, libs = load_step(path)
    try:
        return trace_torch(step, batch_size=int(b or batch_size), timesteps=int(t or timesteps),
                           model=os.path.basename(str(path)), libraries=libs)
    except ConfigError:
        raise
    except Exception as e:
        raise ConfigError(named(path), f": tracing step() raised {type(e).__name__}: {e}") from e
