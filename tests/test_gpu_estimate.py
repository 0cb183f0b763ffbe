"""GPU cost model: roofline, floors, efficiency curves, launch overheads, strategies."""
import pytest
from hypothesis import given, settings, strategies as st

import mimdsim
from mimdsim.errors import ConfigError, OutOfDeviceMemory
from mimdsim.gpu import Kernel, gpu, kernel_seconds
from mimdsim.workloads.snn.baselines.gpu_kernels import estimate, training_step_kernels

A100 = gpu("a100-40gb")


def test_roofline_compute_bound_gemm():
    # 200 GFLOP GEMM in fp16: matrix efficiency 0.95 (>= 128 GFLOP) of 312 TFLOPS
    k = Kernel("g", "forward", "matrix", 200e9, 1e6, 1)
    assert kernel_seconds(k, A100, "fp16") == pytest.approx(200e9 / (0.95 * 312e12))
    # the same in fp32 runs on CUDA cores: 19.5 TFLOPS
    assert kernel_seconds(k, A100, "fp32") == pytest.approx(200e9 / (0.95 * 19.5e12))


def test_roofline_memory_bound_vector():
    # 400 MB element-wise kernel, 1 GFLOP: HBM efficiency 0.90 at >= 100 MB of 1555 GB/s
    k = Kernel("v", "forward", "vector", 1e9, 400e6, 1)
    mem = 400e6 / (0.90 * 1555e9)
    comp = 1e9 / (0.5 * 19.5e12)  # vector efficiency 0.5 at >= 1 GFLOP
    assert mem > comp
    assert kernel_seconds(k, A100, "fp32") == pytest.approx(mem)


def test_latency_floors():
    tiny_gemm = Kernel("g", "forward", "matrix", 2 * 48 * 978 * 978, 4 * (2 * 48 * 978 + 978 ** 2), 1)
    assert kernel_seconds(tiny_gemm, A100, "fp32") == pytest.approx(max(
        A100.gemm_floor_s, tiny_gemm.flops / (0.10 * 19.5e12), tiny_gemm.nbytes / (0.60 * 1555e9)))
    tiny_vec = Kernel("v", "forward", "vector", 100, 400, 1)
    assert kernel_seconds(tiny_vec, A100, "fp32") == A100.vector_floor_s


@pytest.mark.parametrize("flops,eff", [(200e9, 0.95), (128e9, 0.95), (100e9, 0.90), (16e9, 0.90),
                                       (5e9, 0.60), (1e9, 0.60), (0.1e9, 0.10)])
def test_matrix_efficiency_curve(flops, eff):
    k = Kernel("g", "forward", "matrix", flops, 1.0, 1)
    spec = gpu("a100-40gb", gemm_floor_s=1e-12)
    assert kernel_seconds(k, spec, "fp16") == pytest.approx(flops / (eff * 312e12))


@pytest.mark.parametrize("nbytes,eff", [(200e6, 0.90), (100e6, 0.90), (50e6, 0.75), (10e6, 0.75),
                                        (5e6, 0.60), (1e6, 0.60), (0.2e6, 0.30)])
def test_hbm_efficiency_curve(nbytes, eff):
    spec = gpu("a100-40gb", vector_floor_s=1e-12)
    k = Kernel("v", "forward", "vector", 0.0, nbytes, 1)
    assert kernel_seconds(k, spec, "fp32") == pytest.approx(nbytes / (eff * 1555e9))


def test_step_curve_is_capped_by_the_next_step():
    # 15 GFLOP at 0.60 would take longer than 16 GFLOP at 0.90: it takes the 16 GFLOP time
    spec = gpu("a100-40gb", gemm_floor_s=1e-12)
    k = Kernel("g", "forward", "matrix", 15e9, 1.0, 1)
    assert kernel_seconds(k, spec, "fp16") == pytest.approx(16e9 / (0.90 * 312e12))
    # just below 1 GFLOP (eff 0.10) is capped by 1 GFLOP at 0.60
    k = Kernel("g", "forward", "matrix", 0.99e9, 1.0, 1)
    assert kernel_seconds(k, spec, "fp16") == pytest.approx(1e9 / (0.60 * 312e12))


def _net(sizes=(700, 400, 300, 20)):
    return mimdsim.Network.feedforward(list(sizes))


