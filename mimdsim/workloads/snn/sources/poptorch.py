"""The execution-driven source of the PopTorch-built program (:mod:`.poptorch`).

It is :class:`~.source.ExecutionSource` — the zoo's neuron codelets with every neuron listed —
with the two things a dense matmul program adds:

* real-valued inputs (the study feeds MNIST pixels to ``fc1`` at every step): the first
  layer's current is ``x[t] W`` (+ bias) and its weight gradient ``x[t]^T dI``;
* input gradients as one matmul, ``dS_in = dI W^T`` (``V^T`` for the all-to-all recurrence),
  added to the gradient pending on the list the layer read (every neuron listed), instead of
  per-tile partials reduced in two stages.
"""
from __future__ import annotations

import numpy as np

from .execution import ExecutionSource
from .work import round16


def is_binary(x) -> bool:
    x = np.asarray(x)
    return x.dtype == bool or bool(np.all((x == 0) | (x == 1)))


class PoptorchExecutionSource(ExecutionSource):
    def __init__(self, program, net, inputs, labels, **kw):
        super().__init__(program, net, inputs if is_binary(inputs) else (inputs != 0), labels, **kw)
        self.x = None
        if not is_binary(inputs):  # real values: the first layer reads them as a matrix
            x = np.asarray(inputs, dtype=self.dt)
            self.x = round16(x.copy()) if self.fp16 else x
            nz = np.count_nonzero(x, axis=2)
            zero = np.zeros_like(nz)
            self.stats.record(0, slice(None), nz, nz, zero, zero)

    def _input_current(self, l, t, I):
        if l == 1 and self.x is not None:
            np.matmul(self.x[t], self.W[0], out=I)
            return self.sizes[0]
        return super()._input_current(l, t, I)

    def weight_grad(self, vs, t):
        l = vs.layer
        if l == 1 and self.x is not None and vs.geometry.get("source") != "own":
            self.dW_copies[1][0] += self.x[t].T @ self.dI[1]
            return {"in_spikes": np.full(self.B, self.sizes[0])}
        return super().weight_grad(vs, t)

    def input_grad(self, vs, t):
        """dS of the list layer l read (its input, or its own of step t - 1): ``dI W^T``, aligned
        with that list's ids (every neuron listed) and added to its pending gradient."""
        l = vs.layer
        own = vs.geometry.get("source") == "own"
        if own:
            if t < 1:
                return {}
            src, ts, W = l, t - 1, self.rec[l - 1]
        else:
            src, ts, W = l - 1, self._in_step(l, t), self.W[l - 1]
            if ts is None:
                return {}
        dS = self.dI[l] @ W.T  # [B, n_src]
        ids = self.ids[src][ts]
        aligned = np.take_along_axis(dS, np.maximum(ids, 0).astype(np.int64), axis=1)
        if self.fp16:
            round16(aligned)
        self._add_pending(src, ts, aligned)
        return {}
