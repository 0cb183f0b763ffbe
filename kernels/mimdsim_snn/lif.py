"""Neuron forward codelets of the LIF family: gather-sum of weight rows + state update.

One family, four models (snnTorch semantics; ``mimdsim/snn/neurons.py`` has the full
equations). Per sample b and neuron i of a tile, with the delayed reset
``R = H(m[t-1] - theta)`` and ``J = gain * I``::

    I[b, i]  = sum_{k < n_spk[b]} W[ids[b, k], i]  (+ bias, + recurrent current)
    leaky    u = beta m + J - R theta | beta (1 - R) m + J | (1 - R)(beta m + J) | beta m + J
    synaptic s = alpha s + J;  u = beta m + s - R theta | (1 - R)(beta m + s) | beta m + s
    alpha    e' = alpha e + J;  h' = beta h - J;  u = tau (e' + h') (+ the reset terms)
    lapicque the leaky update with beta := 1 - dt / (R C) and gain := gain * dt / C
    reset_delay=False:  m = u - (S - R) theta | u - (S - R) u,  S = H(u - theta)

The published sparse LIF (Finkbeiner et al. 2024) is ``leaky``, reset zero of the old
state, ``gain = c (1 - alpha)``::

    U[b, i] = alpha * U_prev[b, i] * (1 - H(U_prev[b, i] - theta1)) + c * (1 - alpha) * I[b, i]

One vertex per neuron tile; the batch is split over the workers in contiguous blocks.
"""
from __future__ import annotations

from .._jit import njit
import numpy as np

from ..codelet import register
from ..tile import Tile, barrel_cycles, per_worker_affine, vectors

LEAKY, SYNAPTIC, ALPHA = 0, 1, 2
MODEL_CODES = {"leaky": LEAKY, "lapicque": LEAKY, "synaptic": SYNAPTIC, "alpha": ALPHA}
SUBTRACT, ZERO, NONE = 0, 1, 2
RESET_CODES = {"subtract": SUBTRACT, "zero": ZERO, "none": NONE}


@njit(cache=True)
def gather_rows(W, ids, counts, out, accumulate):
    """``out[b] (+)= sum_{k < counts[b]} W[ids[b, k]]``: the sparse-binary x dense product."""
    B, n = out.shape
    for b in range(B):
        if not accumulate:
            for i in range(n):
                out[b, i] = 0
        for k in range(counts[b]):
            row = W[ids[b, k]]
            for i in range(n):
                out[b, i] += row[i]


@njit(cache=True, inline="always")
def _carried(x, R, th, reset, reset_delay, one, zero):
    """The membrane carried to the next step: ``x`` itself with the delayed reset (or no
    reset); with ``reset_delay=False`` the reset of this step's own spike, D = S - R."""
    if reset_delay or reset == NONE:
        return x
    D = (one if x > th else zero) - R
    return x - D * th if reset == SUBTRACT else x - D * x


@njit(cache=True)
def leaky_update(I, gain, m_prev, decay, theta, reset, whole, reset_delay, u, m):
    """Leaky (and Lapicque) update of ``[B, n]``: ``u`` before, ``m`` after a same-step reset."""
    B, n = I.shape
    one = u.dtype.type(1)
    zero = one * 0
    for b in range(B):
        for i in range(n):
            mp = m_prev[b, i]
            th = theta[i]
            d = decay[i]
            R = one if mp > th else zero
            J = gain[i] * I[b, i]
            if reset == SUBTRACT:
                x = d * mp + J - R * th
            elif reset == ZERO:
                if whole:
                    x = (one - R) * (d * mp + J)
                else:
                    x = d * ((one - R) * mp) + J
            else:
                x = d * mp + J
            u[b, i] = x
            m[b, i] = _carried(x, R, th, reset, reset_delay, one, zero)


@njit(cache=True)
def synaptic_update(I, gain, s_prev, m_prev, a, decay, theta, reset, reset_delay, s, u, m):
    """Synaptic update: ``s = alpha s + J``, then the membrane (reset zero keeps s)."""
    B, n = I.shape
    one = u.dtype.type(1)
    zero = one * 0
    for b in range(B):
        for i in range(n):
            mp = m_prev[b, i]
            th = theta[i]
            R = one if mp > th else zero
            syn = a[i] * s_prev[b, i] + gain[i] * I[b, i]
            s[b, i] = syn
            if reset == SUBTRACT:
                x = decay[i] * mp + syn - R * th
            elif reset == ZERO:
                x = (one - R) * (decay[i] * mp + syn)
            else:
                x = decay[i] * mp + syn
            u[b, i] = x
            m[b, i] = _carried(x, R, th, reset, reset_delay, one, zero)


@njit(cache=True)
def alpha_update(I, gain, e_prev, h_prev, m_prev, a, bta, tau, theta, reset, e, h, u):
    """Alpha update: excitatory and inhibitory currents, ``u = tau (e' + h')`` (+ resets)."""
    B, n = I.shape
    one = u.dtype.type(1)
    zero = one * 0
    for b in range(B):
        for i in range(n):
            th = theta[i]
            R = one if m_prev[b, i] > th else zero
            J = gain[i] * I[b, i]
            ep = a[i] * e_prev[b, i] + J
            hp = bta[i] * h_prev[b, i] - J
            x = tau[i] * (ep + hp)
            if reset == ZERO:
                e[b, i] = ep - ep * R
                h[b, i] = hp - hp * R
                u[b, i] = x - x * R
            elif reset == SUBTRACT:
                e[b, i] = ep - th * R
                h[b, i] = hp - hp * R
                u[b, i] = x - (-h_prev[b, i]) * R
            else:
                e[b, i] = ep
                h[b, i] = hp
                u[b, i] = x


