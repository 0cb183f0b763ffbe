"""The SNN training step on a Tensix card as a PyTorch user gets it: snnTorch's op stream, each op a ttnn op.

A user who ports an snnTorch training loop to a Tenstorrent card through ttnn issues the same device ops
as eager PyTorch does on a GPU (``baselines/eager.py``: per layer and timestep the ``nn.Linear`` matmul
and the neuron's element-wise ops, autograd's reverse pass with the weight-gradient matmul of every step
and its accumulation, the loss and the optimizer), each one ttnn op with ttnn's default program config
(:mod:`mimdsim.tensix`). Every op is priced by the one engine through its Tensix lowering
(``mimdsim/tensix/ops.py``): a matmul as ttnn's multicast program, an element-wise op streamed over the
grid (two inputs or more on the matrix engine; one, and the optimizer's square root and division, on the
vector unit).

Host and device: eager ttnn enqueues each op on the device's command queue and returns (asynchronous
dispatch), so the host's ``tensix_dispatch_s`` per op and the device's op times overlap as on a GPU's
stream (:func:`mimdsim.gpu.framework.timeline`: the step is the slower stream plus the waits the other
imposes). With trace replay the host is out of the loop and each op costs ``tensix_trace_dispatch_s`` on
the device before it runs; the report's note gives that time beside the eager one.

The dense program's time does not depend on the spikes (every op runs on dense tensors), so the step is
priced rate-driven; the layers' rows report the rates given.
"""
from __future__ import annotations

import functools

import numpy as np

from .... import assumptions as A
from ....arch.tensix import TILE_BYTES, TILE_ELEMENTS, TensixSpec
from ....errors import ConfigError, DoesNotFit, Param
from ....report import Report
from ....snn.network import describe_sizes
from ....tensix.ops import (CHIP_ASSUMPTIONS, DISPATCH, PRECISIONS, TRACE_DISPATCH, check_format, device_seconds,
                            eltwise_program, matmul_plan, matmul_program, tensix_chip)
from ..baselines import eager

STEP_ASSUMPTIONS = CHIP_ASSUMPTIONS + (DISPATCH, "tensix_busy_power_fraction")


@functools.lru_cache(maxsize=4096)
def _matmul_seconds(spec: TensixSpec, m: int, k: int, n: int, precision: str, fidelity: str) -> float:
    return device_seconds(matmul_program(spec, matmul_plan(spec, m, k, n, precision), precision, fidelity))


@functools.lru_cache(maxsize=4096)
def _eltwise_seconds(spec: TensixSpec, elements: int, operand: str, inputs: int, precision: str, fidelity: str) -> float:
    return device_seconds(eltwise_program(spec, elements, operand, precision, fidelity, inputs))


def op_seconds(spec: TensixSpec, op: eager.Op, e: float, precision: str, fidelity: str) -> float:
    """Device seconds of one launch of ``op`` as a ttnn op."""
    k = op.kernel
    if k.kind == "matrix":
        m, n, kk = k.dims
        return _matmul_seconds(spec, int(m), int(kk), int(n), precision, fidelity)
    elements = max(1, int(round(k.flops)))
    inputs = max(0, int(round(k.nbytes / (e * elements))) - 1)
    operand = "unary" if inputs <= 1 or op.phase == "update" else "add"  # Adam's sqrt and divide: the vector unit
    return _eltwise_seconds(spec, elements, operand, inputs, precision, fidelity)


def step_memory(sizes, T: int, B: int, e: float, optimizer: str) -> dict:
    """DRAM the step keeps: weights, their gradients and the optimizer's moments, and the records of
    every timestep autograd saves for the backward pass (a few tensors of B x n per layer and step)."""
    params = sum(a * b for a, b in zip(sizes[:-1], sizes[1:]))
    states = 2 if optimizer == "adam" else 0
    saved = T * B * sum(sizes) * 4  # input, membrane, spikes and the surrogate's argument per step
    return {"weights": int(e * params), "gradients": int(e * params), "optimizer": int(e * params * states),
            "history": int(e * saved)}


def tensix_step_seconds(net, spec: TensixSpec, T: int, B: int, optimizer: str, precision: str, fidelity: str,
                        pinned=A.NOTHING):
    """``(eager seconds, traced seconds, ops, device seconds per launch, host waits)`` of one step."""
    e = TILE_BYTES[precision] / TILE_ELEMENTS
    bias = [b is not None for b in getattr(net, "biases", [None] * (len(net.sizes) - 1))]
    ops = eager.step_ops(net.sizes, T, B, e=e, specs=getattr(net, "specs", None), bias=bias, optimizer=optimizer)
    device = np.concatenate([np.full(op.kernel.count, op_seconds(spec, op, e, precision, fidelity)) for op in ops])
    host = np.full(device.size, A.value(DISPATCH, pinned))
    eager_s, wait = eager.timeline(host, device)
    traced_s = float(device.sum()) + device.size * A.value(TRACE_DISPATCH, pinned)
    return eager_s, traced_s, ops, device, wait


