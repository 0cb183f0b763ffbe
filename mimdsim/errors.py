"""The one error hierarchy of mimdsim.

Every message names the offending value, the limit it broke and what to change.
"""
from __future__ import annotations


class MimdsimError(Exception):
    """Base class of every error mimdsim raises on purpose."""


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
    ``breakdown`` (tensor name -> bytes on that tile).
    """

    def __init__(self, tile: int, used: int, limit: int, breakdown: dict[str, int], hint: str):
        self.tile, self.used, self.limit, self.breakdown, self.hint = tile, used, limit, dict(breakdown), hint
        items = sorted(breakdown.items(), key=lambda kv: -kv[1])
        rows = ", ".join(f"{k}={v:,} B" for k, v in items[:8])
        if len(items) > 8:
            rows += f", ... {len(items) - 8} smaller tensors ({sum(v for _, v in items[8:]):,} B)"
        super().__init__(
            f"tile {tile} needs {used:,} B but has {limit:,} B of SRAM ({rows}). {hint}"
        )

