"""Dense layer on the AMP (Accumulating Matrix Product) unit: ``Y = act(X W + b)``.

One vertex per tile computes its block ``Y[rows, cols] = act(X[rows, :] W[:, cols] + b[cols])``
(the layer's blocks tile Y exactly, so the functional implementation computes the whole layer at
once). The AMP unit of a tile performs ``amp_flops_fp32`` / ``amp_flops_fp16`` FLOPs per cycle
at peak; hand-written AMP kernels reached 48-84% of it per tile (hardware.md, RE), so::

    amp cycles = ceil(2 · rows · cols · depth / (amp_flops_per_cycle · utilisation))
                 + workers · AMP_SETUP + vertex_launch_cycles
    epilogue   = workers · (EPILOGUE_OVERHEAD + ceil(ceil(rows · cols / simd) / workers) · per_vector[act])
                 + vertex_launch_cycles

with ``utilisation`` a named parameter (default :data:`AMP_UTILISATION`, the middle of the
measured range). fp16 multiplies fp16 inputs and accumulates in fp32 (AMP partials), then
rounds the layer output to fp16.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .codelet import register

AMP_UTILISATION_MIN = 0.48  # measured per-tile GEMM utilisation of hand-written AMP kernels (RE, C600)
AMP_UTILISATION_MAX = 0.84
AMP_UTILISATION = (AMP_UTILISATION_MIN + AMP_UTILISATION_MAX) / 2  # 0.66, the middle of the range
AMP_SETUP = 10  # per worker: pointers to X, W, Y blocks and loop counters
EPILOGUE_OVERHEAD = 4  # per worker: pointers and loop setup
# Instructions per output vector (float2 in fp32, half4 in fp16):
EPILOGUE_PER_VECTOR = {
    "relu": 3,  # ld Y co-issued with add bias; max 0; st
    "none": 2,  # ld Y co-issued with add bias; st
    "sigmoid": 1 + 12 + 1 + 4 + 1,  # add bias; exp (12); 1 + e; reciprocal (4); st
}
ACTIVATIONS = tuple(EPILOGUE_PER_VECTOR)
PRECISIONS = ("fp32", "fp16")


@dataclass(frozen=True)
class AmpTile:
    """What the AMP codelet knows of a tile: workers, vector widths and the AMP unit's rates."""

    workers: int = 6
    vertex_launch_cycles: int = 11
    simd_fp32: int = 2
    simd_fp16: int = 4
    amp_flops_fp32: int = 32
    amp_flops_fp16: int = 128

    @classmethod
    def of(cls, spec) -> "AmpTile":
        """The AMP tile of a ChipSpec-like object (duck-typed: kernels know no chip)."""
        return cls(workers=spec.workers, vertex_launch_cycles=spec.vertex_launch_cycles, simd_fp32=spec.simd_fp32,
                   simd_fp16=spec.simd_fp16, amp_flops_fp32=spec.amp_flops_fp32, amp_flops_fp16=spec.amp_flops_fp16)

    def amp_flops(self, precision: str) -> int:
        return self.amp_flops_fp16 if precision == "fp16" else self.amp_flops_fp32

    def simd(self, precision: str) -> int:
        return self.simd_fp16 if precision == "fp16" else self.simd_fp32


def activation(y, act):
    if act == "relu":
        return np.maximum(y, 0)
    if act == "sigmoid":
        return 1 / (1 + np.exp(-y))
    return y


def amp_layer(X, W, b, act="relu", precision="fp32"):
    """``act(X W + b)`` of the whole layer (all tiles' blocks at once)."""
    if precision == "fp16":
        x, w, bb = (np.asarray(a, dtype=np.float16).astype(np.float32) for a in (X, W, b))
        return activation(x @ w + bb, act).astype(np.float16)
    return activation(np.asarray(X, np.float32) @ np.asarray(W, np.float32) + np.asarray(b, np.float32),
                      act).astype(np.float32)


def amp_matmul_cycles(rows, cols, depth, tile: AmpTile, precision="fp32", utilisation=AMP_UTILISATION):
    """AMP cycles of the vertex on each tile: ``rows[v] x depth`` by ``depth x cols[v]`` (0 if empty)."""
    rows, cols = np.asarray(rows), np.asarray(cols)
    flops = 2.0 * rows * cols * depth
    cyc = np.ceil(flops / (tile.amp_flops(precision) * utilisation)) + tile.workers * AMP_SETUP + tile.vertex_launch_cycles
    return np.where(flops > 0, cyc, 0.0)


def epilogue_cycles(rows, cols, tile: AmpTile, act="relu", precision="fp32"):
    """Bias and activation over the tile's ``rows x cols`` outputs, vectors split over the workers."""
    n = np.asarray(rows) * np.asarray(cols)
    vec = -(-n // tile.simd(precision))
    per_worker = -(-vec // tile.workers)
    cyc = tile.workers * (EPILOGUE_OVERHEAD + per_worker * EPILOGUE_PER_VECTOR[act]) + tile.vertex_launch_cycles
    return np.where(n > 0, cyc, 0).astype(np.float64)


def amp_layer_cycles(rows, cols, depth, tile: AmpTile, act="relu", precision="fp32", utilisation=AMP_UTILISATION):
    """The dense-layer vertex: AMP product then epilogue."""
    return amp_matmul_cycles(rows, cols, depth, tile, precision, utilisation) + \
        epilogue_cycles(rows, cols, tile, act, precision)


def _layer_cost(tiles, g, work, tile):
    return tiles, amp_layer_cycles(g["rows"], g["cols"], g["depth"], AmpTile.of(tile), g["act"], g["precision"],
                                   g["utilisation"])


AMP_LAYER = register("amp_layer", amp_layer_cycles, code_bytes=1024, cost=_layer_cost, static=True)
