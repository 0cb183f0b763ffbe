"""Kalman-filter track fitting as a workload: the program on the chip, the GPU kernels, the CPU model.

Imported by: workloads (its comparison), validation (TRACKR's rows).
"""
