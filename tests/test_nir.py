"""NIR: snnTorch's export imports and reproduces snnTorch; to_nir then from_nir is the
identity; malformed or unsupported graphs get clear errors."""
import numpy as np
import pytest

import mimdsim
from mimdsim import NeuronSpec
from mimdsim.errors import ConfigError, UnsupportedModel

nir = pytest.importorskip("nir")


def _spikes(T=50, B=3, n=12, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.random((T, B, n)) < 0.3).astype(np.uint8), rng.integers(0, 6, B)


def _snntorch_export(kind):
    torch = pytest.importorskip("torch")
    snn = pytest.importorskip("snntorch")
    pytest.importorskip("nirtorch")
    from snntorch.export_nir import export_to_nir

    torch.manual_seed(0)
    # NIR's reset: to v_reset = 0 in the same step; NIR carries no surrogate, so the model uses the one an
    # imported graph's neurons take (NeuronSpec's default, the fast sigmoid)
    kw = dict(init_hidden=True, reset_mechanism="zero", spike_grad=snn.surrogate.fast_sigmoid())
    if kind == "leaky":
        l1 = snn.Leaky(beta=torch.full((10,), 0.9), threshold=torch.ones(10), reset_delay=False, **kw)
    elif kind == "synaptic":
        l1 = snn.Synaptic(alpha=torch.full((10,), 0.8), beta=torch.full((10,), 0.7), threshold=torch.ones(10),
                          reset_delay=False, **kw)
    else:
        l1 = snn.RLeaky(beta=torch.full((10,), 0.9), linear_features=10, reset_delay=False, **kw)
    l2 = snn.Leaky(beta=torch.full((6,), 0.8), threshold=torch.ones(6), output=True, reset_delay=False, **kw)
    fc1, fc2 = torch.nn.Linear(12, 10), torch.nn.Linear(10, 6)
    with torch.no_grad():
        fc1.weight.mul_(4)
        fc2.weight.mul_(4)
    model = torch.nn.Sequential(fc1, l1, fc2, l2)
    graph = export_to_nir(model, torch.randn(1, 12), ignore_dims=[0])
    return model, graph


@pytest.mark.parametrize("kind", ["leaky", "synaptic", "rleaky"])
def test_snntorch_export_imports_and_reproduces_snntorch(kind, tmp_path):
    import torch
    from snntorch import functional as SF

    model, graph = _snntorch_export(kind)
    path = tmp_path / "model.nir"
    nir.write(str(path), graph)
    net = mimdsim.from_nir(path)  # forward Euler with snnTorch's dt = 1e-4
    assert net.sizes == (12, 10, 6) and net.delay == 0 and net.biases[0] is not None
    assert net.specs[0].model == ("synaptic" if kind == "synaptic" else "leaky")
    assert (net.specs[0].reset, net.specs[0].reset_delay) == ("zero", False)
    if kind == "rleaky":
        assert net.specs[0].recurrence == "all-to-all"
    x, y = _spikes()
    run = mimdsim.simulate(net, mimdsim.chip("ipu-mk2", tiles=32), inputs=x, labels=y)
    # snnTorch's own run of the exported model
    xs = torch.tensor(x, dtype=torch.float32)
    for m in model:
        if hasattr(m, "reset_hidden"):
            m.reset_hidden()
    from snntorch import utils
    utils.reset(model)
    spk1, mem2, spk2 = [], [], []
    for t in range(x.shape[0]):
        h = model[1](model[0](xs[t]))
        s, m = model[3](model[2](h))
        spk1.append(h)
        spk2.append(s)
        mem2.append(m)
    spk2 = torch.stack(spk2)
    loss = SF.ce_count_loss()(spk2, torch.tensor(y))
    assert torch.stack(spk1).sum() > 0 and spk2.sum() > 0
    np.testing.assert_array_equal(run.traces[0]["spk"], torch.stack(spk1).detach().numpy())
    np.testing.assert_array_equal(run.traces[1]["spk"], spk2.detach().numpy())
    np.testing.assert_allclose(run.traces[1]["mem"], torch.stack(mem2).detach().numpy(), rtol=1e-4, atol=1e-5)
    assert run.loss == pytest.approx(float(loss.detach()), rel=1e-5)
    grads = torch.autograd.grad(loss, [model[0].weight, model[2].weight])
    for g, gr in zip(run.grads, grads):
        ref = gr.numpy().T
        assert np.linalg.norm(g - ref) / np.linalg.norm(ref) < 1e-4


