"""Golden reports: the JSON of reference runs, stored under tests/golden/ and compared exactly.

They pin what the simulator answers — every cycle, byte, spike count and per-tile array — so
that a refactoring that should change nothing provably changes nothing. An intended change
of a number is made by regenerating the files and naming the change in the commit:

    python tests/test_golden.py            # rewrite tests/golden/*.json from the current code
"""
from __future__ import annotations

import json
import math
import pathlib
import sys

import numpy as np
import pytest

GOLDEN = pathlib.Path(__file__).parent / "golden"


def _cli(*argv):
    """A case that runs ``mimdsim ARGV --json FILE`` in process and returns the JSON."""
    def run(tmp):
        from mimdsim.cli import main
        path = tmp / "out.json"
        assert main([*argv, "--json", str(path)]) == 0
        return json.loads(path.read_text())
    run.argv = argv
    return run


def _with_numerics(run) -> dict:
    """The report, the loss and the gradient norms of an execution-driven run."""
    d = run.report.to_dict()
    d["loss"] = float(run.loss)
    # the norm in float64 with an exactly rounded sum (the squares of float32 values are exact), so it
    # depends on the gradients' bits only, not on which BLAS or NumPy summation order computes it
    d["grad_norms"] = [math.sqrt(math.fsum(np.square(np.asarray(g, dtype=np.float64)).ravel())) for g in run.grads]
    return d


def _zoo(tmp):
    """A neuron-zoo model through the Python API: recurrent synaptic + alpha layers, execution-driven."""
    import mimdsim
    from mimdsim.snn.neurons import NeuronSpec
    specs = [NeuronSpec("synaptic", beta=0.9, alpha=0.8, recurrence="all-to-all", learn_beta=True),
             NeuronSpec("alpha", beta=0.8, alpha=0.9), NeuronSpec("leaky", beta=0.85, learn_threshold=True)]
    net = mimdsim.Network.build([40, 32, 24, 6], neuron=specs, delay=1, bias=True, max_activity=0.25, seed=3,
                                weight_scale=4.0)
    rng = np.random.default_rng(5)
    x = (rng.random((12, 8, 40)) < 0.2).astype(np.uint8)
    y = rng.integers(0, 6, 8)
    run = mimdsim.simulate(net, mimdsim.chip("ipu-mk2", tiles=64), inputs=x, labels=y)
    return _with_numerics(run)


def _fp16(tmp):
    """Half precision on the chip, execution-driven, with gradients."""
    import mimdsim
    net = mimdsim.Network.feedforward([100, 64, 10], max_activity=0.2, seed=1, weight_scale=5.0)
    rng = np.random.default_rng(2)
    x = (rng.random((20, 16, 100)) < 0.1).astype(np.uint8)
    y = rng.integers(0, 10, 16)
    run = mimdsim.simulate(net, mimdsim.chip("ipu-mk2", tiles=128), inputs=x, labels=y, precision="fp16")
    return _with_numerics(run)


def _dense(tmp):
    """Dense activations (a matmul per step) on the chip, execution-driven."""
    import mimdsim
    net = mimdsim.Network.build([64, 48, 10], neuron="leaky", beta=0.9, dense=True, seed=4, weight_scale=4.0)
    rng = np.random.default_rng(6)
    x = (rng.random((10, 8, 64)) < 0.2).astype(np.uint8)
    y = rng.integers(0, 10, 8)
    run = mimdsim.simulate(net, mimdsim.chip("ipu-mk2", tiles=64), inputs=x, labels=y)
    return _with_numerics(run)


def _poptorch(tmp):
    """The PopTorch-built dense program: real-valued inputs, an all-to-all recurrent layer, fp16."""
    import mimdsim
    from mimdsim.snn.neurons import NeuronSpec
    specs = [NeuronSpec("synaptic", beta=0.9, alpha=0.8, recurrence="all-to-all"), NeuronSpec("leaky", beta=0.9)]
    net = mimdsim.Network.build([64, 48, 10], neuron=specs, bias=True, seed=4, weight_scale=3.0)
    rng = np.random.default_rng(7)
    x = rng.random((10, 8, 64)).astype(np.float32)
    y = rng.integers(0, 10, 8)
    run = mimdsim.simulate(net, mimdsim.chip("ipu-mk2", tiles=64), inputs=x, labels=y, schedule="poptorch",
                           precision="fp16")
    return _with_numerics(run)


CASES = {
    "simulate_rate_default": _cli("simulate", "--quiet"),
    "simulate_rate_fused": _cli("simulate", "--schedule", "fused", "--quiet"),
    "simulate_execute_default": _cli("simulate", "--execute", "--quiet"),
    "simulate_execute_live": _cli("simulate", "--layers", "784,1000,10", "--timesteps", "25", "--batch", "32",
                                  "--execute", "--input-activity", "0.05", "--weight-scale", "5", "--quiet"),
    "simulate_inference": _cli("simulate", "--layers", "784,1000,10", "--timesteps", "25", "--batch", "32",
                               "--execute", "--inference", "--input-activity", "0.05", "--weight-scale", "5",
                               "--quiet"),
    "simulate_multichip": _cli("simulate", "--layers", "700," + ",".join(["976"] * 20) + ",20", "--timesteps", "30",
                               "--batch", "24", "--input-capacity", "48", "--neurons-per-tile", "8", "--chips", "2",
                               "--activity", "0.005", "--quiet"),
    "compare_all_strategies": _cli("compare", "--strategy", "per-step,fused,sparse", "--precision", "tf32",
                                   "--systolic", "tpu-v1", "--quiet"),
    "zoo_execute": _zoo,
    "fp16_execute": _fp16,
    "dense_execute": _dense,
    "poptorch_execute": _poptorch,
    "simulate_poptorch_seed": _cli("simulate", "--layers", "784,1000,10", "--neuron", "leaky", "--schedule",
                                   "poptorch", "--timesteps", "25", "--batch", "128", "--activity", "0.1", "--quiet"),
    "kalman_vectorised": _cli("compare", "--workload", "kalman"),  # TRACKR's program as built (the default)
    "kalman_register_resident": _cli("compare", "--workload", "kalman", "--schedule", "fused"),
    "kalman_scalar_per_op": _cli("compare", "--workload", "kalman", "--variant", "scalar", "--schedule", "per-op",
                                 "--tracks-per-tile", "100", "--chip", "ipu-mk1", "--tiles", "64"),
    "mlp": _cli("compare", "--workload", "mlp", "--batch", "480"),
}


def _diff(a, b, path="$"):
    """The first differing path, or None."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return f"{path}: keys {sorted(set(a) ^ set(b))} differ"
        for k in a:
            d = _diff(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = _diff(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return None
    return None if a == b and type(a) is type(b) else f"{path}: {a!r} != {b!r}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_report_matches_golden(name, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    got = json.loads(json.dumps(CASES[name](tmp_path)))
    want = json.loads((GOLDEN / f"{name}.json").read_text())
    d = _diff(got, want)
    assert d is None, f"{name} differs from tests/golden/{name}.json at {d}"


def _update():
    import tempfile
    GOLDEN.mkdir(exist_ok=True)
    for name, case in CASES.items():
        with tempfile.TemporaryDirectory() as tmp:
            d = case(pathlib.Path(tmp))
        (GOLDEN / f"{name}.json").write_text(json.dumps(d, indent=1, sort_keys=True) + "\n")
        print(f"wrote tests/golden/{name}.json")


if __name__ == "__main__":
    sys.path.insert(0, str(pathlib.Path(__file__).parents[1]))
    _update()