def tensix_simulate(net, chip, *, timesteps, batch_size, activity, input_activity=None, optimizer=None,
                    precision=None, fidelity="hifi2", assume=None, band=True) -> Report:
    """The training step of ``net`` on a Tensix card through ttnn, eager (rate-driven)."""
    from ..step import check_step
    from ....checks import check_fractions

    pinned = A.check(assume)
    name = chip if isinstance(chip, str) else chip.name
    A.refuse_unread(pinned, {k: (name,) for k in A.CHIP_KINDS + ("energy",)}, f"simulate on {name}")
    spec = tensix_chip(chip, pinned)
    precision = precision or "bf16"
    check_tensix_format(spec.name, precision, fidelity)
    T, B = int(timesteps), int(batch_size)
    opt = optimizer.kind if optimizer is not None else "adam"
    check_step(T, B, opt)
    L = net.num_layers
    act = check_fractions("activity", activity, L)
    inp = check_fractions("input_activity", act[0] if input_activity is None else input_activity, 1)
    e = TILE_BYTES[precision] / TILE_ELEMENTS
    memory = step_memory(net.sizes, T, B, e, opt)
    used = sum(memory.values())
    if used > spec.dram_bytes:
        raise DoesNotFit(f"the training step keeps {used:,} B in DRAM (weights, gradients, optimizer state and "
                         f"the records of T={T:,} steps), more than {spec.name}'s {spec.dram_bytes:,} B; lower ",
                         Param("timesteps"), " or ", Param("batch_size"))
    eager_s, traced_s, ops, device, wait = tensix_step_seconds(net, spec, T, B, opt, precision, fidelity, pinned)
    hz = spec.clock_hz
    cycles, steps = eager.cycles_by_phase_and_kernel(ops, device, wait, hz)
    rates = inp + act
    layers = [{"layer": l, "neurons": n, "tiles": spec.cores, "first_tile": 0, "chip": 0, "capacity": n,
               "activity": rates[l], "listed_fraction": rates[l], "spikes": int(round(rates[l] * n * T * B)),
               "kept_spikes": int(round(rates[l] * n * T * B)), "dropped_spikes": 0, "dropped_candidates": 0,
               "overflowed_lists": 0} for l, n in enumerate(net.sizes)]
    bound = "host" if wait.sum() > 0.5 * eager_s else "device"
    report = Report(
        architecture=spec.name, platform="mimd", model=describe_sizes(net.sizes), mode=f"rate-driven, ttnn eager",
        timesteps=T, batch_size=B, clock_hz=hz, cycles=cycles, steps=steps,
        memory={"device_bytes": used, "device_bytes_limit": int(spec.dram_bytes), "by_category": memory},
        layers=layers,
        placement={"framework": "ttnn-eager",  # ttnn called op by op from PyTorch
                   "precision": f"{precision} {fidelity}",
                   "optimizer": opt, "schedule": "ttnn eager",
                   "schedule_reason": "the only program for a Tensix chip: a PyTorch model's ops dispatched to ttnn "
                                      "one by one, as run without trace capture",
                   "kernel_launches": int(device.size), "bound": bound,
                   "cores": spec.cores, "traced_seconds_per_step": traced_s},
        notes=[f"snnTorch's op stream as ttnn ops ({int(device.size):,} per step, {precision} {fidelity}, ttnn's "
               f"default program configs; docs/tensix.md); {bound}-bound: the device waits "
               f"{100 * wait.sum() / eager_s:.0f}% of the step for the host's dispatch ({DISPATCH} "
               f"{A.value(DISPATCH, pinned) * 1e6:.0f} us per op); with trace replay the step takes "
               f"{traced_s * 1e3:,.3f} ms ({TRACE_DISPATCH} {A.value(TRACE_DISPATCH, pinned) * 1e6:.0f} us per op)",
               "rate-driven: the dense program's time does not depend on the spikes; the rates are reported as "
               "given"])
    report.energy = _energy(spec, report, pinned)
    if band:
        report.uncertainty = _band(net, chip, T, B, opt, precision, fidelity, pinned, eager_s)
    return report


