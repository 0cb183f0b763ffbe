"""Every named assumption of the cost models: value used, plausible range, reasoning, what it touches.

A constant that no source pins down is an *assumption* (docs/cost-model.md, docs/gpu-model.md).
Each one is an entry here: its value, a plausible ``low``-``high`` range with the reasoning or
source of the range (never an end-to-end measurement the band is later compared with), the spec
field or codelet constant it sets (``target``) and the presets it applies to. A spec field's default
is the entry's value (a test keeps them equal). Bands (:mod:`mimdsim.engine.band`) move every entry
over its range; ``--assume NAME=VALUE`` pins one: :func:`check` turns the pairs into a
:class:`Pinned` value once, and that value is passed where costs are computed (a codelet reads it from
its tile, the engine's host calls, a framework's spec and the energy model from their arguments; a
chip, GPU or systolic field becomes its spec's field, :func:`spec_overrides`). Nothing is held
process-wide. The energy model keeps its own table of the same shape (``mimdsim.energy.constants``:
name, value, low, high, unit, source).

Adding an assumption is one ``_add`` line (and its row in docs/cost-model.md, which a test checks).
"""
from __future__ import annotations

from dataclasses import dataclass

from .arch.chip import ETHERNET_100G, PCIE_GEN4_X16
from .errors import ConfigError, Param
from .kernels.assumed import NOTHING, Pinned  # noqa: F401 (A.NOTHING, A.Pinned: the value callers pass)
from .checks import did_you_mean

CHIPS = ("ipu-mk1", "ipu-mk2", "bow")
GPUS = ("v100", "a100-40gb", "a100-80gb", "h100", "h200", "rtx-3090", "rtx-4090")


@dataclass(frozen=True)
class Assumption:
    name: str
    value: float  # the value the model uses
    low: float  # plausible range (reasoning below)
    high: float
    unit: str
    target: str  # "chip.<ChipSpec field>", "gpu.<GpuSpec field or knob>", "codelet.<constant>",
    # "planner.<constant of mimdsim/poplibs/matmul_plan.py>" or
    # "host.<name>" (host time per event: a framework's work per call, a wait on the host; charged by a
    # Launch whose host_call names it) or "hostcpu.op_time_scale" (a GPU host's speed, HostSpec)
    presets: tuple  # the chip or GPU presets whose value this is
    reasoning: str  # why the value, and where the range comes from
    domain: tuple = (0.0, float("inf"))  # what --assume accepts (a sane value, not a plausible one)
    codelets: tuple = ()  # codelets whose cost reads it (target "codelet.*")
    evidence: str = ""  # which software or hardware version the evidence of value and range is from

    def __post_init__(self) -> None:
        if not self.domain[0] <= self.low <= self.value <= self.high <= self.domain[1]:
            raise ValueError(f"assumption {self.name}: need domain low <= low <= value <= high <= domain high")

    @property
    def kind(self) -> str:
        return self.target.split(".", 1)[0]

    @property
    def field(self) -> str:
        return self.target.split(".", 1)[1]

    def applies(self, preset: str) -> bool:
        return preset in self.presets


REGISTRY: dict[str, Assumption] = {}


def _add(name, value, low, high, unit, target, presets, reasoning, domain=(0.0, float("inf")), codelets=(),
         evidence=""):
    REGISTRY[name] = Assumption(name, float(value), float(low), float(high), unit, target, tuple(presets),
                                reasoning, (float(domain[0]), float(domain[1])), tuple(codelets), evidence)


# ---- MIMD chip (ChipSpec fields) ----------------------------------------------------------------
_add("exchange_phase_overhead_cycles", 0, 0, 100, "cycles", "chip.exchange_phase_overhead_cycles", CHIPS,
     "poplibs' exchange estimators (popops/poplin ExchangeEstimator::getCycles) and poplin ConvModel charge no "
     "fixed cost beyond the exchange itself; high end: popnn CTCLossPlan.cpp's fixedOverheadExchangeCycles = 100 "
     "(SDK 2.6, 'a fixed overhead which usually dominates the exchange cost' of a small on-chip exchange), taken "
     "as if on top of the 98-cycle latency, the largest on-chip figure any source gives. "
     "Target::getGlobalSyncCycles (600, the value before issue 24) is a multi-chip sync, charged as such, "
     "not an on-chip exchange cost", domain=(0, 1e6),
     evidence='poplibs sdk-release-2.6 (popnn CTCLossPlan.cpp, popops/poplin exchange estimators, poplin ConvModel)')
_add("local_sync_cycles", 0, 0, 126, "cycles", "chip.local_sync_cycles", CHIPS,
     "barrier before a program with no exchange into it (a local compute set, an on-tile copy): none per Poplar's "
     "sync analysis (graphcore-research/tessellate-ipu, basics.md of its docs: a tile_map compute set runs 'independently "
     "in parallel (no sync is required)', and tile_map_ops.cpp adds Sync(INTERNAL) only on request; "
     "graphcore-research/jit-dynamic-lookup JDL.hpp needs explicit syncs around a compute set, 'Hack to make poplar "
     "sync analysis work, costs time'), so each tile runs on; high: an on-chip sync (126) before every program and "
     "no overlap of the layers' local programs. The sync-analysis evidence is SDK 3.x; the validated runs used "
     "SDK 2.6 (the study log), 2.5 (Sun et al.'s PopTorch) and TRACKR's unstated SDK, and no statement of an SDK "
     "2.x sync analysis was found, so the range is kept to where an SDK 2.x that synced before every local "
     "program would put it (126, the high end), the value at SDK 3.x's behaviour",
     domain=(0, 1e5),
     evidence="Poplar SDK 3.x (tessellate-ipu, jit-dynamic-lookup: the sync analysis) and poplibs sdk-release-2.6 (DynamicSlice: no read from another tile); no SDK 2.6 statement of the sync analysis itself, so the range's high end is what an SDK 2.6/2.5 run that synced every program would cost")
_add("host_latency_s", 1.5e-6, 0.5e-6, 5e-6, "s", "chip.host_latency_s", CHIPS,
     "stream setup inside a step, the fixed part of a copy's transfer (its Mid phase): low, one posted PCIe write "
     "and a DMA descriptor (~0.5 us); high, ~5 us of setup through the IPU-M2000's gateway buffer (a wait for the "
     "host is not in it: that is host_wait_s, 42-129 us, charged where nothing is buffered ahead). Graphcore's "
     "lightweight-profiling tutorial (graphcore/tutorials @2610c08, Example 3) measured the Mid of a 4-byte copy at "
     "1,491-1,771 cycles on an unnamed IPU, 0.8-1.3 us at 1.85-1.33 GHz: inside the range, below the value, which "
     "predates it and is kept (a stream's charge would fall by at most 0.7 us)", domain=(0, 1e-3),
     evidence="graphcore/tutorials @2610c08 (lightweight_profiling; the IPU and SDK of the run not named) and the IPU-M2000's host path; a range, not a version-pinned figure")
