"""Argument checks shared by every module.

Each check raises :class:`~mimdsim.errors.ConfigError` with one message shape,
``{where}{name}={value!r} must be {rule}; {fix}``, so every message names the value, the
limit and what to change; the error carries the parameter (a :class:`~mimdsim.errors.Param`:
``name``, and ``key``, its run setting's key where the name alone does not find it) and the rule as
data. ``fix`` is text or parts (naming parameters as Params), or a function giving them, called only
when the check fails (a fix that quotes a preset's value costs nothing on the good path).
"""
from __future__ import annotations

import difflib
import math
import numbers
from typing import Callable, Iterable, Sequence, Union

import numpy as np

from .errors import ConfigError, DoesNotFit, Param

Fix = Union[str, tuple, Callable[[], Union[str, tuple]]]


def is_number(value) -> bool:
    """A real number (numpy scalars included), not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def is_int(value) -> bool:
    """An integer (numpy integers included), not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def closest(value, options: Iterable) -> list[str]:
    """The options that start with ``value`` (ignoring case), else difflib's closest one."""
    by_key = {str(o).lower(): str(o) for o in options}
    key = str(value).lower()
    starts = [o for k, o in by_key.items() if key and k.startswith(key)]
    return starts or [by_key[k] for k in difflib.get_close_matches(key, by_key, n=1)]


def did_you_mean(value, options: Iterable) -> str:
    """``" Did you mean 'a'?"`` (or ``'a' or 'b'``), or ``""`` when no option is close."""
    close = closest(value, options)
    return f" Did you mean {' or '.join(map(repr, close))}?" if close else ""


def _fix(fix: Fix, sep: str = "; ") -> tuple:
    fix = fix() if callable(fix) else fix
    return (sep, fix) if fix else ()


def _fail(name: str, value, rule: str, where: str, fix: Fix, key: str = ""):
    param = Param(name, value, key=key)
    raise ConfigError(where, param, f" must be {rule}", *_fix(fix), param=param, limit=rule)


def check_int(name: str, value, *, low: int | None = None, high: int | None = None,
              where: str = "", fix: Fix = "", key: str = "") -> int:
    """``value`` as an int, if it is an integer (not a bool) within ``[low, high]``."""
    if not (is_int(value) and (low is None or value >= low) and (high is None or value <= high)):
        if low is not None and high is not None:
            rule = f"an integer between {low} and {high}"
        else:
            rule = "an integer" + (f" >= {low}" if low is not None else "") + (f" <= {high}" if high is not None else "")
        _fail(name, value, rule, where, fix, key)
    return int(value)


def check_number(name: str, value, *, low: float | None = None, high: float | None = None,
                 open_low: bool = False, open_high: bool = False, finite: bool = True, unit: str = "",
                 allow_none: bool = False, where: str = "", fix: Fix = "", key: str = ""):
    """``value`` if it is a real number (not a bool, not NaN; finite unless ``finite=False``)
    within the bounds (``open_low``/``open_high`` exclude them); None passes if ``allow_none``.
    ``unit`` names the unit in the message ("a finite number of seconds >= 0")."""
    if value is None and allow_none:
        return value
    ok = is_number(value) and not math.isnan(value) and (math.isfinite(value) or not finite) \
        and (low is None or (value > low if open_low else value >= low)) \
        and (high is None or (value < high if open_high else value <= high))
    if not ok:
        noun = ("finite number" if finite else "number") + (f" of {unit}" if unit else "")
        if low == 0 and open_low and high is None:
            rule = f"a positive {noun}"
        elif low is not None and high is not None:
            rule = f"a {noun} in {'(' if open_low else '['}{low:g}, {high:g}{')' if open_high else ']'}"
        else:
            rule = f"a {noun}" + (f" {'>' if open_low else '>='} {low:g}" if low is not None else "") \
                + (f" {'<' if open_high else '<='} {high:g}" if high is not None else "")
        _fail(name, value, rule + (" (or None)" if allow_none else ""), where, fix, key)
    return value


