"""Library messages in the command line's terms: each parameter an error, warning or note names
(a :class:`~mimdsim.errors.Param`) printed as its flag, found in the settings table by its key or
its Python name (``batch_size=0`` -> ``--batch 0``)."""
from __future__ import annotations

import functools

from ..config import BY_KEY, SETTINGS
from ..errors import UNSET, Message, MimdsimError, Param

OP_FLAGS = (  # flag, type, help: the shape arguments of mimdsim.op (KIND decides which apply)
    ("--m", int, "matmul: rows of the left operand [m,k]"), ("--k", int, "matmul: inner dimension"),
    ("--n", int, "matmul: columns of the right operand [k,n]"),
    ("--precision", str, "matmul: fp32 or fp16 (default fp16); a Tensix chip: bf16 (default), bfp8_b or bfp4_b"),
    ("--fidelity", str, "a Tensix chip's matmul or multiply: lofi, hifi2 (default), hifi3 or hifi4"),
    ("--elements", int, "elementwise, copy, dynamic-slice: the tensor's elements (spread over --tiles)"),
    ("--operand", str, "elementwise: scalar (default) or vector; a Tensix chip: add (default), mul or unary"), ("--pattern", str,
     "elementwise --operand vector: the vector's length; exchange: point-to-point (default), broadcast, all-to-all"),
    ("--regions", int, "contiguous regions per tile (default 1)"), ("--dtype", str, "float (default) or half"),
    ("--slices", int, "dynamic-slice: slices taken (default 1)"), ("--outputs", int, "reduce: output elements"),
    ("--partials", int, "reduce: inputs summed into each output"), ("--bytes", int, "exchange: bytes per message"),
    ("--bytes-in", int, "host: bytes from the host"), ("--bytes-out", int, "host: bytes to the host"),
    ("--scope", str, "sync: chip (default) or global"), ("--chips", int, "sync: chips the barrier spans"),
    ("--tiles", int, "tiles the op uses (default: every tile of the chip)"),
)


def flag_text(p: Param) -> str:
    """A parameter a library message names, as the command line spells it: its setting's flag (found
    by its settings key, or by its Python name among the settings'), with the value it names:
    ``batch_size=0`` -> ``--batch 0``, ``training=False`` (the setting run.inference) -> ``--inference``,
    a chip field -> ``--set FIELD=VALUE``, a named assumption -> ``--assume NAME=VALUE``."""
    key = p.key or setting_keys().get(p.name, "")
    value = p.value if p.setting_value is UNSET else p.setting_value
    shown = p.shown or ("" if value is UNSET else _shown(value))
    for prefix, flag in (("chip.set.", "--set"), ("assume.", "--assume")):
        if key.startswith(prefix):
            return f"{flag} {key[len(prefix):]}" + (f"={shown}" if shown and not p.action else "")
    setting = BY_KEY.get(key)
    flag = setting.flag if setting else other_flags().get(key)
    if flag is None:
        return p.as_python()
    if setting is not None and setting.kind == "bool" and isinstance(value, bool):
        return flag if value or flag.startswith("--no-") else f"--no-{flag[2:]}"
    return f"{flag} {shown}" if shown and not p.action else flag


def _shown(value) -> str:
    return ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


@functools.lru_cache(maxsize=None)
def setting_keys() -> dict:
    """{Python name: settings key}: each setting's Python name (its ``api``, else its key's last part);
    where several settings share a name, the first row of the table (``precision`` is the chip
    program's; a GPU's message names its key)."""
    keys: dict = {}
    for s in SETTINGS:
        keys.setdefault(s.api or s.key.rsplit(".", 1)[-1], s.key)
    return keys


@functools.lru_cache(maxsize=None)
def other_flags() -> dict:
    """The flags of commands whose parameters are not run settings, by the key their messages give
    (``op.m`` -> ``--m``)."""
    return {**{"op." + flag[2:].replace("-", "_"): flag for flag, _, _ in OP_FLAGS},
            "op.update": "--update", "op.chip": "--chip", "validate.source": "--source"}


def cli_text(text) -> str:
    """A library error, warning, note or report in the command line's terms (a plain string as it is)."""
    if isinstance(text, Warning) and text.args:
        text = text.args[0]
    if isinstance(text, (MimdsimError, Message)):
        return text.render(flag_text)
    return str(text)
