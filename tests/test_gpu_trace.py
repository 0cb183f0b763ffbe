"""A PyTorch training step traced (mimdsim/gpu/torch_trace.py) and costed (mimdsim/gpu/trace_cost.py): the op
stream against a dispatch mode counting live and against the hand census of snnTorch 1.0
(mimdsim/workloads/snn/baselines/eager.py), host syncs per step, and the cost of a tiny trace by hand."""
import sys

import numpy as np
import pytest

import mimdsim
from mimdsim.errors import ConfigError
from mimdsim.workloads.snn.baselines import eager
from live_dispatch import live_count

torch = pytest.importorskip("torch")
snn = pytest.importorskip("snntorch")


def snntorch_step(sizes, T, B, *, item=True):
    """One eager snnTorch training step as its tutorials write it (Linear + Leaky per layer, spike
    and membrane records stacked, ce_count loss, Adam foreach), as a zero-argument callable."""
    from snntorch_reference import tutorial_step

    return tutorial_step(sizes, T, B, item=item)


def test_traced_snntorch_step_has_the_ops_a_live_dispatch_count_sees_and_the_census_device_ops():
    sizes, T, B = [12, 10, 6], 5, 4
    step = snntorch_step(sizes, T, B)
    step()  # Adam's state and snnTorch's lazy state: count a steady-state step
    live = live_count(step)
    tr = mimdsim.trace_torch(step, warmup=0)
    assert len(tr) == live
    # the device ops are the hand census's (docs/as-built/gpu_frameworks.md §1), counted independently
    net = mimdsim.Network.build(sizes, "leaky", beta=0.9, bias=True, surrogate="fast_sigmoid")
    census = sum(op.kernel.count for op in eager.step_ops(sizes, T, B, e=4, specs=net.specs, bias=[True, True]))
    s = tr.summary()
    assert s["device_ops"] == census
    # Adam foreach: 7 launches inside Optimizer.step; its step counters' arithmetic stays on the host
    assert s["device_ops_by_phase"]["optimizer"] == eager.OPTIMIZER_LAUNCHES["adam"]
    assert s["backward_passes"] == 1 and s["optimizer_calls"] == 1
    assert s["versions"]["snntorch"] == snn.__version__ and s["versions"]["torch"] == torch.__version__
    # 2 Linears forward per step; backward 2 weight gradients + 1 input gradient per step
    gemms = [op.name for op, _ in tr.ops() if op.device and op.name in ("mm", "addmm")]
    assert len(gemms) == 2 * T + 3 * T


def test_snntorch_1_leaky_step_has_no_host_sync_but_its_item():
    tr = mimdsim.trace_torch(snntorch_step([12, 10, 6], 5, 4, item=False))
    assert tr.summary()["host_syncs"] == 0
    tr = mimdsim.trace_torch(snntorch_step([12, 10, 6], 5, 4, item=True))
    assert tr.summary()["host_syncs_by_phase"] == {"forward": 0, "backward": 0, "optimizer": 0, "update": 1}


class TensorTestLeaky(torch.nn.Module):
    """A Leaky neuron that tests a tensor on the host every call, as snnTorch 0.7's ``Leaky.forward``
    did (``if self.reset_mechanism_val == 0:``, the value a registered buffer that lives on the GPU)."""

    def __init__(self, beta=0.9):
        super().__init__()
        self.beta = beta
        self.register_buffer("reset_mechanism_val", torch.as_tensor(0))

    def forward(self, x, mem):
        spk = (mem > 1.0).float()
        if self.reset_mechanism_val == 0:  # subtract reset: bool(tensor) is an .item(): the host waits
            mem = self.beta * mem + x - spk
        else:
            mem = self.beta * mem + x
        return spk, mem


