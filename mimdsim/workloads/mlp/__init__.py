"""MLP inference as a workload: the AMP-unit program on the chip and the GPU kernels.

Imported by: workloads (its comparison).
"""