def check_choice(name: str, value, options: Sequence, *, where: str = "", fix: Fix = "", key: str = ""):
    """``value`` if it is one of ``options``; else the options and the closest one."""
    if value not in options:
        param = Param(name, value, key=key)
        raise ConfigError(where, param, f" is not one of {', '.join(map(repr, options))}", *_fix(fix),
                          "." + did_you_mean(value, options), param=param, limit=tuple(options))
    return value


def check_fractions(name: str, value, count: int, *, per: str = "neuron layer", open_low: bool = False,
                    open_high: bool = False, where: str = "", fix: Fix = "") -> list[float]:
    """``value`` (one number, or a list, tuple or array of ``count``, one per ``per``) as ``count``
    floats in [0, 1] (``open_low``/``open_high`` exclude 0/1)."""
    def one(label, v):
        return float(check_number(label, v, low=0, high=1, open_low=open_low, open_high=open_high, where=where,
                                  fix=fix))
    if isinstance(value, (list, tuple, np.ndarray)):
        values = list(value)
        if len(values) != count:
            raise ConfigError(where, Param(name), f" has {len(values)} entries; give one number or {count} (one per {per})",
                          param=Param(name, values), limit=count)
        return [one(f"{name}[{i}]", v) for i, v in enumerate(values)]
    return [one(name, value)] * count


def check_positive_array(name: str, value, *, integer: bool = False, where: str = "", fix: Fix = "") -> np.ndarray:
    """``value`` (a number or an array of them) as a non-empty numpy array whose entries are all
    finite and > 0; with ``integer``, whole numbers >= 1 (whole floats such as 256.0 pass)."""
    rule = "an integer >= 1" if integer else "a positive finite number"
    if isinstance(value, (bool, np.bool_)):
        _fail(name, value, rule, where, fix)
    arr = np.asarray(value)
    if arr.dtype.kind not in "iuf":
        _fail(name, value, f"{rule} (got dtype {arr.dtype})", where, fix)
    if arr.size == 0:
        raise ConfigError(f"{where}{name} is an empty array; pass at least one value")
    bad = arr < 1 if integer else arr <= 0
    if arr.dtype.kind == "f":  # NaN compares false, so test it (and fractions) explicitly
        bad |= ~np.isfinite(arr)
        if integer:
            bad |= arr != np.floor(arr)
    if np.any(bad):
        _fail(name, arr[bad].ravel()[0].item(), rule, where, fix)
    return arr


def host_memory_bytes() -> int:
    """This machine's physical memory in bytes (8 GiB if it cannot be read)."""
    import os
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return 8 * 2**30


def check_host_bytes(what: str, nbytes: float, *, share: float = 0.5, fix: Fix = "") -> None:
    """Refuse, before allocating it, an array of ``nbytes`` larger than ``share`` of this
    machine's memory (a one-line error instead of a MemoryError or the kernel's OOM killer)."""
    limit = share * host_memory_bytes()
    if nbytes > limit:
        raise DoesNotFit(f"{what} would take {nbytes / 2**30:,.1f} GiB of this machine's memory; the limit is "
                         f"{limit / 2**30:,.1f} GiB ({100 * share:.0f}% of {host_memory_bytes() / 2**30:,.1f} GiB)",
                         *_fix(fix), limit=limit)


def check_seed(name: str, value, *, where: str = "") -> int:
    """A random seed: an integer >= 0 (numpy's generators take no negative seed)."""
    return check_int(name, value, low=0, where=where, fix="numpy seeds are non-negative integers, e.g. 0")


def check_input_file(path, what: str, fix: str = "") -> str:
    """Refuse a file to read that is missing or is a folder, each in its own words; returns the path.
    ``what`` names the file ("experiment file", "NIR file"; text or parts), ``fix`` what to give instead."""
    import os

    path = os.fspath(path)
    if os.path.isdir(path):
        raise ConfigError(what, f" {path!r} is a folder; give the file itself" + (f" ({fix})" if fix else ""))
    if not os.path.exists(path):
        raise ConfigError(what, f" {path!r} does not exist (looked for {os.path.abspath(path)!r})"
                          + (f"; give {fix}" if fix else ""))
    return path
