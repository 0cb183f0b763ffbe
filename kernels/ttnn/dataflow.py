"""A Tensix core's reader, compute and writer kernels joined by circular buffers: the dataflow rules.

tt-metal's programming model (the TT-Metalium guide, "Read-Compute-Write kernel pipeline"; the matmul
kernels ttnn/cpp/ttnn/operations/matmul/device/kernels/dataflow/reader_bmm_tile_layout_in0_sender_*.cpp,
reader_bmm_tile_layout_in1_sender_writer_padding.cpp and compute/bmm_large_block_zm_fused_bias_activation.cpp):
the reader fills a circular buffer (CB) while compute drains the one before, so with two blocks of room
in each CB the three kernels overlap and a block costs its slowest kernel. The rules, per core, in cycles
of the AI clock:

    read(B)    = dram_latency + max(B / noc_bytes_per_cycle, chip_dram_bytes / dram_bytes_per_cycle)
                 (a sender's own NoC port, or its share of DRAM when every sender reads at once)
    mcast(B)   = B / noc_bytes_per_cycle + 2 niu + hops x hop      (sent once to a row or column of cores)
    data       = max(read(in0) + mcast(in0), read(in1) + mcast(in1))   (two RISC-Vs on two NoCs; a sender
                 waits for its read, noc_async_read_barrier, before it multicasts; a receiver waits for both)
    compute    = tile products x cycles per tile product (16 x fidelity passes)
    write(B)   = max(B / noc_bytes_per_cycle, chip_out_bytes / dram_bytes_per_cycle)  (posted writes)

    fill  = data                        the first block: nothing to overlap
    block = max(data, compute)          steady state: the next block arrives while this one computes
    drain = compute + write(out block)  the last block, then the output block to DRAM

An element-wise op streams tile by tile: ``stream = max(read + write per tile, compute per tile)``.
"""
from __future__ import annotations

import numpy as np

from ..codelet import register


def _g(tiles, g, key):
    return np.broadcast_to(np.asarray(g[key], dtype=np.float64), np.shape(tiles))


def read_cycles(own_bytes, chip_bytes, noc_bytes_per_cycle, dram_bytes_per_cycle, dram_latency):
    """One reader's DRAM read: its NoC port or its share of DRAM, whichever binds, plus the latency."""
    own, chip = np.asarray(own_bytes, dtype=np.float64), np.asarray(chip_bytes, dtype=np.float64)
    return np.where(own > 0, dram_latency + np.maximum(own / noc_bytes_per_cycle, chip / dram_bytes_per_cycle), 0.0)


def mcast_cycles(nbytes, hops, noc_bytes_per_cycle, hop_cycles, niu_cycles):
    """A multicast write of ``nbytes`` to cores up to ``hops`` routers away (0 bytes: no multicast)."""
    b = np.asarray(nbytes, dtype=np.float64)
    return np.where(b > 0, b / noc_bytes_per_cycle + 2 * niu_cycles + np.asarray(hops) * hop_cycles, 0.0)


def data_cycles(g, tiles):
    """Cycles until a block's two operands are in a core's CBs: the slower of the in0 and in1 paths."""
    noc, dram = _g(tiles, g, "noc_bytes_per_cycle"), _g(tiles, g, "dram_bytes_per_cycle")
    lat, hop, niu = _g(tiles, g, "dram_latency"), _g(tiles, g, "hop_cycles"), _g(tiles, g, "niu_cycles")
    chip = _g(tiles, g, "chip_read_bytes")
    paths = []
    for op in ("in0", "in1"):
        nbytes = _g(tiles, g, f"{op}_bytes")
        paths.append(read_cycles(nbytes, chip, noc, dram, lat)
                     + mcast_cycles(np.where(_g(tiles, g, f"{op}_hops") > 0, nbytes, 0.0), _g(tiles, g, f"{op}_hops"),
                                    noc, hop, niu))
    return np.maximum(*paths)


def compute_cycles(g, tiles):
    return _g(tiles, g, "tile_products") * _g(tiles, g, "cycles_per_tile_product")


def write_cycles(g, tiles):
    noc, dram = _g(tiles, g, "noc_bytes_per_cycle"), _g(tiles, g, "dram_bytes_per_cycle")
    return np.maximum(_g(tiles, g, "out_bytes") / noc, _g(tiles, g, "chip_out_bytes") / dram)


def matmul_fill_cycles(g, tiles):
    """The first block of a K loop: its operands arrive with nothing to overlap."""
    return data_cycles(g, tiles)


def matmul_block_cycles(g, tiles):
    """A steady-state block: the next block's operands arrive while this one computes (double-buffered CBs)."""
    return np.maximum(data_cycles(g, tiles), compute_cycles(g, tiles))


def matmul_drain_cycles(g, tiles):
    """The last block's compute, then the output block written to DRAM."""
    return compute_cycles(g, tiles) + write_cycles(g, tiles)


def eltwise_cycles(g, tiles):
    """An element-wise op streaming ``tiles_per_core`` tiles through double-buffered CBs: the first tile's
    read, then per tile the slower of its data movement (reads and write, the core's NoC port or its DRAM
    share) and its compute."""
    noc, dram, lat = _g(tiles, g, "noc_bytes_per_cycle"), _g(tiles, g, "dram_bytes_per_cycle"), _g(tiles, g, "dram_latency")
    per_tile_bytes = _g(tiles, g, "in_bytes_per_tile") + _g(tiles, g, "out_bytes_per_tile")
    chip_per_tile = per_tile_bytes * _g(tiles, g, "active_cores")
    move = np.maximum(per_tile_bytes / noc, chip_per_tile / dram)
    n = _g(tiles, g, "tiles_per_core")
    return np.where(n > 0, lat + n * np.maximum(move, _g(tiles, g, "compute_cycles_per_tile")), 0.0)


def _route(fn):
    def cost(tiles, g, work, tile):
        return tiles, fn(g, tiles)
    cost.__doc__ = fn.__doc__
    return cost


MATMUL_FILL = register("ttnn.matmul_fill", matmul_fill_cycles, code_bytes=0, cost=_route(matmul_fill_cycles),
                       static=True)
MATMUL_BLOCK = register("ttnn.matmul_block", matmul_block_cycles, code_bytes=0, cost=_route(matmul_block_cycles),
                        static=True)
MATMUL_DRAIN = register("ttnn.matmul_drain", matmul_drain_cycles, code_bytes=0, cost=_route(matmul_drain_cycles),
                        static=True)
ELTWISE = register("ttnn.eltwise", eltwise_cycles, code_bytes=0, cost=_route(eltwise_cycles), static=True)