_add("link_latency_s", 1e-6, 0.5e-6, 7.7e-6, "s", "chip.link_latency_s", CHIPS,
     "one-way IPU-Link latency: low, a SerDes hop (~0.5 us); high, CIT's 4-7.7x higher latency under congestion "
     "x 1 us", domain=(0, 1e-3),
     evidence="MK1 hardware and its SDK of 2019 (Jia et al., 'Dissecting the Graphcore IPU architecture via microbenchmarking', CIT); no MK2 or later-SDK figure")
_add("run_launch_s", 192e-6, 50e-6, 192e-6, "s", "chip.run_launch_s", ("ipu-mk2", "bow"),
     "MK2/Bow: MK1's TRACKR intercept (192 us), an upper bound (it holds per-vertex work too); low: the run's "
     "start, two control stream copies of which at least one waits for the host (Graphcore's lightweight-"
     "profiling tutorial: 'always present at the beginning of a run'), at host_wait_s's low end (42 us), and a "
     "few us of Poplar's host work", domain=(0, 1.0),
     evidence="TRACKR's MK1 logs (lohedges/trackr, 2020-21, Clang 10; its Poplar SDK version not stated); low end: graphcore/tutorials @2610c08 (lightweight_profiling, IPU and SDK not named)")
_add("mk1_exchange_latency_cycles", 98, 90, 98, "cycles", "chip.exchange_latency_cycles", ("ipu-mk1",),
     "MK1: the C600 figure 52 + 2 x 23 rows; with MK1's 19 rows of 64 tiles it would be 52 + 2 x 19 = 90",
     domain=(0, 1e5),
     evidence='C600/GC200 latency figure applied to MK1 hardware (GC2); no MK1 or SDK-specific figure')
_add("mk1_sync_cycles", 126, 105, 150, "cycles", "chip.sync_cycles", ("ipu-mk1",),
     "MK1: the C600 on-chip sync (126); no MK1 figure; +-20 % for a die of the same span (825 vs 823 mm2)",
     domain=(0, 1e5),
     evidence='C600/GC200 sync figure applied to MK1 hardware (GC2); no MK1 or SDK-specific figure')
_add("mk1_global_sync_cycles", 600, 400, 800, "cycles", "chip.global_sync_cycles", ("ipu-mk1",),
     "MK1: the C600 global sync (600); no MK1 figure; +-1/3 for older links and a different card topology",
     domain=(0, 1e6),
     evidence='C600/GC200 global sync figure applied to MK1 hardware (GC2); no MK1 or SDK-specific figure')
_add("mk1_exchange_broadcast_bytes_per_cycle", 8, 4, 8, "B/cycle", "chip.exchange_broadcast_bytes_per_cycle",
     ("ipu-mk1",), "MK1: supertiles exist (IPUM, POPLIBS), 8 B/cycle assumed as on MK2; low: no pair benefit "
     "(the 4 B/cycle receive rate)", domain=(4, 64),
     evidence='MK1 hardware (IPU and poplibs descriptions of supertiles); no version-specific figure')
# ---- host (kind "host": host time per event, charged by a Launch whose host_call names it) ------------
_add("poptorch_call_s", 60e-6, 10e-6, 250e-6, "s", "host.poptorch_call_s", CHIPS,
     "no published per-call figure for PopTorch (none found in its user guide, Graphcore's tutorials or "
     "forums); PopTorch's host work around Engine::run (SDK 2.5: PoplarExecutor.__call__, "
     "PoplarExecutable::run, popart Session::run) counted from its parts: low, what benchmarks/"
     "poptorch_host.py times on this machine for Sun's seed call (labels int64 -> int32 and two "
     "at::empty, 4 us; the stream copies of 328,704 B in cache, 4.5 us) plus ~2 us of Python; value, "
     "those ATen ops, the copies cold at 10 GB/s (33 us) and the Python call and pybind11 conversion as two "
     "eager-op equivalents (2 x 9 us, benchmarks/eager_host.py); high, the value plus another "
     "run_launch_s-sized (192 us) unknown for PopART's per-run host bookkeeping (reconnecting the streams, the "
     "step IO and anchors; the chip's waits for the host are host_wait_s)",
     domain=(0, 1.0),
     evidence="PopTorch / PopART SDK 2.5 (sdk/poptorch/2.5.1: the run path counted) timed on this project's machine with torch 2.13 (benchmarks/poptorch_host.py, benchmarks/eager_host.py)")
_add("host_wait_s", 92e-6, 42e-6, 129e-6, "s", "host.host_wait_s", CHIPS,
     "the IPU's wait for the host in the Begin and End phases of one stream copy the host has not buffered "
     "ahead (buffering depth 1, PopART's default; it also reconnects its input streams at every run, 'invalidating "
     "prefetches'). "
     "Measured by Graphcore on real IPUs, the hardware not named: the lightweight-profiling tutorial "
     "(graphcore/tutorials @2610c08, tutorials/popvision/lightweight_profiling, Example 3: a 4-byte host-to-IPU "
     "copy with no prefetch) Begin + End 157,262-171,434 cycles, mean 163,254; PopTorch 2.5.1's user guide "
     "('Efficient IPU I/O', hostio_optimisation.rst, the profile 'with multibuffering disabled') 82,085 cycles to the "
     "IPU and at least 78,253 from it (read off the figure). Value: the two host-to-IPU figures' mean, 122,670 "
     "cycles, at the GC200's clock (92.45 us, rounded); low, 78,253 cycles at Bow's 1.85 GHz; high, 171,434 at the "
     "GC200's 1.32685 GHz. ipu-mk1 (a PCIe card) takes the same entry: no MK1 profile was found",
     domain=(0, 1.0),
     evidence="graphcore/tutorials @2610c08 (lightweight_profiling, hardware not named) and PopTorch 2.5.1's user guide (SDK 2.5)")
