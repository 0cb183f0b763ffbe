"""The same Kalman work on the GPU model and the CPU model, and `mimdsim compare --workload kalman`."""
import json

import pytest

import mimdsim
from mimdsim.kernels.mimdsim_kalman import track_fit as kk
from mimdsim import ConfigError
from mimdsim.cli import main
from mimdsim.gpu import gpu, kernel_seconds
from mimdsim.gpu.model import HOST_LINK, PCIE_GEN4_X16
from mimdsim.workloads.kalman.gpu_kernels import kalman_estimate, kalman_kernels
from mimdsim.workloads import compare_kalman, cpu, cpu_kalman

A100 = gpu("a100-40gb")


def test_gpu_fused_kernels_by_hand():
    ks = kalman_kernels(1000, 5, variant="vectorised", covariance="shared", strategy="fused")
    cov, fit = ks
    # the covariance pass once (310 float2 arithmetic instructions = 620 FLOPs), then one thread per track
    assert (cov.name, cov.count, cov.flops) == ("kalman.covariance", 1, 2 * 310)
    assert fit.flops == 1000 * 2 * 74
    assert fit.nbytes == 1000 * 4 * 5 * (2 + 4)  # hits in, smoothed states out
    per = kalman_kernels(1000, 5, variant="scalar", covariance="per-track", strategy="fused")
    assert len(per) == 1 and per[0].flops == 1000 * (418 + 4829)
    assert per[0].nbytes == 1000 * 4 * 5 * (2 + 4 + 10)  # and a covariance (10 unique floats) per plane


def test_gpu_per_op_kernels_one_per_operation_and_plane():
    ks = kalman_kernels(1000, 5, variant="vectorised", strategy="per-op")
    assert len(ks) == 69
    op = kk.VECTORISED_STATE["update"][1]
    k = next(k for k in ks if k.name == "update.u,t+=k*r")
    assert k.flops == 1000 * 2 * op.arith and k.nbytes == 1000 * 4 * 2 * (op.loads + op.stores)
    shared_cov = next(k for k in ks if k.name == "update.S=a+v,w=1/S")
    assert shared_cov.flops == 2 * 5  # a shared covariance operation runs once, not per track


def test_gpu_estimate_time_by_hand():
    r = kalman_estimate(496128, 5, A100, strategy="fused", stream=True)
    ks = kalman_kernels(496128, 5, strategy="fused")
    run = sum(kernel_seconds(k, A100, "fp32") for k in ks) + len(ks) * A100.launch_overhead_s
    host = 496128 * 4 * 5 * (2 + 4) + 4 * 5 * 6  # + one shared covariance out
    io = (496128 * 40) / PCIE_GEN4_X16 + (host - 496128 * 40) / PCIE_GEN4_X16 + 2 * A100.launch_overhead_s
    assert r.seconds_per_step == pytest.approx(run + io)
    assert r.samples_per_second == pytest.approx(496128 / (run + io))
    assert r.platform == "gpu" and r.placement["strategy"] == "fused"
    resident = kalman_estimate(496128, 5, A100, stream=False)
    assert resident.seconds_per_step == pytest.approx(run)
    assert HOST_LINK["h100"] == 2 * HOST_LINK["a100-40gb"] == 4 * HOST_LINK["v100"]


def test_cpu_model_by_hand():
    c = cpu("i7-9750h")
    assert (c.cores, c.threads, c.clock_hz, c.turbo_clock_hz, c.simd_fp32) == (6, 12, 2.6e9, 4.5e9, 8)
    # scalar: per track max(418 arith / 2, 252 loads / 2, 56 stores / 1) = 209 cycles
    r = cpu_kalman(600, 5, c, variant="scalar", cores=1)
    cov = max(4829 / 2, 5304 / 2, 784 / 1)  # the shared covariance pass, once
    assert r.placement["cycles_per_track"] == 209
    assert r.seconds_per_step == pytest.approx((600 * 209 + cov) / 4.5e9)
    # vectorised: 8 tracks per AVX2 instruction, each float2 chip instruction = 2 scalar operations
    v = cpu_kalman(600, 5, c, variant="vectorised", cores=6)
    per_track = max(74 * 2 / 8 / 2, 48 * 2 / 8 / 2, 24 * 2 / 8 / 1)
    assert v.placement["cycles_per_track"] == per_track
    compute = 100 * per_track + max(310 / 2, 51 / 2, 68 / 1)
    memory = 4 * (600 * 5 * 6 + 6 * 5) / 41.8e9 * 2.6e9
    assert v.seconds_per_step == pytest.approx((max(compute, memory) + 2e-6 * 2.6e9) / 2.6e9)