def test_launch_overheads_per_strategy():
    net = _net()
    T, B = 10, 8
    per = estimate(net, "a100-40gb", timesteps=T, batch_size=B, strategy="per-step")
    fused = estimate(net, "a100-40gb", timesteps=T, batch_size=B, strategy="fused")
    n_per = per.placement["kernel_launches"]
    # per-step: per layer T x (gemm + neuron) forward, T x (neuron + wgrad [+ input gemm]) backward
    L = 3
    assert n_per == L * 2 * T + 2 + (L * 2 + (L - 1)) * T + L
    assert per.kind_totals()["launch"] / per.clock_hz == pytest.approx(n_per * A100.launch_overhead_s)
    n_fused = fused.placement["kernel_launches"]
    assert n_fused == L * 2 + 2 + L * 2 + (L - 1) + L
    assert fused.kind_totals()["launch"] / fused.clock_hz == pytest.approx(
        A100.graph_launch_s + n_fused * A100.graph_node_overhead_s)


@pytest.mark.parametrize("T,B", [(1, 1), (10, 8), (100, 48), (50, 256)])
@pytest.mark.parametrize("precision", ["fp32", "tf32", "fp16"])
def test_fused_never_slower_than_per_step(T, B, precision):
    net = _net((2312, 978, 978, 976, 10))
    per = estimate(net, "a100-40gb", timesteps=T, batch_size=B, strategy="per-step", precision=precision)
    fused = estimate(net, "a100-40gb", timesteps=T, batch_size=B, strategy="fused", precision=precision)
    assert fused.seconds_per_step <= per.seconds_per_step


def test_dense_strategies_ignore_activity_sparse_does_not():
    net = _net()
    for s in ("per-step", "fused"):
        a = estimate(net, "a100-40gb", timesteps=20, batch_size=16, strategy=s, activity=0.01)
        b = estimate(net, "a100-40gb", timesteps=20, batch_size=16, strategy=s, activity=0.5)
        assert a.seconds_per_step == b.seconds_per_step
    lo = estimate(net, "a100-40gb", timesteps=20, batch_size=256, strategy="sparse", activity=0.01)
    hi = estimate(net, "a100-40gb", timesteps=20, batch_size=256, strategy="sparse", activity=0.5)
    assert lo.seconds_per_step < hi.seconds_per_step


@settings(max_examples=60, deadline=None)
@given(flops=st.floats(0, 1e13), nbytes=st.floats(0, 1e10), extra=st.floats(0, 1e12),
       kind=st.sampled_from(["matrix", "vector", "gather"]))
def test_more_flops_or_bytes_never_faster(flops, nbytes, extra, kind):
    base = kernel_seconds(Kernel("k", "forward", kind, flops, nbytes, 1), A100, "fp32")
    assert kernel_seconds(Kernel("k", "forward", kind, flops + extra, nbytes, 1), A100, "fp32") >= base * (1 - 1e-12)
    assert kernel_seconds(Kernel("k", "forward", kind, flops, nbytes + extra, 1), A100, "fp32") >= base * (1 - 1e-12)


def test_bigger_models_never_faster():
    for s in ("per-step", "fused", "sparse"):
        t = [estimate(_net((700, n, n, 20)), "a100-40gb", timesteps=20, batch_size=32, strategy=s,
                      activity=0.02).seconds_per_step for n in (100, 400, 1600, 6400)]
        assert all(b >= a for a, b in zip(t, t[1:])), (s, t)


def test_memory_accounting_and_refusal():
    net = _net()
    r = estimate(net, "a100-40gb", timesteps=10, batch_size=8, strategy="fused")
    m = r.memory
    params = 700 * 400 + 400 * 300 + 300 * 20
    assert m["by_category"]["weights"] == 4 * params and m["by_category"]["optimizer"] == 8 * params
    assert m["by_category"]["activations"] == 2 * 4 * 10 * 8 * (400 + 300 + 20)
    assert m["device_bytes"] == sum(m["by_category"].values()) and m["device_bytes_limit"] == A100.hbm_bytes
    half = estimate(net, "a100-40gb", timesteps=10, batch_size=8, strategy="fused", precision="fp16")
    assert half.memory["device_bytes"] == m["device_bytes"] // 2
    big = mimdsim.Network.feedforward([1000, 20000, 10], max_activity=0.01)
    with pytest.raises(OutOfDeviceMemory, match=r"needs .* B on a100-40gb but it has .*Lower the batch"):
        estimate(big, "a100-40gb", timesteps=1000, batch_size=512, strategy="fused")


