"""The SNN training step as a registered workload (:mod:`mimdsim.workloads.registry`): its settings
(the network, ``model.*``, and the run, ``run.*``), built into a run by
:mod:`mimdsim.workloads.snn.from_settings`, run by :func:`~mimdsim.workloads.snn.simulate.simulate`,
compared by :func:`mimdsim.compare.compare`, and the stored measurements it is checked against.

Data only (see :mod:`mimdsim.workloads.declaration`): it imports nothing that runs.
"""
from __future__ import annotations

from ...setting import CHIP, NETWORK, TRAINING, Rows, Setting
from ..declaration import Source, Workload

DEFAULT_LAYERS = [2312, 978, 978, 976, 10]
DEFAULT_MAX_ACTIVITY, DEFAULT_THETA2 = 0.01, 0.9  # of --layers networks (None in the table: see from_settings)
# the firing rate a rate-driven run assumes when none is given (the CLI's --activity and simulate's activity=):
# half the default max activity, as Network.feedforward's initial weights target half of each list's capacity
DEFAULT_ACTIVITY = DEFAULT_MAX_ACTIVITY / 2

NETWORK_AND_RUN = (
    Setting("model.layers", "--layers", "int_list", None,
            f"layer sizes, input first (default: {','.join(map(str, DEFAULT_LAYERS))}; not with --model)"),
    Setting("model.nir", "--model", "str", None,
            "a NIR graph (.nir) to run instead of --layers (forward Euler, dt 1e-4; docs/neurons.md)"),
    Setting("model.neuron", "--neuron", "str", "published",
            "every layer's neuron: the published sparse LIF, or an snnTorch model (mimdsim/snn/zoo.py; bias, "
            "delay 0, ce_count)", choices=("published", "leaky", "synaptic", "alpha", "lapicque", "rleaky",
                                           "rleaky-one-to-one", "rsynaptic")),
    Setting("model.nir_reset", "--nir-reset", "str", None,
            "--model: the reset of its spiking nodes, which NIR does not record: zero (NIR's) or subtract "
            "(snnTorch's default, exported as the same node); default zero, with a warning",
            choices=("zero", "subtract")),
    Setting("model.timesteps", "--timesteps", "int", 100, "timesteps T"),
    Setting("model.batch", "--batch", "int", 48, "batch size B", api="batch_size"),
    Setting("model.max_activity", "--max-activity", "float", None,
            f"sets each list's capacity K = even floor(a*n) (default: {DEFAULT_MAX_ACTIVITY}; a --model graph: "
            f"K = n, every neuron listed)"),
    Setting("model.input_capacity", "--input-capacity", "int", None, "K of the input list (default: from max activity)"),
    Setting("model.theta2", "--theta2", "float", None,
            f"gradient-candidate threshold (default: {DEFAULT_THETA2}; a --model graph: -inf, every listed neuron)",
            commands=("simulate", "compare", "train"), group=NETWORK),
    Setting("model.overflow", "--overflow", "str", "lowest-index", "spike-list overflow policy",
            choices=("lowest-index", "random")),
    Setting("model.weight_scale", "--weight-scale", "float", None,
            "initial weights by the fan-in rule, std = scale / sqrt(fan-in) (default: the activity rule, every "
            "layer at half the max activity; docs/neurons.md)", commands=("simulate", "compare", "train"),
            group=NETWORK),
    Setting("run.execute", "--execute", "bool", False,
            "execution-driven: real numerics on random input spikes (rate: --input-activity)"),
    Setting("run.inference", "--inference", "bool", False,
            "simulate inference: the forward pass and loss only (no backward, no update, one step of state)",
            commands=("simulate",)),
    Setting("run.activity", "--activity", "fraction_list", None,
            f"rate-driven spike fraction per step (default: max activity / 2, {DEFAULT_MAX_ACTIVITY / 2:g} unset; the "
            "Python API's activity= default too)"),
    Setting("run.candidate_activity", "--candidate-activity", "fraction_list", None,
            "rate-driven fraction of gradient candidates (default: = activity)"),
    Setting("run.input_activity", "--input-activity", "float", None, "input spike fraction (default: = activity)"),
    Setting("run.activity_from", "--activity-from", "str", "assumed",
            "rate-driven: where the firing rates come from: assumed (--activity, default max activity / 2) or "
            "execute (one execution-driven step of this network on random input at --input-activity; its measured "
            "per-layer list fills set the rates, and the report says so)", choices=("assumed", "execute")),
    Setting("run.seed", "--seed", "int", 0, "seed of weights, inputs and draws",
            commands=("simulate", "compare", "train"), group=TRAINING),
    Setting("run.neurons_per_tile", "--neurons-per-tile", "int", None,
            "pin the neurons per tile (default: the placement search picks the fastest count that fits)",
            commands=("simulate", "compare", "train"), group=CHIP),
    Setting("run.chips_used", "--chips-used", "int", None,
            "pin the chips the layers use, at most --chips (default: the placement search picks, 1..--chips)",
            commands=("simulate", "compare"), group=CHIP),
    Setting("run.reserve_tile0", "--reserve-tile0", "bool", True, "keep tile 0 of the first chip free"),
    Setting("run.precision", "--chip-precision", "str", None,
            "the chip program's number format: an IPU's fp32, or fp16 (weights, state and matmuls in half precision, "
            "on the AMP units' fp16 rate; the published program is fp32 only, so fp16 runs the fused one) (default: "
            "fp32); a Tensix chip's bf16 (default), bfp8_b or bfp4_b (ttnn's tensor formats, docs/tensix.md; "
            "--precision is the GPU's)", choices=("fp32", "fp16", "bf16", "bfp8_b", "bfp4_b")),
    Setting("run.fidelity", "--fidelity", "str", None,
            "a Tensix chip's math fidelity, the matrix engine's passes over the mantissa bits of each product: lofi, "
            "hifi2 (default), hifi3 or hifi4 (docs/tensix.md); an IPU has none",
            choices=("lofi", "hifi2", "hifi3", "hifi4")),
)

