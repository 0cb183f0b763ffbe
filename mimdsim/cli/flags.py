"""The flags of ``simulate``, ``compare``, ``run`` and ``train``, built from the settings table
(:data:`mimdsim.config.SETTINGS`): each setting's parser (type, limits, choices), its help line, and
the parsed values read back by TOML key."""
from __future__ import annotations

import argparse
import dataclasses
import re
from typing import Any

from ..config import DEFAULT_LAYERS, SETTINGS, Setting, bound_error
from .terms import cli_text

# Metavars in --help where the kind's default (N, X, SIZES, ...) would not say what to give.
METAVARS = {"gpu.trace": "FILE.py", "model.nir": "FILE.nir", "chip.preset": "PRESET", "gpu.preset": "PRESET", "gpu.systolic": "PRESET",
            "workload.cpu": "PRESET"}
KIND_METAVARS = {"int": "N", "float": "X", "str": "NAME", "int_list": "SIZES", "size_list": "SIZES",
                 "fraction_list": "A[,A...]", "str_list": "NAMES"}
KIND_FORMATS = {"int_list": "comma-separated, e.g. {example}", "size_list": "comma-separated, e.g. {example}",
                "fraction_list": "one number or comma-separated, one per layer",
                "str_list": "comma-separated"}


def _int_list(text):
    if any(not v.strip() for v in text.split(",")) and text.strip():
        raise argparse.ArgumentTypeError(f"{text!r} has an empty entry; give sizes separated by single commas, e.g. "
                                         + ",".join(map(str, DEFAULT_LAYERS)))
    try:
        vals = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers, e.g. "
                                         + ",".join(map(str, DEFAULT_LAYERS)))
    if len(vals) < 2:
        raise argparse.ArgumentTypeError(f"{text!r}: give at least an input and an output size")
    return vals


def _size_list(text):
    try:
        vals = [int(v) for v in text.split(",")]
    except ValueError:
        vals = []
    if not vals or min(vals) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of positive sizes, e.g. 512,512")
    return vals


