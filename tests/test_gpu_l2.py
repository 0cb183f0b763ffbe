"""The GEMM model knows where operands live (mimdsim/gpu/model.py kernel_seconds, l2_resident): a GEMM inside
the time loop re-reads its weights every step, from L2 where all the step's weights fit, else from HBM."""
import dataclasses

import pytest

import mimdsim
from mimdsim.arch.gpu import MiB, gpu
from mimdsim.gpu.model import kernel_seconds, l2_resident, weight_gemm
from mimdsim.workloads.snn.baselines.gpu_kernels import estimate, training_step_kernels


def test_4096_squared_fp32_weights_fit_an_rtx_4090_l2_not_an_a100():
    """W = 4096 x 4096 fp32 = 64 MiB: under the 4090's 72 MiB of L2, over the A100's 40 MiB. One step's GEMM,
    B = 16: 2 x 16 x 4096^2 = 537 MFLOP, 67.6 MB. On the 4090 from HBM: 67.6 MB / (0.75 x 1008 GB/s) = 89.4 us;
    from L2 the HBM moves only X and Y (0.52 MB at 0.30: 1.73 us) and L2 all 67.6 MB at 5.2 TB/s (13.0 us), so
    the compute bound binds: 1 GFLOP / (0.60 x 0.681 x 82.6 TFLOPS) = 29.6 us (the efficiency curve's monotone
    cap, at the share of the FP32 peak a strict-FP32 GEMM reaches on AD102)."""
    n, B, e = 4096, 16, 4
    k = weight_gemm("fwd", "forward", B, n, n, e, 1, e * n * n, e * n * n)
    g4090, a100 = gpu("rtx-4090"), gpu("a100-40gb")
    assert e * n * n == 64 * MiB and l2_resident(k, g4090) and not l2_resident(k, a100)
    assert kernel_seconds(k, g4090, "fp32") == pytest.approx(1e9 / (0.6 * 0.681 * 82.6e12))
    cold = dataclasses.replace(k, resident_bytes=0.0)
    assert kernel_seconds(cold, g4090, "fp32") == pytest.approx(k.nbytes / (0.75 * 1008e9))
    assert kernel_seconds(k, a100, "fp32") == kernel_seconds(cold, a100, "fp32")  # 64 MiB > 40 MiB: from HBM
    # a GPU whose L2 bandwidth is unknown (0) keeps every read on HBM
    assert not l2_resident(k, g4090.replace(l2_bytes_per_second=0.0))


def test_the_study_weights_fit_an_a100_and_its_compiled_layer_1_gemm_reads_them_from_l2():
    """2312-1466-1466-10: 5.55 M weights, 21.2 MiB fp32, under 40 MiB. Layer 1's forward GEMM (48 x 2312 x 1466,
    TF32): from HBM 14.28 MB / (0.75 x 1555 GB/s) = 12.25 us, above its compute bound 10.68 us; from L2 the
    compute bound binds: 1.57 us per timestep, 0.157 ms of the study's A100 compiled step (17.920 -> 17.764 ms)."""
    sizes = [2312, 1466, 1466, 10]
    ks = {k.name: k for k in training_step_kernels(sizes, 100, 48, strategy="compiled", e=4)}
    k = ks["L1.fwd_gemm"]
    assert k.working_set == 4 * (2312 * 1466 + 1466 * 1466 + 1466 * 10) < 40 * MiB
    a100 = gpu("a100-40gb")
    hbm = k.nbytes / (0.75 * 1555e9)
    assert kernel_seconds(dataclasses.replace(k, resident_bytes=0.0), a100, "tf32") == pytest.approx(max(
        hbm, 1e9 / (0.6 * 156e12)))
    assert kernel_seconds(k, a100, "tf32") == pytest.approx(1e9 / (0.6 * 156e12))
    net = mimdsim.Network.feedforward(sizes, max_activity=0.01)
    r = estimate(net, a100, timesteps=100, batch_size=48, strategy="compiled")
    before = estimate(net, a100.replace(l2_bytes_per_second=0.0), timesteps=100, batch_size=48, strategy="compiled")
    assert before.seconds_per_step - r.seconds_per_step == pytest.approx(100 * (hbm - 1e9 / (0.6 * 156e12)))


def test_a_trace_marks_the_parameters_its_gemms_read():
    """nn.Linear's addmm reads weight.t() and the bias, autograd's input gradient W.t(): parameters, re-read every
    step; the weight gradient reads activations only. The working set is every distinct parameter's bytes."""
    torch = pytest.importorskip("torch")
    fc1, fc2 = torch.nn.Linear(8, 6), torch.nn.Linear(6, 4)
    x = torch.rand(3, 8)
    tr = mimdsim.trace_torch(lambda: fc2(fc1(x)).sum().backward(), warmup=0)
    gemms = [(op.name, op.weights, p) for op, p in tr.ops() if op.name in ("mm", "addmm")]
    assert gemms == [("addmm", (0, 2), "forward"), ("addmm", (0, 2), "forward"), ("mm", (1,), "backward"),
                     ("mm", (), "backward"), ("mm", (), "backward")]
    assert tr.gemm_weight_bytes == 4 * (8 * 6 + 6 + 6 * 4 + 4)
