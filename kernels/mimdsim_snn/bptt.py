"""Sparse BPTT on a neuron tile: surrogate scatter, weight gradients, input-spike gradients.

Per layer and reverse timestep t (Finkbeiner et al. 2024, ``reference/algorithms.md`` §1),
for the published sparse LIF::

    dU[b, i]  = alpha * dU[b, i]                                     (carry from t + 1)
    dU[b, j] += dS[b, k] * sg(U_t[b, j]),  j = ids[b, k], k < listed[b]
    dI[b, i]  = c * (1 - alpha) * dU[b, i]

Every neuron model has one backward ("scatter") codelet of this shape: a dense carry of
the adjoint state (dL/dm, and dL/ds or dL/de, dL/dh), the surrogate scatter for the
listed ids only, and ``dI = gain * dL/dJ`` (``leaky_backward``, ``synaptic_backward``,
``alpha_backward``; equations in their docstrings and ``mimdsim/snn/neurons.py``).
Then, for every model alike::

    dW_w[j, i] += dI[b, i]   for every actual input spike j of sample b (w = worker of b)
    P[b, k, p] = sum_{i on tile p} W[in_ids[b, k], i] * dI[b, i],  k < in_listed[b]

with the SuperSpike surrogate ``sg(U) = 1 / (beta |U - theta1| + 1)^2``. P is then
reduced over the tiles (``kernels.mimdsim_snn.reduce``) into the previous layer's dS.
"""
from __future__ import annotations

from .._jit import njit
import numpy as np

from . import surrogate as _sg
from ..codelet import register
from .lif import NONE, SUBTRACT, ZERO
from ..tile import Tile, barrel_cycles, per_worker, per_worker_affine, vectors


@njit(cache=True)
def _scatter_listed(du, dS, ids, listed, dSd, dmdS, u, theta, sgk, p1, p2, dtheta):
    """Phase B of every backward codelet: for each listed id j of sample b,
    ``du[b, j] += sg(u - theta) * (dS[b, k] + dSd[b, j] + dm/dS[b, j])`` and the spike's
    threshold gradient ``dtheta[j] -= sg * (...)``."""
    B = du.shape[0]
    for b in range(B):
        for k in range(listed[b]):
            j = ids[b, k]
            g = _sg.sg(u[b, j] - theta[j], sgk, p1, p2)
            tot = dS[b, k] + dSd[b, j] + dmdS[b, j]
            du[b, j] += g * tot
            dtheta[j] -= g * tot


@njit(cache=True)
def _same_step_reset(dm, u, m_prev, theta, reset, in_grad, du, dmdS, dtheta):
    """Phase A: ``du = dm/du|_S * dm`` and ``dm/dS * dm`` for a same-step reset
    (reset_delay=False, D = S - R): subtract ``m = u - D theta``; zero ``m = u - D u``."""
    B, n = dm.shape
    one = u.dtype.type(1)
    zero = one * 0
    for b in range(B):
        for i in range(n):
            x = dm[b, i]
            if in_grad and reset != NONE:
                th = theta[i]
                R = one if m_prev[b, i] > th else zero
                D = (one if u[b, i] > th else zero) - R
                if reset == SUBTRACT:
                    du[b, i] = x
                    dmdS[b, i] = -th * x
                    dtheta[i] -= D * x
                else:
                    du[b, i] = (one - D) * x
                    dmdS[b, i] = -u[b, i] * x
            else:
                du[b, i] = x
                dmdS[b, i] = zero


@njit(cache=True)
def _du_from_spikes(dm, dS, ids, listed, dSd, u, m_prev, theta, reset, reset_delay, in_grad, sgk, p1, p2,
                    du, dmdS, dtheta):
    """``du`` = dL/du[t]: the gradient carried into the membrane plus the listed ids' surrogate
    gradients (and, without reset delay, the same-step reset's share)."""
    B, n = dm.shape
    if reset_delay:
        zero = u.dtype.type(0)
        for b in range(B):
            for i in range(n):
                du[b, i] = dm[b, i]
                dmdS[b, i] = zero
    else:
        _same_step_reset(dm, u, m_prev, theta, reset, in_grad, du, dmdS, dtheta)
    _scatter_listed(du, dS, ids, listed, dSd, dmdS, u, theta, sgk, p1, p2, dtheta)