def _fraction_list(text):
    try:
        vals = [float(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number or comma-separated list of numbers")
    return vals[0] if len(vals) == 1 else vals


def _str_list(choices):
    def parse(text):
        vals = [v.strip() for v in text.split(",") if v.strip()]
        bad = [v for v in vals if choices and v not in choices]
        if bad or not vals:
            raise argparse.ArgumentTypeError(f"unknown value {bad or text!r}; choose from {', '.join(choices)}")
        return vals
    return parse


def _bounded(s: Setting, parse):
    def check(text):
        value = parse(text)
        msg = bound_error(s, value)
        if msg:
            raise argparse.ArgumentTypeError(msg)
        return value
    check.__name__ = getattr(parse, "__name__", s.kind)  # argparse names the type in "invalid int value"
    return check


def _assume_value(text):
    """--assume NAME=VALUE for a named assumption (mimdsim.assumptions)."""
    from ..assumptions import check
    from ..errors import ConfigError

    if "=" not in text:
        raise argparse.ArgumentTypeError(f"--assume takes NAME=VALUE, got {text!r}")
    key, value = (t.strip() for t in text.split("=", 1))
    try:
        return key, check({key: value})[key]
    except ConfigError as e:
        raise argparse.ArgumentTypeError(cli_text(e)) from None


def _field_value(text):
    """--set FIELD=VALUE for a ChipSpec field."""
    from ..arch.chip import CHIPS
    from ..errors import ConfigError

    if "=" not in text:
        raise argparse.ArgumentTypeError(f"--set takes FIELD=VALUE, got {text!r}")
    key, value = text.split("=", 1)
    try:  # a field of another registered family (a Tensix chip's grid_x) is checked against its chip later
        from ..arch.execution import FAMILIES
        if not any(key.strip() in {f.name for f in dataclasses.fields(f.specs.spec)} for f in FAMILIES.values()):
            CHIPS.check_fields([key.strip()])
    except ConfigError as e:
        raise argparse.ArgumentTypeError(cli_text(e)) from None
    try:
        num = float(value.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--set {key}: {value!r} is not a number")
    return key.strip(), (int(num) if num == int(num) and "." not in value and "e" not in value.lower() else num)


def add_arguments(parser: argparse.ArgumentParser, command: str, groups: tuple = (), *,
                  overrides: bool = False) -> None:
    """Add the flags of every setting that ``command`` takes; a setting whose ``group`` is one
    of ``groups`` goes into that help section (sections in the order of ``groups``).

    ``overrides=True`` (``mimdsim run FILE``) adds the flag of every experiment-file key, with no
    default: only the flags given appear in the parsed arguments, and they override the file.
    A ``bool`` flag gets ``--flag``/``--no-flag``, except one whose name is already a negation
    (``--no-gpu``): that one is a plain switch."""
    sections = {title: parser.add_argument_group(title) for title in groups}
    flags = {s.flag for s in SETTINGS if overrides or command in s.commands}
    for s in SETTINGS:
        if (not s.in_files or s.kind == "table") if overrides else command not in s.commands:
            continue
        kw: dict[str, Any] = {"dest": s.dest, "help": help_for(s, flags, show_default=not overrides),
                              "default": argparse.SUPPRESS if overrides else s.default}
        if s.kind == "bool":
            kw["action"] = "store_true" if s.flag.startswith("--no-") else argparse.BooleanOptionalAction
        elif s.kind == "table":
            kw.update(type=_assume_value if s.key == "assume" else _field_value, action="append",
                      metavar=s.metavar or "FIELD=VALUE")
        else:
            kw["type"] = _bounded(s, {"int": _int, "float": _float, "str": str, "int_list": _int_list,
                                      "size_list": _size_list, "fraction_list": _fraction_list,
                                      "str_list": _str_list(s.choices)}[s.kind])
            if s.choices and s.kind == "str":
                kw["choices"] = s.choices
            else:
                kw["metavar"] = s.metavar or METAVARS.get(s.key) or KIND_METAVARS[s.kind]
        sections.get(s.group, parser).add_argument(s.flag, **kw)


def _int(text):
    try:
        return int(text.replace("_", ""))
    except ValueError:
        try:
            f = float(text)
        except ValueError:
            f = None
        hint = f"; give a whole number, e.g. {int(f)}" if f is not None and f == f and abs(f) != float("inf") \
            else "; give a whole number"
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer{hint}") from None


def _float(text):
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if v != v or v in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return v


def help_for(s: Setting, flags: set, show_default: bool = True) -> str:
    """:func:`help_text` for a command that takes ``flags``: a clause about a flag the command does
    not have ("; a --model graph: ...", which ``train`` has no --model for; "; --precision is the GPU's"
    in ``simulate``, which has no GPU) is left out."""
    return re.sub(r"; [^;()]*?(--[a-z][\w-]*)[^;)]*", lambda m: m.group(0) if m.group(1) in flags else "",
                  help_text(s, show_default))


def help_text(s: Setting, show_default: bool = True) -> str:
    """The flag's help line: its meaning, its format, its default once (not when the help
    already says it, nor for an unset or off default)."""
    text, d = s.help, s.default
    fmt = KIND_FORMATS.get(s.kind)
    if fmt:  # the format before any "(default: ...)" the help already gives
        fmt = "comma-separated" if isinstance(d, list) else fmt.format(example="512,512")
        cut = text.find(" (default")
        text = f"{text} ({fmt})" if cut < 0 else f"{text[:cut]} ({fmt}){text[cut:]}"
    if show_default and d is not None and d is not False and "default" not in s.help:
        shown = ",".join(map(str, d)) if isinstance(d, list) else ("on" if d is True else d)
        text += f" (default: {shown})"
    return text


def values_from_args(args) -> dict:
    """{TOML key: value} of the parsed arguments (``--set`` pairs become a dict)."""
    out = {}
    for s in SETTINGS:
        if hasattr(args, s.dest):
            v = getattr(args, s.dest)
            out[s.key] = table_of_pairs(s.flag, v) if s.kind == "table" and v else v
    return out


def table_of_pairs(flag: str, pairs) -> dict:
    """``--set``/``--assume`` NAME=VALUE pairs as a dict; a name given twice is refused (the later
    value would silently win)."""
    from ..errors import ConfigError

    def shown(value):
        return format(value, ".15g") if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)

    table: dict = {}
    for name, value in pairs:
        if name in table and table[name] != value:
            typed = name.removeprefix("chip.set.")  # run FILE --set keeps a chip field under its table
            raise ConfigError(f"{flag} {typed} is given twice ({flag} {typed}={shown(table[name])} and {flag} "
                              f"{typed}={shown(value)}); give it once")
        table[name] = value
    return table


