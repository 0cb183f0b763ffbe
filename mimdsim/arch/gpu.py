"""GPU specifications: every constant of the SIMD (GPU) cost model, with presets.

Hardware knows no model. Each field's value per preset and its source are listed in
``docs/gpu-model.md`` ("GPU specifications"). Peak rates are NVIDIA's published
figures: CUDA-core (non-tensor) peaks, and *dense* tensor-core peaks (never the 2:4
structured-sparsity figures). The overheads, latency floors and efficiency curves are
named parameters with documented defaults (measured for the A100 and applied to every
preset as an assumption), never hidden constants.

Units: FLOP/s, bytes, bytes per second (decimal: 1 GB/s = 1e9 B/s), seconds, Hz.
Capacities (HBM, L2, shared memory) are binary: NVIDIA's "40 GB" is 40 GiB.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..errors import ConfigError, Message
from ..checks import check_choice, check_number
from .presets import Family

KiB = 1024
MiB = 1024 ** 2
GiB = 1024 ** 3

PRECISIONS = ("fp32", "tf32", "fp16", "bf16")
BYTES_PER_ELEMENT = {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2}  # tf32 is stored as fp32

# Default efficiency curves: (minimum size, fraction of peak reached), largest threshold
# first, the last threshold 0. Calculon's A100 system file (CALC in hardware.md).
MATRIX_EFFICIENCY = ((128e9, 0.95), (16e9, 0.90), (1e9, 0.60), (0.0, 0.10))  # by FLOPs per GEMM
VECTOR_EFFICIENCY = ((16e9, 0.95), (1e9, 0.5), (0.0, 0.1))  # by FLOPs per element-wise kernel
HBM_EFFICIENCY = ((100e6, 0.90), (10e6, 0.75), (1e6, 0.60), (0.0, 0.30))  # by bytes per kernel


@dataclass(frozen=True)
class GpuSpec:
    """One GPU: peak rates of its CUDA cores and tensor cores, HBM, caches, and the
    launch overheads and latency floors that dominate small kernels.

    ``matrix_flops(precision)`` is the peak a GEMM can reach; ``vector_flops(precision)``
    the peak of an element-wise kernel. ``efficiency(curve, x)`` reads an efficiency curve.
    """

    name: str
    sms: int
    clock_hz: float  # max boost clock (the CUDA-core peaks' clock; see docs for H100's tensor clock)
    fp32_flops: float  # CUDA-core FP32 peak (non-tensor)
    fp16_vector_flops: float  # CUDA-core FP16 peak (non-tensor), element-wise kernels in half precision
    tf32_flops: float | None  # dense tensor-core TF32 peak; None where unsupported (V100)
    fp16_flops: float  # dense tensor-core FP16 peak (no 2:4 sparsity)
    bf16_flops: float | None  # dense tensor-core BF16 peak; None where unsupported (V100)
    hbm_bytes: int
    hbm_bytes_per_second: float
    l2_bytes: int
    smem_per_sm_bytes: int  # max shared memory per SM (the largest carveout)
    l2_bytes_per_second: float = 0.0  # L2 read bandwidth (measured; docs/gpu-model.md "L2"); 0: unknown, never used
    launch_overhead_s: float = 4e-6  # per kernel launched outside a CUDA graph (launch + sync, ~4-6.5 us)
    graph_node_overhead_s: float = 0.6e-6  # per kernel inside a CUDA graph
    graph_launch_s: float = 15e-6  # per graph launch
    gemm_floor_s: float = 7e-6  # latency floor of a small GEMM (7-20 us)
    vector_floor_s: float = 2e-6  # latency floor of a small element-wise kernel (unknown; assumption)
    matrix_efficiency: tuple = MATRIX_EFFICIENCY  # (min FLOPs, efficiency), CALC A100
    vector_efficiency: tuple = VECTOR_EFFICIENCY  # (min FLOPs, efficiency), CALC A100
    hbm_efficiency: tuple = HBM_EFFICIENCY  # (min bytes, efficiency), CALC A100
    # the share of fp32_flops a strict-FP32 GEMM (cuBLAS SGEMM) can use: 1 where every FP32 lane is a
    # dedicated FP32 unit (GV100, GA100, GH100); below 1 on GA102/AD102, whose quoted FP32 peak counts
    # 128 lanes per SM of which 64 also execute INT32, so a GEMM's integer address work takes FP32 slots
    # (measured SGEMM rates, docs/gpu-model.md "Strict FP32 GEMMs on GeForce cards")
    fp32_gemm_share: float = 1.0

    def __post_init__(self) -> None:
        GPUS.check(self, ints=dict.fromkeys(("sms", "hbm_bytes", "l2_bytes", "smem_per_sm_bytes"), 1),
                   positive=("clock_hz", "fp32_flops", "fp16_vector_flops", "fp16_flops", "hbm_bytes_per_second",
                             "tf32_flops", "bf16_flops"),
                   optional=("tf32_flops", "bf16_flops"),  # None: the GPU lacks this tensor-core format
                   seconds=("launch_overhead_s", "graph_node_overhead_s", "graph_launch_s", "gemm_floor_s",
                            "vector_floor_s"))
        check_number("l2_bytes_per_second", self.l2_bytes_per_second, low=0, where=f"GPU {self.name!r}: ",
                     fix=GPUS.fix(self.name, "l2_bytes_per_second"))
        check_number("fp32_gemm_share", self.fp32_gemm_share, low=0.01, high=1.0, where=f"GPU {self.name!r}: ",
                     fix="the share of the FP32 peak a strict-FP32 GEMM reaches, in (0, 1]")
        for name in ("matrix_efficiency", "vector_efficiency", "hbm_efficiency"):
            # Stored as a tuple of (float, float) so the spec stays hashable and a curve read
            # back from JSON (lists) compares equal to the preset's.
            object.__setattr__(self, name, _check_curve(self.name, name, getattr(self, name)))

    # Peak rates by precision.
    @property
    def matrix_precisions(self) -> tuple[str, ...]:
        """Precisions ``matrix_flops`` accepts on this GPU."""
        return tuple(p for p in PRECISIONS if p == "fp32" or getattr(self, f"{p}_flops") is not None)

    def matrix_flops(self, precision: str) -> float:
        """Peak FLOP/s of a GEMM in ``precision``: 'fp32' runs on the CUDA cores (no tensor
        cores) at ``fp32_gemm_share`` of their peak; 'tf32', 'fp16' and 'bf16' on the tensor cores
        (dense peak)."""
        check_choice("precision", precision, PRECISIONS)
        if precision == "fp32":
            return self.fp32_flops * self.fp32_gemm_share
        peak = getattr(self, f"{precision}_flops")
        if peak is None:
            raise ConfigError(
                f"GPU {self.name!r} has no {precision} tensor cores; its matrix precisions are "
                f"{', '.join(self.matrix_precisions)}. Choose one of those, or another GPU "
                f"({', '.join(p for p in PRESETS if PRESETS[p].get(f'{precision}_flops'))}), "
                f"or model a hypothetical one with gpu({self.name!r}, {precision}_flops=...)")
        return peak

    def vector_flops(self, precision: str) -> float:
        """Peak FLOP/s of an element-wise kernel on the CUDA cores: fp32 (and tf32, which is
        stored and computed element-wise as fp32) at ``fp32_flops``; fp16 and bf16 at
        ``fp16_vector_flops``. bf16 needs a GPU with bf16 support."""
        check_choice("precision", precision, PRECISIONS)
        if precision in ("fp32", "tf32"):
            return self.fp32_flops
        if precision == "bf16" and self.bf16_flops is None:
            raise ConfigError(
                f"GPU {self.name!r} has no bf16 arithmetic; its precisions are "
                f"{', '.join(self.matrix_precisions)}. Use 'fp16' or 'fp32' on this GPU, or pick one "
                f"with bf16 ({', '.join(p for p in PRESETS if PRESETS[p].get('bf16_flops'))})")
        return self.fp16_vector_flops

    @staticmethod
    def efficiency(curve, x: float) -> float:
        """Fraction of peak reached by an operation of size ``x`` (FLOPs or bytes): the
        efficiency of the first ``(threshold, efficiency)`` with ``x >= threshold``.
        ``curve`` is sorted by descending threshold and ends at threshold 0."""
        check_number("size", x, low=0, finite=False, where="efficiency lookup: ")
        for threshold, eff in curve:
            if x >= threshold:
                return eff
        raise ConfigError(f"efficiency curve {curve!r} has no entry for size {x!r}; end it at threshold 0")

    @staticmethod
    def bytes_per_element(precision: str) -> int:
        """Storage bytes of one element: fp32/tf32 -> 4, fp16/bf16 -> 2."""
        return BYTES_PER_ELEMENT[check_choice("precision", precision, PRECISIONS)]

    def replace(self, **overrides) -> "GpuSpec":
        return GPUS.replace(self, overrides)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _check_curve(gpu_name: str, field: str, curve) -> tuple:
    fix = Message(GPUS.fix(gpu_name, field))  # a GPU field is no run setting: its Python words
    where = f"GPU {gpu_name!r}: {field}={curve!r}"
    if isinstance(curve, (str, bytes)) or not hasattr(curve, "__iter__"):
        raise ConfigError(f"{where} must be a sequence of (threshold, efficiency) pairs; {fix}")
    pairs = []
    for item in curve:
        try:
            threshold, eff = item
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: entry {item!r} is not a (threshold, efficiency) pair; {fix}") from None
        check_number("threshold", threshold, low=0, where=f"{where}: ", fix=fix)
        check_number("efficiency", eff, low=0, high=1, open_low=True, where=f"{where}: ", fix=fix)
        pairs.append((float(threshold), float(eff)))
    if not pairs:
        raise ConfigError(f"{where} is empty; it needs at least the entry (0, efficiency); {fix}")
    for (t0, _), (t1, _) in zip(pairs, pairs[1:]):
        if not t1 < t0:
            raise ConfigError(
                f"{where}: thresholds must strictly descend, but {t1:g} follows {t0:g}; "
                f"list the largest threshold first; {fix}")
    if pairs[-1][0] != 0:
        raise ConfigError(
            f"{where} ends at threshold {pairs[-1][0]:g}; it must end at threshold 0 so every size has "
            f"an efficiency; {fix}")
    return tuple(pairs)


_A100 = dict(
    sms=108, clock_hz=1.41e9,
    fp32_flops=19.5e12, fp16_vector_flops=78e12,
    tf32_flops=156e12, fp16_flops=312e12, bf16_flops=312e12,
    l2_bytes=40 * MiB, smem_per_sm_bytes=164 * KiB,
    l2_bytes_per_second=5.4e12,  # gpu-benches gpu-l2-cache/a100_80.txt: 5.3-5.5 TB/s up to ~28 MB
)
# H100 SXM5 and H200 SXM share the GH100 die and its compute figures (H100 whitepaper
# Table 3 / datasheets; tensor figures dense, i.e. half the datasheets' sparsity figures).
_GH100_SXM = dict(
    sms=132, clock_hz=1.98e9,
    fp32_flops=66.9e12, fp16_vector_flops=133.8e12,
    tf32_flops=494.7e12, fp16_flops=989.4e12, bf16_flops=989.4e12,
    l2_bytes=50 * MiB, smem_per_sm_bytes=228 * KiB,
    l2_bytes_per_second=9.7e12,  # gpu-benches gpu-l2-cache/h200.txt: 9.5-10.3 TB/s up to ~40 MB
)

PRESETS: dict[str, dict] = {
    "a100-40gb": dict(_A100, hbm_bytes=40 * GiB, hbm_bytes_per_second=1555e9),
    "a100-80gb": dict(_A100, hbm_bytes=80 * GiB, hbm_bytes_per_second=2039e9),
    "v100": dict(
        sms=80, clock_hz=1.53e9,
        fp32_flops=15.7e12, fp16_vector_flops=31.4e12,
        tf32_flops=None, fp16_flops=125e12, bf16_flops=None,
        hbm_bytes=32 * GiB, hbm_bytes_per_second=900e9,
        l2_bytes=6 * MiB, smem_per_sm_bytes=96 * KiB,
        l2_bytes_per_second=2.5e12,  # gpu-benches README, cuda-cache on a V100 PCIe: 2.5 TB/s from L2
    ),
    "h100": dict(_GH100_SXM, hbm_bytes=80 * GiB, hbm_bytes_per_second=3.35e12),
    "h200": dict(_GH100_SXM, hbm_bytes=141 * GiB, hbm_bytes_per_second=4.8e12),
    # GeForce cards SNN researchers use (Ampere GA102 / Ada AD102 whitepapers, docs/gpu-model.md):
    # tensor figures dense with FP32 accumulation (half the FP16-accumulate rate on GeForce)
    # fp32_gemm_share (docs/gpu-model.md "Strict FP32 GEMMs on GeForce cards"; registry entries
    # rtx3090_fp32_gemm_share, rtx4090_fp32_gemm_share): measured large SGEMM rate / (peak x 0.95, the
    # efficiency curve's top): RTX 3090 24 TFLOP/s, RTX 4090 53.4 (median of 9 runs, 50.2-55.6)
    "rtx-3090": dict(sms=82, clock_hz=1.695e9, fp32_flops=35.6e12, fp16_vector_flops=35.6e12, fp32_gemm_share=0.710,
                     tf32_flops=35.6e12, fp16_flops=71e12, bf16_flops=71e12,
                     hbm_bytes=24 * GiB, hbm_bytes_per_second=936e9, l2_bytes=6 * MiB, smem_per_sm_bytes=100 * KiB,
                     l2_bytes_per_second=2.5e12),  # ASSUMPTION (no measurement found): V100's, range 2-3.5 TB/s
    "rtx-4090": dict(sms=128, clock_hz=2.52e9, fp32_flops=82.6e12, fp16_vector_flops=82.6e12, fp32_gemm_share=0.681,
                     tf32_flops=82.6e12, fp16_flops=165.2e12, bf16_flops=165.2e12,
                     hbm_bytes=24 * GiB, hbm_bytes_per_second=1008e9, l2_bytes=72 * MiB,
                     smem_per_sm_bytes=100 * KiB,
                     # ASSUMPTION: the L40's (AD102, gpu-benches gpu-l2-cache/l40.txt, 5.1-5.3 TB/s up to
                     # ~96 MB); range 3.9-5.5 (72 of the die's 96 MB of L2 slices enabled on the 4090)
                     l2_bytes_per_second=5.2e12),
}

DESCRIPTIONS = {
    "a100-40gb": "NVIDIA A100 SXM4 40 GB (Ampere GA100, 108 SMs, HBM2)",
    "a100-80gb": "NVIDIA A100 SXM4 80 GB (Ampere GA100, 108 SMs, HBM2e)",
    "v100": "NVIDIA Tesla V100 SXM2 32 GB (Volta GV100, 80 SMs, HBM2)",
    "h100": "NVIDIA H100 SXM5 80 GB (Hopper GH100, 132 SMs, HBM3)",
    "h200": "NVIDIA H200 SXM 141 GB (Hopper GH100, 132 SMs, HBM3e)",
    "rtx-3090": "NVIDIA GeForce RTX 3090 24 GB (Ampere GA102, 82 SMs, GDDR6X)",
    "rtx-4090": "NVIDIA GeForce RTX 4090 24 GB (Ada AD102, 128 SMs, GDDR6X)",
}

GPUS = Family(GpuSpec, kind="GPU", maker="gpu", presets=PRESETS, descriptions=DESCRIPTIONS)
gpu_description = GPUS.description  # long name of a preset ("" if none)


def gpu(name: str | GpuSpec = "a100-40gb", **overrides) -> GpuSpec:
    """A GPU preset with any field overridden: ``gpu("a100-40gb", hbm_bytes_per_second=1e12)``."""
    return GPUS.get(name, overrides)
