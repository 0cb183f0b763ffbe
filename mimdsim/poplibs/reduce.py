"""popops' reduction of a ``[B, n]`` tensor over its first dimension, as poplibs plans it: the stages
(how many partials each output sums at each stage) and one tile's reduce vertices."""
from __future__ import annotations

import numpy as np

from ..program import VertexSet

FLOAT = 4  # the reduced tensors here are float (gradients, partial sums)
REDUCE_MORE_STAGES = 64  # popops reductionFactorThresholdToAddMoreStages (lib/popops/reduction/ReductionPlan.hpp)


def reduce_first_dim_stages(B: int, n: int, n_tiles: int, dtype_bytes: int = FLOAT):
    """popops::reduce of a ``[B, n]`` tensor (a gradient over the batch) to ``[n]``, the tensor on its
    linear mapping (no tile holds two rows of one column, so no on-tile first stage), as poplibs plans
    it (graphcore/poplibs sdk/poplar/2.5.1 ``lib/popops/reduction/Reduction.cpp`` ``reduceFirstDim2D``;
    ``ReductionPlan.cpp`` ``calculateNextStep``, ``calculateSplit``; ``ReductionStages.cpp``
    ``findGrainSizeForOp``).

    Returns ``(cols, depth)`` of each stage: ``cols`` output columns per reducing piece, ``depth``
    partials each; one piece per tile. An intermediate stage is added while the partials exceed
    64 per output (``B > 64``: with fewer, the single stage reduces all ``B``)."""
    grain = 2 * (8 // dtype_bytes)  # ADD: twice the vector width (float 2, half 4)
    if B * n <= n * REDUCE_MORE_STAGES:
        return [(n, B)]
    avg = max(int(np.sqrt(B)), 1)  # sqrt(total data / outputs): the partials per output
    min_cols = max(grain, ((n // grain) // avg) * grain)  # minIntervalSize = n (whole rows)
    pieces = max(min(-(-n // min_cols), n_tiles), 1)  # splitRegions: at least min_cols columns a piece
    cols = -(-n // pieces)
    ideal = max((B * n) // n_tiles, 1)
    N = max((B * cols) // ideal, 1)
    if (B * cols) // N < REDUCE_MORE_STAGES:
        N = max((B * cols) // REDUCE_MORE_STAGES, 1)
    if B // N < 2:  # minPieceRows
        N = max(B // 2, 1)
    return [(cols, -(-B // N)), (n, N)]


def tile_reduce(layer, tiles, outputs, depth, workers: int = 6) -> list[VertexSet]:
    """One tile's reduction of ``outputs`` (one region) over ``depth`` partials: fewer regions than
    workers, so popops splits the partials between the workers (never under 2 rows a piece) and adds
    a second on-tile stage to combine them (poplibs sdk/poplar/2.5.1 ``lib/popops/reduction/
    ReductionConnection.cpp`` ``connectReductions``: ``useTwoStageReduction``,
    ``splitTwoStageReductionsBetweenWorkers``)."""
    outputs = np.asarray(outputs, dtype=np.int64)
    pieces = min(workers, max(depth // 2, 1))
    if pieces == 1:
        return [VertexSet("popops.reduce", layer, tiles, dict(outputs=outputs, inputs_per_output=depth,
                                                              dtype_bytes=FLOAT))]
    return [VertexSet("popops.reduce", layer, tiles, dict(outputs=outputs * pieces, regions=pieces,
                                                          inputs_per_output=-(-depth // pieces), dtype_bytes=FLOAT)),
            VertexSet("popops.reduce", layer, tiles, dict(outputs=outputs, inputs_per_output=pieces,
                                                          dtype_bytes=FLOAT))]
