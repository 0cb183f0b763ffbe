"""Dense networks on the AMP units: numerics, the AMP codelet's cycles by hand, the mapping, the
batch sweep, the GPU model of the same inference, the CLI, and errors."""
import json

import numpy as np
import pytest

import mimdsim
from mimdsim.kernels import CODELETS
from mimdsim.kernels.poplin import amp_layer as amp, matmul as poplin
from mimdsim.kernels.tile import Tile
from mimdsim import ConfigError
from mimdsim.cli import main
from mimdsim.gpu import gpu, kernel_seconds
from mimdsim.gpu.model import PCIE_GEN4_X16
from mimdsim.workloads.mlp.gpu_kernels import mlp_estimate, mlp_kernels
from mimdsim.workloads import compare_mlp, mlp
from mimdsim.workloads.mlp.program import DEFAULT_SIZES, layer_input_transfer, plan_layer

MK2 = Tile.of(mimdsim.chip("ipu-mk2"))


def _reference(x, weights, half=False):
    """Independent float64 forward pass: ReLU hidden layers, sigmoid output."""
    y = np.asarray(x, np.float64)
    for i, (W, b) in enumerate(weights):
        if half:
            y, W, b = (np.asarray(a, np.float16).astype(np.float64) for a in (y, W, b))
        y = y @ W + b
        y = 1 / (1 + np.exp(-y)) if i == len(weights) - 1 else np.maximum(y, 0)
    return y


def test_numerics_fp32_and_fp16_equal_independent_forward():
    run = mlp(64, (50, 20, 10, 1), mimdsim.chip("ipu-mk2", tiles=32), execute=True, seed=1)
    ref = _reference(run.inputs, run.weights)
    np.testing.assert_allclose(run.outputs, ref, rtol=1e-5, atol=1e-6)
    assert run.outputs.dtype == np.float32 and run.report.mode == "execution"
    x = np.random.default_rng(2).normal(0, 1, (16, 50))
    half = mlp(16, (50, 20, 10, 1), mimdsim.chip("ipu-mk2", tiles=32), inputs=x, weights=run.weights,
               precision="fp16")
    assert half.outputs.dtype == np.float16
    np.testing.assert_allclose(half.outputs.astype(np.float64), _reference(x, run.weights, half=True), rtol=2e-3,
                               atol=1e-3)


def test_amp_cycles_by_hand():
    # 16 rows x 64 columns x depth 1800 on an MK2 tile in fp32, poplin's ConvPartial1x1Out estimate (sdk-release-2.6,
    # HalfFloat, float activations: no retention, common path c = 1): 8 input channels a group (225 groups), 16
    # conv units (4 output groups), loads 16 x 32 B / 8 = 64; 16 field elements over 6 workers, 3 or 2 each:
    # worker(3) 46 / 72 (zeroing: + 2 + 8 x 3), worker(2) 46 / 64; inner(0) = max(276, 276 + 14) = 290,
    # inner(1) = max(432, 384 + 14) = 432; 50 + 12 + 1 + 224 (15 - 1 + 1 + 4 (89 + 290)) + 10 + 1 + 4 (18 + 7 + 64 + 432)
    product = 63 + 224 * (15 + 4 * (89 + 290)) + 11 + 4 * (89 + 432)
    assert product == 345_102
    assert amp.amp_layer_cycles([16], [64], 1800, MK2, "relu", "fp32")[0] == product + 6 * (4 + 86 * 3) + 11
    assert amp.amp_layer_cycles([0], [64], 1800, MK2)[0] == 0
    # epilogue: 1024 outputs = 512 float2 vectors, 86 on the busiest worker, ReLU 3 per vector
    assert amp.epilogue_cycles([16], [64], MK2, "relu")[0] == 6 * (4 + 86 * 3) + 11
    # fp16: 4 halves per vector -> 256 vectors, 43 per worker; sigmoid 19 per vector
    assert amp.epilogue_cycles([16], [64], MK2, "sigmoid", "fp16")[0] == 6 * (4 + 43 * 19) + 11
    assert CODELETS["amp_layer"].footprint(np.array([3]))[0] == 1024 + 3 * 32


@pytest.mark.parametrize("precision", ["fp32", "fp16"])
def test_one_amp_model(precision):
    """The MLP's AMP product is poplin's AMP vertex estimate (the PopTorch program's and mimdsim op's), and a
    layer's compute is its slowest block's product and epilogue."""
    tile = Tile.of(mimdsim.chip("ipu-mk2"), precision)
    rows, cols = np.array([1, 3, 16, 40]), np.array([1, 16, 21, 64])
    for depth in (8, 128, 1800):
        np.testing.assert_array_equal(amp.amp_layer_cycles(rows, cols, depth, tile, "none", precision)
                                      - amp.epilogue_cycles(rows, cols, tile, "none", precision),
                                      poplin.amp_matmul_cycles(rows, depth, cols, tile, precision))
    run = mlp(480, chip="ipu-mk2", precision=precision, stream=False)
    p = run.plans[1]
    _, rows, cols = p.blocks()
    assert run.report.steps["L2"]["compute"] == amp.amp_layer_cycles(rows, cols, p.n_in, tile, "relu", precision).max()