# ---- cost ------------------------------------------------------------------------------
# Instruction counts of the worker loop, per sample (see docs/cost-model.md):
SAMPLE_OVERHEAD = 10  # load list pointer and counts, set up U/history pointers, loop
ROW_OVERHEAD = 4  # ld16 id; row address (mul + add); loop branch
ROW_PER_VECTOR_REG = 1  # ld64 weights co-issued with f32v2add into a register accumulator
ROW_PER_VECTOR_MEM = 3  # accumulator too large for registers: ld64 acc, ld64 w || add, st64 acc
ACCUMULATOR_VECTORS = 4  # float2 registers available for accumulators
UPDATE_PER_VECTOR = 10  # ld U; cmp theta1; mask; mul alpha; mul scale*I; add; st U; st history; flags (2 cmp)

# Per-vector update instructions of the family (forward_update_instructions):
UPDATE_BASE = 8  # reset none: ld m; mul beta; mul gain*I; add; st m; st u history; flags (2 cmp)
RESET_ZERO_EXTRA = 2  # cmp theta on m[t-1]; mask
RESET_SUBTRACT_EXTRA = 3  # cmp theta on m[t-1]; and theta; sub
SAME_STEP_RESET_EXTRA = 4  # reset_delay=False: S - R; mul theta (or u); sub; st m history
SYNAPTIC_EXTRA = 4  # ld s; mul alpha; add J; st s
ALPHA_CURRENTS = 10  # e: ld, mul, add, st; h: ld, mul, sub, st; add e+h; mul tau (replaces mul beta, add)
ALPHA_HISTORY_EXTRA = 2  # st e, st h histories (learnable beta)
BIAS_EXTRA = 2  # ld bias; add
ONE_TO_ONE_EXTRA = 3  # ld S[t-1] flag; convert; mac V
PARAM_VECTOR_LOAD = 1  # ld of a per-neuron parameter vector (beta, theta, alpha, gain)
MEMBRANE_MAX_EXTRA = 3  # running max over time for a membrane readout: cmp; select max; select step


def forward_update_instructions(model="leaky", reset="zero", reset_delay=True, bias=False, one_to_one=False,
                                per_neuron_params=0, membrane_max=False, alpha_histories=False) -> int:
    """Instructions per float vector of the element-wise state update (itemised above).

    The published sparse LIF (leaky, reset zero, nothing else) gives UPDATE_PER_VECTOR = 10.
    """
    n = UPDATE_BASE
    if model == "alpha":
        n += ALPHA_CURRENTS - 2 + (ALPHA_HISTORY_EXTRA if alpha_histories else 0)
    if model == "synaptic":
        n += SYNAPTIC_EXTRA
    n += {"zero": RESET_ZERO_EXTRA, "subtract": RESET_SUBTRACT_EXTRA, "none": 0}[reset]
    if not reset_delay and reset != "none":
        n += SAME_STEP_RESET_EXTRA
    n += BIAS_EXTRA if bias else 0
    n += ONE_TO_ONE_EXTRA if one_to_one else 0
    n += PARAM_VECTOR_LOAD * per_neuron_params
    n += MEMBRANE_MAX_EXTRA if membrane_max else 0
    return n


def row_cost_per_vector(n_vec):
    return np.where(np.asarray(n_vec) <= ACCUMULATOR_VECTORS, ROW_PER_VECTOR_REG, ROW_PER_VECTOR_MEM)


def lif_forward_cycles(n_local, in_spikes, tile: Tile, update_per_vector=UPDATE_PER_VECTOR):
    """Cycles per vertex: ``n_local[v]`` neurons on the tile, ``in_spikes[B]`` active inputs
    (input rows plus the layer's own rows of an all-to-all recurrence; ``[iterations, B]``
    gives ``[iterations, v]``).

    instructions(b) = SAMPLE_OVERHEAD + in_spikes[b] * (ROW_OVERHEAD + vec * row_cost)
                      + vec * update_per_vector,   vec = ceil(n_local / simd)
    """
    n_vec = vectors(n_local, tile)
    per = per_worker_affine(SAMPLE_OVERHEAD + n_vec * update_per_vector,
                            ROW_OVERHEAD + n_vec * row_cost_per_vector(n_vec), in_spikes, tile.workers)
    return barrel_cycles(per, tile)


def _forward_cost(tiles, g, work, tile):
    return tiles, lif_forward_cycles(g["n_local"], work["in_spikes"], tile, g.get("update", UPDATE_PER_VECTOR))


LIF_FORWARD = register("lif_forward", lif_forward_cycles, code_bytes=1024, cost=_forward_cost, batched=True)
LAPICQUE_FORWARD = register("lapicque_forward", lif_forward_cycles, code_bytes=1024, cost=_forward_cost, batched=True)
SYNAPTIC_FORWARD = register("synaptic_forward", lif_forward_cycles, code_bytes=1280, cost=_forward_cost, batched=True)
ALPHA_FORWARD = register("alpha_forward", lif_forward_cycles, code_bytes=1536, cost=_forward_cost, batched=True)
FORWARD_CODELETS = {"leaky": "lif_forward", "lapicque": "lapicque_forward", "synaptic": "synaptic_forward",
                    "alpha": "alpha_forward"}