NETS = {
    "leaky-published": lambda: mimdsim.Network.feedforward([12, 10, 6]),
    "synaptic-a2a-pop": lambda: mimdsim.Network.build(
        [12, 10, 6], [NeuronSpec("synaptic", alpha=0.8, beta=0.7, recurrence="all-to-all", surrogate="sigmoid"),
                      NeuronSpec("leaky", beta=0.9, reset="zero", learn_beta=True, learn_threshold=True)],
        bias=True, delay=1, num_classes=3, max_activity=0.2),
    "o2o-li-output": lambda: mimdsim.Network.build(
        [12, 10, 4], [NeuronSpec("leaky", beta=tuple(np.linspace(0.5, 0.9, 10)), recurrence="one-to-one"),
                      NeuronSpec("synaptic", alpha=0.9, beta=0.6, spiking=False)], loss="ce_max_membrane"),
    "if": lambda: mimdsim.Network.build([12, 10, 6], "leaky", beta=1.0, gain=2.0),
}


@pytest.mark.parametrize("name", list(NETS))
def test_to_nir_then_from_nir_is_the_identity(name, tmp_path):
    net = NETS[name]()
    if net.neuron_params[1]:
        net.neuron_params[1]["beta"] = np.asarray(0.85, np.float32)  # a learned value travels too
    for graph in (mimdsim.to_nir(net), None):
        if graph is None:
            nir.write(str(tmp_path / "n.nir"), mimdsim.to_nir(net))
            graph = tmp_path / "n.nir"
        back = mimdsim.from_nir(graph)
        assert back.specs == net.specs and back.sizes == net.sizes and back.capacities == net.capacities
        assert back.delay == net.delay and back.readout == net.readout
        for name_ in ("weights", "biases", "recurrent", "recurrent_biases"):
            for a, b in zip(getattr(net, name_), getattr(back, name_)):
                assert (a is None and b is None) or np.array_equal(np.broadcast_to(a, np.shape(b)), b)
        for a, b in zip(net.neuron_params, back.neuron_params):
            assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_plain_nir_lif_uses_forward_euler():
    n = 3
    g = nir.NIRGraph(nodes={
        "input": nir.Input(input_type=np.array([2])),
        "fc": nir.Linear(weight=np.ones((n, 2))),
        "scale": nir.Scale(scale=np.array([1.0, 2.0, 3.0])),
        "lif": nir.LIF(tau=np.full(n, 0.02), r=np.full(n, 4.0), v_leak=np.full(n, 0.5), v_threshold=np.full(n, 1.5),
                       v_reset=np.zeros(n)),
        "output": nir.Output(output_type=np.array([n]))},
        edges=[("input", "fc"), ("fc", "scale"), ("scale", "lif"), ("lif", "output")])
    net = mimdsim.from_nir(g, dt=1e-3)
    spec = net.specs[0]
    assert spec.beta == pytest.approx(1 - 1e-3 / 0.02) and spec.gain == pytest.approx(4.0 * 1e-3 / 0.02)
    assert spec.threshold == 1.5 and (spec.reset, spec.reset_delay) == ("zero", False)
    np.testing.assert_allclose(net.weights[0], np.array([[1, 2, 3], [1, 2, 3]]))
    np.testing.assert_allclose(net.biases[0], np.full(n, 0.5 / 4.0))  # v_leak folded into the bias


