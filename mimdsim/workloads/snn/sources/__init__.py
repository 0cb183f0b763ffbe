"""The SNN program's two work sources, with the engine's one contract: ``work(vertex_set, t) -> work counts``.

* :class:`ExecutionSource` runs the codelets' functional implementations on real data
  (spike counts emerge from the dynamics; loss and gradients are exact);
* :class:`RateSource` runs no numerics and draws the same counts from given activities.

Both return the same dictionaries, which the engine hands to the same cost code. Vertex
sets are dispatched by their ``role`` (the neuron forward and backward codelets of every
model) or else by their codelet name.

Imported by: workloads.snn (simulate and the placement search).
"""
from __future__ import annotations

from .execution import ExecutionSource, scan_work_from_flags
from .rate import RateSource, scan_work
from .work import SourceBase, SpikeStats

__all__ = ["ExecutionSource", "RateSource", "SourceBase", "SpikeStats", "scan_work", "scan_work_from_flags"]
