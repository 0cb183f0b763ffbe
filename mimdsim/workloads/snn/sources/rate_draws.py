"""The rate source's draws for a whole loop in one compiled call.

The rate-driven source draws, per timestep and scan vertex set in program order,

    s = binomial(n, a, size=B);  c = binomial(n - s, a_c)
    hits = [multinomial(s, widths / n), multinomial(c, widths / n)]     (per sample)

This module makes exactly those draws for every iteration of a loop at once, in the same
order, from the same ``numpy.random.Generator`` (its bit generator is shared with numba), with
numpy's own algorithms: ``random_binomial`` (inversion for n p <= 30, BTPE above; numba's port
of numpy's C code) and ``random_multinomial`` (conditional binomials, stopping when nothing is
left). A run therefore gives the numbers the per-timestep numpy calls gave
(``tests/test_sources.py`` checks both against each other).

Where numba is not loaded yet (a single cold run, whose import would cost more than the draws)
the same draws are made by numpy, one call per draw as before (:func:`scan_draws_numpy`).

Fast path: a multinomial's conditional probabilities ``p_j = pix[j] / remaining_j`` are fixed
per category, so the inversion constants (``q^n``, the bound) are tabulated once per loop for
the small counts that occur; each conditional binomial is then one uniform draw and a compare.
"""
from __future__ import annotations

import numpy as np

from ....kernels._jit import njit, numba_loaded

TABLE_N = 64  # counts up to this use the tabulated inversion constants


def random_binomial(bitgen, n, p):  # replaced by numba's port of numpy's C function when compiled
    raise NotImplementedError


def next_double(bitgen):
    raise NotImplementedError


@njit(cache=True)
def _table(pix, table_n):
    """Per category j of a multinomial and count dn <= table_n: the inversion constants of
    ``random_binomial(dn, pix[j] / remaining_j)`` as numpy computes them (kind 0: inversion on
    p, 1: inversion on 1 - p, -1: not tabulated)."""
    d = pix.shape[0]
    kind = np.full((d, table_n + 1), -1, dtype=np.int64)
    pe = np.zeros(d)  # the p the inversion runs on
    qe = np.zeros(d)  # its 1 - p
    qn = np.zeros((d, table_n + 1))
    bound = np.zeros((d, table_n + 1))
    remaining = 1.0
    for j in range(d - 1):
        p = pix[j] / remaining
        remaining -= pix[j]
        if p <= 0.5:
            pj, k = p, 0
        else:
            pj, k = 1.0 - p, 1
        q = 1.0 - pj
        pe[j], qe[j] = pj, q
        if p == 0.0:
            continue
        for n in range(1, table_n + 1):
            if pj * n <= 30.0:
                kind[j, n] = k
                qn[j, n] = np.exp(n * np.log(q))
                _np = n * pj
                bound[j, n] = min(n, _np + 10.0 * np.sqrt(_np * q + 1))
    return kind, pe, qe, qn, bound


@njit(cache=True)
def _inversion(bitgen, n, p, q, qn, bound):
    """numpy's ``random_binomial_inversion`` with its constants given."""
    X = 0
    px = qn
    U = next_double(bitgen)
    while U > px:
        X = X + 1
        if X > bound:
            X = 0
            px = qn
            U = next_double(bitgen)
        else:
            U -= px
            px = ((n - X + 1) * p * px) / (X * q)
    return X


@njit(cache=True)
def _multinomial(bitgen, n, pix, kind, pe, qe, qn, bound, out):
    """numpy's ``random_multinomial`` into ``out`` (zeroed here), tabulated constants first."""
    d = pix.shape[0]
    table_n = kind.shape[1] - 1
    for j in range(d):
        out[j] = 0
    dn = n
    remaining = 1.0
    for j in range(d - 1):
        if dn <= table_n and kind[j, dn] >= 0:
            x = _inversion(bitgen, dn, pe[j], qe[j], qn[j, dn], bound[j, dn])
            if kind[j, dn] == 1:
                x = dn - x
        else:
            x = random_binomial(bitgen, dn, pix[j] / remaining)
        out[j] = x
        dn -= x
        if dn <= 0:
            break
        remaining -= pix[j]
    if dn > 0:
        out[d - 1] = dn


