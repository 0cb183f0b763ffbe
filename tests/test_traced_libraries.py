"""The Open Neuromorphic benchmark's PyTorch-op-by-op libraries traced as it calls them
(mimdsim/validation/traced_libraries.py; ``mimdsim validate --source snn-libraries-gpu``). Each test needs its
library at the benchmark's version (.ci/run installs them with --no-deps) and skips, naming it, where absent."""
import pytest

torch = pytest.importorskip("torch")

# SpikingJelly and Norse decorate functions with torch.jit.script at import, which torch 2.13 deprecates
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")

from mimdsim.gpu.torch_trace import trace_torch  # noqa: E402
from mimdsim.validation import library_rows, load, traced_libraries as tl  # noqa: E402
from live_dispatch import live_count  # noqa: E402

# device ops each extra timestep adds, forward and backward (the trace at T = 6 less T = 5, by op: Sinabs
# 1.2.10's loop body mul 4, rsub, add, clone, gt, div, sub; SpikingJelly's LIFNode charge/fire/reset sub 2,
# div, add 3, ge, _to_copy, neg, mul 2; backward each op's derivative plus one select_backward that writes the
# whole [T, B, n] gradient of the input sequence). Norse's LIFBoxCell runs once on all T*B rows: none.
# Rockpool 2.7's LIFTorch: 21 ops of the update and 2 x 20 of _get_all_leak_params (self.alpha, self.beta
# recomputed from the taus each step: reciprocal, mul, exp for 4 decays, rsub, log2, neg for 2 bitshifts, 2
# repeat); backward their derivatives, the parameter gradients' sums over the batch and one select_backward.
PER_STEP = {"traced:sinabs": (10, 25), "traced:spikingjelly-torch": (11, 18), "traced:norse": (0, 0),
            "traced:rockpool": (61, 45)}
# the forward GEMM: nn.Linear's addmm (bias folded in); Rockpool's LinearTorch has no bias by default: mm
FORWARD_GEMM = {"traced:rockpool": "mm"}


def _need(program):
    if tl.version(program) is None:
        dist, measured = tl.PROGRAMS[program][1:3]
        pytest.skip(f"{dist} is not installed (the benchmark measured {measured}; .ci/run: pip install --no-deps)")


def _device_stream(tr):
    return [(op.name, op.inputs, op.outputs, p) for op, p in tr.ops() if op.device]


def _device_ops(tr, phase):
    return int((tr.device_mask & (tr.phase == phase)).sum())


@pytest.mark.parametrize("program", list(tl.PROGRAMS))
def test_each_call_traced_has_the_ops_a_live_cpu_run_dispatches_and_its_ops_per_step(program):
    """On the CPU the step computes (the benchmark's calls, real numbers): the trace holds exactly the ops a
    counting dispatch mode sees; on the meta device the same ops; each extra timestep adds the library's
    per-step forward and backward ops (PER_STEP), and Norse's stream does not grow with T."""
    _need(program)
    step = tl.benchmark_step(program, 8, timesteps=5, batch_size=2, device="cpu")
    step()  # the benchmark's warm-up call: gradients exist from here on
    live = live_count(step)
    cpu = trace_torch(step, warmup=0)
    assert len(cpu) == live
    meta5 = trace_torch(tl.benchmark_step(program, 8, 5, 2))
    meta6 = trace_torch(tl.benchmark_step(program, 8, 6, 2))
    # the same device ops op for op; Rockpool allocates twice per call as empty + set_ on the CPU and
    # empty_strided on meta (no kernel either way), so only its kernel-less op count differs
    assert _device_stream(meta5) == _device_stream(cpu)
    assert len(meta5) == len(cpu) - (2 if program == "traced:rockpool" else 0)
    assert meta5.summary()["host_syncs"] == (1 if program == "traced:norse" else 0)
    assert tuple(_device_ops(meta6, i) - _device_ops(meta5, i) for i in (0, 1)) == PER_STEP[program]
    # one GEMM forward (over all T*B rows), one weight-gradient mm backward (the input needs no grad)
    gemms = [(op.name, p) for op, p in meta5.ops() if op.name in ("mm", "addmm")]
    assert gemms == [(FORWARD_GEMM.get(program, "addmm"), "forward"), ("mm", "backward")]
    built = tl.trace(program, 24, timesteps=40, batch_size=2)  # periodic: from T = 3-6, checked at 6
    assert built.extrapolated_from == (3, 4, 5, 6) or program == "traced:norse"
    assert built.versions[tl.PROGRAMS[program][0]] == tl.version(program)
    full = trace_torch(tl.benchmark_step(program, 24, 40, 2))
    assert [(built.table[i], p) for i, p in zip(built.sequence.tolist(), built.phase.tolist())] == \
        [(full.table[i], p) for i, p in zip(full.sequence.tolist(), full.phase.tolist())]


