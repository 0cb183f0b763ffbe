"""ttnn on Tenstorrent Tensix chips: its matmul program configs (:mod:`.matmul_config`) and single ops lowered
to the one engine's programs (:mod:`.ops`): the dataflow family's op library, in a folder of its own.

Imported by: cli (``mimdsim op --chip wormhole-n150``), workloads, validation (the tensix-matmul source).
"""
from .ops import TensixOpReport, tensix_op

__all__ = ["tensix_op", "TensixOpReport"]
