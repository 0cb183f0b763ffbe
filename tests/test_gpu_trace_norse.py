"""A Norse model traced and costed (mimdsim.trace_torch, mimdsim.gpu_estimate_trace). Norse is not in the test
extra: .ci/run installs the benchmark's 1.0.0 (--no-deps); this test runs where Norse imports and skips otherwise.
Norse 1.0.0's wheel ships a C++ op built for another torch: mimdsim.validation.traced_libraries.import_library
marks it absent before importing Norse (its LIF path does not use it)."""
import pytest

import mimdsim

torch = pytest.importorskip("torch")
from mimdsim.validation import traced_libraries  # noqa: E402

try:
    norse = traced_libraries.import_library("traced:norse")
except ImportError as e:
    pytest.skip(f"norse does not import: {e}", allow_module_level=True)


def test_a_norse_lif_cell_loop_traced_and_costed():
    """nn.Linear + norse.torch.LIFCell over T steps, SGD foreach. Norse 1.1's lif_feed_forward_step issues 16
    element-wise ops per step after the Linear (the membrane and current updates, the threshold's gt and cast,
    the reset); the first step also clones the input and zeros the state; no host sync. Norse 1.0.0 goes
    through its TorchScript step with LIFParametersJIT(*p): 19 ops per step after the Linear, two of them an
    .item() (a parameter read to the host), and its first step fills the state (full, after reading v_leak,
    and zeros)."""
    from norse.torch import LIFCell

    T, B = 5, 4
    torch.manual_seed(0)
    fc, lif = torch.nn.Linear(12, 10), LIFCell()
    x = torch.rand(T, B, 12)
    opt = torch.optim.SGD(list(fc.parameters()), lr=0.1, foreach=True)

    def step():
        opt.zero_grad()
        s, out = None, []
        for t in range(T):
            z, s = lif(fc(x[t]), s)
            out.append(z)
        torch.stack(out).sum().backward()
        opt.step()

    tr = mimdsim.trace_torch(step, timesteps=T, batch_size=B)
    fwd = [op.name for op, p in tr.ops() if op.device and p == "forward"]
    assert tr.versions["norse"] == norse.__version__
    assert fwd.count("addmm") == T and fwd.count("gt") == T and tr.summary()["device_ops_by_phase"]["optimizer"] == 1
    if norse.__version__ == "1.0.0":
        assert len(fwd) == 20 * T + 5 and tr.summary()["host_syncs"] == 2 * T + 1  # + item, full, zeros, stack, sum
    else:
        assert len(fwd) == 17 * T + 4 and tr.summary()["host_syncs"] == 0  # + clone, zeros, stack, sum
    r = mimdsim.gpu_estimate_trace(tr, "a100-40gb")
    assert r.placement["traced"]["norse"] == norse.__version__ and r.placement["bound"] == "host"
    assert r.seconds_per_step == pytest.approx(sum(s["compute"] + s["host"] for s in r.steps.values()) / r.clock_hz)
