"""MLP inference as GPU kernels: per layer one GEMM ``[B, n_in] x [n_in, n_out]`` (matrix kind,
in the given precision) and one element-wise bias + activation kernel, costed launch by launch
by :mod:`mimdsim.gpu.model`; inputs in and outputs out over PCIe when streamed.
"""
from __future__ import annotations

from ...gpu.model import Kernel, workload_estimate
from ...arch.gpu import GpuSpec, gpu as gpu_spec
from ...report import Report


def mlp_kernels(sizes, batch, *, e=4):
    """Kernels of one MLP inference pass over a batch (input size first in ``sizes``)."""
    ks = []
    for l in range(1, len(sizes)):
        n_in, n = sizes[l - 1], sizes[l]
        ks.append(Kernel(f"L{l}.gemm", "forward", "matrix", 2.0 * batch * n * n_in,
                         e * (batch * n_in + n_in * n + batch * n), 1, (batch, n, n_in)))
        # bias + activation: reads the GEMM output and the bias, writes the activation
        ks.append(Kernel(f"L{l}.bias_act", "forward", "vector", 2.0 * batch * n, e * (2 * batch * n + n), 1))
    return ks


def mlp_estimate(sizes, batch, gpu="a100-40gb", *, precision="fp32", stream=True) -> Report:
    """One MLP inference pass over ``batch`` samples on a GPU."""
    spec = gpu if isinstance(gpu, GpuSpec) else gpu_spec(gpu)
    spec.matrix_flops(precision)  # raises if the GPU lacks the precision
    e = spec.bytes_per_element(precision)
    sizes = list(sizes)
    params = sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))
    return workload_estimate(
        mlp_kernels(sizes, batch, e=e), spec, precision, model="mlp " + "-".join(map(str, sizes)),
        mode=f"eager {precision}", batch_size=batch, timesteps=1,
        host_in_bytes=batch * sizes[0] * e if stream else 0.0, host_out_bytes=batch * sizes[-1] * e if stream else 0.0,
        device_bytes={"weights": e * params, "activations": e * batch * (sizes[0] + 2 * max(sizes[1:]))},
        placement={"strategy": "eager", "stream": bool(stream)})
