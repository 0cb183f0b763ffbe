"""``compare``: the same training step on the MIMD chip and on GPU models, side by side.

The MIMD chip is simulated (execution- or rate-driven); the activity it measures feeds the
GPU's ``sparse`` strategy, so both sides see the same spikes. Speedup is MIMD samples/s
over GPU samples/s.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .errors import ConfigError, OutOfDeviceMemory
from .report import JsonOutput, Report
from .workloads.snn.gpu import STRATEGIES, estimate
from .workloads.snn.simulate import Run, simulate
from .workloads.snn.systolic import systolic_estimate


@dataclass
class Comparison(JsonOutput):
    run: Run  # the MIMD simulation (report, loss, grads)
    gpu: dict = field(default_factory=dict)  # strategy -> Report
    refused: dict = field(default_factory=dict)  # strategy -> reason (e.g. does not fit)
    systolic: Report | None = None

    @property
    def mimd(self) -> Report:
        return self.run.report

    @property
    def speedup(self) -> dict:
        """MIMD samples/s over each GPU strategy's (and the systolic array's, if any)."""
        sp = {s: self.mimd.samples_per_second / r.samples_per_second for s, r in self.gpu.items()}
        if self.systolic is not None:
            sp["systolic"] = self.mimd.samples_per_second / self.systolic.samples_per_second
        return sp

    def to_dict(self) -> dict:
        d = {"mimd": self.mimd.to_dict(), "gpu": {s: r.to_dict() for s, r in self.gpu.items()},
             "speedup": self.speedup, "refused": self.refused}
        if self.systolic is not None:
            d["systolic"] = self.systolic.to_dict()
        return d

    def format(self) -> str:
        cols = [("MIMD " + self.mimd.architecture, self.mimd)] + \
               [(f"{r.architecture} {s}", r) for s, r in self.gpu.items()]
        if self.systolic is not None:
            cols.append((f"{self.systolic.architecture} systolic", self.systolic))
        w = max(16, *(len(c) + 2 for c, _ in cols))
        m = self.mimd
        lines = [f"mimdsim compare: {m.model}, T={m.timesteps}, B={m.batch_size}, MIMD {m.mode}"
                 + (f", GPU precision {next(iter(self.gpu.values())).placement['precision']}" if self.gpu else ""),
                 "", f"  {'':<22}" + "".join(f"{c:>{w}}" for c, _ in cols)]

        def row(label, fn):
            lines.append(f"  {label:<22}" + "".join(f"{fn(r):>{w}}" for _, r in cols))

        row("samples/s", lambda r: f"{r.samples_per_second:,.0f}")
        row("seconds/step", lambda r: f"{r.seconds_per_step:.3e}")
        for phase in ("io", "forward", "backward", "update"):
            row(f"  {phase} (ms)", lambda r, p=phase: f"{r.phase_seconds().get(p, 0.0) * 1e3:,.3f}"
                if p in r.cycles else "-")
        kinds = []
        for _, r in cols:
            kinds += [k for k in r.kinds if k not in kinds]
        for k in kinds:
            row(f"  {k} share", lambda r, k=k: f"{100 * r.kind_totals().get(k, 0.0) / r.total_cycles:.1f}%"
                if k in r.kinds else "-")

        def mem(r):
            mm = r.memory
            if "max_tile_bytes" in mm:
                return f"{mm['max_tile_bytes'] / 1024:,.0f} KiB/tile ({100 * mm['max_tile_bytes'] / mm['tile_bytes_limit']:.0f}%)"
            if "device_bytes" in mm:
                return f"{mm['device_bytes'] / 2**30:,.2f} GiB ({100 * mm['device_bytes'] / mm['device_bytes_limit']:.0f}%)"
            return "-"
        row("memory", mem)
        sp = self.speedup
        lines.append(f"  {'speedup MIMD/GPU':<22}" + f"{'':>{w}}"
                     + "".join(f"{v:>{w - 1}.2f}x" for v in sp.values()))
        for s, why in self.refused.items():
            lines.append(f"  {s}: refused: {why}")
        precisions = {r.placement["precision"] for r in self.gpu.values()}
        if "fp32" in precisions:
            lines.append("  note: GPU matmuls in strict fp32 (CUDA cores). TensorFlow and PyTorch may use TF32 tensor "
                         "cores for float32 matmuls on Ampere and later: try --precision tf32 (docs/validation.md)")
        return "\n".join(lines)


def compare(net, chip="ipu-mk2", gpu="a100-40gb", *, strategies=STRATEGIES, precision="fp32",
            inputs=None, labels=None, timesteps=None, batch_size=None, activity=None,
            candidate_activity=None, input_activity=None, optimizer=None, systolic=None,
            **simulate_kw) -> Comparison:
    """Simulate ``net`` on ``chip`` and estimate it on ``gpu`` under each strategy.

    Arguments as for :func:`mimdsim.simulate` plus ``gpu`` (a name or GpuSpec), ``strategies``
    and ``precision`` of the GPU, and optionally a ``systolic`` array (name or SystolicSpec).
    A strategy whose model does not fit the GPU is listed in
    ``refused`` with the reason instead of a report.
    """
    if simulate_kw.get("training", True) is not True:
        raise ConfigError("compare times training steps (the GPU and systolic models have no inference "
                          "programs); drop training=False, or simulate(..., training=False) the chip alone")
    strategies = [strategies] if isinstance(strategies, str) else list(strategies)
    for s in strategies:
        if s not in STRATEGIES:
            raise ConfigError(f"unknown GPU strategy {s!r}; choose from {', '.join(STRATEGIES)}")
    run = simulate(net, chip, inputs=inputs, labels=labels, timesteps=timesteps, batch_size=batch_size,
                   activity=activity, candidate_activity=candidate_activity, input_activity=input_activity,
                   optimizer=optimizer, **simulate_kw)
    rep = run.report
    measured = [ly["spikes"] / (ly["neurons"] * rep.timesteps * rep.batch_size) for ly in rep.layers]
    opt = optimizer.kind if optimizer is not None else "adam"
    result = Comparison(run=run)
    for s in strategies:
        try:
            result.gpu[s] = estimate(net, gpu, timesteps=rep.timesteps, batch_size=rep.batch_size, strategy=s,
                                     precision=precision, activity=measured[1:], input_activity=measured[0],
                                     optimizer=opt)
        except OutOfDeviceMemory as e:
            result.refused[s] = str(e)
    if systolic is not None:
        result.systolic = systolic_estimate(net, systolic, timesteps=rep.timesteps, batch_size=rep.batch_size,
                                            optimizer=opt)
    return result