@njit(cache=True)
def leaky_backward(dm, dS, ids, listed, dSd, u, m_prev, gain, decay, theta, reset, whole, reset_delay, in_grad,
                   sgk, p1, p2, du, dmdS, dI, dbeta, dtheta):
    """Backward step of the leaky (and Lapicque) neuron, in place.

    In: ``dm = dL/dm[t]`` (carried from t + 1, plus any loss on the membrane), the list's
    ``dS[b, k]`` for ids ``ids[b, k]`` (k < listed[b]), dense ``dSd`` (one-to-one
    recurrence). Out: ``dm = dL/dm[t-1]`` (the carry), ``dI = gain * dL/dJ``; adds into
    ``dbeta`` and ``dtheta`` (per neuron)::

        du  = dm/du * dm + sg(u - theta) (dS + dm/dS * dm)        (listed ids only)
        dm[t-1] = beta du (subtract, none, or reset not in gradient)
                  beta (1 - R) du (zero);   dJ = du ((1 - R) du: zero of the whole value)
        dbeta  += m[t-1] du ((1 - R) m[t-1] du: zero);  dtheta -= R du (subtract)
    """
    B, n = dm.shape
    one = u.dtype.type(1)
    zero = one * 0
    _du_from_spikes(dm, dS, ids, listed, dSd, u, m_prev, theta, reset, reset_delay, in_grad, sgk, p1, p2,
                    du, dmdS, dtheta)
    for b in range(B):
        for i in range(n):
            mp = m_prev[b, i]
            x = du[b, i]
            d = decay[i]
            if in_grad and reset == ZERO:
                k = zero if mp > theta[i] else one
                dm[b, i] = d * (k * x)
                dbeta[i] += k * mp * x
                dI[b, i] = gain[i] * (k * x if whole else x)
            else:
                dm[b, i] = d * x
                dbeta[i] += mp * x
                dI[b, i] = gain[i] * x
                if in_grad and reset == SUBTRACT and mp > theta[i]:
                    dtheta[i] -= x


@njit(cache=True)
def synaptic_backward(dm, ds, dS, ids, listed, dSd, u, m_prev, gain, a, decay, theta, reset, reset_delay, in_grad,
                      sgk, p1, p2, du, dmdS, dI, dbeta, dtheta):
    """Backward step of the synaptic neuron, in place; ``ds`` carries ``alpha dL/ds[t+1]``::

        du as for leaky;  k = 1 - R (zero, reset in gradient) else 1
        dL/ds[t] = ds + k du;  dJ = dL/ds[t];  ds <- alpha dL/ds[t];  dm <- beta k du
        dbeta += k m[t-1] du;  dtheta -= R du (subtract)
    """
    B, n = dm.shape
    one = u.dtype.type(1)
    zero = one * 0
    _du_from_spikes(dm, dS, ids, listed, dSd, u, m_prev, theta, reset, reset_delay, in_grad, sgk, p1, p2,
                    du, dmdS, dtheta)
    for b in range(B):
        for i in range(n):
            mp = m_prev[b, i]
            x = du[b, i]
            fired = mp > theta[i]
            k = zero if (in_grad and reset == ZERO and fired) else one
            st = ds[b, i] + k * x
            dI[b, i] = gain[i] * st
            ds[b, i] = a[i] * st
            dm[b, i] = decay[i] * (k * x)
            dbeta[i] += k * mp * x
            if in_grad and reset == SUBTRACT and fired:
                dtheta[i] -= x


