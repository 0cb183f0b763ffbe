"""The one error hierarchy of mimdsim, and the fix each error carries as data.

Every message names the offending value, the limit it broke and what to change. A message is a
sequence of parts: plain text and :class:`Param` references to the parameters it names. The
library never spells a command-line flag: ``str(error)`` renders each parameter as the Python API
spells it (``batch_size=0``), and the command line renders the same error with each parameter's
flag (``--batch 0``), looked up by its settings key (:func:`MimdsimError.render`). Beside the text
an error carries ``param`` (the offending parameter, with its value), ``limit`` and ``remedies``
(the parameters the message suggests changing, each with a suggested value or an action).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Union


class _Unset:
    def __repr__(self):
        return "UNSET"

    def __reduce__(self):  # one sentinel across pickling
        return "UNSET"


UNSET: Any = _Unset()


@dataclass(frozen=True)
class Param:
    """A parameter a message names, as data.

    ``name`` is its Python keyword (``batch_size``); ``key`` its run setting's key in the settings
    table (``model.batch``, ``chip.set.sram_per_tile`` for a chip field, ``assume.NAME`` for a named
    assumption), by which the command line finds its flag; without a key the command line looks the
    name up among the settings' Python names. ``value`` is the offending or suggested value,
    ``shown`` the value as text where it is a placeholder or formatted (``N``, ``1,248,000``).
    ``setting_value`` is the setting's value where it differs from the keyword's (``training=False``
    is the setting ``run.inference = true``). ``python`` is the API's own spelling where it is more
    than ``name=value`` (``Network.feedforward(weight_scale=...)``). ``action`` says what a remedy
    does to it ("lower", "raise", "drop", "add") when it suggests no value."""
    name: str
    value: Any = UNSET
    key: str = ""
    shown: str = ""
    setting_value: Any = UNSET
    python: str = ""
    action: str = ""

    @property
    def suggests(self) -> bool:
        return self.value is not UNSET or bool(self.shown) or bool(self.action)

    def as_python(self) -> str:
        if self.python:
            return self.python
        if self.key.startswith("assume."):
            value = self.shown or repr(self.value)
            return f"assume={{{self.key[7:]!r}: {value}}}" if self.suggests and not self.action else self.key[7:]
        if self.shown:
            return f"{self.name}={self.shown}"
        return self.name if self.value is UNSET else f"{self.name}={self.value!r}"


Part = Union[str, Param]
Parts = tuple  # of Part


def render(parts: Iterable[Part], name: Callable[[Param], str] | None = None) -> str:
    """The text of ``parts`` with each :class:`Param` spelled by ``name`` (default: as the Python
    API spells it)."""
    return "".join(p if isinstance(p, str) else (name(p) if name else p.as_python()) for p in parts)


def as_parts(text) -> Parts:
    """``text`` (a string or :class:`Message`, a Param, a sequence of parts or an error) as a tuple of parts."""
    if isinstance(text, (MimdsimError, Message)):
        return text.parts
    if isinstance(text, (str, Param)):
        return (text,)
    return join(*text)


def join(*texts, sep: str = "") -> Parts:
    """Several texts (strings, Params, part sequences) as one tuple of parts, ``sep`` between them."""
    out: list = []
    for i, t in enumerate(texts):
        if i and sep:
            out.append(sep)
        out.extend(as_parts(t))
    return tuple(out)


class Message(str):
    """Text that names parameters: a string (as the Python API spells them) that keeps its parts, so
    that the command line can print it with flags. Report notes, report lines and warnings are
    Messages where they name a parameter; concatenating one with ``+`` or an f-string keeps only
    its Python spelling, so build them with :func:`join` or ``Message(...)``."""

    def __new__(cls, *parts: Part):
        parts = join(*parts)
        text = super().__new__(cls, render(parts))
        text.parts = parts
        return text

    def render(self, name: Callable[[Param], str] | None = None) -> str:
        return render(self.parts, name)

    def __reduce__(self):
        return Message, self.parts


def _rebuild(cls, state, args):
    error = cls.__new__(cls)
    Exception.__init__(error, *args)
    error.__dict__.update(state)
    return error


class MimdsimError(Exception):
    """Base class of every error mimdsim raises on purpose: its message as parts (text and
    :class:`Param`), and the offending parameter, its limit and the remedies as data."""

    def __init__(self, *parts: Part, param: Param | None = None, limit: Any = None, remedies: Iterable[Param] = ()):
        self.parts = join(*parts)
        self.param, self.limit = param, limit
        self.remedies = tuple(remedies) or tuple(p for p in self.parts
                                                 if isinstance(p, Param) and p.suggests and p != param)
        super().__init__(render(self.parts))

    @property
    def value(self):
        """The offending value (of ``param``), or None."""
        return None if self.param is None else self.param.value

    def render(self, name: Callable[[Param], str] | None = None) -> str:
        """The message with each parameter spelled by ``name`` (the command line passes its flags)."""
        return render(self.parts, name)

    def prefixed(self, *prefix: Part) -> "MimdsimError":
        """The same error (class and data) with ``prefix`` before its message (a file and line)."""
        error = _rebuild(type(self), dict(self.__dict__), ())
        error.parts = join(*prefix, self.parts)
        Exception.__init__(error, render(error.parts))
        return error

    def with_params(self, change: Callable[[Param], Param]) -> "MimdsimError":
        """The same error with each parameter it names (in the message and the data) replaced by
        ``change(param)``."""
        error = self.prefixed()
        error.parts = tuple(change(p) if isinstance(p, Param) else p for p in self.parts)
        error.param = change(self.param) if self.param is not None else None
        error.remedies = tuple(change(p) for p in self.remedies)
        Exception.__init__(error, render(error.parts))
        return error

    def __reduce__(self):  # keeps the parts and the data across processes (sweeps on Dask)
        return _rebuild, (type(self), dict(self.__dict__), self.args)

    def __str__(self):
        return render(self.parts)


class ConfigError(MimdsimError, ValueError):
    """A parameter, shape or file is invalid."""


class DoesNotFit(ConfigError):
    """A model or run too large for the chip's memory or this machine's, found from its shapes
    before anything is allocated (the message names the size, the limit and what to change)."""


class UnsupportedModel(MimdsimError):
    """The model uses something mimdsim cannot simulate."""


class OutOfDeviceMemory(MimdsimError):
    """A GPU (or other device) model does not fit the device's memory."""


class CapacityOverflow(MimdsimError):
    """A spike list overflowed its static capacity K and the run was asked to be strict."""


class OutOfTileMemory(MimdsimError):
    """A tile's SRAM plan exceeds the tile's memory.

    Attributes: ``tile`` (global tile index), ``used`` and ``limit`` in bytes, and
    ``breakdown`` (tensor name -> bytes on that tile); ``hint`` says what to change (given as text or
    parts; kept as its Python text, the parts in the message's).
    """

    def __init__(self, tile: int, used: int, limit: int, breakdown: dict[str, int], hint, *,
                 remedies: Iterable[Param] = ()):
        items = sorted(breakdown.items(), key=lambda kv: -kv[1])
        rows = ", ".join(f"{k}={v:,} B" for k, v in items[:8])
        if len(items) > 8:
            rows += f", ... {len(items) - 8} smaller tensors ({sum(v for _, v in items[8:]):,} B)"
        super().__init__(f"tile {tile} needs {used:,} B but has {limit:,} B of SRAM ({rows}). ", hint, limit=limit,
                         remedies=remedies)
        self.tile, self.used, self.breakdown, self.hint = tile, used, dict(breakdown), render(join(hint))