def test_cpu_errors():
    with pytest.raises(ConfigError, match="unknown CPU 'i7-9750'.*Did you mean 'i7-9750h'"):
        cpu("i7-9750")
    with pytest.raises(ConfigError, match=r"cores=7 must be an integer between 1 and 6"):
        cpu_kalman(100, cores=7)
    with pytest.raises(ConfigError, match=r"simd_fp32=0 must be an integer >= 1"):
        cpu("i7-9750h", simd_fp32=0)
    with pytest.raises(ConfigError, match=r"unknown CPU field"):
        cpu("i7-9750h", smt=2)


def test_compare_kalman_same_tracks_everywhere():
    c = compare_kalman(96, 5, mimdsim.chip("ipu-mk1", tiles=8), "a100-40gb", "i7-9750h", stream=False)
    n = 8 * 96
    assert c.mimd.batch_size == n and all(r.batch_size == n for r in c.gpu.values()) and c.cpu.batch_size == n
    assert set(c.gpu) == {"fused", "per-op"}
    assert c.speedup["fused"] == pytest.approx(c.mimd.samples_per_second / c.gpu["fused"].samples_per_second)
    assert c.speedup["cpu"] == pytest.approx(c.mimd.samples_per_second / c.cpu.samples_per_second)
    d = json.loads(c.to_json())
    assert d["workload"] == "kalman" and d["unit"] == "tracks/s" and set(d) >= {"mimd", "gpu", "cpu", "speedup"}
    text = c.format()
    assert "tracks/s" in text and "speedup MIMD/other" in text and "i7-9750h" in text


def test_cli_compare_workload_kalman(tmp_path, capsys):
    path = tmp_path / "k.json"
    assert main(["compare", "--workload", "kalman", "--chip", "ipu-mk1", "--tiles", "4", "--tracks-per-tile", "100",
                 "--variant", "scalar", "--resident", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "kalman 5 planes, scalar, shared covariance" in out and "a100-40gb fused" in out and "wrote" in out
    d = json.loads(path.read_text())
    assert d["mimd"]["batch_size"] == 400 and d["mimd"]["platform"] == "mimd"
    assert main(["compare", "--workload", "kalman", "--tiles", "2", "--schedule", "per-op", "--tracks-per-tile", "1",
                 "--batches", "20", "--set", "run_launch_s=0", "--cpu", "none", "--resident"]) == 0
    assert "sync-bound" in capsys.readouterr().out
    assert main(["compare", "--workload", "kalman", "--planes", "0"]) == 2
    assert "--planes 0 must be an integer >= 2; a straight-line track fit needs at least 2 planes" in capsys.readouterr().err
    assert main(["compare", "--workload", "kalman", "--csv", str(tmp_path / "x.csv")]) == 2
    assert "use --json" in capsys.readouterr().err


def test_experiment_file_runs_a_workload(tmp_path, capsys):
    p = tmp_path / "k.toml"
    p.write_text('[chip]\npreset = "ipu-mk2"\ntiles = 4\n[workload]\nname = "kalman"\ntracks_per_tile = 48\n'
                 'resident = true\ncpu = "none"\n')
    assert main(["run", str(p)]) == 0
    assert "192 tracks per run" in capsys.readouterr().out


def test_settings_choices_match_the_codelets():
    from mimdsim.config import BY_KEY
    from mimdsim.workloads.kalman.program import SCHEDULES
    assert BY_KEY["workload.variant"].choices == kk.VARIANTS
    assert BY_KEY["workload.covariance"].choices == kk.COVARIANCE_MODES
    assert set(SCHEDULES) <= set(BY_KEY["run.schedule"].choices)


def test_sweep_points_refuse_a_workload_instead_of_running_the_snn_step():
    from mimdsim.config import SETTINGS
    from mimdsim.sweep.runner import run_point
    values = {s.key: s.default for s in SETTINGS}
    values["workload.name"] = "kalman"
    rec = run_point(values, "compare", {"workload.name": "kalman"})
    assert rec["status"] == "error" and "workload.name = 'kalman'" in rec["error"]