def test_plan_blocks_tile_the_layer_and_inputs_reach_every_tile():
    p = plan_layer(1, 1800, 128, 1000, 1472, MK2, "fp32", 4.0, 638976 / 3)
    t, rows, cols = p.blocks()
    assert (rows * cols).sum() == 1000 * 128 and p.tiles <= 1472
    q = plan_layer(2, 128, 128, 1000, 1472, MK2, "fp32", 4.0, 638976 / 3)
    tr = layer_input_transfer(p, q, 4)
    # every tile of layer 2 receives its rows x 128 inputs once (from the tiles that computed them)
    _, rows2, _ = q.blocks()
    got = np.bincount(tr.dst, weights=tr.nbytes, minlength=q.tiles)
    np.testing.assert_array_equal(got, rows2 * 128 * 4)


def test_layer_steps_and_report():
    r = mlp(256, chip="ipu-mk2").report
    assert set(r.steps) == {"launch", "io.inputs", "L1", "L2", "L3", "io.outputs"}
    assert r.platform == "mimd" and r.batch_size == 256 and r.model == "mlp 1800-128-128-1"
    assert r.steps["L1"]["compute"] > 0 and r.steps["L2"]["exchange"] > 0
    json.dumps(r.to_dict())
    assert "AMP products costed by poplin's estimator" in r.format()


def test_batch_sweep_throughput_rises_then_saturates():
    sps = [mlp(b, chip="ipu-mk2", stream=False).samples_per_second for b in (1, 16, 256, 4096)]
    assert sps[0] < sps[1] < sps[2] < sps[3]
    big = mlp(65536, chip="ipu-mk2", stream=False)
    assert big.report.placement["micro_batches"] > 1  # the batch is split to fit tile memory
    streamed = mlp(65536, chip="ipu-mk2").report
    assert streamed.placement["bound"] == "host"  # 7.2 kB per sample over PCIe
    assert streamed.samples_per_second < mimdsim.chip("ipu-mk2").host_bytes_per_second / (1800 * 4)


def test_gpu_mlp_by_hand():
    A100 = gpu("a100-40gb")
    ks = mlp_kernels([1800, 128, 1], 512, e=4)
    assert [k.name for k in ks] == ["L1.gemm", "L1.bias_act", "L2.gemm", "L2.bias_act"]
    assert ks[0].flops == 2 * 512 * 128 * 1800 and ks[0].dims == (512, 128, 1800)
    r = mlp_estimate([1800, 128, 1], 512, A100, precision="tf32")
    t = sum(kernel_seconds(k, A100, "tf32") for k in ks) + 4 * A100.launch_overhead_s
    t += (512 * 1800 * 4 + 512 * 4) / PCIE_GEN4_X16 + 2 * A100.launch_overhead_s
    assert r.seconds_per_step == pytest.approx(t)


def test_compare_mlp_and_cli(capsys):
    c = compare_mlp(256, DEFAULT_SIZES, "ipu-mk2", "h100", precision="fp16")
    assert c.mimd.placement["precision"] == "fp16" and c.gpu["eager"].placement["precision"] == "fp16"
    assert c.speedup["eager"] == pytest.approx(c.mimd.samples_per_second / c.gpu["eager"].samples_per_second)
    assert main(["compare", "--workload", "mlp", "--batch", "64", "--mlp-layers", "180,32,1", "--tiles", "64"]) == 0
    out = capsys.readouterr().out
    assert "mlp 180-32-1" in out and "samples/s" in out and "speedup MIMD/other" in out


@pytest.mark.parametrize("kw,match", [
    (dict(sizes=[10]), r"give at least an input and an output size"),
    (dict(sizes=[10, 0, 1]), r"sizes\[1\]=0 must be an integer >= 1; every layer needs at least one neuron"),
    (dict(batch=0), r"batch=0 must be an integer >= 1"),
    (dict(precision="fp8"), r"precision='fp8' is not one of"),
    (dict(inputs=np.zeros((3, 7))), r"inputs have shape \(3, 7\); expected \[batch, 1800\]"),
    (dict(inputs=np.full((4, 1800), np.nan)), r"non-finite"),
    (dict(tiles=2000), r"tiles=2000 must be an integer between 1 and 1472; ipu-mk2 has 1472 tiles"),
])
def test_mlp_errors(kw, match):
    args = dict(batch=4, sizes=DEFAULT_SIZES)
    args.update(kw)
    with pytest.raises(ConfigError, match=match):
        mlp(args.pop("batch"), args.pop("sizes"), "ipu-mk2", **args)