def _graph_with(node_name, node, n=3):
    return nir.NIRGraph(nodes={"input": nir.Input(input_type=np.array([2])), "fc": nir.Linear(weight=np.ones((n, 2))),
                               node_name: node, "output": nir.Output(output_type=np.array([n]))},
                        edges=[("input", "fc"), ("fc", node_name), (node_name, "output")])


def test_unsupported_and_malformed_nir_get_clear_errors(tmp_path):
    with pytest.raises(UnsupportedModel, match=r"node 'thr' has type Threshold"):
        mimdsim.from_nir(_graph_with("thr", nir.Threshold(threshold=np.ones(3))))
    lif = lambda **kw: nir.LIF(**{**dict(tau=np.full(3, 0.01), r=np.ones(3), v_leak=np.zeros(3),  # noqa: E731
                                        v_threshold=np.ones(3), v_reset=np.zeros(3)), **kw})
    with pytest.raises(UnsupportedModel, match=r"node 'lif' \(LIF\) resets to v_reset=0.5"):
        mimdsim.from_nir(_graph_with("lif", lif(v_reset=np.full(3, 0.5))))
    with pytest.raises(ConfigError, match=r"tau=1e-05 is below dt=0.0001.*smaller dt"):
        mimdsim.from_nir(_graph_with("lif", lif(tau=np.full(3, 1e-5))))
    with pytest.raises(ConfigError, match="does not exist"):
        mimdsim.from_nir(tmp_path / "missing.nir")
    bad = tmp_path / "bad.nir"
    bad.write_text("not hdf5")
    with pytest.raises(ConfigError, match="cannot read NIR file"):
        mimdsim.from_nir(bad)
    with pytest.raises(ConfigError, match="needs a NIRGraph or a path"):
        mimdsim.from_nir(42)
    branch = _graph_with("lif", lif())
    branch.nodes["lif2"] = lif()
    branch.edges.append(("fc", "lif2"))
    with pytest.raises(UnsupportedModel, match=r"node 'fc' \(Linear\) branches"):
        mimdsim.from_nir(branch)
    with pytest.raises(UnsupportedModel, match="alpha neuron, which NIR has no node for"):
        mimdsim.to_nir(mimdsim.Network.build([4, 3], "alpha", alpha=0.9, beta=0.8))


def test_cli_simulate_and_compare_take_a_nir_model(tmp_path, capsys):
    from mimdsim.cli import main
    path = tmp_path / "m.nir"
    nir.write(str(path), mimdsim.to_nir(mimdsim.Network.build([12, 10, 6], "leaky", beta=0.9)))
    assert main(["simulate", "--model", str(path), "--timesteps", "5", "--batch", "2"]) == 0
    assert "12-10-6" in capsys.readouterr().out
    assert main(["compare", "--model", str(path), "--timesteps", "5", "--batch", "2", "--execute"]) == 0
    assert "speedup" in capsys.readouterr().out


def test_the_documented_snntorch_recipe_runs_as_written(tmp_path, monkeypatch):
    """docs/neurons.md's export recipe, executed as written: it imports and every layer spikes."""
    import os
    import re
    import warnings
    pytest.importorskip("snntorch")
    pytest.importorskip("nirtorch")
    doc = open(os.path.join(os.path.dirname(__file__), "..", "docs", "neurons.md")).read()
    code = re.findall(r"```python\n(.*?)```", doc.split("## NIR")[1], flags=re.S)[0]
    monkeypatch.chdir(tmp_path)
    ns = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(compile(code, "docs/neurons.md", "exec"), ns)
    assert not [w for w in caught if "never spiked" in str(w.message) or "gradient is zero" in str(w.message)]
    run, net = ns["run"], ns["net"]
    assert net.sizes == (64, 128, 10) and (net.specs[0].reset, net.specs[0].reset_delay) == ("zero", False)
    assert all(ly["spikes"] > 0 for ly in run.report.layers) and all(np.any(g) for g in run.grads)
    assert run.report.layers[0]["dropped_spikes"] == 0  # the input list has room for the 20% inputs
    from mimdsim.cli import main  # the command line the doc gives
    assert main(["simulate", "--model", "model.nir", "--max-activity", "0.1", "--input-capacity", "32", "--execute",
                 "--input-activity", "0.2", "--quiet"]) == 0