def test_bad_input():
    net = _net()
    with pytest.raises(ConfigError, match="unknown GPU"):
        estimate(net, "a100", timesteps=10, batch_size=8)
    with pytest.raises(ConfigError, match="v100"):
        estimate(net, "v100", timesteps=10, batch_size=8, precision="bf16")
    with pytest.raises(ConfigError, match="precision='fp8' is not one of 'fp32'"):
        estimate(net, "a100-40gb", timesteps=10, batch_size=8, precision="fp8")
    with pytest.raises(ConfigError, match="GPU strategy='magic' is not one of 'per-step', 'fused', 'sparse'"):
        estimate(net, "a100-40gb", timesteps=10, batch_size=8, strategy="magic")
    with pytest.raises(ConfigError, match="batch_size=-4 must be an integer >= 1"):
        estimate(net, "a100-40gb", timesteps=10, batch_size=-4)
    with pytest.raises(ConfigError, match="sparse strategy needs activity"):
        estimate(net, "a100-40gb", timesteps=10, batch_size=8, strategy="sparse")
    with pytest.raises(ConfigError, match=r"input_activity=1.5 must be a finite number in \[0, 1\]"):
        estimate(net, "a100-40gb", timesteps=10, batch_size=8, strategy="sparse", activity=0.1, input_activity=1.5)
    with pytest.raises(ConfigError, match="strategy='magic' is not one of"):
        training_step_kernels([4, 3, 2], 2, 1, strategy="magic", e=4)


def test_report_schema_matches_mimd():
    net = _net()
    g = estimate(net, "a100-40gb", timesteps=10, batch_size=8, strategy="fused").to_dict()
    m = mimdsim.simulate(net, "ipu-mk2", timesteps=10, batch_size=8, activity=0.02).report.to_dict()
    for key in ("samples_per_second", "seconds_per_step", "cycles", "memory", "seconds_by_phase", "model"):
        assert key in g and key in m
    assert g["cycles"]["total"] == pytest.approx(g["cycles"]["compute"] + g["cycles"]["launch"])
    assert g["seconds_per_step"] == pytest.approx(sum(g["seconds_by_phase"].values()))


def test_neuron_models_and_recurrence_on_the_gpu():
    from mimdsim.workloads.snn.baselines.gpu_kernels import training_step_kernels
    from mimdsim.snn.neurons import NeuronSpec

    def net(model, rec="none", **kw):
        return mimdsim.Network.build([784, 1000, 10], NeuronSpec(model, recurrence=rec, **kw))
    leaky, syn = net("leaky", beta=0.9), net("synaptic", beta=0.9, alpha=0.8)
    alpha, rec = net("alpha", beta=0.8, alpha=0.9), net("leaky", "all-to-all", beta=0.9)
    kw = dict(timesteps=25, batch_size=128)
    t = {k: estimate(n, "a100-40gb", strategy="fused", **kw) for k, n in
         (("leaky", leaky), ("syn", syn), ("alpha", alpha), ("rec", rec))}
    assert t["leaky"].seconds_per_step < t["syn"].seconds_per_step < t["alpha"].seconds_per_step
    # s state variables per neuron: BPTT keeps (1 + s) values per neuron and step
    act = {k: r.memory["by_category"]["activations"] for k, r in t.items()}
    assert act["syn"] == act["leaky"] * 3 // 2 and act["alpha"] == act["leaky"] * 2
    # an all-to-all recurrence (here in both layers) adds n*n parameters per layer and per-step
    # GEMMs that no strategy folds over time
    assert t["rec"].memory["by_category"]["weights"] == \
        t["leaky"].memory["by_category"]["weights"] + 4 * (1000 * 1000 + 10 * 10)
    ks = training_step_kernels([784, 1000, 10], 25, 128, strategy="fused", e=4, specs=rec.specs)
    names = {k.name: k for k in ks}
    assert names["L1.fwd_recurrent_gemm"].count == 25 and names["L1.fwd_neuron"].count == 25
    assert not any(n.endswith("neuron_scan") for n in names) and names["L2.fwd_recurrent_gemm"].count == 25
    plain = {k.name for k in training_step_kernels([784, 1000, 10], 25, 128, strategy="fused", e=4,
                                                   specs=leaky.specs)}
    assert "L1.fwd_neuron_scan" in plain and not any("recurrent" in n for n in plain)
    assert t["rec"].seconds_per_step > 2 * t["leaky"].seconds_per_step