# ---- codelets (module constants the estimators read through value()) -----------------------------
_add("surrogate_arithmetic_instructions", 505, 250, 830, "instructions per listed id",
     "codelet.surrogate_arithmetic_instructions", CHIPS,
     "the published B4 vertex's surrogate 1 / std::pow(beta|x| + 1, 2) in soft-float double (std::pow(float, int) "
     "is a double call; kernels/graphcore_snn/vertices.py SOFT_F64_*): compiler-rt's generic C path lengths for normal "
     "operands on a 32-bit core, __extendsfdf2 15-30, __muldf3 60-200 (with or without a 32x32 -> high-word "
     "multiply), __divdf3 150-550 (divdf3.c's Newton-Raphson iterations), __truncdfsf2 25-50: low and high are the "
     "sums of the low and high ends, the value of the mid-range figures (20 + 130 + 320 + 35); 4 = the float path "
     "(SURROGATE_FLOAT), if popc keeps the arithmetic in float", domain=(4, 1e5), codelets=("gsnn.state_out_grad",),
     evidence="compiler-rt's generic soft-float double routines (the C path popc links for a 32-bit core; version of the study's SDK 2.6 toolchain not checked)")
_add("compiled_coissue_fraction", 1, 0, 1, "of pairable float instructions",
     "codelet.compiled_coissue_fraction", CHIPS,
     "share of a compiled C++ vertex's float (aux) instructions that popc bundles with a non-branch main-pipeline "
     "instruction of the same loop body (kernels/graphcore_snn/vertices.py PAIRABLE, rule C1): popc co-issues by default for "
     "worker code (graphcore/llvm-project-fork llvm/lib/Target/Colossus ColossusCoissuePass.cpp, "
     "'colossus-coissue' cl::init(true); lit test coissue.ll: '-colossus-coissue is enabled by default', "
     "axpy_twice's 6 operations in 4 bundles) with a scheduler that interleaves the two pipelines and the "
     "MachinePipeliner overlapping iterations, and TRACKR's counts (kernels/trackr/kalman_filter.py) co-issue every load with an "
     "FP instruction: value 1; low 0, the count with no bundle at all (rule C1 before issue 25), for dependences "
     "and alias barriers the compiler does not break", domain=(0, 1),
     codelets=("gsnn.state_update", "gsnn.dense_spikes", "gsnn.state_out_grad", "gsnn.weights_grad",
               "gsnn.inp_spikes_grad", "gsnn.reduce_stage1"),
     evidence="graphcore/llvm-project-fork (popc's Colossus back end as published; the study's SDK 2.6 popc not checked)")
# ---- GPU (GpuSpec fields) ------------------------------------------------------------------------
_add("gpu_gemm_floor_s", 7e-6, 7e-6, 20e-6, "s", "gpu.gemm_floor_s", GPUS,
     "HW: small GEMMs take 7-20 us whatever their size (CUTLASS on T4, DeepGEMM on H800); 7 us is the low end",
     domain=(0, 1e-3),
     evidence="CUTLASS on T4 and DeepGEMM on H800 (reference hardware.md's GPU rows; their CUDA versions not recorded)")
_add("gpu_vector_floor_s", 2e-6, 1e-6, 7e-6, "s", "gpu.vector_floor_s", GPUS,
     "no source: below the GEMM floor (no tiling prologue); low, an empty kernel's execution (~1 us); high, "
     "the GEMM floor", domain=(0, 1e-3),
     evidence='no source: an empty kernel on current NVIDIA drivers (~1 us) to the GEMM floor')
_add("gpu_launch_overhead_s", 4e-6, 2.6e-6, 6.5e-6, "s", "gpu.launch_overhead_s", GPUS,
     "HW: 2.6-2.8 us for an asynchronous enqueue, 4-6.5 us for launch plus sync; no single authoritative figure",
     domain=(0, 1e-3),
     evidence='CUDA 12-13 launches on Ampere-Blackwell GPUs (ocannl #488: CUDA 13.3; tritonbench #1017: GB200; CUDA.jl)')
_add("gpu_matrix_efficiency_scale", 1.0, 0.82, 1.0, "x the curve", "gpu.matrix_efficiency_scale", GPUS,
     "CALC's A100 curve (0.95 at large GEMMs) applied to every GPU; CUTLASS/cuBLAS reach 77-80 % of the A100 "
     "FP16 peak (HW), 0.82 x 0.95; the scale multiplies every point of the curve", domain=(0.01, 1.0),
     evidence="CALC's A100 curve (Calculon systems/a100_80g.json) and CUTLASS/cuBLAS on A100 (CUDA 11)")


# strict-FP32 GEMMs on GA102/AD102 (GpuSpec.fp32_gemm_share; docs/gpu-model.md "Strict FP32 GEMMs on GeForce
# cards"): the measured large-GEMM rate / (the quoted FP32 peak x 0.95, the efficiency curve's top)
_add("rtx4090_fp32_gemm_share", 0.681, 0.640, 0.709, "x fp32_flops", "gpu.fp32_gemm_share", ("rtx-4090",),
     "torch.float32 matmul with TF32 off, n = 2048-16384, on RTX 4090s: 53.4 TFLOP/s median of 9 runs, 50.2-55.6 "
     "(github mli/transformers-benchmarks issues #3 and #4, zzc0721/torch-performance-test-data issue #78), against "
     "the 82.6 quoted; the range is the runs' spread", domain=(0.01, 1.0),
     evidence='PyTorch float32 matmuls with TF32 off, as run in mli/transformers-benchmarks #3, #4 and zzc0721/torch-performance-test-data #78 (2022-23; the PyTorch and CUDA versions each names)')
_add("rtx3090_fp32_gemm_share", 0.710, 0.658, 0.710, "x fp32_flops", "gpu.fp32_gemm_share", ("rtx-3090",),
     "torch.float32 matmul on RTX 3090s: 24 TFLOP/s on several cards (github mli/transformers-benchmarks issue #3), "
     "against the 35.6 quoted; low: the same thread's 62.5 % of the quoted peak across 3090/4090/4080/4060",
     domain=(0.01, 1.0),
     evidence='PyTorch float32 matmuls as run in mli/transformers-benchmarks #3 (2022-23; the versions it names)')


# ==== issue 25 (b): the remaining assumptions the docs mark (kept in one block to ease merging) ====
# ---- Bow and MK1 values set equal to another preset's (ChipSpec fields of those presets) -----------
_add("mk1_link_bytes_per_second", 128e9, 128e9, 192e9, "B/s", "chip.link_bytes_per_second", ("ipu-mk1",),
     "MK1: the C2 card's 128 GB/s card to card (GC, CIT), the conservative one of two published figures; "
     "high: the 192 GB/s between the two IPUs of one C2 card (GC, CIT), what a 2-chip system on one card gets",
     domain=(1e6, 1e15),
     evidence="MK1 hardware: Graphcore's C2 card figures and CIT (2019)")