def _energy(spec: TensixSpec, report: Report, pinned) -> dict:
    """Joules per step: the board's draw while busy (``busy_power_fraction`` x TBP) over the step; the band
    over the fraction's range."""
    a = A.REGISTRY["tensix_busy_power_fraction"]
    t = report.seconds_per_step
    watts = spec.board_power_w * spec.busy_power_fraction
    lo, hi = (spec.board_power_w * f for f in ((a.low, a.high) if a.name not in pinned else (spec.busy_power_fraction,) * 2))
    return {"joules_per_step": watts * t, "watts": watts, "samples_per_joule": report.batch_size / (watts * t),
            "band": {"joules_per_step": [lo * t, hi * t], "watts": [lo, hi]}, "by_component": {"board": watts * t},
            "power_limits_w": {"idle": None, "max": spec.board_power_w}, "constants": spec.name, "activity": {}}


def _band(net, chip, T, B, opt, precision, fidelity, pinned, point) -> dict:
    """Seconds per step with each named assumption of the step at its ends, one at a time, and all at once."""
    name = chip if isinstance(chip, str) else chip.name
    drivers, down, up = [], 0.0, 0.0
    for n in STEP_ASSUMPTIONS:
        a = A.REGISTRY[n]
        if n in pinned or not a.applies(name) or a.kind == "chip" and a.field == "busy_power_fraction":
            continue
        t = []
        for v in (a.low, a.high):
            moved = A.check({**dict(pinned), n: v})
            t.append(tensix_step_seconds(net, tensix_chip(chip, moved), T, B, opt, precision, fidelity, moved)[0])
        down += min(min(t) - point, 0.0)
        up += max(max(t) - point, 0.0)
        drivers.append({"name": n, "value": a.value, "range": [a.low, a.high], "at_low": t[0], "at_high": t[1],
                        "seconds_per_step": [min(t), max(t)]})
    drivers.sort(key=lambda d: d["seconds_per_step"][0] - d["seconds_per_step"][1])
    lo, hi = point + down, point + up
    return {"seconds_per_step": [lo, hi], "samples_per_second": [B / hi, B / lo], "assumptions": len(drivers),
            "drivers": drivers, **({"pinned": dict(pinned)} if pinned else {})}


def refuse_tensix_settings(chip_name: str, precision, fidelity) -> None:
    """A Tensix chip's number format or math fidelity given for an IPU chip: refused, naming the chip's own."""
    from ..step import PRECISIONS as IPU_PRECISIONS

    if precision is not None and precision in PRECISIONS:
        raise ConfigError(Param("precision", precision), f" is a Tensix chip's format (ttnn's); {chip_name}'s program "
                          f"runs {' or '.join(IPU_PRECISIONS)}: pass ", Param("precision", "fp16"), ", or a Tensix chip (",
                          Param("preset", "wormhole-n150", key="chip.preset", python="chip='wormhole-n150'"), ")")
    if fidelity is not None:
        raise ConfigError(Param("fidelity", fidelity), f" sets the passes of a Tensix chip's matrix engine; {chip_name} "
                          "has no math-fidelity setting: drop it, or "
                          "pick a Tensix chip (", Param("preset", "wormhole-n150", key="chip.preset",
                                                       python="chip='wormhole-n150'"), ")")


def check_tensix_format(chip_name: str, precision: str, fidelity: str) -> None:
    """The step's format and fidelity, refused in one line where ttnn has none such: fp16 (no float16 tensor
    type in tt-metal's ``DataType``), fp32 (its matmuls are not modelled), an unknown name."""
    from ..step import PRECISIONS as IPU_PRECISIONS

    if precision in IPU_PRECISIONS:
        why = ("ttnn has no float16 tensors (tt-metal's DataType: bfloat16, float32, bfloat8_b, bfloat4_b and integers)"
               if precision == "fp16" else "ttnn's fp32 matmuls (fp32 accumulation) are not modelled (docs/tensix.md)")
        raise ConfigError(Param("precision", precision), f" is an IPU's format; {why}; {chip_name}'s step runs "
                          f"{', '.join(PRECISIONS)}: pass ", Param("precision", "bf16"))
    check_format(precision, fidelity)


def refuse_ipu_settings(**given) -> None:
    """The IPU program's settings mean nothing to ttnn's step: refused, naming the one given."""
    for name, value in given.items():
        if value is not None:
            raise ConfigError(Param(name, value), " places or schedules the IPU's program; a Tensix chip runs ttnn's "
                              "ops with ttnn's own program configs: drop it")
