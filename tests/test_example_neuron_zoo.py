"""The neuron-zoo throughput example runs (quick settings) and its table is consistent."""
import importlib.util
from pathlib import Path


def test_neuron_zoo_example_quick(capsys):
    path = Path(__file__).resolve().parents[1] / "examples" / "neuron_zoo.py"
    spec = importlib.util.spec_from_file_location("neuron_zoo", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    table = mod.main(["--quick"])
    assert len(table) == 2 * 2 * len(mod.MODELS)
    for r in table:
        assert (r["mimd_sparse"] == "n/a" or r["mimd_sparse"] > 0) and r["gpu_fused"] > 0 and r["gpu_eager"] > 0
    fp = {(r["model"], r["population"], r["precision"]): r for r in table}
    assert fp[("Leaky", False, "fp16")]["mimd_dense"] > fp[("Leaky", False, "fp32")]["mimd_dense"]  # AMP vs SIMD
    assert "MIMD sparse" in capsys.readouterr().out
