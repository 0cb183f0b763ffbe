"""The eager (snnTorch on PyTorch) GPU strategy: its op stream against the framework as installed,
and the host/device overlap rule."""
import numpy as np
import pytest

import mimdsim
from mimdsim.workloads.snn.baselines import eager
from mimdsim.workloads.snn.baselines.gpu_kernels import estimate

torch = pytest.importorskip("torch")
snn = pytest.importorskip("snntorch")

NO_KERNEL = {"detach", "view", "t", "alias", "expand", "unsqueeze", "select", "_unsafe_view", "lift_fresh",
             "empty", "empty_like", "as_strided", "squeeze"}


def _device_ops(fn):
    """aten ops a call dispatches that launch a kernel on a GPU (views and detach do not)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    seen = []

    class Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = func.__name__.split(".")[0]
            if name not in NO_KERNEL:
                seen.append(name)
            return func(*args, **(kwargs or {}))

    with Count():
        fn()
    return seen


def test_leaky_forward_ops_per_layer_and_step_match_snntorch():
    """snn.Leaky(beta=0.9, fast_sigmoid) after nn.Linear: 1 GEMM + 13 device ops per step (9
    element-wise, the 0-dim beta.clamp, 3 copies): counted from snnTorch as installed."""
    torch.manual_seed(0)
    fc = torch.nn.Linear(20, 16)
    lif = snn.Leaky(beta=0.9, spike_grad=snn.surrogate.fast_sigmoid())
    x = torch.rand(8, 20)
    mem = lif.init_leaky()
    spk, mem = lif(fc(x), mem)  # the first call initialises the state: count a steady-state step
    ops = _device_ops(lambda: lif(fc(x), mem))
    (f_ew, f_ew0, f_copy, f_gemm), _ = eager.EAGER_NEURON_OPS["leaky"]
    assert ops.count("addmm") == 1  # the Linear (bias in the GEMM's epilogue)
    assert len(ops) - 1 == f_ew + f_ew0 + f_copy == 13


def test_step_op_count_of_the_seed_configuration():
    """784-1000-10, two Leaky layers, T = 25, B = 128, Adam, loss on the spike counts: 1385 device
    ops (docs/as-built/gpu_frameworks.md §1.4, counted from snnTorch 1.0 and torch 2.13)."""
    net = mimdsim.Network.build([784, 1000, 10], "leaky", beta=0.9, bias=True, surrogate="fast_sigmoid")
    ops = eager.step_ops(net.sizes, 25, 128, e=4, specs=net.specs, bias=[True, True], optimizer="adam")
    assert sum(op.kernel.count for op in ops) == 1385
    gemms = sum(op.kernel.count for op in ops if op.kernel.kind == "matrix")
    assert gemms == 25 * 2 + 25 * 3  # forward 2 Linears; backward 2 weight gradients + 1 input gradient


def test_timeline_is_the_slower_stream_plus_the_waits():
    host, dev = np.full(5, 10.0), np.full(5, 1.0)
    total, wait = eager.timeline(host, dev)  # host-bound: the device idles between ops
    assert total == 5 * 10.0 + 1.0 and wait.sum() == pytest.approx(10.0 + 4 * 9.0)
    total, wait = eager.timeline(np.full(5, 1.0), np.full(5, 10.0))  # device-bound
    assert total == 1.0 + 5 * 10.0 and wait.sum() == 1.0
    total, _ = eager.timeline(np.array([1.0, 30.0, 1.0]), np.array([20.0, 1.0, 1.0]))  # mixed
    assert total == 31.0 + 1.0 + 1.0  # op 2 waits for the slow issue of op 2, op 3 for op 2


def test_eager_estimate_names_the_framework_and_is_host_bound_at_the_seed_size():
    """The census issues each kind of op as a block and comes out host-bound; the trace of the same step has
    the same 1,385 device ops in their real order, and the GEMMs hide more of the host (docs/gpu-model.md)."""
    net = mimdsim.Network.build([784, 1000, 10], "leaky", beta=0.9, bias=True, surrogate="fast_sigmoid")
    r = estimate(net, "a100-40gb", timesteps=25, batch_size=128, strategy="eager", eager_source="census")
    assert r.placement["framework"] == "pytorch-eager" and r.placement["precision"] == "fp32"
    assert r.placement["bound"] == "host" and r.placement["kernel_launches"] == 1385
    assert r.placement["eager_source"] == "census"
    assert r.total_cycles == pytest.approx(sum(s["compute"] + s["host"] for s in r.steps.values()))
    # on the measurement host (the per-op figures as measured): the trace hides more of the host than the census
    r0 = estimate(net, "a100-40gb", timesteps=25, batch_size=128, strategy="eager", eager_source="census",
                  host="genoa-vm")
    t = estimate(net, "a100-40gb", timesteps=25, batch_size=128, strategy="eager", host="genoa-vm")
    assert t.placement["eager_source"] == "trace" and t.placement["kernel_launches"] == 1385
    assert t.placement["host_bound_fraction"] == pytest.approx(0.474, abs=1e-3) and t.placement["bound"] == "device"
    assert t.seconds_per_step == pytest.approx(14.257e-3, rel=1e-4) and t.seconds_per_step < r0.seconds_per_step
    # on the A100's default host, dgx-a100 (x1.46 per op, issue 36), the traced step is host-bound too
    d = estimate(net, "a100-40gb", timesteps=25, batch_size=128, strategy="eager")
    assert d.placement["host"] == "dgx-a100" and d.placement["bound"] == "host"
    assert d.placement["host_bound_fraction"] == pytest.approx(0.640, abs=1e-3)
    assert d.seconds_per_step == pytest.approx(20.814e-3, rel=1e-4) and d.seconds_per_step < r.seconds_per_step


def test_compiled_runs_the_time_loops_as_while_loops_in_tf32():
    """strategy 'compiled' (TensorFlow 2 + XLA, the Finkbeiner baseline): the per-step kernels plus
    a while-loop iteration per timestep and direction, float32 matmuls in TF32 where the GPU has it."""
    from mimdsim.gpu.framework import FRAMEWORKS
    net = mimdsim.Network.feedforward([2312, 978, 978, 976, 10], max_activity=0.01)
    c = estimate(net, "a100-40gb", timesteps=100, batch_size=48, strategy="compiled")
    p = estimate(net, "a100-40gb", timesteps=100, batch_size=48, strategy="per-step", precision="tf32")
    assert c.placement["precision"] == "tf32" and c.placement["framework"] == "tensorflow-xla"
    loops = 2 * 100 * FRAMEWORKS["tensorflow-xla"].while_iteration_s * c.clock_hz
    assert c.total_cycles == pytest.approx(p.total_cycles + loops)
    assert estimate(net, "v100", timesteps=100, batch_size=48, strategy="compiled").placement["precision"] == "fp32"
    assert estimate(net, "a100-40gb", timesteps=100, batch_size=48, strategy="eager").placement["precision"] == "fp32"


def test_compiled_kernel_list_of_one_leaky_layer_by_hand():
    """XLA per timestep: the layer's GEMM and one fused element-wise kernel forward; the fused
    surrogate/carry kernel and the weight-gradient GEMM (beta = 1 accumulation) backward; the
    input-gradient GEMM only past the first layer (graphcore_snn train_gpu, as counted in
    docs/as-built/gpu_frameworks.md §3.2)."""
    from mimdsim.workloads.snn.baselines.gpu_kernels import training_step_kernels
    ks = {k.name: k for k in training_step_kernels([50, 40, 10], 7, 4, strategy="compiled", e=4)}
    assert ks["L1.fwd_gemm"].count == 7 and ks["L1.fwd_gemm"].dims == (4, 40, 50)
    assert ks["L1.fwd_neuron"].count == 7 and ks["L1.fwd_neuron"].kind == "vector"
    assert ks["L1.bwd_neuron"].count == 7 and ks["L1.bwd_wgrad_gemm"].count == 7
    assert "L1.bwd_input_gemm" not in ks and ks["L2.bwd_input_gemm"].count == 7
    # the accumulating GEMM also reads dW (beta = 1): one |W| more than a GEMM that only writes it
    plain = 4 * (50 * 4 + 4 * 40 + 50 * 40)
    assert ks["L1.bwd_wgrad_gemm"].nbytes == plain + 4 * 50 * 40


def test_eager_counts_scale_with_timesteps_as_per_step_and_per_run_parts():
    """autograd sums T per-step weight gradients with T - 1 adds; Leaky's backward is 8 per step, 2 fewer per run;
    the loss function's host cost is paid once (not again by the .item() sync)."""
    net = mimdsim.Network.build([30, 20, 10], "leaky", beta=0.9, surrogate="fast_sigmoid")
    for T in (5, 40):
        ops = {op.kernel.name: op for op in eager.step_ops(net.sizes, T, 4, e=4, specs=net.specs)}
        assert ops["L1.bwd_wgrad_accumulate"].kernel.count == T - 1
        assert ops["L2.bwd_neuron_ew"].kernel.count == 8 * T - 2
    from mimdsim.gpu.framework import framework
    fw = framework("pytorch-eager")
    ops = eager.step_ops(net.sizes, 5, 4, e=4, specs=net.specs)
    host = eager.host_seconds(ops, fw)
    plain = sum(op.kernel.count * (fw.host_backward_op_s if op.host == "backward" else fw.host_forward_op_s)
                for op in ops)
    assert host.sum() == pytest.approx(plain + fw.loss_call_s + fw.optimizer_call_s)