@njit(cache=True)
def alpha_backward(dm, de, dh, dS, ids, listed, dSd, u, m_prev, e_prev, h_prev, gain, a, bta, tau, dtau_dbeta, theta,
                   reset, in_grad, learn_beta, sgk, p1, p2, du, dmdS, dI, dbeta, dtheta):
    """Backward step of the alpha neuron, in place. ``dm`` holds only a loss on the
    membrane (m[t] feeds the future only through the detached reset); ``de``, ``dh``
    carry dL/de[t], dL/dh[t]::

        du = dm + sg (dS ...)
        zero:      de' = k (de + tau du),  dh' = k (dh + tau du),   k = 1 - R
        subtract:  de' = de + tau du,  dh' = (1 - R) dh + tau du,  dh[t-1] += R du,
                   dtheta -= R de
        dJ = de' - dh';  de <- alpha de';  dh <- beta dh' (+ R du)
        dbeta += h[t-1] dh' + (e' + h') k du * dtau/dbeta     (learnable beta)
    """
    B, n = dm.shape
    one = u.dtype.type(1)
    zero = one * 0
    for b in range(B):
        for i in range(n):
            du[b, i] = dm[b, i]
            dmdS[b, i] = zero
    _scatter_listed(du, dS, ids, listed, dSd, dmdS, u, theta, sgk, p1, p2, dtheta)
    for b in range(B):
        for i in range(n):
            x = du[b, i]
            t = tau[i]
            R = one if (in_grad and m_prev[b, i] > theta[i]) else zero
            if reset == ZERO:
                k = one - R
                dep = k * (de[b, i] + t * x)
                dhp = k * (dh[b, i] + t * x)
                extra = zero
                kt = k
            elif reset == SUBTRACT:
                dep = de[b, i] + t * x
                dhp = (one - R) * dh[b, i] + t * x
                extra = R * x
                if R > zero:
                    dtheta[i] -= de[b, i]
                kt = one
            else:
                dep = de[b, i] + t * x
                dhp = dh[b, i] + t * x
                extra = zero
                kt = one
            dI[b, i] = gain[i] * (dep - dhp)
            if learn_beta:
                ep_hp = a[i] * e_prev[b, i] + bta[i] * h_prev[b, i]
                dbeta[i] += h_prev[b, i] * dhp + ep_hp * kt * x * dtau_dbeta[i]
            de[b, i] = a[i] * dep
            dh[b, i] = bta[i] * dhp + extra


@njit(cache=True)
def weight_grad(dW_copies, worker, in_ids, in_spikes, dI):
    """Add ``dI[b]`` into row j of worker ``worker[b]``'s copy for each input spike j.

    The updates are applied in (copy, row) order — a stable sort of the (sample, spike) order,
    so each row still receives its samples' adds in sample order (the same float32 sums) — and
    the copies are walked through in address order rather than at random."""
    B, n = dI.shape
    rows = dW_copies.shape[1]
    total = 0
    for b in range(B):
        total += in_spikes[b]
    keys = np.empty(total, dtype=np.int64)
    sample = np.empty(total, dtype=np.int64)
    e = 0
    for b in range(B):
        for k in range(in_spikes[b]):
            keys[e] = worker[b] * rows + in_ids[b, k]
            sample[e] = b
            e += 1
    for e in np.argsort(keys, kind="mergesort"):
        b = sample[e]
        row = dW_copies[worker[b], keys[e] - worker[b] * rows]
        for i in range(n):
            row[i] += dI[b, i]


@njit(cache=True)
def input_grad_partials(W, in_ids, in_listed, dI, tile_starts, P):
    """Per-tile partial dot products ``P[b, k, p]`` (tile p holds neurons tile_starts[p]:[p+1]).

    One pass over the row; each partial sums its tile's neurons in index order.
    """
    B, n = dI.shape
    tiles = tile_starts.shape[0] - 1
    prod = np.empty(n, dtype=P.dtype)
    pairs = n == 2 * tiles and tile_starts[0] == 0
    for p in range(tiles):
        if tile_starts[p + 1] - tile_starts[p] != 2:
            pairs = False
    for b in range(B):
        for k in range(P.shape[1]):
            for p in range(tiles):
                P[b, k, p] = 0
        for k in range(in_listed[b]):
            row = W[in_ids[b, k]]
            for i in range(n):  # the products (vectorised), then each tile's sum in index order from zero
                prod[i] = row[i] * dI[b, i]
            zero = row[0] * 0
            if pairs:  # two neurons on every tile (the usual layout): a loop the compiler vectorises
                for p in range(tiles):
                    P[b, k, p] = (zero + prod[2 * p]) + prod[2 * p + 1]
                continue
            for p in range(tiles):
                s = zero
                for i in range(tile_starts[p], tile_starts[p + 1]):
                    s += prod[i]
                P[b, k, p] = s