def test_a_per_step_tensor_test_is_one_host_sync_per_timestep_and_costs_a_drained_queue():
    T, B = 6, 4
    torch.manual_seed(0)
    fc, lif = torch.nn.Linear(8, 5), TensorTestLeaky()
    x = torch.rand(B, 8)

    def step():
        mem = torch.zeros(B, 5)
        out = 0
        for _ in range(T):
            spk, mem = lif(fc(x), mem)
            out = out + mem
        out.sum().backward()

    tr = mimdsim.trace_torch(step)
    assert tr.summary()["host_syncs_by_phase"]["forward"] == T and tr.summary()["host_syncs"] == T
    r = mimdsim.gpu_estimate_trace(tr, "a100-40gb")
    assert r.placement["host_syncs"] == T
    # each sync drains the queue: the step is the sum of its T + 1 segments, slower than one overlapped stream
    from mimdsim.gpu.framework import framework, timeline
    from mimdsim.gpu.trace_cost import op_stream
    on_a100_host = framework("pytorch-eager", host="dgx-a100")  # the A100's default host, as the estimate costs it
    host, device, syncs, _, _ = op_stream(tr, mimdsim.gpu_spec("a100-40gb"), on_a100_host, "fp32")
    assert syncs.sum() == T
    cuts = np.flatnonzero(syncs) + 1
    segments = [timeline(h, d)[0] for h, d in zip(np.split(host, cuts), np.split(device, cuts))]
    assert len(segments) == T + 1 and r.seconds_per_step == pytest.approx(sum(segments))
    assert r.seconds_per_step > timeline(host, device)[0]


def test_synchronised_timeline_by_hand():
    """Host 10 per op, device 1, 5 ops, a sync after op 2: two host-bound segments."""
    from mimdsim.gpu.framework import synchronised_timeline, timeline
    host, dev = np.full(5, 10.0), np.full(5, 1.0)
    total, wait = synchronised_timeline(host, dev, np.array([0, 1, 0, 0, 0], bool))
    assert total == (20 + 1) + (30 + 1)  # each segment: its host issue, then the last op's kernel
    assert wait.sum() == pytest.approx(10 + 9 + 10 + 9 + 9)
    # device-bound: host 1, device 10; a sync after op 0 makes the host wait: 1 + 10, then 1 + 4 x 10
    total, _ = synchronised_timeline(dev, host, np.array([1, 0, 0, 0, 0], bool))
    assert total == 11 + 41 and timeline(dev, host)[0] == 1 + 50  # without the sync op 2's issue overlaps


def test_a_matmul_and_an_add_costed_by_hand():
    """C = A B + D, A 4x8, B 8x16 (fp32) on an A100 40GB: mm is 1,024 FLOPs, its 7 us GEMM floor;
    add 64 elements, its 2 us element-wise floor (docs/gpu-model.md). The host issues each op in
    12 us (pytorch-eager forward on the measurement host, genoa-vm): mm runs 12-19 us, add is issued at 24 and
    runs 24-26 us."""
    a, b, d = torch.rand(4, 8), torch.rand(8, 16), torch.rand(4, 16)
    tr = mimdsim.trace_torch(lambda: a @ b + d, warmup=0)
    assert [(op.name, op.device) for op, _ in tr.ops()] == [("mm", True), ("add", True)]
    assert tr.table[0].inputs == (((4, 8), "float32"), ((8, 16), "float32"))
    r = mimdsim.gpu_estimate_trace(tr, "a100-40gb", host="genoa-vm")
    assert r.seconds_per_step == pytest.approx(26e-6)
    assert r.cycles["forward"]["compute"] / r.clock_hz == pytest.approx(9e-6)
    assert r.cycles["forward"]["host"] / r.clock_hz == pytest.approx(12e-6 + 5e-6)  # the device idles
    assert r.placement["host_bound_fraction"] == pytest.approx(17 / 26) and r.placement["bound"] == "host"
    assert r.placement["kernel_launches"] == 2 and r.placement["gemms"] == 1 and r.placement["host_syncs"] == 0
    from mimdsim.gpu.trace_cost import op_kernel
    mm = op_kernel(tr.table[0], "forward")
    assert mm.flops == 2 * 4 * 16 * 8 and mm.nbytes == 4 * (4 * 8 + 8 * 16 + 4 * 16)
    assert op_kernel(tr.table[1], "forward").nbytes == 3 * 4 * 64


