"""The same Kalman fit or MLP inference on the MIMD chip, GPU models and a CPU, side by side.

Every side reports in the shared Report schema; throughput is ``samples_per_second`` (tracks/s
for the Kalman fit, samples/s for the MLP) and speedup is MIMD throughput over the other's.
``kalman_from_settings`` and ``mlp_from_settings`` are the workloads' builds from settings (their
declarations name them: ``mimdsim/workloads/kalman/workload.py``, ``mimdsim/workloads/mlp/workload.py``).
"""
from __future__ import annotations

from ..report.comparison import Comparison
from .kalman.cpu import kalman_estimate as cpu_kalman, trackr_cpu_estimate as trackr_cpu
from .kalman.gpu_kernels import KALMAN_STRATEGIES, kalman_estimate as gpu_kalman
from .kalman.program import kalman
from .mlp.gpu_kernels import mlp_estimate as gpu_mlp
from .mlp.program import DEFAULT_SIZES, mlp

WorkloadComparison = Comparison  # the name from before one Comparison served every workload


def compare_kalman(tracks_per_tile=408, planes=5, chip="ipu-mk2", gpu="a100-40gb", cpu="i7-9750h", *,
                   strategies=KALMAN_STRATEGIES, cpu_cores=None, variant="vectorised", covariance="shared",
                   stream=True, **kalman_kw) -> Comparison:
    """Kalman fit on ``chip`` (see :func:`mimdsim.workloads.kalman`), and the same tracks per run on
    ``gpu`` under each strategy and on ``cpu`` (None to skip). With TRACKR's program (schedule
    "published", the default) the CPU row is TRACKR's Eigen reference as built; otherwise the
    idealised CPU model of the same counts. The GPU rows use the register-resident counts."""
    run = kalman(tracks_per_tile, planes, chip, variant=variant, covariance=covariance, stream=stream, **kalman_kw)
    n, N = run.report.batch_size, run.report.timesteps
    strategies = [strategies] if isinstance(strategies, str) else list(strategies)
    others = {s: gpu_kalman(n, N, gpu, variant=variant, covariance=covariance, strategy=s, stream=stream)
              for s in strategies}
    if cpu is not None:
        if kalman_kw.get("schedule", "published") == "published":
            others["cpu"] = trackr_cpu(n, N, cpu, cores=cpu_cores)
        else:
            others["cpu"] = cpu_kalman(n, N, cpu, variant=variant, covariance=covariance, cores=cpu_cores)
    return Comparison(run.report, others, unit="tracks/s", workload="kalman")


def compare_mlp(batch=48, sizes=DEFAULT_SIZES, chip="ipu-mk2", gpu="a100-40gb", *, precision="fp32",
                stream=True, **mlp_kw) -> Comparison:
    """MLP inference on ``chip``'s AMP units and on ``gpu``. The chip runs fp16 when ``precision``
    is fp16 or bf16, else fp32; the GPU runs ``precision``."""
    chip_precision = "fp16" if precision in ("fp16", "bf16") else "fp32"
    run = mlp(batch, sizes, chip, precision=chip_precision, stream=stream, **mlp_kw)
    eager = gpu_mlp(list(sizes), run.report.batch_size, gpu, precision=precision, stream=stream)
    return Comparison(run.report, {"eager": eager}, unit="samples/s", workload="mlp")


def kalman_from_settings(values: dict) -> dict:
    """:func:`compare_kalman`'s arguments from the settings ``values`` (``{TOML key: value}``):
    ``run.schedule`` unset is TRACKR's program ('published'); ``workload.cpu`` "none" skips the CPU."""
    from ..config import build_system  # (the configuration imports this package's declarations)

    v = values
    cpu = None if str(v["workload.cpu"]).lower() == "none" else v["workload.cpu"]
    return dict(tracks_per_tile=v["workload.tracks_per_tile"], planes=v["workload.planes"], chip=build_system(v),
                gpu=v["gpu.preset"], cpu=cpu, cpu_cores=v["workload.cpu_cores"], variant=v["workload.variant"],
                covariance=v["workload.covariance"], schedule=v["run.schedule"] or "published",
                stream=not v["workload.resident"], batches=v["workload.batches"])


def mlp_from_settings(values: dict) -> dict:
    """:func:`compare_mlp`'s arguments from the settings ``values``: the batch is ``model.batch``,
    the precision ``gpu.precision`` (fp32 unset)."""
    from ..config import build_system

    v = values
    return dict(batch=v["model.batch"], sizes=v["workload.mlp_layers"], chip=build_system(v), gpu=v["gpu.preset"],
                precision=v["gpu.precision"] or "fp32", stream=not v["workload.resident"],
                batches=v["workload.batches"])