# Instruction counts per sample (see docs/cost-model.md).
SCATTER_SAMPLE_OVERHEAD = 10
CARRY_PER_VECTOR = 5  # ld64 dU; mul alpha; st64 dU; mul c(1-alpha); st64 dI
SCATTER_SCAN_PER_ID = 3  # every listed id is checked: ld16 id; sub tile base; cmp+branch
SCATTER_OWN_PER_ID = 15  # id->U addr; ld U; sub theta1; abs; mul beta; add 1; square; recip (4); mul dS; ld dU; add; st dU
ROW_OVERHEAD = 4  # ld16 id; row address; loop branch
WGRAD_SAMPLE_OVERHEAD = 6  # pick the worker's copy; list pointer and count; loop setup
INPUT_GRAD_SAMPLE_OVERHEAD = 6  # list pointer and count; partials pointer; loop setup
WGRAD_PER_VECTOR = 3  # ld64 copy row; f32v2add (co-issued load of dI); st64
DOT_PER_VECTOR = 1  # ld64 w co-issued with f32v2mac into a register accumulator
DOT_FINISH = 3  # horizontal add of the two lanes; st partial


# The family's backward instruction counts (backward_instructions):
OWN_BASE = 7  # id->U addr; ld U; sub theta; mul dS; ld dU; add; st dU (+ the surrogate's own count)
CARRY_ZERO_EXTRA = 3  # ld u[t-1]; cmp theta; mask (reset zero in the gradient)
CARRY_WHOLE_EXTRA = 1  # mask dJ too (zero reset of the whole new value)
CARRY_SAME_STEP_EXTRA = 5  # reset_delay=False: ld u; cmp S; D = S - R; dm/dS; dm/du factor
OWN_SAME_STEP_EXTRA = 2  # ld dm/dS; add
CARRY_SYNAPTIC_EXTRA = 4  # ld ds; add k du; mul alpha; st ds
CARRY_ALPHA_EXTRA = 10  # de: ld, add, mul, st; dh: ld, add, mul, st; tau du; dJ = de' - dh'
LEARN_BETA_EXTRA = 3  # ld m[t-1]; mul du; add into the dbeta accumulator
LEARN_BETA_ALPHA_EXTRA = 6  # ... and ld e, h; (e' + h') dtau/dbeta
LEARN_THRESHOLD_CARRY = 3  # subtract reset: ld u[t-1]; cmp; masked add (dtheta -= R du)
LEARN_THRESHOLD_OWN = 2  # dtheta -= sg * dS for a listed id: mul; add
ONE_TO_ONE_CARRY = 5  # ld V; mul dI; st local dS[t-1]; ld S[t-1]; mac into dV
ONE_TO_ONE_OWN = 1  # add the local dS of the one-to-one recurrence
BIAS_GRAD_EXTRA = 3  # ld the worker's bias-gradient copy; add dI; st
PARAM_VECTOR_LOAD = 1  # ld of a per-neuron parameter vector
MEMBRANE_INJECT_EXTRA = 3  # membrane loss: ld the step of the maximum; cmp t; add dL/dmax into dm
ACTIVITY_L1_OWN = 1  # L1 activity penalty: add lambda (held in a register) to a listed id's dS


def backward_instructions(model="leaky", reset="zero", reset_delay=True, reset_in_gradient=False,
                          whole=False, surrogate="superspike", learn_beta=False, learn_threshold=False,
                          bias=False, one_to_one=False, per_neuron_params=0) -> tuple[int, int]:
    """``(carry per vector, own per listed id)`` instructions of a backward codelet.

    The published sparse LIF (leaky, zero reset excluded from the gradient, SuperSpike)
    gives (CARRY_PER_VECTOR, SCATTER_OWN_PER_ID) = (5, 15).
    """
    carry = CARRY_PER_VECTOR
    own = OWN_BASE + _sg.SURROGATE_INSTRUCTIONS[surrogate]
    if reset_in_gradient and reset == "zero":
        carry += CARRY_ZERO_EXTRA + (CARRY_WHOLE_EXTRA if whole else 0)
    if reset_in_gradient and not reset_delay and reset != "none":
        carry += CARRY_SAME_STEP_EXTRA
        own += OWN_SAME_STEP_EXTRA
    carry += {"synaptic": CARRY_SYNAPTIC_EXTRA, "alpha": CARRY_ALPHA_EXTRA}.get(model, 0)
    if learn_beta:
        carry += LEARN_BETA_ALPHA_EXTRA if model == "alpha" else LEARN_BETA_EXTRA
    if learn_threshold:
        own += LEARN_THRESHOLD_OWN
        carry += LEARN_THRESHOLD_CARRY if (reset_in_gradient and reset == "subtract") else 0
    if one_to_one:
        carry += ONE_TO_ONE_CARRY
        own += ONE_TO_ONE_OWN
    carry += BIAS_GRAD_EXTRA if bias else 0
    carry += PARAM_VECTOR_LOAD * per_neuron_params
    return carry, own


