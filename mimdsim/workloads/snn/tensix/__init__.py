"""The SNN training step on Tenstorrent Tensix chips (the dataflow family): snnTorch's op stream priced as ttnn ops
(:mod:`.step`), in a folder of its own.

Imported by: workloads.snn.simulate (a Tensix chip's step), compare.
"""
from .step import tensix_simulate

__all__ = ["tensix_simulate"]