_add("bow_link_bytes_per_second", 320e9, 320e9, 446e9, "B/s", "chip.link_bytes_per_second", ("bow",),
     "Bow: no figure found; equal to MK2's 10 IPU-Links, 320 GB/s (GC), the same GC200 die (the wafer-on-wafer "
     "part only delivers power); high: the link clock raised with the core clock, 320 x 1.85 / 1.327 GHz = 446 GB/s",
     domain=(1e6, 1e15),
     evidence='Bow hardware: no figure; the GC200 (MK2) IPU-Link figure')
_add("bow_host_bytes_per_second", ETHERNET_100G, ETHERNET_100G, PCIE_GEN4_X16, "B/s", "chip.host_bytes_per_second",
     ("bow",),
     "Bow: no figure found; equal to MK2's, the IPU-M2000's one 100 GbE RoCE NIC to the host server shared by the "
     "machine's four IPUs (12.5 GB/s line rate, docs/cost-model.md §7.4), assumed the same in a Bow-2000; high: "
     "the IPU's own PCIe Gen4 x16 to the gateway (31.5 GB/s one way, GC), if a Bow-2000's host streams do not "
     "cross one such NIC", domain=(1e6, 1e15),
     evidence="Bow hardware: no figure; the IPU-M2000's 100 GbE host path (IPU-POD Direct Attach guide) and the GC200's PCIe Gen4 x16")
# ---- poplin's matmul planner (kind "planner": module constants of mimdsim/poplibs/matmul_plan.py; a plan is chosen
# once, before the run, so the band does not move them and --assume refuses them) ---------------------------------
_add("poplin_memcpy_bytes_per_cycle", 8, 4, 16, "B/cycle", "planner.MEMCPY_BYTES_PER_CYCLE", CHIPS,
     "poplar Target::getMemcpyBytesPerCycle, which poplin's planner reads (graphcore/poplibs sdk-release-2.6 "
     "lib/poplin/ConvModel.cpp addTransformCycleEstimate), is not public; its rearrangements copy at min(memcpy, "
     "element bytes), the element bytes for any value in the range, so it decides only an fp32 matmul's output "
     "regrouping (16 partial channels vs 8 weights per conv unit, regroupOutput: min(memcpy, 64)). Value: the "
     "tile's 64-bit data path (poplin PerformanceEstimation.hpp dataPathWidth 64, 8 B); low: one 32-bit load and "
     "store a cycle; high: a 128-bit load a cycle", domain=(1, 64),
     evidence='poplibs sdk-release-2.6 (lib/poplin/ConvModel.cpp reads it; the Target value itself is not public)')
# ---- the study's TensorFlow/XLA program (kind "framework": FrameworkSpec fields of tensorflow-keras-xla) ---
# How XLA:GPU of TensorFlow 2.8-2.10 runs graphcore_snn's train_gpu (mimdsim/gpu/xla.py,
# mimdsim/workloads/snn/baselines/keras_rnn.py; sources in docs/gpu-model.md, "`keras-rnn-xla`").
# Runtime figures are microbenchmarks of other software on other hosts; build choices are what the
# evidence leaves open (0/1 or a count), each range spanning the options.
_XLA = ("tensorflow-keras-xla",)
_add("xla_kernel_issue_s", 4e-6, 2.6e-6, 7.5e-6, "s per kernel", "framework.kernel_issue_s", _XLA,
     "host time for XLA's KernelThunk to launch one kernel on the stream: a raw cuLaunchKernel is 3.0-3.3 us "
     "(meta-pytorch/tritonbench PR #1017, GB200) and an asynchronous enqueue 2.62-2.81 us (ahrefs/ocannl issue "
     "#488, RTX 5070 Ti laptop, CUDA 13.3), plus the thunk's buffer-address lookup (no measurement found): value "
     "4 us; low, the bare enqueue 2.6 us; high, a launch with its stream sync, 7.46 us (ocannl #488)",
     domain=(0, 1e-3),
     evidence="CUDA 13.3 (ocannl #488, RTX 5070 Ti laptop) and GB200 (tritonbench #1017); the study's TensorFlow 2.8-2.10 XLA:GPU (CUDA 11.2) not measured")
_add("xla_kernel_gap_s", 1e-6, 0.5e-6, 3e-6, "s per kernel", "framework.kernel_gap_s", _XLA,
     "device time between two kernels already queued on one stream: a CUDA graph's per-node cost 0.58 us "
     "(ahrefs/ocannl issue #488) as the floor of the device's own dispatch; high, the ~3 us 'to launch a kernel "
     "from a stream if it is enqueued beforehand' (facebookincubator/velox PR #6096, RTX 3080); value 1 us",
     domain=(0, 1e-3),
     evidence="CUDA 13.3 graphs (ocannl #488) and an RTX 3080 (velox #6096); the study's TensorFlow 2.8-2.10 XLA:GPU (CUDA 11.2) not measured")
_add("xla_loop_sync_s", 9.4e-6, 4.7e-6, 32e-6, "s per evaluation", "framework.loop_sync_s", _XLA,
     "per WhileThunk condition evaluation, beyond the condition kernel: the 1-byte predicate copy to a host bool "
     "(ThenMemcpy) and the host's return from BlockHostUntilDone before it issues the body (while_thunk.cc). "
     "A 4-byte cudaMemcpy device-to-host into a stack variable + cudaStreamSynchronize takes 9.19-9.67 us at its "
     "unloaded minimum, pinned or pageable (kekzl/imp issue #1654, RTX 5090): value 9.4 us; low, 4.7 us, one small "
     "kernel launched and waited for with a busy-wait sync (JuliaGPU/CUDA.jl PR #896); high, the same source's "
     "median round trip on a busy machine, 32 us", domain=(0, 1e-3),
     evidence="CUDA 12.8 or later on an RTX 5090 (kekzl/imp #1654, sm_120a); the study's TensorFlow 2.8-2.10 XLA:GPU (CUDA 11.2, while_thunk.cc of that era) not measured")
_add("tf_step_call_s", 100e-6, 30e-6, 300e-6, "s per step", "framework.step_call_s", _XLA,
     "host work per training step outside the executable (Keras' train_function: one iteration of its tf.range "
     "loop in the TensorFlow executor, IteratorGetNext of the prefetched batch, the XLA launch op); no "
     "measurement found: 30-300 us spans TensorFlow op-dispatch figures of 5-50 us per op (tensorflow/tensorflow "
     "issues #120, #48844) over the handful of ops involved", domain=(0, 0.1),
     evidence="TensorFlow 2.x op-dispatch figures (tensorflow/tensorflow #120, #48844); no measurement at the study's TensorFlow 2.8-2.10")