def surrogate_scatter_cycles(n_local, listed, own_listed, tile: Tile, carry_per_vector=CARRY_PER_VECTOR,
                             own_per_id=SCATTER_OWN_PER_ID):
    """``n_local[v]``, ``listed[B]`` ids in the list, ``own_listed[v, B]`` of them on tile v.

    instructions(b) = overhead + vec * CARRY + listed[b] * SCAN + own_listed[v, b] * OWN
    (CARRY, OWN from ``backward_instructions`` for the layer's neuron model)
    """
    n_vec = vectors(n_local, tile)
    per = (per_worker_affine(SCATTER_SAMPLE_OVERHEAD + n_vec * carry_per_vector, np.full(n_vec.shape, SCATTER_SCAN_PER_ID),
                             listed, tile.workers)
           + own_per_id * per_worker(own_listed, tile.workers))
    return barrel_cycles(per, tile)


def weight_grad_cycles(n_local, in_spikes, tile: Tile):
    """instructions(b) = WGRAD_SAMPLE_OVERHEAD + in_spikes[b] * (ROW_OVERHEAD + vec * WGRAD_PER_VECTOR)."""
    n_vec = vectors(n_local, tile)
    per = per_worker_affine(np.full(n_vec.shape, WGRAD_SAMPLE_OVERHEAD), ROW_OVERHEAD + n_vec * WGRAD_PER_VECTOR,
                            in_spikes, tile.workers)
    return barrel_cycles(per, tile)


def input_grad_cycles(n_local, in_listed, tile: Tile):
    """instructions(b) = INPUT_GRAD_SAMPLE_OVERHEAD + in_listed[b] * (ROW_OVERHEAD + vec * DOT_PER_VECTOR + DOT_FINISH).

    One float2 accumulator per dot product, whatever the tile's neuron count.
    """
    n_vec = vectors(n_local, tile)
    per = per_worker_affine(np.full(n_vec.shape, INPUT_GRAD_SAMPLE_OVERHEAD),
                            ROW_OVERHEAD + n_vec * DOT_PER_VECTOR + DOT_FINISH, in_listed, tile.workers)
    return barrel_cycles(per, tile)


def _scatter_cost(tiles, g, work, tile):
    return tiles, surrogate_scatter_cycles(g["n_local"], work["listed"], work["own_listed"], tile,
                                           g.get("carry", CARRY_PER_VECTOR), g.get("own", SCATTER_OWN_PER_ID))


def _weight_grad_cost(tiles, g, work, tile):
    return tiles, weight_grad_cycles(g["n_local"], work["in_spikes"], tile)


def _input_grad_cost(tiles, g, work, tile):
    return tiles, input_grad_cycles(g["n_local"], work["in_listed"], tile)


SURROGATE_SCATTER = register("surrogate_scatter", surrogate_scatter_cycles, code_bytes=1024, cost=_scatter_cost, batched=True)
LAPICQUE_SCATTER = register("lapicque_scatter", surrogate_scatter_cycles, code_bytes=1024, cost=_scatter_cost, batched=True)
SYNAPTIC_SCATTER = register("synaptic_scatter", surrogate_scatter_cycles, code_bytes=1280, cost=_scatter_cost, batched=True)
ALPHA_SCATTER = register("alpha_scatter", surrogate_scatter_cycles, code_bytes=1536, cost=_scatter_cost, batched=True)
BACKWARD_CODELETS = {"leaky": "surrogate_scatter", "lapicque": "lapicque_scatter", "synaptic": "synaptic_scatter",
                     "alpha": "alpha_scatter"}
WEIGHT_GRAD = register("weight_grad", weight_grad_cycles, code_bytes=512, cost=_weight_grad_cost, batched=True)
INPUT_GRAD = register("input_grad", input_grad_cycles, code_bytes=512, cost=_input_grad_cost, batched=True)
