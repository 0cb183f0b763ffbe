"""A PyTorch training step from a Python file, for ``mimdsim compare --gpu-trace FILE.py``.

The file is the training step a PyTorch user writes anyway: its top level builds the model, the data
and the optimizer, and it defines

* ``step()``: one training step (forward over the time loop, loss, ``backward``, the optimizer), or
* ``make_step()``: a factory returning that zero-argument callable (when building is best kept out of
  the module's top level);

and optionally ``BATCH_SIZE`` and ``TIMESTEPS`` (what the report's samples/s counts; default: the
compared run's). The file runs once, as a script would (``runpy.run_path``), then its step is traced by
:func:`mimdsim.trace_torch` (docs/gpu-model.md, "Trace → cost → report"; examples/custom_lif_step.py).

:func:`trace_file` does both in a child process (a fresh interpreter) with a time limit (``timeout``,
``--gpu-trace-timeout``, default :data:`TIMEOUT_SECONDS`), saying what it is doing as it goes: a step that
never returns is stopped and named, an exception is one line with the user's file and line, and a file
that ends its process (``sys.exit``, ``os._exit``, a crash in native code) is reported as such.
"""
from __future__ import annotations

import os
import time
import traceback

from ..errors import ConfigError, Param
from ..checks import check_input_file, check_number
from ..config import INT_LIMIT

TIMEOUT_SECONDS = 600.0  # --gpu-trace-timeout: a traced step that takes longer is stopped
PROGRESS_SECONDS = 30.0  # a "still running" line this often while the child works


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
        raise ConfigError(named(path), f"{_line_of(e, path)}: running the file raised {_one_line(e)}") from e
    if callable(ns.get("step")):
        step = ns["step"]
    elif callable(ns.get("make_step")):
        try:
            step = ns["make_step"]()
        except Exception as e:
            raise ConfigError(named(path), f"{_line_of(e, path)}: make_step() raised {_one_line(e)}") from e
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


def _line_of(error: BaseException, path) -> str:
    """``", line N"``: the innermost line of the user's file in the error's traceback ("" if none)."""
    here = os.path.realpath(str(path))
    lines = [f.lineno for f in traceback.extract_tb(error.__traceback__)
             if os.path.realpath(f.filename) == here]
    return f", line {lines[-1]}" if lines else ""


def _one_line(error: BaseException) -> str:
    message = " ".join(str(error).split())
    return f"{type(error).__name__}: {message[:300]}" if message else type(error).__name__


def _declared(path, name: str, value):
    """A size the file declares (``BATCH_SIZE``, ``TIMESTEPS``): None, or a whole number within the limit."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= INT_LIMIT:
        what = "samples of a step" if name == "BATCH_SIZE" else "timesteps of a step"
        raise ConfigError(named(path), f" sets {name} = {value!r}: the {what} must be a whole number between 1 and "
                          f"{INT_LIMIT:,}; correct it in the file, or leave it out to use the compared run's")
    return value


def _trace_here(path: str, batch_size: int, timesteps: int, stage=lambda text: None):
    """The file's step traced in this process (the child's work)."""
    from .torch_trace import trace_torch

    stage("running the file")
    step, b, t, libs = load_step(path)
    b, t = _declared(path, "BATCH_SIZE", b), _declared(path, "TIMESTEPS", t)
    stage("running step() once untraced, then once traced")
    try:
        return trace_torch(step, batch_size=int(b or batch_size), timesteps=int(t or timesteps),
                           model=os.path.basename(str(path)), libraries=libs)
    except ConfigError:
        raise
    except Exception as e:
        raise ConfigError(named(path), f"{_line_of(e, path)}: tracing step() raised {_one_line(e)}") from e


def _child(path, batch_size, timesteps, conn) -> None:
    """The child process: ("stage", text) as it goes, then ("trace", Trace) or ("error", ConfigError); a
    ``sys.exit`` in the file is ("exit", code, line)."""
    try:
        conn.send(("trace", _trace_here(path, batch_size, timesteps, lambda text: conn.send(("stage", text)))))
    except ConfigError as e:
        conn.send(("error", e))
    except SystemExit as e:  # the file (or its step) called sys.exit: not a result
        conn.send(("exit", e.code if isinstance(e.code, (int, type(None))) else str(e.code), _line_of(e, path)))
    except BaseException as e:  # noqa: BLE001 - anything else the user's code raised, with its file and line
        conn.send(("error", ConfigError(named(path), f"{_line_of(e, path)}: raised {_one_line(e)}")))
    finally:
        conn.close()


def _exit_text(code) -> str:
    import signal
    if isinstance(code, int) and code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"ended with exit status {code}"


def trace_file(path: str, *, batch_size: int = 0, timesteps: int = 0, timeout: float = TIMEOUT_SECONDS,
               note=None):
    """The :class:`~mimdsim.gpu.torch_trace.Trace` of the file's step (its ``BATCH_SIZE``/``TIMESTEPS`` first),
    run in a child process stopped ``timeout`` seconds after the file starts (the child's interpreter start
    has as long again); ``note(text)`` hears what it is doing."""
    import multiprocessing

    check_number("gpu_trace_timeout", timeout, low=0.0, open_low=True, unit="seconds", key="gpu.trace_timeout",
                 fix="the seconds the traced step may take")
    check_input_file(path, (Param("gpu_trace", key="gpu.trace"), " file"), "a Python file defining step() or make_step()")
    say = note or (lambda text: None)
    ctx = multiprocessing.get_context("spawn")  # a fresh interpreter: the user's file cannot touch this one
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(str(path), batch_size, timesteps, send), daemon=True)
    t0 = time.monotonic()
    child.start()
    send.close()
    stage, told = "starting", t0
    say(f"tracing {path} in a child process (stopped {timeout:g} s after the file starts): starting")
    try:
        while True:
            left = timeout - (time.monotonic() - t0)
            if left <= 0:
                raise ConfigError(named(path), f": the traced step did not finish in {timeout:g} s (it was "
                                  f"{stage}) and was stopped; make the step shorter (fewer timesteps or a smaller "
                                  f"batch), or allow it more time with ",
                                  Param("gpu_trace_timeout", 2 * timeout, key="gpu.trace_timeout"))
            if receive.poll(min(left, 1.0)):
                try:
                    message = receive.recv()
                except EOFError:  # the child ended without a result
                    child.join(5)
                    raise ConfigError(named(path), f": the process running the file {_exit_text(child.exitcode)} "
                                      f"while {stage}, before its step was traced; a step file must not end its "
                                      f"process (sys.exit, os._exit)") from None
                if message[0] == "stage":
                    if stage == "starting":  # the limit counts from the file's start, not the interpreter's
                        t0 = told = time.monotonic()
                    stage = message[1]
                    say(f"tracing {path}: {stage}")
                elif message[0] == "trace":
                    return message[1]
                elif message[0] == "error":
                    raise message[1]
                else:
                    _, code, line = message
                    raise ConfigError(named(path), f"{line}: the file called sys.exit({code!r}) while {stage}; a "
                                      "step file must not end its process (return from step() instead)")
            elif not child.is_alive() and not receive.poll():
                child.join()
                raise ConfigError(named(path), f": the process running the file {_exit_text(child.exitcode)} while "
                                  f"{stage}, before its step was traced; a step file must not end its process "
                                  "(sys.exit, os._exit)")
            if time.monotonic() - told >= PROGRESS_SECONDS:
                told = time.monotonic()
                say(f"tracing {path}: still {stage} ({told - t0:.0f} s of {timeout:g} s)")
    finally:
        receive.close()
        if child.is_alive():
            child.kill()
        child.join(5)
