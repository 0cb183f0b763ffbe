"""Dense activations for SNN training on the MIMD chip: a matmul per step instead of
spike lists, so sparse and dense training can be compared on the same chip.

Per tile (``n_local`` neurons of a layer with ``n_in`` inputs), per step, batch B::

    forward         I[B, n_local] = X[B, n_in] W[n_in, n_local]   then the neuron update
    backward        dL/du for every neuron (no list): carry + surrogate of every neuron
    weight grad     dW[n_in, n_local] += X^T dI
    input grad      P[B, n_in] = dI W^T   (partials, reduced over the layer's tiles)

The numerics are those of the sparse codelets with every neuron listed (capacity = n,
theta2 = -inf), which compute exactly this. Costs:

* fp16: the products run on the AMP unit, costed by the one AMP model, poplibs' estimator of
  ``ConvPartial1x1Out`` (``kernels.poplin.matmul.amp_matmul_cycles``); the weight gradient accumulates
  into its partials (``dW +=``: no zeroing);
* fp32: worker SIMD loops (the chip's fp32 AMP path is not used), per sample:
  ``SAMPLE_OVERHEAD + n_in * (X_LOAD + vec * row_cost)`` for the forward (a gather of every
  row scaled by x), ``n_in * (X_LOAD + vec * WGRAD_PER_VECTOR)`` for the weight gradient,
  ``n_in * (vec * DOT_PER_VECTOR + DOT_FINISH)`` for the input gradient.
"""
from __future__ import annotations

import numpy as np

from .bptt import DOT_FINISH, DOT_PER_VECTOR, WGRAD_PER_VECTOR, surrogate_scatter_cycles
from ..codelet import register
from .lif import SAMPLE_OVERHEAD, row_cost_per_vector
from ..poplin.matmul import amp_matmul_cycles
from ..tile import Tile, barrel_cycles, per_worker, vectors

X_LOAD = 1  # ld x[b, j] and broadcast it to the vector lanes
UPDATE_SAMPLE_OVERHEAD = 4  # AMP path: the update loop's pointers per sample


def dense_forward_cycles(n_local, n_in, batch, tile: Tile, update_per_vector, precision="fp32"):
    """fp16: AMP product [B x n_in] x [n_in x n_local] + a worker update loop; fp32: per
    sample SAMPLE_OVERHEAD + n_in * (X_LOAD + vec * row_cost) + vec * update_per_vector."""
    n_vec = vectors(n_local, tile)[:, None]
    if precision == "fp16":
        upd = np.full((len(np.atleast_1d(n_local)), batch), 0.0) + UPDATE_SAMPLE_OVERHEAD + n_vec * update_per_vector
        return amp_matmul_cycles(batch, n_in, np.asarray(n_local), tile, "fp16") + \
            barrel_cycles(per_worker(upd, tile.workers), tile)
    instr = np.zeros((n_vec.shape[0], batch)) + SAMPLE_OVERHEAD + n_in * (X_LOAD + n_vec * row_cost_per_vector(n_vec)) \
        + n_vec * update_per_vector
    return barrel_cycles(per_worker(instr, tile.workers), tile)


def dense_scatter_cycles(n_local, batch, tile: Tile, carry_per_vector, own_per_id):
    """Every neuron's surrogate (no list): ``surrogate_scatter`` with own ids = n_local, no scan."""
    n_local = np.asarray(n_local)
    return surrogate_scatter_cycles(n_local, np.zeros(batch), np.repeat(n_local[:, None], batch, axis=1), tile,
                                    carry_per_vector, own_per_id)


def dense_weight_grad_cycles(n_local, n_in, batch, tile: Tile, precision="fp32"):
    """fp16: AMP [n_in x B] x [B x n_local]; fp32: per sample n_in * (X_LOAD + vec * WGRAD_PER_VECTOR)."""
    if precision == "fp16":
        return amp_matmul_cycles(n_in, batch, np.asarray(n_local), tile, "fp16", zeroing=False)
    n_vec = vectors(n_local, tile)[:, None]
    instr = np.zeros((n_vec.shape[0], batch)) + n_in * (X_LOAD + n_vec * WGRAD_PER_VECTOR)
    return barrel_cycles(per_worker(instr, tile.workers), tile)


def dense_input_grad_cycles(n_local, n_in, batch, tile: Tile, precision="fp32"):
    """fp16: AMP [B x n_local] x [n_local x n_in]; fp32: per sample n_in * (vec * DOT_PER_VECTOR + DOT_FINISH)."""
    if precision == "fp16":
        return amp_matmul_cycles(batch, np.asarray(n_local), n_in, tile, "fp16")
    n_vec = vectors(n_local, tile)[:, None]
    instr = np.zeros((n_vec.shape[0], batch)) + n_in * (n_vec * DOT_PER_VECTOR + DOT_FINISH)
    return barrel_cycles(per_worker(instr, tile.workers), tile)


def _forward_cost(tiles, g, work, tile):
    return tiles, dense_forward_cycles(g["n_local"], g["n_in"], g["batch"], tile, g["update"], g["precision"])


def _scatter_cost(tiles, g, work, tile):
    return tiles, dense_scatter_cycles(g["n_local"], g["batch"], tile, g["carry"], g["own"])


def _weight_grad_cost(tiles, g, work, tile):
    return tiles, dense_weight_grad_cycles(g["n_local"], g["n_in"], g["batch"], tile, g["precision"])


def _input_grad_cost(tiles, g, work, tile):
    return tiles, dense_input_grad_cycles(g["n_local"], g["n_in"], g["batch"], tile, g["precision"])


DENSE_FORWARD = register("dense_forward", dense_forward_cycles, code_bytes=1536, cost=_forward_cost, static=True)
DENSE_SCATTER = register("dense_scatter", dense_scatter_cycles, code_bytes=1024, cost=_scatter_cost, static=True)
DENSE_WEIGHT_GRAD = register("dense_weight_grad", dense_weight_grad_cycles, code_bytes=1024, cost=_weight_grad_cost,
                             static=True)
DENSE_INPUT_GRAD = register("dense_input_grad", dense_input_grad_cycles, code_bytes=1024, cost=_input_grad_cost,
                            static=True)
