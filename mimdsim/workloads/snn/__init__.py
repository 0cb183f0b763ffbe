"""The SNN training step as a workload: its lowering (sparse spike lists or dense activations),
its work sources (execution- and rate-driven), its GPU kernel list and its systolic-array step.

Imported by: compare, sweep, training, validation, cli, trace_seed, mimdsim.
"""
