"""The compiled costing of a traced step (mimdsim/gpu/trace_compile.py; docs/gpu-model.md, "Compiled: Inductor
and a CUDA graph"): fusion groups, a fused kernel's external bytes and the CUDA graph launches, worked by hand."""
import numpy as np
import pytest

from mimdsim.arch.gpu import gpu
from mimdsim.errors import ConfigError
from mimdsim.gpu.model import Kernel, gemm, kernel_seconds
from mimdsim.gpu.trace_compile import external_bytes, fusion_groups
from mimdsim.gpu.trace_cost import costed_trace

torch = pytest.importorskip("torch")


def mm_and_three_pointwise():
    """y = x @ w ([8, 16] x [16, 32]); z = sigmoid(y) * 2 + y: one mm and three element-wise ops on [8, 32]."""
    x, w = torch.ones(8, 16, device="meta"), torch.ones(16, 32, device="meta")

    def step():
        y = x @ w
        return torch.sigmoid(y) * 2.0 + y

    return step


def test_mm_then_three_pointwise_ops_fuse_into_one_kernel_of_its_external_tensors():
    """Eager: 4 kernels. Compiled: the mm (extern) and one fused kernel that reads y once (1 KB: 8 x 32 x 4 B)
    and writes the sum (1 KB); sigmoid's and mul's results stay inside (eager moves 2 + 2 + 3 KB). FLOPs: one
    per element per op, 3 x 256. One CUDA graph: the host launches it (15 us), each kernel node 0.6 us."""
    tr = torch_trace(mm_and_three_pointwise())
    names = [op.name for op, _ in tr.ops() if op.device]
    assert names == ["mm", "sigmoid", "mul", "add"]
    groups = fusion_groups(tr)
    assert [kind for kind, _ in groups] == ["extern", "fused"]
    assert external_bytes(tr, groups[1][1]) == (8 * 32 * 4, 8 * 32 * 4)
    spec = gpu("a100-40gb")
    rep, kernels = costed_trace(tr, spec, mode="reduce-overhead")
    assert [k.name for k in kernels] == ["forward.mm", "forward.fused"]
    fused = kernels[1]
    assert (fused.flops, fused.nbytes) == (3 * 256, 2 * 1024)
    assert rep.placement["kernel_launches"] == 2 and rep.placement["cuda_graphs"] == 1
    mm = gemm("forward.mm", "forward", 8, 32, 16, 4, 1)
    p = rep.placement["precision"]
    device = kernel_seconds(mm, spec, p) + kernel_seconds(Kernel("f", "forward", "vector", 768.0, 2048.0, 1),
                                                          spec, p) + 2 * spec.graph_node_overhead_s
    # the device waits for the graph's launch, then runs both nodes back to back
    assert rep.phase_seconds()["forward"] == pytest.approx(spec.graph_launch_s + device, rel=1e-12)
    eager = costed_trace(tr, spec)[1]
    assert sum(k.nbytes for k in eager[1:]) == (2 + 2 + 3) * 1024


def torch_trace(step):
    from mimdsim.gpu.torch_trace import trace_torch

    return trace_torch(step, warmup=0)


def test_a_tensor_read_after_the_run_is_written_and_a_view_is_its_base():
    """t = exp(y) is read again after the next mm: the run before it writes t (kept), and the second run reads
    it; t.t() feeding the mm is t itself (a view, no kernel)."""
    x, w = torch.ones(4, 4, device="meta"), torch.ones(4, 4, device="meta")

    def step():
        y = x @ w
        t = torch.exp(y)
        u = torch.neg(t)
        v = u @ t.t()
        return v + t

    tr = torch_trace(step)
    groups = fusion_groups(tr)
    assert [kind for kind, _ in groups] == ["extern", "fused", "extern", "fused"]
    # run 1 (exp, neg): reads y, writes t (read by the mm's view and by the last add) and u (read by the mm)
    assert external_bytes(tr, groups[1][1]) == (64, 128)
    # run 2 (add): reads v and t, writes its result
    assert external_bytes(tr, groups[3][1]) == (128, 64)


def test_bad_mode_and_a_trace_without_tensor_ids_are_clear_errors():
    tr = torch_trace(mm_and_three_pointwise())
    with pytest.raises(ConfigError, match="mode"):
        costed_trace(tr, "a100-40gb", mode="compiled-ish")
    tr.tensor_ids = None  # as a trace built by repeating a period
    with pytest.raises(ConfigError, match="trace the step in full"):
        costed_trace(tr, "a100-40gb", mode="reduce-overhead")


def test_eager_costing_keeps_one_kernel_per_device_op():
    tr = torch_trace(mm_and_three_pointwise())
    rep, kernels = costed_trace(tr, "a100-40gb")
    assert len(kernels) == int(np.count_nonzero(tr.device_mask)) == 4 and "cuda_graphs" not in rep.placement


