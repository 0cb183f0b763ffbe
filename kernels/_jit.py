"""Lazy numba: ``@njit(cache=True)`` that imports numba only when a compiled function is first called.

Importing numba costs ~0.3 s; a run that only costs a program (rate-driven, analytical) never
calls a compiled codelet and need not pay it. The first call of any lazily jitted function
imports numba, turns every lazily jitted function visible in its module into a numba
dispatcher (so compiled functions call each other as numba functions) and runs it.
"""
from __future__ import annotations

import functools
import sys
import types

_PACKAGES = ("kernels", "mimdsim")  # modules whose lazily jitted functions compiled code may call


class LazyJit:
    """A function to be compiled with ``numba.njit(**options)`` on its first call."""

    def __init__(self, fn, options):
        self.py_func, self.options = fn, options
        self._dispatcher = None
        self._bound = False
        functools.update_wrapper(self, fn)

    @property
    def dispatcher(self):
        if self._dispatcher is None:
            import numba
            self._dispatcher = numba.njit(**self.options)(self.py_func)
        return self._dispatcher

    def __call__(self, *args, **kwargs):
        if not self._bound:
            materialize(self)
            self._bound = True
        return self._dispatcher(*args, **kwargs)


def materialize(f):
    """The numba dispatcher of ``f``, binding every lazily jitted global of its module (and of
    those functions' modules) to its dispatcher first; ``f`` itself when it is not lazy."""
    if not isinstance(f, LazyJit):
        return f
    seen, todo = set(), [f.py_func.__globals__]
    while todo:
        mod = todo.pop()
        if id(mod) in seen:
            continue
        seen.add(id(mod))
        for name, v in list(mod.items()):
            if isinstance(v, LazyJit):
                mod[name] = v.dispatcher
                todo.append(v.py_func.__globals__)
            elif isinstance(v, types.ModuleType) and v.__name__.split(".")[0] in _PACKAGES:
                todo.append(vars(v))  # ``from . import surrogate as _sg``: _sg.sg inside compiled code
    return f.dispatcher


def njit(*args, **options):
    """``numba.njit`` without importing numba until the function is called."""
    if args and callable(args[0]):
        return LazyJit(args[0], {})
    return lambda fn: LazyJit(fn, options)


def numba_loaded() -> bool:
    """True once numba is imported: compiled helpers then pay no import, only their cache load."""
    return "numba" in sys.modules
