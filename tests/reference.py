"""Independent reference for dense BPTT through a multi-layer LIF network.

This module is a *test oracle*: it deliberately shares no code with the
simulator (``mimdsim``) or its kernels.  It provides two implementations of
the same model and gradient,

* :func:`dense_bptt_numpy` -- plain numpy, hand-written backward pass;
* :func:`dense_bptt_torch` -- torch autograd over the forward pass only
  (torch is imported lazily, so this module imports without torch);

which are checked against each other in ``tests/test_reference.py``.

Model
-----
Neuron layers are ``l = 1..L``; ``weights[l-1]`` (shape ``[n_{l-1}, n_l]``)
feeds neuron layer ``l``; ``n_0`` is the number of inputs.  For every step
``t = 0..T-1`` (with ``U^l[-1] = 0``)::

    X^1[t] = inputs[t] * input_mask[t]          (same step)
    X^l[t] = S~^{l-1}[t-1],  X^l[0] = 0         (l >= 2: one-step delay)
    I^l[t] = X^l[t] @ W^l
    U^l[t] = alpha * U^l[t-1] * (1 - H(U^l[t-1] - theta1)) + c (1 - alpha) I^l[t]
    S^l[t] = H(U^l[t] - theta1)                 (H(x) = 1 if x > 0 else 0)
    S~^l[t] = S^l[t] * spike_mask^l[t]          ("sent" spikes)
    C[b, i] = sum_t S~^L[t, b, i]
    loss    = mean_b ( logsumexp(C[b]) - C[b, labels[b]] )

Note that the reset uses the neuron's own spike ``S``, whether or not the
spike was sent.

Gradient (sparse surrogate BPTT, Finkbeiner et al. 2024)
--------------------------------------------------------
* The reset term is detached, so ``dU^l[t] / dU^l[t-1] = alpha`` exactly.
* ``dS~^l[t] / dU^l[t] = sg(U^l[t]) * list_mask^l[t]`` with the surrogate
  ``sg(U) = 1 / (beta |U - theta1| + 1)^2``.  ``spike_mask`` only changes the
  forward value, never the gradient path: a listed neuron whose spike is not
  sent still receives (and passes on) a gradient.

Hand-written backward::

    dL/dC       = (softmax(C) - onehot(labels)) / B
    dL/dS~^L[t] = dL/dC                                   for every t
    dL/dU^l[t]  = alpha dL/dU^l[t+1] + dL/dS~^l[t] sg(U^l[t]) list_mask^l[t]
                                                          (dL/dU^l[T] = 0)
    dL/dI^l[t]  = c (1 - alpha) dL/dU^l[t]
    dL/dW^l    += X^l[t]^T @ dL/dI^l[t]
    dL/dS~^{l-1}[t-1] += dL/dI^l[t] @ W^l^T               (l >= 2, t >= 1)

For ``l < L`` the only source of ``dL/dS~^l`` is layer ``l + 1``, so
``dL/dS~^l[T-1] = 0``.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

__all__ = [
    "dense_bptt_numpy",
    "dense_bptt_torch",
    "surrogate",
    "margin",
]


# --------------------------------------------------------------------------
# shared argument handling (pure bookkeeping: no model equations in here)
# --------------------------------------------------------------------------
def _prepare(weights, inputs, labels, input_mask, spike_mask, list_mask, dtype):
    """Validate shapes and return canonical arrays.

    Returns ``(W, x_in, labels, send, listed)`` where ``W`` is a list of
    ``dtype`` weight matrices, ``x_in = inputs * input_mask`` in ``dtype``
    (shape ``[T, B, n_0]``), ``labels`` an int64 vector, and ``send`` /
    ``listed`` lists of L boolean ``[T, B, n_l]`` arrays.
    """
    dtype = np.dtype(dtype)
    if not np.issubdtype(dtype, np.floating):
        raise ValueError(f"dtype must be a floating type, got {dtype}")
    W = [np.asarray(w, dtype=dtype) for w in weights]
    L = len(W)
    if L == 0:
        raise ValueError("need at least one weight matrix")
    for l, w in enumerate(W):
        if w.ndim != 2:
            raise ValueError(f"weights[{l}] must be 2-D, got shape {w.shape}")
        if l > 0 and w.shape[0] != W[l - 1].shape[1]:
            raise ValueError(
                f"weights[{l}] has {w.shape[0]} rows but layer {l} has "
                f"{W[l - 1].shape[1]} neurons")
    sizes = [W[0].shape[0]] + [w.shape[1] for w in W]

    inputs = np.asarray(inputs)
    if inputs.ndim != 3 or inputs.shape[2] != sizes[0]:
        raise ValueError(f"inputs must be [T, B, {sizes[0]}], got {inputs.shape}")
    T, B, _ = inputs.shape
    if T < 1 or B < 1:
        raise ValueError("need T >= 1 and B >= 1")

    labels = np.asarray(labels).astype(np.int64)
    if labels.shape != (B,):
        raise ValueError(f"labels must have shape ({B},), got {labels.shape}")
    if labels.min() < 0 or labels.max() >= sizes[-1]:
        raise ValueError(f"labels must lie in [0, {sizes[-1]})")

    if input_mask is None:
        input_mask = np.ones(inputs.shape, dtype=bool)
    input_mask = np.asarray(input_mask, dtype=bool)
    if input_mask.shape != inputs.shape:
        raise ValueError(f"input_mask must have shape {inputs.shape}")
    x_in = (inputs.astype(dtype) * input_mask).astype(dtype)

    def layer_masks(masks, name):
        if masks is None:
            return [np.ones((T, B, n), dtype=bool) for n in sizes[1:]]
        if len(masks) != L:
            raise ValueError(f"{name} must hold {L} arrays, got {len(masks)}")
        out = [np.asarray(m, dtype=bool) for m in masks]
        for l, m in enumerate(out):
            if m.shape != (T, B, sizes[l + 1]):
                raise ValueError(f"{name}[{l}] must have shape "
                                 f"{(T, B, sizes[l + 1])}, got {m.shape}")
        return out

    send = layer_masks(spike_mask, "spike_mask")
    listed = layer_masks(list_mask, "list_mask")
    return W, x_in, labels, send, listed


def surrogate(u, theta1, beta):
    """Surrogate spike derivative ``sg(U) = 1 / (beta |U - theta1| + 1)^2``.

    Works elementwise on numpy arrays (and on torch tensors)."""
    return 1.0 / (beta * abs(u - theta1) + 1.0) ** 2


def margin(trace: dict, theta1: float) -> float:
    """Smallest ``|U - theta1|`` over every layer, step, sample and neuron.

    A spike decision is robust against float rounding differences between
    implementations only if this is clearly larger than the rounding error
    of the membrane potentials (tests require e.g. ``> 1e-9`` in float64).
    """
    return float(min(np.min(np.abs(np.asarray(u, dtype=np.float64) - theta1))
                     for u in trace["U"]))


# --------------------------------------------------------------------------
# numpy: forward + hand-written backward
# --------------------------------------------------------------------------
def dense_bptt_numpy(weights: Sequence[np.ndarray], inputs, labels, *,
                     alpha: float, c: float, theta1: float, beta: float,
                     input_mask=None, spike_mask=None, list_mask=None,
                     dtype=np.float64, activity_l1: float = 0.0) -> tuple[float, list, dict[str, Any]]:
    """Dense surrogate BPTT with a hand-written backward pass (numpy).

    Parameters
    ----------
    weights : list of L arrays, ``weights[l]`` of shape ``[n_l, n_{l+1}]``.
    inputs : ``[T, B, n_0]`` 0/1 array.
    labels : ``[B]`` ints in ``[0, n_L)``.
    alpha, c, theta1, beta : leak, input gain, threshold, surrogate slope.
    input_mask : optional bool ``[T, B, n_0]``; input spikes kept.
    spike_mask : optional list of L bool ``[T, B, n_l]``; spikes sent.
    list_mask : optional list of L bool ``[T, B, n_l]``; neurons that get a
        surrogate gradient.
    dtype : floating dtype of every computation.
    activity_l1 : lambda of the L1 penalty ``lambda * sum`` of the sent spikes of every
        hidden layer (snnTorch's ``l1_rate_sparsity``), added to the loss.

    Returns
    -------
    loss : float
    grads : list of L arrays shaped like ``weights`` (``dL/dW``).
    trace : dict with ``"U"`` (membrane potentials), ``"S"`` (sent spikes),
        ``"S_raw"`` (spikes before ``spike_mask``), ``"X"`` (layer inputs),
        all lists of L ``[T, B, n]`` arrays, plus ``"counts"`` (``[B, n_L]``)
        and ``"probs"`` (softmax of the counts).

    See the module docstring for the equations.
    """
    W, x_in, labels, send, listed = _prepare(
        weights, inputs, labels, input_mask, spike_mask, list_mask, dtype)
    dt = W[0].dtype
    L = len(W)
    T, B, _ = x_in.shape
    gain = c * (1.0 - alpha)

    # ---------------- forward ----------------
    X = [np.zeros((T, B, w.shape[0]), dtype=dt) for w in W]
    U = [np.zeros((T, B, w.shape[1]), dtype=dt) for w in W]
    S_raw = [np.zeros((T, B, w.shape[1]), dtype=dt) for w in W]
    S = [np.zeros((T, B, w.shape[1]), dtype=dt) for w in W]
    for t in range(T):
        for l in range(L):  # l indexes neuron layer l+1 (weights[l] feeds it)
            if l == 0:
                X[l][t] = x_in[t]
            elif t > 0:
                X[l][t] = S[l - 1][t - 1]  # one-step delay; X[l][0] stays 0
            if t > 0:
                u_prev = U[l][t - 1]
                leak = alpha * u_prev * (1.0 - S_raw[l][t - 1])  # reset by own spike
            else:
                leak = np.zeros_like(U[l][0])
            U[l][t] = leak + gain * (X[l][t] @ W[l])
            S_raw[l][t] = U[l][t] > theta1
            S[l][t] = S_raw[l][t] * send[l][t]

    counts = S[L - 1].sum(axis=0)                       # [B, n_L]
    m = counts.max(axis=1, keepdims=True)
    ez = np.exp(counts - m)
    z = ez.sum(axis=1, keepdims=True)
    probs = ez / z
    lse = (m + np.log(z))[:, 0]
    loss = float(np.mean(lse - counts[np.arange(B), labels]))
    loss += activity_l1 * float(sum(S[l].sum() for l in range(L - 1)))

    # ---------------- backward ----------------
    onehot = np.zeros_like(counts)
    onehot[np.arange(B), labels] = 1.0
    g_counts = (probs - onehot) / B                      # dL/dC

    # g_sent[l][t] = dL/dS~^{l+1}[t]; output layer gets dL/dC at every step.
    g_sent = [np.zeros_like(s) for s in S]
    g_sent[L - 1][:] = g_counts
    for l in range(L - 1):
        g_sent[l][:] = activity_l1                       # d(lambda sum S)/dS
    grads = [np.zeros_like(w) for w in W]
    g_u_next = [np.zeros((B, w.shape[1]), dtype=dt) for w in W]   # dL/dU[t+1]
    for t in range(T - 1, -1, -1):
        for l in range(L - 1, -1, -1):
            d_spike = surrogate(U[l][t], theta1, beta) * listed[l][t]
            g_u = alpha * g_u_next[l] + g_sent[l][t] * d_spike
            g_i = gain * g_u                                     # dL/dI[t]
            grads[l] += X[l][t].T @ g_i
            if l > 0 and t > 0:
                g_sent[l - 1][t - 1] += g_i @ W[l].T
            g_u_next[l] = g_u

    trace = {"U": U, "S": S, "S_raw": S_raw, "X": X,
             "counts": counts, "probs": probs}
    return loss, grads, trace


# --------------------------------------------------------------------------
# torch: forward only, gradient by autograd
# --------------------------------------------------------------------------
_SPIKE_FN = None


def _spike_fn():
    """Build (once) the torch.autograd.Function for the surrogate spike.

    forward:  S~ = H(U - theta1) * send
    backward: dL/dU = dL/dS~ * sg(U) * listed     (``send`` plays no part)
    """
    global _SPIKE_FN
    if _SPIKE_FN is None:
        import torch

        class SurrogateSpike(torch.autograd.Function):
            @staticmethod
            def forward(ctx, u, send, listed, theta1, beta):
                ctx.save_for_backward(u, listed)
                ctx.theta1, ctx.beta = theta1, beta
                return (u > theta1).to(u.dtype) * send

            @staticmethod
            def backward(ctx, grad_out):
                u, listed = ctx.saved_tensors
                sg = surrogate(u, ctx.theta1, ctx.beta)
                return grad_out * sg * listed, None, None, None, None

        _SPIKE_FN = SurrogateSpike
    return _SPIKE_FN


def dense_bptt_torch(weights: Sequence[np.ndarray], inputs, labels, *,
                     alpha: float, c: float, theta1: float, beta: float,
                     input_mask=None, spike_mask=None, list_mask=None,
                     dtype=np.float64, activity_l1: float = 0.0) -> tuple[float, list, dict[str, Any]]:
    """Same model and signature as :func:`dense_bptt_numpy`, but the gradient
    comes from torch autograd over the forward pass.

    The reset is written as ``alpha U[t-1] - detach(alpha U[t-1] H(U[t-1] -
    theta1))`` so that its value equals ``alpha U[t-1] (1 - H)`` while
    ``dU[t]/dU[t-1] = alpha``.  Spikes go through a custom autograd Function
    (forward ``H * spike_mask``, backward ``sg * list_mask``).
    """
    import torch

    W_np, x_np, labels_np, send_np, listed_np = _prepare(
        weights, inputs, labels, input_mask, spike_mask, list_mask, dtype)
    tdt = torch.from_numpy(np.zeros(0, dtype=W_np[0].dtype)).dtype
    spike = _spike_fn().apply
    L = len(W_np)
    T, B, _ = x_np.shape
    gain = c * (1.0 - alpha)

    W = [torch.tensor(w, dtype=tdt, requires_grad=True) for w in W_np]
    x_in = torch.from_numpy(x_np)
    send = [torch.from_numpy(m).to(tdt) for m in send_np]
    listed = [torch.from_numpy(m).to(tdt) for m in listed_np]
    labels_t = torch.from_numpy(labels_np)

    U = [[None] * T for _ in range(L)]
    S = [[None] * T for _ in range(L)]
    X = [[None] * T for _ in range(L)]
    with torch.enable_grad():
        for t in range(T):
            for l in range(L):
                if l == 0:
                    x = x_in[t]
                elif t > 0:
                    x = S[l - 1][t - 1]
                else:
                    x = torch.zeros(B, W_np[l].shape[0], dtype=tdt)
                current = gain * (x @ W[l])
                if t > 0:
                    u_prev = U[l][t - 1]
                    fired = (u_prev > theta1).to(tdt)
                    leak = alpha * u_prev - (alpha * u_prev * fired).detach()
                    u = leak + current
                else:
                    u = current
                U[l][t] = u
                X[l][t] = x
                S[l][t] = spike(u, send[l][t], listed[l][t], theta1, beta)

        counts = torch.stack(S[L - 1]).sum(dim=0)
        per_sample = (torch.logsumexp(counts, dim=1)
                      - counts.gather(1, labels_t[:, None])[:, 0])
        loss = per_sample.mean()
        if activity_l1:
            loss = loss + activity_l1 * sum(torch.stack(S[l]).sum() for l in range(L - 1))
        grads = torch.autograd.grad(loss, W, allow_unused=True)

    grads = [np.zeros_like(w) if g is None else g.detach().numpy().copy()
             for g, w in zip(grads, W_np)]
    as_np = lambda seq: np.stack([v.detach().numpy() for v in seq])  # noqa: E731
    U_np = [as_np(u) for u in U]
    S_sent = [as_np(s) for s in S]
    trace = {
        "U": U_np,
        "S": S_sent,
        "S_raw": [(u > theta1).astype(W_np[0].dtype) for u in U_np],
        "X": [as_np(x) for x in X],
        "counts": counts.detach().numpy().copy(),
        "probs": torch.softmax(counts, dim=1).detach().numpy().copy(),
    }
    return float(loss.detach()), grads, trace