_add("tf_input_bytes_per_second", 10e9, 5e9, 24e9, "B/s", "framework.input_bytes_per_second", _XLA,
     "the dense float32 batch copied from pageable host memory to the GPU each step (no prefetch_to_device): "
     "pinned host-to-device on A100 hosts 12.3 GB/s (router-gao/cuda-demo, A100-SXM4 VM, 32 MB) to 22.7-26.2 "
     "GB/s (jdh4/della-gpu-A100, A100-PCIE, 100 MB-1 GB); pageable copies are staged and slower: value 10 GB/s; "
     "low 5 GB/s; high 24 GB/s, a pinned copy's rate", domain=(1e8, 1e12),
     evidence="A100 hosts' pinned copies (jdh4/della-gpu-A100, router-gao/cuda-demo; the CUDA versions each names); pageable copies under TensorFlow 2.8-2.10 not measured")
_add("xla_forward_loop_waits", 0, 0, 1, "0/1", "framework.forward_loop_waits", _XLA,
     "the forward time loop as a ForThunk (0: no condition kernel, no predicate copy, no host wait) or a "
     "WhileThunk (1): XLA simplifies its condition to counter < T in TF 2.10.0 and 2.12.1 (HLO dumps, "
     "docs/research/study-gpu-program.md) so WhileLoopTripCountAnnotator finds the trip count and HandleWhile "
     "builds a ForThunk; 1 for a TF 2.8/2.9 build whose simplifier kept the two counters (not checked)",
     domain=(0, 1),
     evidence="TensorFlow 2.10.0 and 2.12.1 HLO dumps (CPU XLA); TensorFlow 2.8/2.9 not checked (the range's high end)")
_add("xla_backward_list_copies", 0, 0, 2, "copies per list per iteration", "framework.backward_list_copies", _XLA,
     "whole-buffer copies of each layer's [T, B, N] output-gradient list per backward iteration: CPU-XLA inserts "
     "2 (copy insertion resolving the TensorListSetItem read/write, TF 2.10.0 and 2.12.1 dumps); the GPU pipeline "
     "runs LoopScheduleLinearizer before copy insertion to avoid exactly such copies (gpu_compiler.cc of that "
     "era), so 0 is taken, 2 the high end", domain=(0, 2),
     evidence='TensorFlow 2.10.0 and 2.12.1 CPU-XLA dumps and gpu_compiler.cc of that era')
_add("xla_wgrad_in_gemm", 1, 0, 1, "0/1", "framework.wgrad_in_gemm", _XLA,
     "dW += x^T dI as one cuBLAS GEMM with beta = 1 (1: GemmRewriter folds the add into the GEMM, "
     "tensorflow/compiler/xla/service/gpu/gemm_rewriter) or a GEMM and a separate add kernel (0, what CPU-XLA's "
     "dump keeps); whether the rewrite fires on a loop-carried accumulator was not checked on a GPU",
     domain=(0, 1),
     evidence="XLA's gemm_rewriter of TensorFlow 2.10-era sources; not checked on a GPU")
_add("tf_adam_kernels_per_weight", 1, 1, 2, "kernels per weight", "framework.update_kernels_per_weight", _XLA,
     "ResourceApplyAdam per weight (keras v2.10.0 optimizer_v2/adam.py) lowered by tf2xla to element-wise HLO: "
     "one multi-output loop fusion (1) or split in two (2); not checked on a GPU", domain=(1, 4),
     evidence='keras v2.10.0 optimizer_v2/adam.py and tf2xla of that release; not checked on a GPU')
# ---- eager PyTorch's host work (kind "framework": FrameworkSpec fields of the pytorch-eager preset) ---
# Measured on this project's CPU, not the studies' GPU hosts (docs/gpu-model.md, Frameworks): each range
# runs from the lowest median measured here (benchmarks/eager_host.py, 2026-11-30 and the later noisy
# re-measure in docs/validation.md) plus an asynchronous enqueue (2.6 us, HW) to the slowest repeat
# measured plus the 3.0 us cuLaunchKernel (meta-pytorch/tritonbench PR #1017).
_EAGER = ("pytorch-eager",)
_add("eager_host_forward_op_s", 12e-6, 8.3e-6, 18e-6, "s per op", "framework.host_forward_op_s", _EAGER,
     "snnTorch Python + dispatcher + autograd recording per device op (benchmarks/eager_host.py): 9 us measured "
     "(10.6 us median, 8.9-15.0 over 7 repeats; 8.5-9.3 in the census) + 3.0 us launch; low, the re-measure's "
     "5.7 us median + 2.6 us; high, the slowest repeat 15.0 us + 3.0 us", domain=(0, 1e-3),
     evidence="torch 2.13.0 (CPU build) and snntorch 1.0.0 on this project's machine (benchmarks/eager_host.py)")
_add("eager_host_backward_op_s", 7.5e-6, 5.9e-6, 12.5e-6, "s per op", "framework.host_backward_op_s", _EAGER,
     "the C++ autograd engine per device op: 4.5 us measured (4.2-5.8) + 3.0 us launch; low, the re-measure's "
     "3.3 us median + 2.6 us; high, its slowest repeat 9.5 us + 3.0 us", domain=(0, 1e-3),
     evidence="torch 2.13.0 (CPU build) on this project's machine (benchmarks/eager_host.py)")
_add("eager_loss_call_s", 250e-6, 190e-6, 290e-6, "s per call", "framework.loss_call_s", _EAGER,
     "snnTorch's ce_count_loss builds nn.LogSoftmax and nn.NLLLoss on every call: 190-290 us measured on this "
     "machine (the spread is the range)", domain=(0, 1.0),
     evidence="snntorch 1.0.0 and torch 2.13.0 on this project's machine")
_add("eager_optimizer_call_s", 400e-6, 300e-6, 480e-6, "s per call", "framework.optimizer_call_s", _EAGER,
     "Adam.step()'s Python-level work for 4 parameters: 300-480 us measured on this machine (the spread is the "
     "range)", domain=(0, 1.0),
     evidence="torch 2.13.0's Adam on this project's machine")
