"""The chip programs of the SNN training step, one module each: :mod:`.published` (the study's
sparse op as built), :mod:`.fused` (mimdsim's hand-fused spike lists), :mod:`.dense` (dense
activations), :mod:`.poptorch` (the dense program PopTorch builds, on poplin's planner and matmul lowering in
:mod:`mimdsim.poplibs`); :mod:`.lowering` holds what they share and :mod:`.compile` chooses one.

Imported by: workloads.snn (its placement search compiles them); nothing outside the SNN workload.
"""