SNNTORCH_NEURONS = {  # the zoo's models as snnTorch builds them (docs/as-built/gpu_frameworks.md census)
    "leaky": lambda n, sg: snn.Leaky(beta=0.9, spike_grad=sg),
    "synaptic": lambda n, sg: snn.Synaptic(alpha=0.8, beta=0.9, spike_grad=sg),
    "alpha": lambda n, sg: snn.Alpha(alpha=0.9, beta=0.8, spike_grad=sg),
    "lapicque": lambda n, sg: snn.Lapicque(beta=0.9, spike_grad=sg),
    "rleaky": lambda n, sg: snn.RLeaky(beta=0.9, linear_features=n, spike_grad=sg),
    "rleaky-one-to-one": lambda n, sg: snn.RLeaky(beta=0.9, all_to_all=False, spike_grad=sg),
    "rsynaptic": lambda n, sg: snn.RSynaptic(alpha=0.8, beta=0.9, linear_features=n, spike_grad=sg),
}


PROFILER_MARKS = {"_record_function_enter_new", "_record_function_exit", "slice"}  # no kernel


def _snntorch_step_device_ops(model, sizes, T, B):
    """Device ops of one steady-state eager training step (fc-lif per layer, spike and membrane
    records stacked, ce_count on the spikes, Adam foreach), counted as the census of
    docs/as-built/gpu_frameworks.md counts them: no views or profiler marks, no host-side step counters."""
    import contextlib

    from snntorch_reference import tutorial_step
    from torch.utils._python_dispatch import TorchDispatchMode

    count = [0, False]  # device ops, in the optimizer

    @contextlib.contextmanager
    def optimizer():
        count[1] = True
        yield
        count[1] = False

    step = tutorial_step(sizes, T, B, neuron=SNNTORCH_NEURONS[model], around_optimizer=optimizer)

    class Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = func.__name__.split(".")[0]
            tensors = [a for a in args if isinstance(a, torch.Tensor)]
            host_step = count[1] and tensors and all(t.dim() == 0 and t.device.type == "cpu" for t in tensors)
            if (name not in NO_KERNEL and name not in PROFILER_MARKS and not host_step
                    and not (count[1] and name == "_local_scalar_dense")):
                count[0] += 1
            return func(*args, **(kwargs or {}))

    with Count():
        step()
        count[0] = 0
        step()
    return count[0]


@pytest.mark.parametrize("model", sorted(SNNTORCH_NEURONS))
def test_step_op_count_of_every_zoo_model_matches_snntorch(model):
    """The eager op list of one training step has as many device ops as snnTorch dispatches, for
    every zoo model (counts depend on T and the layers, not their widths: a small network)."""
    from mimdsim.snn.zoo import ZOO

    sizes, T, B = [12, 10, 6], 5, 4
    net = mimdsim.Network.build(sizes, ZOO[model], bias=True, loss="ce_count", seed=0)
    ops = eager.step_ops(net.sizes, T, B, e=4, specs=net.specs, bias=[True, True], optimizer="adam")
    assert sum(op.kernel.count for op in ops) == _snntorch_step_device_ops(model, sizes, T, B)