@njit(cache=True)
def _scan_draws(rng, ts, n, act, cand, silent_before, pix, widths, s_out, c_out, hits):
    """All scan draws of a loop: iterations ``ts`` in execution order, layers in program order.

    Per layer k: ``n[k]`` neurons, rates ``act[k]`` / ``cand[k]``, silent (no draws) at
    t < ``silent_before[k]``; ``pix[k, :widths[k]]`` the worker ranges' probabilities. Writes
    ``s_out``/``c_out`` ``[k, i, B]`` and ``hits`` ``[k, i, B, 2, W]``."""
    bitgen = rng.bit_generator
    nk, B = s_out.shape[0], s_out.shape[2]
    tables = []
    for k in range(nk):
        tables.append(_table(pix[k, :widths[k]], TABLE_N))
    for i in range(ts.shape[0]):
        t = ts[i]
        for k in range(nk):
            if t < silent_before[k]:
                for b in range(B):
                    s_out[k, i, b] = 0
                    c_out[k, i, b] = 0
                continue
            for b in range(B):
                s_out[k, i, b] = random_binomial(bitgen, n[k], act[k])
            for b in range(B):
                c_out[k, i, b] = random_binomial(bitgen, n[k] - s_out[k, i, b], cand[k])
            kind, pe, qe, qn, bound = tables[k]
            p = pix[k, :widths[k]]
            for which in range(2):
                for b in range(B):
                    m = s_out[k, i, b] if which == 0 else c_out[k, i, b]
                    _multinomial(bitgen, m, p, kind, pe, qe, qn, bound, hits[k, i, b, which, :widths[k]])


def _bind_numba():
    """Bind numba's ports of numpy's C draws (imported only when the compiled path runs)."""
    global random_binomial, next_double
    from numba.np.random.distributions import random_binomial
    from numba.np.random.generator_core import next_double


def scan_draws_numpy(rng, ts, sizes, activity, candidate, silent_before, widths_list, B):
    """The same draws as :func:`scan_draws`, by numpy, one call per draw."""
    out = [(np.zeros((len(ts), B), dtype=np.int64), np.zeros((len(ts), B), dtype=np.int64),
            np.zeros((len(ts), B, 2, len(w)), dtype=np.int64)) for w in widths_list]
    pvals = [np.asarray(w) / n for w, n in zip(widths_list, sizes)]
    for i, t in enumerate(ts):
        for k, n in enumerate(sizes):
            if t < silent_before[k]:
                continue
            s = rng.binomial(n, activity[k], size=B)
            c = rng.binomial(n - s, candidate[k])
            out[k][0][i], out[k][1][i] = s, c
            out[k][2][i, :, 0] = rng.multinomial(s, pvals[k])
            out[k][2][i, :, 1] = rng.multinomial(c, pvals[k])
    return out


def scan_draws(rng, ts, sizes, activity, candidate, silent_before, widths_list, B):
    """The scan draws of a loop (see :func:`_scan_draws`): returns ``(s, c, hits)`` per layer,
    ``s``/``c`` ``[I, B]`` and ``hits`` ``[I, B, 2, W_layer]``. Compiled where numba is loaded
    already, else by numpy (the same numbers)."""
    if not numba_loaded():
        return scan_draws_numpy(rng, ts, sizes, activity, candidate, silent_before, widths_list, B)
    _bind_numba()
    nk, I = len(sizes), len(ts)
    W = max(len(w) for w in widths_list)
    pix = np.zeros((nk, W))
    for k, (w, n) in enumerate(zip(widths_list, sizes)):
        pix[k, :len(w)] = np.asarray(w) / n  # as the per-step call computes its pvals
    s = np.empty((nk, I, B), dtype=np.int64)
    c = np.empty((nk, I, B), dtype=np.int64)
    hits = np.zeros((nk, I, B, 2, W), dtype=np.int64)
    _scan_draws(rng, np.asarray(ts, dtype=np.int64), np.asarray(sizes, dtype=np.int64),
                np.asarray(activity, dtype=np.float64), np.asarray(candidate, dtype=np.float64),
                np.asarray(silent_before, dtype=np.int64), pix, np.array([len(w) for w in widths_list]),
                s, c, hits)
    return [(s[k], c[k], hits[k, :, :, :, :len(w)]) for k, w in enumerate(widths_list)]