def test_what_costing_derives_from_a_trace_is_kept_with_it_and_follows_its_ops():
    """A band re-costs one trace under other GPUs and host constants: the parts that depend on the trace alone are
    kept with it (``Trace.derived``). Costed again, under another GPU, after a pickle round trip (which drops them)
    or on a copy, every figure equals a fresh trace's; replacing the trace's ops drops what was derived from them."""
    import copy
    import dataclasses
    import pickle

    from mimdsim.gpu.framework import framework

    def figures(tr, g, mode, host_op=None):
        fw = framework("pytorch-eager") if host_op is None else \
            dataclasses.replace(framework("pytorch-eager"), host_forward_op_s=host_op, host_backward_op_s=host_op)
        rep, kernels = costed_trace(tr, g, framework=fw, mode=mode)
        return rep.to_dict(), [(k.name, k.flops, k.nbytes, k.working_set) for k in kernels]

    for mode in ("eager", "reduce-overhead"):
        kept = torch_trace(mm_and_three_pointwise())
        for g, host_op in (("a100-40gb", None), ("h100", None), ("a100-40gb", 1e-3), ("rtx-4090", 2e-6)):
            assert figures(kept, g, mode, host_op) == figures(torch_trace(mm_and_three_pointwise()), g, mode, host_op)
        assert "_derived" in kept.__dict__
        again = pickle.loads(pickle.dumps(kept))
        assert "_derived" not in again.__dict__ and figures(again, "h100", mode) == figures(kept, "h100", mode)
        assert figures(copy.copy(kept), "h100", mode) == figures(kept, "h100", mode)
    # another step's ops put into the trace: its figures, not the kept ones
    tr, other = torch_trace(mm_and_three_pointwise()), torch_trace(mm_and_three_pointwise_then_neg())
    costed_trace(tr, "a100-40gb")
    tr.table, tr.sequence, tr.phase, tr.tensor_ids = other.table, other.sequence, other.phase, other.tensor_ids
    assert figures(tr, "a100-40gb", "eager") == figures(other, "a100-40gb", "eager")
    assert len(costed_trace(tr, "a100-40gb")[1]) == 5
    # a layer's weights (a parameter GEMM) and the step's weight bytes set past the L2: a fresh trace's figures
    fresh, kept = torch_trace(linear_step()), torch_trace(linear_step())
    assert figures(kept, "a100-40gb", "eager")[1][0][3] > 0  # the weight operand is re-read each launch
    kept.gemm_weight_bytes = fresh.gemm_weight_bytes = 2 ** 40
    assert figures(kept, "a100-40gb", "eager") == figures(fresh, "a100-40gb", "eager")
    assert figures(kept, "a100-40gb", "eager") != figures(torch_trace(linear_step()), "a100-40gb", "eager")


def linear_step():
    lin, x = torch.nn.Linear(16, 32, device="meta"), torch.ones(8, 16, device="meta")

    def step():
        return torch.sigmoid(lin(x))

    return step


def mm_and_three_pointwise_then_neg():
    x, w = torch.ones(8, 16, device="meta"), torch.ones(16, 32, device="meta")

    def step():
        y = x @ w
        return torch.neg(torch.sigmoid(y) * 2.0 + y)

    return step


def test_compare_gpu_trace_mode_reduce_overhead_costs_the_file_compiled(capsys):
    """``mimdsim compare --gpu-trace examples/custom_lif_step.py --gpu-trace-mode reduce-overhead``: the column
    is the trace costed compiled (its seconds printed); a bad mode, and the mode without a file, are errors
    naming the flags."""
    from mimdsim.cli import main
    from mimdsim.compare import compare
    from mimdsim.gpu.trace_cost import estimate_trace
    from mimdsim.gpu.trace_file import load_step

    assert main(["compare", "--gpu-trace", "examples/custom_lif_step.py", "--gpu-trace-mode", "reduce-overhead",
                 "--strategy", "fused"]) == 0
    out = capsys.readouterr().out
    step, b, t, _ = load_step("examples/custom_lif_step.py")
    from mimdsim.gpu.torch_trace import trace_torch
    tr = trace_torch(step, timesteps=t, batch_size=b)
    r = estimate_trace(tr, "a100-40gb", mode="reduce-overhead")
    eager = estimate_trace(tr, "a100-40gb")
    assert f"{r.seconds_per_step:.3e}" in out and f"{eager.seconds_per_step:.3e}" not in out
    assert r.placement["kernel_launches"] < eager.placement["kernel_launches"] == int(np.count_nonzero(tr.device_mask))
    assert (f'costed as torch.compile(mode="reduce-overhead") runs it: {r.placement["kernel_launches"]:,} kernels in '
            f'{r.placement["cuda_graphs"]} CUDA graph(s)') in out  # the report says how the column was costed
    assert main(["compare", "--gpu-trace", "examples/custom_lif_step.py", "--gpu-trace-mode", "compiled"]) == 2
    assert "--gpu-trace-mode: invalid choice: 'compiled' (choose from 'eager', 'reduce-overhead')" in \
        capsys.readouterr().err
    # the API's error names its arguments; the command line's the flags
    with pytest.raises(ConfigError, match="gpu_trace_mode='reduce-overhead' .* no gpu_trace=FILE.py") as info:
        compare(mimdsim_net(), gpu_trace_mode="reduce-overhead")
    from mimdsim.cli.terms import cli_text
    assert "--gpu-trace-mode reduce-overhead says how the --gpu-trace step runs, and no --gpu-trace FILE.py" in \
        cli_text(info.value)


def mimdsim_net():
    import mimdsim
    from mimdsim.snn.zoo import ZOO

    return mimdsim.Network.build([4, 3], ZOO["leaky"], seed=0)
