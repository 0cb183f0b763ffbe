"""`compare`: MIMD chip beside GPU strategies and a systolic array."""
import json
import subprocess
import sys

import numpy as np
import pytest

import mimdsim
from mimdsim.cli import main
from mimdsim.gpu import systolic_gemm_cycles
from mimdsim.workloads.snn.baselines.gpu_kernels import estimate as gpu_estimate
from mimdsim.workloads.snn.baselines.systolic import systolic_estimate


def test_compare_joins_reports_and_speedups():
    net = mimdsim.Network.feedforward([700, 400, 300, 20])
    c = mimdsim.compare(net, "ipu-mk2", "a100-40gb", timesteps=20, batch_size=16, activity=0.02,
                        systolic="tpu-v1")
    # the studies' baselines by default, first the sparse-BPTT study's own program (the network is its LIF)
    assert list(c.gpu) == ["keras-rnn-xla", "compiled", "eager", "fused"] and not c.refused
    for s, r in c.gpu.items():
        assert c.speedup[s] == pytest.approx(c.mimd.samples_per_second / r.samples_per_second)
    assert c.speedup["systolic"] == pytest.approx(c.mimd.samples_per_second / c.systolic.samples_per_second)
    d = c.to_dict()
    assert set(d) >= {"mimd", "gpu", "speedup", "systolic"}
    assert d["mimd"]["platform"] == "mimd" and d["gpu"]["fused"]["platform"] == "gpu"
    table = c.format()
    assert "speedup MIMD/GPU" in table and "a100-40gb fused" in table and "tpu-v1 systolic" in table


def test_sparse_gpu_sees_the_measured_activity():
    net = mimdsim.Network.feedforward([200, 120, 10], max_activity=0.1, weight_scale=5.0)
    rng = np.random.default_rng(0)
    x = (rng.random((20, 8, 200)) < 0.05).astype(np.uint8)
    c = mimdsim.compare(net, mimdsim.chip("ipu-mk2", tiles=128), "a100-40gb", inputs=x,
                        labels=rng.integers(0, 10, 8), strategies=["sparse"])
    measured = [ly["spikes"] / (ly["neurons"] * 20 * 8) for ly in c.mimd.layers]
    direct = gpu_estimate(net, "a100-40gb", timesteps=20, batch_size=8, strategy="sparse",
                                  activity=measured[1:], input_activity=measured[0])
    assert c.gpu["sparse"].seconds_per_step == pytest.approx(direct.seconds_per_step)
    assert c.run.loss is not None


def test_strategy_that_does_not_fit_is_refused_not_fatal():
    net = mimdsim.Network.feedforward([100, 600, 10])
    tiny = mimdsim.gpu.gpu("a100-40gb", hbm_bytes=10**6)
    c = mimdsim.compare(net, "ipu-mk2", tiny, timesteps=50, batch_size=32, activity=0.02)
    assert set(c.refused) == {"keras-rnn-xla", "compiled", "eager", "fused"} and "needs" in c.refused["fused"]
    assert "refused" in c.format()


def test_compare_with_no_arguments_prints_the_table():
    out = subprocess.run([sys.executable, "-m", "mimdsim", "compare"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "2312-978-978-976-10, T=100, B=48, MIMD rate-driven (published program)" in out.stdout
    assert "MIMD ipu-mk2" in out.stdout and "a100-40gb compiled" in out.stdout and "a100-40gb fused" in out.stdout
    assert "tensorflow-xla" in out.stdout and "tf32" in out.stdout  # each column's framework and precision
    assert "seconds/step" in out.stdout and "speedup MIMD/GPU" in out.stdout
    # the fp32 note names its columns: the compiled one runs tf32 already
    assert "note: eager, fused: GPU matmuls in strict fp32" in out.stdout


def test_compare_cli_json_and_errors(tmp_path, capsys):
    path = tmp_path / "c.json"
    assert main(["compare", "--layers", "700,300,20", "--timesteps", "10", "--batch", "8", "--gpu", "h100",
                 "--strategy", "fused,sparse", "--precision", "bf16", "--json", str(path)]) == 0
    d = json.loads(path.read_text())
    assert set(d["gpu"]) == {"fused", "sparse"} and set(d["speedup"]) == {"fused", "sparse"}
    assert d["gpu"]["fused"]["placement"]["precision"] == "bf16"
    capsys.readouterr()
    assert main(["compare", "--gpu", "a100", "--timesteps", "5"]) == 2
    assert "unknown GPU 'a100'" in capsys.readouterr().err
    assert main(["compare", "--gpu", "v100", "--precision", "bf16", "--timesteps", "5"]) == 2
    assert "bf16" in capsys.readouterr().err
    assert main(["compare", "--strategy", "magic"]) == 2  # a usage error: one line, exit code 2
    assert main(["gpus"]) == 0
    assert "a100-40gb" in capsys.readouterr().out


def test_systolic_estimate_uses_the_array_cycles():
    net = mimdsim.Network.feedforward([64, 32, 8])
    arr = mimdsim.gpu.systolic("scalesim-32x32", dram_bytes_per_second=1e15)  # no DRAM stalls
    r = systolic_estimate(net, arr, timesteps=4, batch_size=2)
    T, B = 4, 2
    gemms = [(T * B, 32, 64), (T * B, 8, 32), (32, 8, T * B), (T * B, 32, 8), (64, 32, T * B)]
    expect = sum(int(systolic_gemm_cycles(m, n, k, rows=32, cols=32, dataflow="os")) for m, n, k in gemms)
    assert r.kind_totals()["array"] == pytest.approx(expect)
    assert r.kind_totals()["dram"] == 0
    assert r.platform == "systolic" and r.samples_per_second > 0


def test_chip_precision_reaches_the_chip_in_compare(tmp_path, capsys):
    """``compare --chip-precision fp16`` crashed (two precision= arguments); now the chip runs fp16,
    the GPU keeps its own --precision, and the table shows both."""
    path = tmp_path / "c.json"
    assert main(["compare", "--layers", "300,200,10", "--timesteps", "5", "--batch", "4", "--chip-precision", "fp16",
                 "--precision", "bf16", "--strategy", "fused", "--quiet", "--json", str(path)]) == 0
    d = json.loads(path.read_text())
    assert d["mimd"]["placement"]["precision"] == "fp16" and d["gpu"]["fused"]["placement"]["precision"] == "bf16"
    row = next(ln for ln in capsys.readouterr().out.splitlines() if ln.strip().startswith("precision"))
    assert row.split()[1:] == ["fp16", "bf16"]
    net = mimdsim.Network.feedforward([300, 200, 10])
    c = mimdsim.compare(net, "ipu-mk2", "a100-40gb", timesteps=5, batch_size=4, activity=0.02,
                        strategies=["fused"], chip_precision="fp16")
    assert c.mimd.placement["precision"] == "fp16" and c.gpu["fused"].placement["precision"] == "fp32"


def test_the_default_columns_follow_the_model():
    """The study's own GPU program is a default column only for a network its Keras cell can be."""
    from mimdsim.compare import default_strategies
    from mimdsim.snn.zoo import ZOO

    assert default_strategies(mimdsim.Network.feedforward([100, 50, 10]))[0] == "keras-rnn-xla"
    zoo = mimdsim.Network.build([100, 50, 10], ZOO["leaky"], bias=True, loss="ce_count")
    assert default_strategies(zoo) == ("compiled", "eager", "fused")