def test_norse_trace_at_the_benchmark_size_costs_as_its_kernels():
    """Norse's 14 forward kernels at n = 4096 on the rtx-4090: the addmm [8000, 4096] x [4096, 4096] and 13
    element-wise ops over T*B*n = 32.8 M values; the call is their device time, the host (15 ops) far behind."""
    _need("traced:norse")
    from mimdsim.arch.gpu import gpu
    from mimdsim.gpu.trace_cost import op_kernel
    from mimdsim.gpu.model import kernel_seconds

    tr = tl.trace("traced:norse", 4096)
    fwd = [op for op, p in tr.ops() if op.device and p == "forward" and not op.sync]
    assert len(fwd) == 14 and fwd[0].name == "addmm" and fwd[0].inputs[1][0] == (8000, 4096)
    spec = gpu("rtx-4090")
    device = sum(kernel_seconds(op_kernel(op, "forward", tr.gemm_weight_bytes), spec, "fp32") for op in fwd)
    got = tl.phase_seconds("traced:norse", 4096)
    # eager (kept beside the compiled figure): the sync (full()'s fill value read to the host) after the addmm:
    # the host waits for it, then issues the rest
    assert got["eager"]["forward"] == pytest.approx(device + 12e-6, rel=0.02)


def test_norse_forward_compiled_is_the_addmm_the_sync_and_one_fused_pass():
    """As torch.compile(mode="reduce-overhead") runs it (the benchmark's mode), the forward's 13 element-wise
    eager kernels are one fused kernel: it reads the addmm's [T, B, n] result and writes three [T, B, n]
    tensors: the spikes z and v - v_th (both read by the backward) and the new v (a result, never read), 4 x
    T*B*n x 4 B, plus six 4-byte scalars (v_leak, tau_mem_inv, v_th, the threshold, v_reset read; tau_mem_inv *
    dt written, read by the backward); full()'s v and the other intermediates stay inside. FLOPs: 12 passes
    over T*B*n and the one-element mul. The sync splits the forward into two CUDA graphs: the call is its
    device time plus two graph launches (15 us each) and a node overhead (0.6 us) per kernel."""
    _need("traced:norse")
    from mimdsim.arch.gpu import gpu
    from mimdsim.arch.host import host
    from mimdsim.gpu.model import Kernel, kernel_seconds
    from mimdsim.gpu.trace_cost import costed_trace, op_kernel

    tr = tl.trace("traced:norse", 4096)
    spec, tbn = gpu("rtx-4090"), 500 * 16 * 4096
    rep, kernels = costed_trace(tr, spec, framework=tl.framework(), mode="reduce-overhead")
    fwd = [k for k in kernels if k.phase == "forward"]
    assert [k.name for k in fwd] == ["forward.addmm", "forward._local_scalar_dense", "forward.fused"]
    assert fwd[2].nbytes == 4 * tbn * 4 + 6 * 4 and fwd[2].flops == 12 * tbn + 1
    assert rep.placement["cuda_graphs"] == 3  # forward before and after the sync, backward
    addmm = next(op for op, p in tr.ops() if op.name == "addmm")
    device = (kernel_seconds(op_kernel(addmm, "forward", tr.gemm_weight_bytes), spec, "fp32") + spec.vector_floor_s
              + kernel_seconds(Kernel("f", "forward", "vector", 12.0 * tbn + 1, 16.0 * tbn + 24, 1), spec, "fp32")
              + 2 * spec.graph_node_overhead_s)  # the sync's one-element copy: the vector floor
    got = tl.phase_seconds("traced:norse", 4096)
    assert got["model"]["forward"] == pytest.approx(device + 2 * spec.graph_launch_s, rel=1e-9)
    # two graph launches (GPU figures, not scaled by the host) and the sync's eager op on the 4090's default host
    assert got["host"]["forward"] == pytest.approx(2 * spec.graph_launch_s + 12e-6 * host("desktop-zen4").op_time_scale)


def test_traced_rows_in_validate():
    """Quick mode models the traced rows at n = 4096 only; each row's model is its trace's phase time."""
    rows = [r for r in library_rows(load("snn-libraries-gpu"), quick=True) if r["program"] in tl.PROGRAMS]
    assert {r["n"] for r in rows} == {4096} and len(rows) == 2 * len(tl.PROGRAMS)
    for r in rows:
        if r.get("absent"):
            continue
        assert r["model_seconds"] == tl.phase_seconds(r["program"], 4096)["model"][r["phase"]]
        assert not r["excluded"]


def test_building_on_meta_first_leaves_the_libraries_import_time_tensors_on_the_cpu():
    """Rockpool's modules import Sinabs; imported first under ``torch.device("meta")``, Sinabs's default
    ``spike_threshold=torch.tensor(1.0)`` would be a meta tensor and a later CPU build would fail. In a fresh
    process: build Rockpool on meta, then the default is on the CPU and Sinabs builds on the CPU."""
    import subprocess
    import sys

    _need("traced:rockpool")
    _need("traced:sinabs")
    code = ("import inspect, warnings; warnings.simplefilter('ignore')\n"
            "from mimdsim.validation import traced_libraries as tl\n"
            "tl.benchmark_step('traced:rockpool', 8, 5, 2)\n"
            "import sinabs.layers.lif as sl\n"
            "print(inspect.signature(sl.LIF.__init__).parameters['spike_threshold'].default.device)\n"
            "tl.benchmark_step('traced:sinabs', 8, 5, 2, device='cpu')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["cpu"]
