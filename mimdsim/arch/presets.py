"""Presets, field overrides and validation shared by every hardware spec family.

A :class:`Family` ties a frozen spec dataclass (``ChipSpec``, ``GpuSpec``, ``SystolicSpec``,
``CpuSpec``) to its presets, so that looking a preset up, overriding fields and checking
field values read the same for all of them: an unknown preset or field names the closest
valid one and all valid ones; a bad value names a valid one to pass instead.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, Iterable, Mapping, Sequence, TypeVar

from ..errors import ConfigError, Param
from ..checks import check_choice, check_int, check_number, closest, did_you_mean

S = TypeVar("S")


@dataclass(frozen=True)
class Family(Generic[S]):
    """One spec family: its dataclass (whose first field is ``name``), its presets
    (name -> field values) and the words its messages use."""

    spec: type[S]
    kind: str  # in messages: "unknown {kind} 'x'", e.g. "chip", "GPU", "systolic array", "CPU"
    maker: str  # the function users call, quoted in a fix: "chip", "gpu", ...
    presets: Mapping[str, Mapping[str, Any]]
    descriptions: Mapping[str, str]
    products: Mapping[str, str] = dataclasses.field(default_factory=dict)  # a product's name -> its preset

    def get(self, name: str | S, overrides: Mapping[str, Any]) -> S:
        """The preset ``name`` (or the spec ``name`` itself) with ``overrides`` applied."""
        if isinstance(name, self.spec):
            return self.replace(name, overrides) if overrides else name
        if not isinstance(name, str) or name not in self.presets:
            product = self.products.get(name.lower()) if isinstance(name, str) else None
            raise ConfigError(f"unknown {self.kind} {name!r}; presets are {', '.join(self.presets)}."
                              + (f" {name} is the processor of preset {product!r}: give {product!r}." if product
                                 else did_you_mean(name, self.presets)))
        self.check_fields(overrides)
        return self.spec(**{"name": name, **self.presets[name], **overrides})

    def replace(self, spec: S, overrides: Mapping[str, Any]) -> S:
        """``spec`` with ``overrides`` applied (validated again on construction)."""
        self.check_fields(overrides)
        return dataclasses.replace(spec, **overrides)

    def check_fields(self, names: Iterable[str], *, where: str = "") -> None:
        """Raise ConfigError (its message prefixed by ``where``) unless every name is a field."""
        valid = [f.name for f in dataclasses.fields(self.spec)]
        unknown = sorted(set(names) - set(valid))
        if unknown:
            hints = ", ".join(f"{u!r} -> {' or '.join(map(repr, c))}" for u in unknown if (c := closest(u, valid)))
            raise ConfigError(f"{where}unknown {self.kind} field(s) {unknown}; valid fields: {', '.join(sorted(valid))}."
                              + (f" Did you mean {hints}?" if hints else ""))

    def description(self, name: str) -> str:
        return self.descriptions.get(name, "")

    def key(self, field: str) -> str:
        """The settings key of ``field``: a chip's fields are set as chip.set.FIELD (``--set``)."""
        return f"chip.set.{field}" if self.kind == "chip" else f"{self.kind}.{field}"

    def fix(self, name: str, field: str) -> tuple:
        """``pass e.g. chip('ipu-mk2', tiles=1472)``: a call that works, quoting the preset's own
        value of ``field``, else the first preset's, else the field's default."""
        first = next(iter(self.presets))
        base = name if isinstance(name, str) and name in self.presets else first
        defaults = {f.name: f.default for f in dataclasses.fields(self.spec)}
        value = next((v for v in (self.presets[base].get(field), self.presets[first].get(field), defaults[field])
                      if v is not None and v is not dataclasses.MISSING), None)
        shown = f"{value:g}" if isinstance(value, float) else repr(value)
        return ("pass e.g. ", Param(field, value, key=self.key(field), shown=shown,
                                    python=f"{self.maker}({base!r}, {field}={shown})"))

    def check(self, spec: S, *, ints: Mapping[str, int] | None = None, positive: Iterable[str] = (),
              seconds: Iterable[str] = (), optional: Iterable[str] = (),
              choices: Mapping[str, Sequence] | None = None) -> None:
        """Validate ``spec`` on construction: a non-empty ``name``; ``ints`` (field -> lowest
        value) integers; ``positive`` fields positive finite numbers (``optional`` ones may be
        None); ``seconds`` fields finite durations >= 0; ``choices`` (field -> options) one of
        their options. Each message quotes a valid value."""
        name = spec.name
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{self.kind} name={name!r} must be a non-empty string")
        where, optional = f"{self.kind} {name!r}: ", set(optional)
        for field, low in (ints or {}).items():
            check_int(field, getattr(spec, field), low=low, where=where, fix=partial(self.fix, name, field),
                      key=self.key(field))
        for field in positive:
            check_number(field, getattr(spec, field), low=0, open_low=True, allow_none=field in optional,
                         where=where, fix=partial(self.fix, name, field), key=self.key(field))
        for field in seconds:
            check_number(field, getattr(spec, field), low=0, unit="seconds", where=where,
                         fix=partial(self.fix, name, field), key=self.key(field))
        for field, options in (choices or {}).items():
            check_choice(field, getattr(spec, field), options, where=where, fix=partial(self.fix, name, field),
                         key=self.key(field))
