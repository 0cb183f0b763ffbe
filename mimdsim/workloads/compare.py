"""The same Kalman fit or MLP inference on the MIMD chip, GPU models and a CPU, side by side.

Every side reports in the shared Report schema; throughput is ``samples_per_second`` (tracks/s
for the Kalman fit, samples/s for the MLP) and speedup is MIMD throughput over the other's.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kernels.amp import AMP_UTILISATION

from ..report import JsonOutput, Report
from .kalman.cpu import kalman_estimate as cpu_kalman
from .kalman.gpu import KALMAN_STRATEGIES, kalman_estimate as gpu_kalman
from .kalman.program import kalman
from .mlp.gpu import mlp_estimate as gpu_mlp
from .mlp.program import DEFAULT_SIZES, mlp

WORKLOADS = ("snn", "kalman", "mlp")


@dataclass
class WorkloadComparison(JsonOutput):
    workload: str
    unit: str
    mimd: Report
    gpu: dict = field(default_factory=dict)  # strategy -> Report
    cpu: Report | None = None

    def _others(self):
        cols = [(f"{r.architecture} {s}", r) for s, r in self.gpu.items()]
        if self.cpu is not None:
            cols.append((f"{self.cpu.architecture} {self.cpu.mode}", self.cpu))
        return cols

    @property
    def speedup(self) -> dict:
        """MIMD throughput over each GPU strategy's (and the CPU's, key ``"cpu"``)."""
        sp = {s: self.mimd.samples_per_second / r.samples_per_second for s, r in self.gpu.items()}
        if self.cpu is not None:
            sp["cpu"] = self.mimd.samples_per_second / self.cpu.samples_per_second
        return sp

    def to_dict(self) -> dict:
        d = {"workload": self.workload, "unit": self.unit, "mimd": self.mimd.to_dict(),
             "gpu": {s: r.to_dict() for s, r in self.gpu.items()}, "speedup": self.speedup}
        if self.cpu is not None:
            d["cpu"] = self.cpu.to_dict()
        return d

    def format(self) -> str:
        cols = [("MIMD " + self.mimd.architecture, self.mimd)] + self._others()
        w = max(16, *(len(c) + 2 for c, _ in cols))
        m = self.mimd
        lines = [f"mimdsim compare: {m.model}, {m.batch_size:,} {self.unit.split('/')[0]} per run", "",
                 f"  {'':<22}" + "".join(f"{c:>{w}}" for c, _ in cols)]

        def row(label, fn):
            lines.append(f"  {label:<22}" + "".join(f"{fn(r):>{w}}" for _, r in cols))

        row(self.unit, lambda r: f"{r.samples_per_second:,.0f}")
        row("seconds/run", lambda r: f"{r.seconds_per_step:.3e}")
        kinds = []
        for _, r in cols:
            kinds += [k for k in r.kinds if k not in kinds]
        for k in kinds:
            row(f"  {k} share", lambda r, k=k: f"{100 * r.kind_totals().get(k, 0.0) / r.total_cycles:.1f}%"
                if k in r.kinds else "-")
        row("bound", lambda r: r.placement.get("bound", "-"))
        sp = self.speedup
        lines.append(f"  {'speedup MIMD/other':<22}" + f"{'':>{w}}" + "".join(f"{v:>{w - 1}.2f}x" for v in sp.values()))
        lines += [f"  note ({name}): {n}" for name, r in cols for n in r.notes[:3]]
        return "\n".join(lines)


def compare_kalman(tracks_per_tile=408, planes=5, chip="ipu-mk2", gpu="a100-40gb", cpu="i7-9750h", *,
                   strategies=KALMAN_STRATEGIES, cpu_cores=None, variant="vectorised", covariance="shared",
                   stream=True, **kalman_kw) -> WorkloadComparison:
    """Kalman fit on ``chip`` (see :func:`mimdsim.workloads.kalman`), and the same tracks per run on
    ``gpu`` under each strategy and on ``cpu`` (None to skip)."""
    run = kalman(tracks_per_tile, planes, chip, variant=variant, covariance=covariance, stream=stream, **kalman_kw)
    n, N = run.report.batch_size, run.report.timesteps
    strategies = [strategies] if isinstance(strategies, str) else list(strategies)
    c = WorkloadComparison("kalman", "tracks/s", run.report)
    for s in strategies:
        c.gpu[s] = gpu_kalman(n, N, gpu, variant=variant, covariance=covariance, strategy=s, stream=stream)
    if cpu is not None:
        c.cpu = cpu_kalman(n, N, cpu, variant=variant, covariance=covariance, cores=cpu_cores)
    return c


def compare_mlp(batch=48, sizes=DEFAULT_SIZES, chip="ipu-mk2", gpu="a100-40gb", *, precision="fp32",
                stream=True, utilisation=AMP_UTILISATION, **mlp_kw) -> WorkloadComparison:
    """MLP inference on ``chip``'s AMP units and on ``gpu``. The chip runs fp16 when ``precision``
    is fp16 or bf16, else fp32; the GPU runs ``precision``."""
    chip_precision = "fp16" if precision in ("fp16", "bf16") else "fp32"
    run = mlp(batch, sizes, chip, precision=chip_precision, stream=stream, utilisation=utilisation, **mlp_kw)
    c = WorkloadComparison("mlp", "samples/s", run.report)
    c.gpu["eager"] = gpu_mlp(list(sizes), run.report.batch_size, gpu, precision=precision, stream=stream)
    return c