def custom_lif_step(sizes, T, B):
    """A hand-written PyTorch LIF loop: weights as leaf tensors, a custom autograd.Function surrogate
    (1 / (1 + |v|)^2), sum of output spikes through cross-entropy, SGD by hand."""

    class Spike(torch.autograd.Function):
        @staticmethod
        def forward(ctx, v):
            ctx.save_for_backward(v)
            return (v > 0).float()

        @staticmethod
        def backward(ctx, g):
            (v,) = ctx.saved_tensors
            return g / (1 + v.abs()) ** 2

    torch.manual_seed(0)
    ws = [(torch.randn(a, b) / a ** 0.5).requires_grad_() for a, b in zip(sizes[:-1], sizes[1:])]
    x, y = torch.rand(B, sizes[0]), torch.randint(0, sizes[-1], (B,))

    def step():
        mems = [torch.zeros(B, n) for n in sizes[1:]]
        count = 0
        for _ in range(T):
            h = x
            for i, w in enumerate(ws):
                mems[i] = 0.9 * mems[i] + h @ w
                h = Spike.apply(mems[i] - 1.0)
                mems[i] = mems[i] - h
            count = count + h
        torch.nn.functional.cross_entropy(count, y).backward()
        with torch.no_grad():
            for w in ws:
                w -= 0.1 * w.grad
                w.grad = None
    return step


def test_a_custom_lif_loop_traced_and_costed():
    sizes, T, B = [20, 16, 4], 7, 8
    tr = mimdsim.trace_torch(custom_lif_step(sizes, T, B), timesteps=T, batch_size=B, model="custom LIF")
    fwd = [op.name for op, p in tr.ops() if op.device and p == "forward"]
    bwd = [op.name for op, p in tr.ops() if op.device and p == "backward"]
    upd = [op.name for op, p in tr.ops() if op.device and p == "update"]
    # forward per layer and step: mul, mm, add (0.9 m + h W), sub, gt, _to_copy (the spike), sub (reset)
    assert fwd.count("mm") == 2 * T and fwd.count("gt") == 2 * T and fwd.count("_to_copy") == 2 * T
    # + the spike count's add per step, the two zeros of the membranes, the loss (log_softmax, nll_loss)
    assert len(fwd) == 7 * 2 * T + T + 2 + 2
    # backward per step: both weight gradients, the input gradient of layer 2 (h1 W2: dI W2^T)
    assert bwd.count("mm") == 3 * T
    # autograd sums each weight's T per-step gradients with T - 1 adds over |W|
    for a, b in zip(sizes[:-1], sizes[1:]):
        assert sum(1 for op, p in tr.ops() if p == "backward" and op.name == "add"
                   and op.outputs == (((a, b), "float32"),)) == T - 1
    # the hand-written update: w -= 0.1 grad is a mul and a sub per weight
    assert upd == ["mul", "sub_", "mul", "sub_"]
    assert tr.summary()["host_syncs"] == 0 and tr.optimizer_calls == 0
    r = mimdsim.gpu_estimate_trace(tr, "h100")
    assert r.timesteps == T and r.batch_size == B and r.architecture == "h100"
    assert r.placement["kernel_launches"] == len(fwd) + len(bwd) + len(upd)
    assert r.seconds_per_step == pytest.approx(sum(s["compute"] + s["host"] for s in r.steps.values()) / r.clock_hz)
    # tiny kernels: the device waits for the host most of the step
    assert r.placement["bound"] == "host"


def test_a_long_trace_holds_shapes_not_tensors():
    """A loop repeats its ops: the table of distinct ops does not grow with T, and each further op
    costs the trace 5 bytes (its index and phase) and 4 per tensor operand (its tensor id), so 1000 steps
    of a 3-layer network stay under 1 MB."""
    small = mimdsim.trace_torch(custom_lif_step([20, 16, 16, 4], 20, 8), warmup=0)
    large = mimdsim.trace_torch(custom_lif_step([20, 16, 16, 4], 100, 8), warmup=0)
    assert len(large.table) == len(small.table)

    def operands(tr):
        return sum(len(op.inputs) + len(op.outputs) for op, _ in tr.ops())

    assert small.tensor_ids.size == operands(small) and large.tensor_ids.size == operands(large)
    grown = 5 * (len(large) - len(small)) + 4 * (operands(large) - operands(small))
    assert large.nbytes() - small.nbytes() == grown
    assert small.nbytes() + grown / 80 * 980 < 1e6


def test_missing_torch_is_a_one_line_error_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ConfigError, match=r'pip install "mimdsim\[torch\]"'):
        mimdsim.trace_torch(lambda: None)