PROGRAM = (
    Setting("run.optimizer", "--optimizer", "str", "adam",
            "the optimizer whose update the step runs on the chip (the study: adam multi-layer, sgd multi-neuron)",
            choices=("adam", "sgd"), commands=("simulate", "compare")),
    Setting("run.schedule", "--schedule", "str", None,
            "the program (default: what the model's own software builds, said in the report): SNN 'published' (the "
            "study's op as built; the default for its sparse LIF), 'poptorch' (dense, poplin-planned matmuls as "
            "PopTorch builds snnTorch; the default for --neuron and NIR models) or 'fused' (mimdsim's hand-fused "
            "spike-list supersteps; runs when --max-activity, --overflow random or fp16 rule the default out); kalman 'published' (TRACKR's codelet as built; default), 'fused' (register-resident) "
            "or 'per-op'",
            choices=("published", "fused", "poptorch", "per-op"), commands=("simulate", "compare")),
    Setting("run.static_input", "--static-input", "bool", False,
            "SNN poptorch: the same input at every step, streamed once per call (the snnTorch IPU study's pixels)"),
)

BOUNDS = {
    "model.timesteps": (1, None, False, "a step runs at least one timestep"),
    "model.batch": (1, None, False, "a step trains at least one sample"),
    "model.max_activity": (0, 1, True, "a fraction of each layer's neurons"),
    "model.input_capacity": (1, None, False, "a spike list holds at least one entry"),
    "model.weight_scale": (0, None, True, "a scale of the initial weights' standard deviation"),
    "run.activity": (0, 1, False, "a fraction of each layer's neurons"),
    "run.candidate_activity": (0, 1, False, "a fraction of each layer's neurons"),
    "run.input_activity": (0, 1, False, "a fraction of the input neurons"),
    "run.seed": (0, None, False, "numpy seeds are non-negative"),
    "run.neurons_per_tile": (1, None, False, "2 or more uses the float2 SIMD lanes"),
    "run.chips_used": (1, None, False, "the layers use at least one chip"),
}

WORKLOAD = Workload(
    "snn", "the SNN training step",
    settings=(Rows(NETWORK_AND_RUN, before="chip.preset"), Rows(PROGRAM, before="workload.resident")),
    build="mimdsim.workloads.snn.from_settings:build_run",
    run="mimdsim.workloads.snn.simulate:simulate",
    compare="mimdsim.compare:compare",
    reads=("assume", "gpu."),
    bounds=BOUNDS,
    outputs=("output.json", "output.csv", "output.plot", "output.trace"),
    validation=(Source("study-log", "chip", "mimdsim.validation:study_log_points", takes_lists=True),
                Source("sun-poptorch", "chip", "mimdsim.validation:sun_poptorch_points"),
                Source("snntorch-gpu", "gpu", "mimdsim.validation:snntorch_gpu_points"),
                Source("snn-libraries-gpu", "gpu", "mimdsim.validation:snn_libraries_gpu_points"),
                Source("gpu-microbenchmarks", "gpu", "mimdsim.validation:gpu_microbenchmarks_points"),
                Source("tensix-matmul", "chip", "mimdsim.validation:tensix_matmul_points")),
)