# ---- GPU hosts (kind "hostcpu": HostSpec.op_time_scale of each host preset; docs/gpu-model.md, "Hosts") ----
# A framework's per-op and per-call host times (the eager_* entries) were measured on this project's machine, the
# genoa-vm preset (a Zen 4 EPYC guest, scale 1 by definition). On another host they scale by its single-thread speed
# relative to that machine: the Genoa guest (its SKU hidden; TSC 2.6 GHz) taken as an EPYC 9654-class core at 3.5-3.7
# GHz (PassMark single-thread 2,893 for the EPYC 9654, 3.7 GHz boost, fanaticosdelhardware.com), with AMD's IPC claims
# Zen 2 -> Zen 3 +19 % (AnandTech's Milan review) and Zen 3 -> Zen 4 +13 % at 4 GHz (AMD, via PC Gamer and Club386)
# and single-thread scores of the other cores (each entry). Each range spans the guest's unknown clock and how far a
# CPU benchmark stands for Python + dispatcher code (branchy, cache-resident); none is a framework measured per host.
_add("dgx_a100_op_time_scale", 1.46, 1.3, 1.6, "x host time per op", "hostcpu.op_time_scale", ("dgx-a100",),
     "EPYC 7742 (Zen 2, 3.4 GHz boost) against the Zen 4 guest taken at 3.7 GHz: per clock Zen 4 = 1.19 x 1.13 = 1.34x"
     " Zen 2 (AMD's launch claims, Zen 3 +19 % and Zen 4 +13 %), times clock 3.7 / 3.4 = 1.09 -> 1.46; low 1.3, the "
     "guest at 3.5 GHz (1.38) and Zen 4's gain on dispatcher code 5 % below its geomean; high 1.6, the 7742 at 3.2 GHz"
     " with its socket's other cores busy (1.55)", domain=(0.1, 10.0),
     evidence="hardware: AMD EPYC 7742 (Zen 2) against this project's Zen 4 guest; AMD's per-generation IPC claims")
_add("dgx_h100_op_time_scale", 1.2, 0.95, 1.35, "x host time per op", "hostcpu.op_time_scale", ("dgx-h100",),
     "Xeon Platinum 8480C (Golden Cove, 3.8 GHz max turbo): Geekbench 5 single-core of a 2x Xeon Platinum 8468 (the "
     "same core and turbo) 1,257 against 1,249 for a 2x EPYC 7763 (Zen 3, 3.5 GHz) (BenchLeaks, via bloglaralemi.com):"
     " a Sapphire Rapids core runs like a Zen 3 core at 3.5 GHz, and the guest is 1.13 x 3.7 / 3.5 = 1.19x that -> "
     "1.2; low 0.95, Golden Cove's IPC equal to Zen 4's at 3.8 vs 3.7 GHz (0.97); high 1.35, the 8480C at 3.3 GHz with"
     " its socket's other cores busy", domain=(0.1, 10.0),
     evidence='hardware: Intel Xeon Platinum 8480C (Sapphire Rapids); Geekbench 5 single-core of the 8468')
_add("dgx_1_op_time_scale", 1.5, 1.3, 1.8, "x host time per op", "hostcpu.op_time_scale", ("dgx-1",),
     "Xeon E5-2698 v4 (Broadwell-EP, 3.6 GHz max turbo): per clock Skylake = Broadwell + 3 % (AnandTech's Skylake "
     "review, quoted in its forum) and Zen 2 about Skylake's IPC (0-10 % above Broadwell, an assumption), so Zen 4 = "
     "1.34-1.48x Broadwell per clock, times 3.7 / 3.6 -> 1.38-1.52, value 1.5; low 1.3, the guest at 3.5 GHz; high "
     "1.8, a 20-core Broadwell-EP at its ~3.0 GHz all-core turbo. No single-thread score of this part was found",
     domain=(0.1, 10.0),
     evidence="hardware: Intel Xeon E5-2698 v4 (Broadwell-EP); AnandTech's Skylake review")
_add("desktop_zen3_op_time_scale", 0.85, 0.75, 0.95, "x host time per op", "hostcpu.op_time_scale", ("desktop-zen3",),
     "Ryzen 9 5950X (Zen 3, 4.9 GHz boost): Zen 4 is 1.13x Zen 3 per clock (AMD), so the 5950X runs 4.9 / (3.7 x 1.13)"
     " = 1.17x the guest -> 0.85; Geekbench 5 single-core agrees: the guest, a 7950X core at 3.7 of its 5.74 GHz, "
     "would score 2,217 x 3.7 / 5.74 = 1,429 against the 5950X's 1,725 (BenchLeaks, via actualnewsmagazine.com): 0.83;"
     " low 0.75, the guest at 3.5 GHz and the 5950X at full boost; high 0.95, the 5950X at its ~4.5 GHz all-core clock"
     " while a data loader runs", domain=(0.1, 10.0),
     evidence='hardware: AMD Ryzen 9 5950X (Zen 3); Geekbench 5 single-core')
_add("desktop_zen4_op_time_scale", 0.68, 0.6, 0.8, "x host time per op", "hostcpu.op_time_scale", ("desktop-zen4",),
     "Ryzen 9 7950X (Zen 4, 5.7 GHz boost), the guest's core: clock 3.7 / 5.7 = 0.65, value 0.68 for a boost held near"
     " 5.5 GHz; PassMark single-thread agrees: a Raptor Lake i9 at 5.4-5.6 GHz 4,389-4,495 (i9-13900HX/13980HX, "
     "notebookcheck) against 2,893 for an EPYC 9654 (Zen 4, 3.7 GHz; fanaticosdelhardware.com), 0.64-0.66; low 0.6, a "
     "5.8 GHz Raptor Lake i9 (13900K class, 3.7 / 5.8 = 0.64, its core's IPC a few % above Zen 4's); high 0.8, the "
     "7950X near its 4.5 GHz base", domain=(0.1, 10.0),
     evidence='hardware: AMD Ryzen 9 7950X (Zen 4) and Raptor Lake i9; PassMark single-thread')
# ---- systolic arrays (kind "systolic": SystolicSpec fields; docs/systolic-model.md, Presets) ---------
_add("tpu_vector_flops_per_cycle", 256, 128, 512, "FLOP/cycle", "systolic.vector_flops_per_cycle",
     ("tpu-v1", "scalesim-google"),
     "TPU v1's vector work (neuron updates, optimizer) at one element per array column per cycle, the 256-wide "
     "activation path (Jouppi et al. 2017 give no rate for element-wise work); low, half: each op a read and a "
     "write of the Unified Buffer through one port; high, a multiply-add per lane per cycle", domain=(1, 1e6),
     evidence='hardware: TPU v1 (Jouppi et al., ISCA 2017)')
