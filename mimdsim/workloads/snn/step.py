"""The run settings of one training step, which every platform's model takes (the chip's programs,
the GPU's kernel lists, the systolic array): timesteps, batch, optimizer, the chip's number format."""
from __future__ import annotations

from ...optim import OPTIMIZERS
from ...checks import check_choice, check_int

PRECISIONS = {"fp32": 4, "fp16": 2}  # bytes of every value on the chip


def check_step(timesteps, batch_size, optimizer) -> None:
    """The run settings of a training step, which every platform's model takes."""
    check_int("timesteps", timesteps, low=1, fix="a step runs at least one timestep")
    check_int("batch_size", batch_size, low=1, fix="a step trains at least one sample")
    check_choice("optimizer", optimizer, OPTIMIZERS)
