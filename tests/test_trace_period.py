"""A T-step trace built from traces at T = 3-6 by repeating the verified period
(mimdsim/gpu/trace_period.py) is the full T-step trace op for op; where the stream is not periodic the
step is traced in full."""
import pytest

import mimdsim
from mimdsim.gpu.torch_trace import booked_to, trace_torch
from mimdsim.gpu.trace_period import periodic_trace
from mimdsim.snn.zoo import ZOO

torch = pytest.importorskip("torch")
pytest.importorskip("snntorch")
from mimdsim.workloads.snn.baselines.snntorch_step import training_step  # noqa: E402


def ops(tr):
    return [(op, p) for op, p in tr.ops()]


def check(build, T, **kw):
    built = periodic_trace(build, T, **kw)
    full = trace_torch(build(T), timesteps=T, **kw)
    assert ops(built) == ops(full) and built.optimizer_calls == full.optimizer_calls
    assert built.gemm_weight_bytes == full.gemm_weight_bytes and built.timesteps == T
    return built, full


@pytest.mark.parametrize("model", sorted(ZOO))
def test_every_zoo_neuron_and_recurrence_is_built_op_for_op(model):
    net = mimdsim.Network.build([12, 10, 6], ZOO[model], bias=True, seed=0)
    for T in (10,):
        built, full = check(lambda t: training_step(net, t, 4), T, batch_size=4)
        assert built.extrapolated_from == (3, 4, 5, 6) and not full.extrapolated_from


@pytest.mark.parametrize("loss,optimizer", [("ce_max_membrane", "sgd"), ("mse_count", "adam"),
                                            ("ce_rate", "sgd")])
def test_readouts_optimizers_and_a_deeper_network(loss, optimizer):
    net = mimdsim.Network.build([9, 8, 7, 5], ZOO["synaptic"], bias=False, loss=loss, seed=0)
    built, _ = check(lambda t: training_step(net, t, 3, optimizer=optimizer), 11, batch_size=3)
    assert built.extrapolated_from


def test_the_default_model_at_t_100():
    """compare's default model (2312-978-978-976-10 Leaky, T = 100, B = 48, Adam): 13,226 ops, each as traced."""
    net = mimdsim.Network.feedforward([2312, 978, 978, 976, 10])
    built, full = check(lambda t: training_step(net, t, 48), 100, batch_size=48)
    assert len(full) == 13226 and built.extrapolated_from == (3, 4, 5, 6)


def test_the_benchmark_step_with_a_sync_per_step_and_a_booked_loss():
    """snnTorch 0.7's step (one .item() per timestep, validation/snntorch07.py) at T = 40; output.sum() is
    booked to the backward pass."""
    from mimdsim.validation import snntorch07

    built, full = check(lambda t: snntorch07.benchmark_step(16, timesteps=t, batch_size=4), 40, batch_size=4)
    s = full.summary()
    assert s["host_syncs_by_phase"]["forward"] == 40 and built.extrapolated_from
    first_backward = [op.name for op, p in ops(full) if p == "backward"][0]
    assert first_backward == "sum"
    assert [op.name for op, p in ops(full) if p == "forward"][-1] == "stack"


def test_a_stream_that_is_not_periodic_is_traced_in_full():
    """A loop that concatenates its history grows an op's shape with t squared: the rule from T = 3-5
    mispredicts T = 6, so the trace is the full one."""
    def build(T):
        x = torch.randn(T, 2, 3, device="meta", requires_grad=True)

        def step():
            h = x[0]
            for t in range(1, T):
                h = torch.cat([h, x[t] * t]) if t % 2 else h * 2  # odd steps grow h, even steps do not
            h.sum().backward()
        return step

    built, full = check(build, 12)
    assert not built.extrapolated_from


def test_booked_to_moves_forward_ops_only():
    a = torch.randn(4, 4, requires_grad=True)

    def step():
        y = (a * 2).relu()
        with booked_to("backward"):
            y.sum().backward()

    tr = trace_torch(step, warmup=0)
    names = [(op.name, p) for op, p in tr.ops() if op.device]
    assert names[:4] == [("mul", "forward"), ("relu", "forward"), ("sum", "backward"), ("ones_like", "backward")]
    assert ("threshold_backward", "backward") in names
    with pytest.raises(mimdsim.errors.ConfigError, match="phase"):
        booked_to("loss")


def test_the_shipped_seed_is_todays_trace_of_the_default_compare():
    """The seed (mimdsim/workloads/snn/baselines/trace_seed/, read where the disk cache has no entry) is the
    trace a default `mimdsim compare` makes today, traced anew here, under today's key: an edit of the
    tracing code or the step changes the key and fails this test until `python -m mimdsim.trace_seed`."""
    import dataclasses
    import gzip
    import os
    import pickle

    from mimdsim import trace_seed
    from mimdsim.workloads.snn.baselines import eager_trace

    files = sorted(f for f in os.listdir(eager_trace.SEED_DIR) if f.endswith(".pkl.gz"))
    assert files
    shipped = {}
    for f in files:
        with gzip.open(os.path.join(eager_trace.SEED_DIR, f)) as fh:
            shipped[f[:-len(".pkl.gz")]] = pickle.load(fh)
    traced_with = {k: v for k, v in next(iter(shipped.values())).versions.items() if k in ("torch", "snntorch")}
    if traced_with != eager_trace.versions():
        pytest.skip(f"the seed was traced with {traced_with}, this environment has {eager_trace.versions()}")
    fresh = trace_seed.default_compare_traces()
    assert set(fresh) == set(shipped), "the seed is stale: python -m mimdsim.trace_seed"
    for k, trace in fresh.items():
        a, b = dataclasses.asdict(trace), dataclasses.asdict(shipped[k])
        for field in ("sequence", "phase"):
            assert (a.pop(field) == b.pop(field)).all()
        a.pop("seconds_on_cpu"), b.pop("seconds_on_cpu")
        assert a == b and trace.timesteps == 100 and trace.extrapolated_from
