"""A list whose items are made on first use: a network's initial weights.

A rate-driven run never reads the weights, and drawing 2312 x 978 normal numbers takes longer
than the run; a sweep builds a network per point. The list is filled by its factory the first
time anything reads, writes or measures it, and is an ordinary list from then on.
"""
from __future__ import annotations


class LazyList(list):
    """``list`` filled by ``factory()`` on first use."""

    __slots__ = ("_factory",)

    def __init__(self, factory=()):
        if callable(factory):
            super().__init__()
            self._factory = factory
        else:  # an iterable, as for list(): no factory
            super().__init__(factory)
            self._factory = None

    def _fill(self):
        f = self._factory
        if f is not None:
            self._factory = None
            list.extend(self, f())
        return self

    @property
    def pending(self) -> bool:
        """True until the items are made."""
        return self._factory is not None

    def __reduce_ex__(self, protocol):  # pickles (and deep-copies) as a plain list
        return (list, (list(self._fill()),))


def _filled(name):
    method = getattr(list, name)

    def call(self, *args, **kwargs):
        return method(self._fill(), *args, **kwargs)
    call.__name__ = name
    return call


for _name in ("__getitem__", "__setitem__", "__delitem__", "__iter__", "__reversed__", "__len__", "__contains__",
              "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__add__", "__radd__", "__iadd__",
              "__mul__", "__rmul__", "__imul__", "__repr__", "__str__", "__format__", "__sizeof__", "append",
              "extend", "insert", "pop", "remove", "index", "count", "sort", "reverse", "clear", "copy"):
    if hasattr(list, _name):
        setattr(LazyList, _name, _filled(_name))
LazyList.__hash__ = None