_add("scalesim32_vector_flops_per_cycle", 32, 16, 64, "FLOP/cycle", "systolic.vector_flops_per_cycle",
     ("scalesim-32x32",), "SCALE-Sim has no vector unit: one element per column per cycle; range as for "
     "tpu_vector_flops_per_cycle (half, or a multiply-add per lane)", domain=(1, 1e6),
     evidence="SCALE-Sim 2.0.2/3.0.0 (no vector unit); range as TPU v1's")
_add("scalesim32_clock_hz", 1e9, 200e6, 1e9, "Hz", "systolic.clock_hz", ("scalesim-32x32",),
     "SCALE-Sim has no clock (it counts cycles; its DRAM bandwidth is words per cycle, so the DRAM rate follows "
     "the clock); 1 GHz, NVDLA's target clock; low, Eyeriss's 200 MHz (a 12 x 14 array, ISSCC 2016)",
     domain=(1e6, 1e11),
     evidence="SCALE-Sim 2.0.2/3.0.0 (no clock); NVDLA's target clock and Eyeriss (ISSCC 2016)")


# ---- pinning --------------------------------------------------------------------------------------
def get(name: str) -> Assumption:
    try:
        return REGISTRY[name]
    except KeyError:
        raise ConfigError(Param(name, key="assume." + name), ": no assumption of that name."
                          + (did_you_mean(name, REGISTRY) or f" Named assumptions: {', '.join(REGISTRY)}")
                          + " (docs/cost-model.md, 'Named assumptions')") from None


def check(values: dict | None) -> Pinned:
    """The ``--assume`` pairs as a :class:`Pinned` value, each name known and each value in its entry's
    domain (checked once, where a run or comparison starts)."""
    if isinstance(values, Pinned):
        return values
    out = {}
    for name, v in (values or {}).items():
        a = get(name)
        try:
            x = float(v)
        except (TypeError, ValueError):
            raise ConfigError(Param(name, v, key="assume." + name, shown=repr(v)), f": not a number; give {a.unit}, "
                              "e.g. ", Param(name, a.high, key="assume." + name, shown=f"{a.high:g}")) from None
        lo, hi = a.domain
        if not lo <= x <= hi:
            raise ConfigError(Param(name, v, key="assume." + name, shown=str(v)),
                              f": outside {lo:g}-{hi:g} {a.unit} (plausible: {a.low:g}-{a.high:g}); give a value in "
                              f"that domain", param=Param(name, v, key="assume." + name), limit=(lo, hi))
        out[name] = x
    _check_relations(out)
    return Pinned.of(out)


def value(name: str, pinned: Pinned = NOTHING) -> float:
    """The value a cost model uses: ``pinned``'s, else the entry's."""
    return pinned.get(name, REGISTRY[name].value)


def of_kind(pinned: Pinned, *kinds: str) -> Pinned:
    """The pinned values of entries of these kinds (what one model reads: "codelet", "host", "energy", ...)."""
    return pinned.only(n for n in pinned if REGISTRY[n].kind in kinds)


def touched_codelets() -> frozenset:
    """The codelets whose cost reads an assumption (what a run records for its band)."""
    return frozenset(c for a in REGISTRY.values() for c in a.codelets)


CHIP_KINDS = ("chip", "codelet", "host")  # what a chip's run reads (with its own "energy" entries)


def refuse_unread(values: dict, reads: dict, run: str) -> None:
    """A ``ConfigError`` for a pinned name that applies to none of the presets the run reads
    (``reads``: ``{kind: preset names}``): pinning it would change nothing, so it is refused rather
    than dropped silently."""
    for name in values:
        a = REGISTRY[name]
        if not any(a.applies(p) for p in reads.get(a.kind, ())):
            where = ", ".join(a.presets)
            chip = ("", "chip", "chip.preset")  # (command, Python name, settings key) of the preset to run
            preset = {"chip": chip, "codelet": chip, "host": chip, "gpu": ("compare ", "gpu", "gpu.preset"),
                      "systolic": ("compare ", "systolic", "gpu.systolic"),
                      "hostcpu": ("compare ", "host", "gpu.host")}.get(a.kind)
            fix = (preset[0], Param(preset[1], a.presets[0], key=preset[2])) if preset else (
                f"compare with a GPU column on {where}" if a.kind == "framework" else
                "none: poplin's planner reads it once, as it chooses a plan (mimdsim/poplibs/matmul_plan.py)"
                if a.kind == "planner" else f"a run on {where}",)
            raise ConfigError(Param(name, key="assume." + name), f": it sets {a.target} of {where}, which this run "
                              f"({run}) does not read, so it would change nothing; drop it, or use ", *fix)


def for_preset(kind: str, preset: str) -> list[Assumption]:
    """The entries that apply to a chip (kind "chip": chip fields and codelets) or a GPU preset."""
    kinds = ("chip", "codelet") if kind == "chip" else (kind,)
    return [a for a in REGISTRY.values() if a.kind in kinds and a.applies(preset)]


def spec_overrides(kind: str, preset: str, values: dict) -> dict:
    """``{field: value}`` that sets the ``kind`` ("chip", "gpu", "systolic" or "framework") entries of ``values``
    that apply to ``preset`` on its spec."""
    out = {}
    for name, v in values.items():
        a = REGISTRY[name]
        if a.kind == kind and a.applies(preset):
            out[a.field] = int(v) if a.field.endswith("_cycles") and float(v).is_integer() else v
    return out


# Relations between entries that no single entry's domain can state: (name, bound, the bound's value
# when it is a stated figure rather than an entry, why): ``name``'s value is at most ``bound``'s.
AT_MOST: list[tuple[str, str, float, str]] = []


def at_most(name: str, bound: str, bound_value: float, why: str) -> None:
    """Declare that entry ``name`` never exceeds ``bound`` (an entry, or a stated figure of
    ``bound_value``); :func:`check` refuses a pinned pair that breaks it (an idle power above the
    maximum)."""
    AT_MOST.append((name, bound, float(bound_value), why))


