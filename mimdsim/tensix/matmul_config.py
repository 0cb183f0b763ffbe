"""ttnn's matmul program config for DRAM-interleaved operands, as ttnn picks it when the user gives none.

Follows tt-metal's ``create_simple_matmul_program_config`` and ``get_mcast_1d_config``
(ttnn/cpp/ttnn/operations/matmul/device/config/matmul_program_config.cpp at tt-metal commit 001cea9a):
every tensor in DRAM, interleaved (ttnn's default memory config), shapes padded to 32 x 32 tiles.

* ``is_narrow_shape``: height/width ratio above 8, or (all in DRAM) a side of at most one tile -> a 1D
  multicast config: wide (N > M) multicasts in0 (``mcast_in0``), tall multicasts in1.
* otherwise the 2D multicast config over the whole compute grid: per_core_M = ceil(Mt / grid_y),
  per_core_N = ceil(Nt / grid_x), in0_block_w = Kt / grid_x when grid_x divides Kt, else 1; in0 is
  multicast along each row from its first core, in1 down each column from its first core.
* the output block (out_block_h x out_block_w) and in0_block_w shrink until the circular buffers fit
  the core's free L1 (``get_multi_dim_per_core_factor``): double-buffered in0 and in1 blocks and one
  output block (``get_estimated_size_of_cbs``); the subblock is the first of ``SUBBLOCK_HW_CHOICES`` that
  divides the output block (at most 8 tiles, 4 with fp32 accumulation).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

TILE = 32
NARROW_SHAPE_RATIO_THRESHOLD = 8
SUBBLOCK_HW_CHOICES = ((4, 2), (2, 4), (8, 1), (1, 8), (7, 1), (1, 7), (3, 2), (2, 3), (6, 1), (1, 6),
                       (5, 1), (1, 5), (2, 2), (4, 1), (1, 4), (3, 1), (1, 3), (2, 1), (1, 2), (1, 1))


@dataclass(frozen=True)
class MatmulConfig:
    """A ttnn matmul program config and where its operands move: grid, blocks (in tiles) and multicast."""

    kind: str  # "2d-mcast", "1d-mcast-in0" (wide) or "1d-mcast-in1" (tall)
    grid_x: int  # cores used along x (columns) ...
    grid_y: int  # ... and y (rows)
    Mt: int
    Kt: int
    Nt: int
    per_core_M: int
    per_core_N: int
    in0_block_w: int
    out_block_h: int
    out_block_w: int
    out_subblock_h: int
    out_subblock_w: int
    cb_bytes: int  # L1 the circular buffers take per core

    @property
    def cores(self) -> int:
        return self.grid_x * self.grid_y

    @property
    def k_blocks(self) -> int:
        return math.ceil(self.Kt / self.in0_block_w)

    @property
    def out_blocks(self) -> int:
        """Output blocks per core, each with its own pass over K."""
        return math.ceil(self.per_core_M / self.out_block_h) * math.ceil(self.per_core_N / self.out_block_w)

    def describe(self) -> dict:
        return {"config": self.kind, "grid": f"{self.grid_x}x{self.grid_y}", "cores": self.cores,
                "per_core_M": self.per_core_M, "per_core_N": self.per_core_N, "in0_block_w": self.in0_block_w,
                "out_block": f"{self.out_block_h}x{self.out_block_w}",
                "out_subblock": f"{self.out_subblock_h}x{self.out_subblock_w}", "k_blocks": self.k_blocks,
                "out_blocks": self.out_blocks, "cb_bytes_per_core": self.cb_bytes}


def cb_bytes(per_core_M: int, per_core_N: int, in0_block_w: int, in0_tile: int, in1_tile: int, out_tile: int) -> int:
    """``get_estimated_size_of_cbs``: in0 and in1 blocks double-buffered, one output block."""
    return (per_core_M * in0_block_w * 2 * in0_tile + per_core_N * in0_block_w * 2 * in1_tile
            + per_core_M * per_core_N * out_tile)


def is_narrow_shape(height: int, width: int, all_dram: bool = True) -> bool:
    ratio = max(height, width) // max(1, min(height, width))
    if ratio > NARROW_SHAPE_RATIO_THRESHOLD:
        return True
    return all_dram and (height <= TILE or width <= TILE)


def fit_blocks(per_core_M: int, per_core_N: int, in0_block_w: int, tiles: tuple, l1_free: int,
               adjust_in0_block_w: bool) -> tuple[int, int, int] | None:
    """``get_multi_dim_per_core_factor``: the output block and in0_block_w whose CBs fit ``l1_free``
    bytes, the whole per-core block if it fits, else the largest m x n (closest to square on ties) from
    the divisors of per_core_M and per_core_N, k kept as large as it can be; None if not even 1 x 1 fits."""
    if cb_bytes(per_core_M, per_core_N, in0_block_w, *tiles) < l1_free:
        return per_core_M, per_core_N, in0_block_w
    m_factors = [per_core_M, 1] + [f for f in range(per_core_M // 2, 1, -1) if per_core_M % f == 0]
    n_factors = [per_core_N, 1] + [f for f in range(per_core_N // 2, 1, -1) if per_core_N % f == 0]
    by_product: dict[int, tuple[int, int]] = {}
    for m in m_factors:
        for n in n_factors:
            ratio = max(m, n) / min(m, n)
            old = by_product.get(m * n)
            if old is None or not max(old) / min(old) < ratio:
                by_product[m * n] = (m, n)
    low_k = 1 if adjust_in0_block_w else in0_block_w
    for k in range(in0_block_w, low_k - 1, -1):
        if in0_block_w % k:
            continue
        for product in sorted(by_product, reverse=True):
            m, n = by_product[product]
            if cb_bytes(m, n, k, *tiles) < l1_free:
                return m, n, k
    return None


def subblock(out_block_h: int, out_block_w: int, fp32_dest_acc: bool = False) -> tuple[int, int]:
    """``get_matmul_subblock_params``: the first (h, w) choice dividing the output block."""
    for h, w in SUBBLOCK_HW_CHOICES:
        if fp32_dest_acc and h * w > 4:
            continue
        if out_block_h % h == 0 and out_block_w % w == 0:
            return h, w
    return 1, 1


def per_core_factor(in0_block_w: int, tiles: tuple, l1_free: int) -> int:
    """``get_per_core_factor``: the largest of 16, 8, 4, 2 square blocks whose CBs fit, else 1."""
    for f in (16, 8, 4, 2):
        if cb_bytes(f, f, in0_block_w, *tiles) < l1_free:
            return f
    return 1


def matmul_config(m: int, k: int, n: int, grid_x: int, grid_y: int, tiles: tuple, l1_free: int) -> MatmulConfig | None:
    """The program config ttnn builds for ``[m,k] x [k,n]`` with every tensor DRAM-interleaved on a
    ``grid_x`` x ``grid_y`` compute grid; ``tiles`` = bytes of one in0, in1 and output tile; None when not
    even one-tile blocks fit ``l1_free``."""
    Mt, Kt, Nt = (math.ceil(d / TILE) for d in (m, k, n))
    cores = grid_x * grid_y
    narrow = is_narrow_shape(Mt * TILE, Nt * TILE)
    wide = narrow and Nt > Mt
    tall = narrow and not wide
    pcf = per_core_factor(2, tiles, l1_free)
    blocks_y, blocks_x = math.ceil(Mt / pcf), math.ceil(Nt / pcf)
    in0_block_w = 1 if (blocks_y > 1 or blocks_x > 1) and Kt % 2 else 2
    in0_block_w = min(in0_block_w, Kt)
    single = blocks_y == 1 and blocks_x == 1
    range_y = blocks_y if not single and blocks_y <= grid_y and blocks_x <= grid_x else 0
    range_x = blocks_x if range_y else 0
    if range_y == 1 or wide or range_x == 1 or tall:
        mcast_in0 = range_y == 1 or wide
        if mcast_in0:  # every core takes all of M and a slice of N; in0 multicast to all
            per_core_M, per_core_N = Mt, math.ceil(Nt / cores)
            used = math.ceil(Nt / per_core_N)
        else:  # every core takes a slice of M and all of N; in1 multicast to all
            per_core_M, per_core_N = math.ceil(Mt / cores), Nt
            used = math.ceil(Mt / per_core_M)
        in0_block_w = 2 if Kt % 2 == 0 else 1
        fit = fit_blocks(per_core_M, per_core_N, in0_block_w, tiles, l1_free, adjust_in0_block_w=False)
        if fit is None:
            return None
        gx, gy = min(used, grid_x), math.ceil(used / grid_x)
        kind = "1d-mcast-in0" if mcast_in0 else "1d-mcast-in1"
    else:
        in0_block_w = Kt // grid_x if Kt % grid_x == 0 else 1
        per_core_M, per_core_N = math.ceil(Mt / grid_y), math.ceil(Nt / grid_x)
        fit = fit_blocks(per_core_M, per_core_N, in0_block_w, tiles, l1_free, adjust_in0_block_w=True)
        if fit is None:
            return None
        gx, gy = math.ceil(Nt / per_core_N), math.ceil(Mt / per_core_M)
        kind = "2d-mcast"
    out_h, out_w, in0_block_w = fit
    sub_h, sub_w = subblock(out_h, out_w)
    return MatmulConfig(kind, gx, gy, Mt, Kt, Nt, per_core_M, per_core_N, in0_block_w, out_h, out_w, sub_h, sub_w,
                        cb_bytes(out_h, out_w, in0_block_w, *tiles))
