"""mimdsim: a cycle-approximate simulator of IPU-style MIMD manycore chips training
sparse spiking neural networks with BPTT.

Pipeline: ``Network`` + ``ChipSpec`` -> compile (map, plan memory, lower) -> ``Program``
-> engine (execution- or rate-driven) -> ``Report``.
"""
from .arch import PRESETS, ChipSpec, SystemSpec, chip, system
from .compare import Comparison, compare
from .errors import (CapacityOverflow, ConfigError, MimdsimError, OutOfDeviceMemory, OutOfTileMemory,
                     UnsupportedModel)
from . import gpu  # the subpackage: mimdsim.gpu.gpu(...), mimdsim.gpu.systolic_gemm_cycles(...)
from .arch import GpuSpec, SystolicSpec, systolic
from .arch import gpu as gpu_spec
from .optim import SGD, Adam
from .poplibs.ops import op
from .workloads.snn.baselines.gpu_kernels import estimate as gpu_estimate
from .gpu.torch_trace import Trace, trace_torch
from .gpu.trace_cost import estimate_trace as gpu_estimate_trace
from .workloads.snn.simulate import Run, simulate
from . import workloads  # the subpackage: mimdsim.workloads.kalman(...), .mlp(...)
from .snn import LIFParams, Network, NeuronSpec, Readout, Surrogate
from .snn.nir_io import from_nir, to_nir
from . import data  # the subpackage: mimdsim.data.digits(...), .randman(...), .events(...)
from .training import train

from .version import __version__

__all__ = [
    "ChipSpec", "SystemSpec", "PRESETS", "chip", "system", "Network", "LIFParams", "NeuronSpec", "Surrogate",
    "Readout", "from_nir", "to_nir", "simulate", "Run",
    "SGD", "Adam", "MimdsimError", "ConfigError", "OutOfTileMemory", "UnsupportedModel",
    "CapacityOverflow", "OutOfDeviceMemory", "compare", "Comparison", "gpu", "gpu_spec", "GpuSpec", "systolic", "SystolicSpec",
    "workloads", "train", "data", "gpu_estimate", "trace_torch", "Trace", "gpu_estimate_trace", "op",
]