def test_batch_dimension_in_input_type_is_read_with_a_warning(tmp_path):
    w = np.random.default_rng(0).standard_normal((10, 12))

    def graph(t):
        return nir.NIRGraph(nodes={"input": nir.Input(input_type=np.array(t)), "w": nir.Linear(weight=w),
                                   "lif": nir.LIF(tau=np.full(10, 1e-3), r=np.full(10, 10.), v_leak=np.zeros(10),
                                                  v_threshold=np.ones(10), v_reset=np.zeros(10)),
                                   "output": nir.Output(output_type=np.array([10]))},
                            edges=[("input", "w"), ("w", "lif"), ("lif", "output")], type_check=False)
    path = tmp_path / "batch.nir"
    nir.write(str(path), graph([4, 12]))
    with pytest.warns(UserWarning, match="read as a batch of 4"):
        assert mimdsim.from_nir(path, reset="zero").sizes == (12, 10)
    with pytest.raises(ConfigError, match=r"type \[5, 7\].*takes 12"):
        mimdsim.from_nir(graph([5, 7]), reset="zero")


def test_reset_is_imported_as_asked_and_warned_about_otherwise():
    model, graph = _snntorch_export("leaky")
    with pytest.warns(UserWarning, match="no reset mechanism"):
        net = mimdsim.from_nir(graph)
    assert net.specs[0].reset == "zero"
    net = mimdsim.from_nir(graph, reset="subtract")
    assert net.specs[0].reset == "subtract" and net.specs[0].reset_delay
    with pytest.raises(ConfigError, match="reset"):
        mimdsim.from_nir(graph, reset="sub")


def test_model_flags_apply_or_are_refused(tmp_path, capsys):
    import re
    from mimdsim.cli import main
    from mimdsim.workloads.snn.from_settings import build_run
    from mimdsim.config import FILE_KEYS
    model, graph = _snntorch_export("leaky")
    path = tmp_path / "m.nir"
    nir.write(str(path), graph)
    v = {k: s.default for k, s in FILE_KEYS.items()}
    v.update({"model.nir": str(path), "model.max_activity": 0.5, "model.input_capacity": 4, "model.theta2": 0.5,
              "run.execute": True})  # theta2 shapes the dynamics: an execution-driven run reads it
    net, _, _ = build_run(v)
    assert net.capacities == (4, 4, 2) and all(s.theta2 == 0.5 for s in net.specs)
    with pytest.warns(UserWarning, match="no reset mechanism"):
        build_run(v)
    net, _, _ = build_run(dict(v, **{"model.nir_reset": "subtract", "model.overflow": "random"}))
    assert all(s.reset == "subtract" for s in net.specs) and net.overflow == "random"
    assert main(["simulate", "--nir-reset", "subtract", "--quiet"]) == 2
    assert "--nir-reset subtract" in capsys.readouterr().err
    for flag, value, msg in (("--layers", "12,10,6", "--layers .*drop --layers"),
                             ("--weight-scale", "3", "--weight-scale 3.0 .*drop --weight-scale"),
                             ("--input-capacity", "99", "--input-capacity 99 .*12")):
        assert main(["simulate", "--model", str(path), flag, value, "--quiet"]) == 2
        err = "\n".join(ln for ln in capsys.readouterr().err.splitlines() if "warning:" not in ln)
        assert len(err.splitlines()) == 1 and re.search(msg, err), err