def _check_relations(pinned: dict) -> None:
    for name, bound, bound_value, why in AT_MOST:
        if name not in pinned and bound not in pinned:
            continue
        value = pinned.get(name, REGISTRY[name].value if name in REGISTRY else None)
        limit = pinned.get(bound, REGISTRY[bound].value if bound in REGISTRY else bound_value)
        if value is not None and value > limit:
            unit = f" {REGISTRY[name].unit}" if name in REGISTRY else ""
            lower, raise_ = Param(name, key="assume." + name, action="lower"), \
                Param(bound, key="assume." + bound, action="raise")
            if name in pinned:  # the pinned value is the one named; the bound as it stands
                said = (Param(name, value, key="assume." + name, shown=f"{value:g}"),
                        f" is above {bound} ({limit:g}{unit}; {why}): ", "lower ", lower,
                        *((" or raise ", raise_) if bound in REGISTRY else ()))
            else:  # only the bound was pinned, below the entry's own value
                said = (Param(bound, limit, key="assume." + bound, shown=f"{limit:g}"),
                        f" is below {name} ({value:g}{unit}; {why}): ", "raise ", raise_, " or lower ", lower)
            raise ConfigError(*said, param=Param(name if name in pinned else bound, value if name in pinned else limit,
                                                 key="assume." + (name if name in pinned else bound)), limit=limit)


def register(a: Assumption) -> None:
    """Add an entry made elsewhere: the energy model's constants with a range (kind "energy",
    ``mimdsim.energy.constants``) register themselves here, so one registry, one ``--assume`` and one
    band shape hold them."""
    REGISTRY[a.name] = a


def _presets_label(a: Assumption) -> str:
    if a.kind != "energy":
        return "all" if a.presets in (CHIPS, GPUS) else ", ".join(a.presets)
    groups = {CHIPS: "all chips", GPUS: "all GPUs", CHIPS + GPUS: "all chips and GPUs"}
    return groups.get(a.presets, ", ".join(a.presets))


def markdown_table(energy: bool = False) -> str:
    """docs/cost-model.md's table of named assumptions, or with ``energy`` docs/energy.md's (a test
    checks each page against it)."""
    lines = ["| name | value | low | high | unit | sets | presets | reasoning / source of the range | evidence from |",
             "|---|---|---|---|---|---|---|---|---|"]
    for a in REGISTRY.values():
        if (a.kind == "energy") != energy:
            continue
        presets = _presets_label(a)
        lines.append(f"| `{a.name}` | {a.value:g} | {a.low:g} | {a.high:g} | {a.unit} | `{a.target}` | {presets} | "
                     f"{a.reasoning} | {a.evidence} |")
    return "\n".join(lines)


# ---- Tenstorrent Tensix chips (mimdsim/arch/tensix.py; docs/tensix.md) ----------------------------------
TENSIX = ("wormhole-n150", "blackhole-p150")
_add("tensix_l1_reserved_bytes", 100 * 1024, 64 * 1024, 256 * 1024, "B", "chip.l1_reserved_bytes", TENSIX,
     "L1 per core below ttnn's allocator base (get_max_l1_space: L1 size less the allocator's base address): "
     "firmware, mailboxes, the kernel-config ring and kernel binaries; tt-metal sets it per architecture in its HAL "
     "and no document states the figure: ~100 KiB; low 64 KiB (firmware and binaries alone), high 256 KiB (a larger "
     "kernel-config ring, trace buffers)", domain=(0, 1024 * 1024), evidence="tt-metal 06bd3735")
_add("tensix_dram_efficiency", 0.92, 0.7, 0.95, "x peak", "chip.dram_efficiency", TENSIX,
     "the share of the GDDR6 peak that readers spread over the grid reach: tt-metal's DRAM microbenchmark "
     "(tech_reports/Saturating_DRAM_bandwidth) reached over 92 % on Wormhole with tuned readers (many transactions "
     "in flight per bank); low 0.7, ttnn's interleaved readers with a few pages in flight each and banks hit unevenly; "
     "high 0.95, a GDDR6 channel's refresh and turnaround", domain=(0.01, 1.0), evidence="tt-metal 06bd3735")
_add("tensix_dram_latency_cycles", 600, 300, 1000, "cycles", "chip.dram_latency_cycles", TENSIX,
     "a DRAM read's round trip from a Tensix core: ~9-cycle router hops each way across a 10 x 12 (Wormhole) or "
     "17 x 12 (Blackhole) torus (tt-isa-documentation, NoC Performance), the DRAM tile's controller and the GDDR6 "
     "access itself; no source states the sum: 600; low 300, a near bank; high 1,000, a far bank under load",
     domain=(0, 1e5), evidence="tt-isa-documentation 1354710")
_add("tensix_sfpu_instructions_per_element", 4, 2, 10, "instructions", "chip.sfpu_instructions_per_element",
     TENSIX, "a simple unary on the vector unit (a compare with a select, a multiply-add chain): SFPLOAD, one to "
     "three arithmetic instructions, SFPSTORE per 32 lanes; low 2 (load and store with one fused instruction), "
     "high 10 (a surrogate gradient with a reciprocal approximation)", domain=(1, 1000),
     evidence="tt-isa-documentation 1354710")
_add("tensix_dispatch_s", 25e-6, 10e-6, 60e-6, "s", "host.tensix_dispatch_s", TENSIX,
     "ttnn's host work per op called eagerly from Python (argument checks, program-cache lookup, runtime "
     "arguments, the fast-dispatch commands written to the device's command queue over PCIe); no source isolates "
     "it from an op's device time: 25 us; low 10 us (a cached program, C++ caller), high 60 us (Python, a program "
     "built or re-validated on the call)", domain=(0, 1e-2), evidence="tt-metal 06bd3735")
_add("tensix_trace_dispatch_s", 3e-6, 1e-6, 8e-6, "s", "host.tensix_trace_dispatch_s", TENSIX,
     "per op replayed from a captured trace (tech_reports/AdvancedPerformanceOptimizationsForModels: the commands "
     "are recorded into DRAM and replayed, the host out of the loop): the dispatch cores' launch of the recorded "
     "program on every core and their completion handshake; 3 us; low 1 us, high 8 us (a program whose kernel "
     "binaries and runtime arguments are re-sent each op)", domain=(0, 1e-2), evidence="tt-metal 06bd3735")
_add("tensix_busy_power_fraction", 0.7, 0.4, 1.0, "x board power", "chip.busy_power_fraction", TENSIX,
     "the board's draw while a training step runs, as a share of its total board power (n150 160 W, p150 300 W: "
     "Tenstorrent's specifications): no published figure of the draw under a given load; 0.7, the GDDR6, the "
     "fans and the grid partly busy; low 0.4, a host-bound step whose cores mostly wait; high 1.0, the TBP, "
     "the board's limit", domain=(0.01, 1.0), evidence="Tenstorrent n150s and p150a specifications")
