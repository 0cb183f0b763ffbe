"""GPU specifications: presets match docs/gpu-model.md, overrides work, bad values are refused
with a message that names the value, the limit and the fix."""
import dataclasses
import json
import math

import numpy as np
import pytest

from mimdsim import ConfigError
from mimdsim.arch.gpu import DESCRIPTIONS, PRECISIONS, PRESETS, GpuSpec, gpu

KiB, MiB, GiB = 1024, 1024 ** 2, 1024 ** 3

# The table of docs/gpu-model.md, "GPU specifications".
TABLE = {
    "a100-40gb": dict(sms=108, clock_hz=1.41e9, fp32_flops=19.5e12, fp16_vector_flops=78e12,
                      tf32_flops=156e12, fp16_flops=312e12, bf16_flops=312e12, hbm_bytes=40 * GiB,
                      hbm_bytes_per_second=1555e9, l2_bytes=40 * MiB, smem_per_sm_bytes=164 * KiB),
    "a100-80gb": dict(sms=108, clock_hz=1.41e9, fp32_flops=19.5e12, fp16_vector_flops=78e12,
                      tf32_flops=156e12, fp16_flops=312e12, bf16_flops=312e12, hbm_bytes=80 * GiB,
                      hbm_bytes_per_second=2039e9, l2_bytes=40 * MiB, smem_per_sm_bytes=164 * KiB),
    "v100": dict(sms=80, clock_hz=1.53e9, fp32_flops=15.7e12, fp16_vector_flops=31.4e12,
                 tf32_flops=None, fp16_flops=125e12, bf16_flops=None, hbm_bytes=32 * GiB,
                 hbm_bytes_per_second=900e9, l2_bytes=6 * MiB, smem_per_sm_bytes=96 * KiB),
    "h100": dict(sms=132, clock_hz=1.98e9, fp32_flops=66.9e12, fp16_vector_flops=133.8e12,
                 tf32_flops=494.7e12, fp16_flops=989.4e12, bf16_flops=989.4e12, hbm_bytes=80 * GiB,
                 hbm_bytes_per_second=3.35e12, l2_bytes=50 * MiB, smem_per_sm_bytes=228 * KiB),
    "h200": dict(sms=132, clock_hz=1.98e9, fp32_flops=66.9e12, fp16_vector_flops=133.8e12,
                 tf32_flops=494.7e12, fp16_flops=989.4e12, bf16_flops=989.4e12, hbm_bytes=141 * GiB,
                 hbm_bytes_per_second=4.8e12, l2_bytes=50 * MiB, smem_per_sm_bytes=228 * KiB),
}
KNOBS = dict(launch_overhead_s=4e-6, graph_node_overhead_s=0.6e-6, graph_launch_s=15e-6, gemm_floor_s=7e-6,
             vector_floor_s=2e-6,
             matrix_efficiency=((128e9, 0.95), (16e9, 0.90), (1e9, 0.60), (0.0, 0.10)),
             vector_efficiency=((16e9, 0.95), (1e9, 0.5), (0.0, 0.1)),
             hbm_efficiency=((100e6, 0.90), (10e6, 0.75), (1e6, 0.60), (0.0, 0.30)))


def test_preset_names():
    assert list(PRESETS) == ["a100-40gb", "a100-80gb", "v100", "h100", "h200", "rtx-3090", "rtx-4090"]
    assert set(DESCRIPTIONS) == set(PRESETS)
    assert PRECISIONS == ("fp32", "tf32", "fp16", "bf16")


@pytest.mark.parametrize("name", list(TABLE))
def test_presets_match_the_table(name):
    g = gpu(name)
    assert isinstance(g, GpuSpec) and g.name == name
    for field, value in {**TABLE[name], **KNOBS}.items():
        assert getattr(g, field) == value, field


def test_default_is_a100_40gb():
    assert gpu() == gpu("a100-40gb")


@pytest.mark.parametrize("name", list(TABLE))
def test_published_peaks_follow_from_sms_and_clock(name):
    """Arithmetic checks of docs/gpu-model.md: peak = SMs x FLOP/clock/SM x clock, within the
    published figures' rounding. H100/H200 tensor peaks use the 1.83 GHz tensor-core boost."""
    g = gpu(name)
    fp32_per_sm = 256 if name in ("h100", "h200") else 128  # FMA lanes x 2
    fp16_vec_per_sm = 256 if name == "v100" else 512  # V100: 2 x FP32; A100: 4 x FP32; H100: 2 x FP32
    tensor_fp16_per_sm = {"v100": 1024, "a100-40gb": 2048, "a100-80gb": 2048}.get(name, 4096)
    tensor_clock = 1.83e9 if name in ("h100", "h200") else g.clock_hz
    assert g.sms * fp32_per_sm * g.clock_hz == pytest.approx(g.fp32_flops, rel=5e-3)
    assert g.sms * fp16_vec_per_sm * g.clock_hz == pytest.approx(g.fp16_vector_flops, rel=5e-3)
    assert g.sms * tensor_fp16_per_sm * tensor_clock == pytest.approx(g.fp16_flops, rel=5e-3)
    if g.tf32_flops is not None:
        assert g.tf32_flops == pytest.approx(g.fp16_flops / 2)


def test_h200_is_an_h100_with_more_and_faster_memory():
    h100, h200 = gpu("h100").to_dict(), gpu("h200").to_dict()
    differ = {k for k in h100 if h100[k] != h200[k]}
    assert differ == {"name", "hbm_bytes", "hbm_bytes_per_second"}


def test_a100_variants_differ_only_in_memory():
    a, b = gpu("a100-40gb").to_dict(), gpu("a100-80gb").to_dict()
    assert {k for k in a if a[k] != b[k]} == {"name", "hbm_bytes", "hbm_bytes_per_second"}


def test_overrides():
    g = gpu("a100-40gb", hbm_bytes_per_second=1e12)
    assert g.hbm_bytes_per_second == 1e12
    assert g.fp16_flops == 312e12 and g.name == "a100-40gb"
    assert gpu(g) is g
    assert gpu(g, sms=54).sms == 54 and g.sms == 108  # a copy; specs are frozen
    assert g.replace(launch_overhead_s=0.0).launch_overhead_s == 0.0  # what-if: free launches
    assert gpu("v100", tf32_flops=100e12).matrix_flops("tf32") == 100e12  # a hypothetical V100
    assert gpu("h100").replace(name="h100-like", sms=114).name == "h100-like"  # a renamed what-if
    assert gpu("a100-40gb", matrix_efficiency=[[1e9, 0.8], [0, 0.2]]).matrix_efficiency == ((1e9, 0.8), (0.0, 0.2))
    with pytest.raises(dataclasses.FrozenInstanceError):
        g.sms = 1


def test_to_dict_round_trips_through_json():
    for name in PRESETS:
        g = gpu(name)
        assert GpuSpec(**json.loads(json.dumps(g.to_dict()))) == g
        hash(g)


@pytest.mark.parametrize("name,suggestion", [
    ("a100", "Did you mean 'a100-40gb' or 'a100-80gb'?"),
    ("H100", "Did you mean 'h100'?"),
    ("h20", "Did you mean 'h200'?"),
    ("v10", "Did you mean 'v100'?"),
])
def test_unknown_gpu_suggests_a_preset(name, suggestion):
    with pytest.raises(ConfigError, match=f"unknown GPU '{name}'; presets are a100-40gb, a100-80gb, v100, h100, h200"):
        gpu(name)
    with pytest.raises(ConfigError) as e:
        gpu(name)
    assert suggestion in str(e.value)


def test_unknown_field():
    with pytest.raises(ConfigError, match=r"unknown GPU field\(s\) \['hbm_bandwidth'\]; valid fields: .*hbm_bytes_per_second"):
        gpu("a100-40gb", hbm_bandwidth=1e12)
    with pytest.raises(ConfigError, match="Did you mean 'launch_overhead' -> 'launch_overhead_s'"):
        gpu("a100-40gb", launch_overhead=1e-6)


@pytest.mark.parametrize("field,value,match", [
    ("fp32_flops", -1.0, r"fp32_flops=-1.0 must be a positive finite number; pass e.g. gpu\('a100-40gb', fp32_flops=1.95e\+13\)"),
    ("fp32_flops", math.nan, "fp32_flops=nan must be a positive finite number"),
    ("hbm_bytes_per_second", math.inf, "hbm_bytes_per_second=inf must be a positive finite number"),
    ("clock_hz", 0, "clock_hz=0 must be a positive finite number"),
    ("fp16_flops", None, "fp16_flops=None must be a positive finite number"),
    ("tf32_flops", -5e12, r"tf32_flops=-5000000000000.0 must be a positive finite number \(or None"),
    ("bf16_flops", math.nan, "bf16_flops=nan must be a positive finite number"),
    ("sms", 0, r"sms=0 must be an integer >= 1; pass e.g. gpu\('a100-40gb', sms=108\)"),
    ("sms", 10.5, "sms=10.5 must be an integer >= 1"),
    ("sms", True, "sms=True must be an integer >= 1"),
    ("hbm_bytes", -1, "hbm_bytes=-1 must be an integer >= 1"),
    ("l2_bytes", 0, "l2_bytes=0 must be an integer >= 1"),
    ("smem_per_sm_bytes", 1.5e5, "smem_per_sm_bytes=150000.0 must be an integer >= 1"),
    ("launch_overhead_s", -1e-6, r"launch_overhead_s=-1e-06 must be a finite number of seconds >= 0"),
    ("gemm_floor_s", math.nan, "gemm_floor_s=nan must be a finite number of seconds >= 0"),
    ("graph_launch_s", math.inf, "graph_launch_s=inf must be a finite number of seconds >= 0"),
])
def test_bad_values(field, value, match):
    with pytest.raises(ConfigError, match=match):
        gpu("a100-40gb", **{field: value})


def test_bad_name():
    with pytest.raises(ConfigError, match="GPU name='' must be a non-empty string"):
        gpu("a100-40gb").replace(name="")


def test_bad_value_message_suggests_the_presets_own_value():
    with pytest.raises(ConfigError, match=r"sms=0 must be an integer >= 1; pass e.g. gpu\('v100', sms=80\)"):
        gpu("v100", sms=0)


@pytest.mark.parametrize("curve,match", [
    ((), "is empty"),
    (((1e9, 0.5), (16e9, 0.9), (0, 0.1)), "thresholds must strictly descend, but 1.6e\\+10 follows 1e\\+09"),
    (((1e9, 0.5), (1e9, 0.6), (0, 0.1)), "thresholds must strictly descend"),
    (((1e9, 0.5),), "ends at threshold 1e\\+09; it must end at threshold 0"),
    (((1e9, 0.5), (0, 0.0)), "efficiency=0.0 must be a finite number in \\(0, 1\\]"),
    (((1e9, 1.5), (0, 0.1)), "efficiency=1.5 must be a finite number in \\(0, 1\\]"),
    (((1e9, math.nan), (0, 0.1)), "efficiency=nan must be a finite number in"),
    (((-1.0, 0.5),), "threshold=-1.0 must be a finite number >= 0"),
    (((1e9,), (0, 0.1)), "is not a \\(threshold, efficiency\\) pair"),
    (0.5, "must be a sequence of \\(threshold, efficiency\\) pairs"),
])
@pytest.mark.parametrize("field", ["matrix_efficiency", "vector_efficiency", "hbm_efficiency"])
def test_bad_efficiency_curves(field, curve, match):
    with pytest.raises(ConfigError, match=f"GPU 'a100-40gb': {field}=") as e:
        gpu("a100-40gb", **{field: curve})
    assert e.match(match)
    assert f"pass e.g. gpu('a100-40gb', {field}=" in str(e.value)


def test_matrix_and_vector_peaks_by_precision():
    a = gpu("a100-40gb")
    assert a.matrix_flops("fp32") == 19.5e12  # CUDA cores, no tensor cores
    assert a.matrix_flops("tf32") == 156e12
    assert a.matrix_flops("fp16") == 312e12
    assert a.matrix_flops("bf16") == 312e12
    assert a.vector_flops("fp32") == a.vector_flops("tf32") == 19.5e12
    assert a.vector_flops("fp16") == a.vector_flops("bf16") == 78e12
    assert a.matrix_precisions == PRECISIONS
    h = gpu("h200")
    assert h.matrix_flops("fp16") == 989.4e12 and h.vector_flops("fp16") == 133.8e12
    v = gpu("v100")
    assert v.matrix_flops("fp32") == 15.7e12 and v.matrix_flops("fp16") == 125e12
    assert v.vector_flops("fp16") == 31.4e12 and v.vector_flops("tf32") == 15.7e12
    assert v.matrix_precisions == ("fp32", "fp16")


@pytest.mark.parametrize("precision", ["tf32", "bf16"])
def test_v100_lacks_tf32_and_bf16(precision):
    with pytest.raises(ConfigError) as e:
        gpu("v100").matrix_flops(precision)
    msg = str(e.value)
    assert f"GPU 'v100' has no {precision} tensor cores" in msg
    assert "its matrix precisions are fp32, fp16" in msg
    assert "a100-40gb" in msg and f"gpu('v100', {precision}_flops=...)" in msg


def test_v100_has_no_bf16_vector_arithmetic():
    with pytest.raises(ConfigError, match="GPU 'v100' has no bf16 arithmetic; its precisions are fp32, fp16"):
        gpu("v100").vector_flops("bf16")


@pytest.mark.parametrize("method", ["matrix_flops", "vector_flops", "bytes_per_element"])
def test_unknown_precision(method):
    with pytest.raises(ConfigError, match="precision='fp8' is not one of 'fp32', 'tf32', 'fp16', 'bf16'"):
        getattr(gpu(), method)("fp8")
    with pytest.raises(ConfigError, match="Did you mean 'fp16'"):
        getattr(gpu(), method)("FP16")


def test_efficiency_lookup_at_and_around_thresholds():
    g = gpu()
    m, v, h = g.matrix_efficiency, g.vector_efficiency, g.hbm_efficiency
    below = np.nextafter
    assert g.efficiency(m, 1e15) == 0.95
    assert g.efficiency(m, 128e9) == 0.95
    assert g.efficiency(m, below(128e9, 0)) == 0.90
    assert g.efficiency(m, 16e9) == 0.90
    assert g.efficiency(m, below(16e9, 0)) == 0.60
    assert g.efficiency(m, 16e9 - 1) == 0.60
    assert g.efficiency(m, 1e9) == 0.60
    assert g.efficiency(m, 1e9 - 1) == 0.10
    assert g.efficiency(m, 1) == 0.10
    assert g.efficiency(m, 0) == 0.10
    assert g.efficiency(v, 16e9) == 0.95 and g.efficiency(v, 16e9 - 1) == 0.5
    assert g.efficiency(v, 1e9) == 0.5 and g.efficiency(v, 0.0) == 0.1
    assert g.efficiency(h, 100e6) == 0.90 and g.efficiency(h, 100e6 - 1) == 0.75
    assert g.efficiency(h, 10e6) == 0.75 and g.efficiency(h, 1e6) == 0.60
    assert g.efficiency(h, 999_999) == 0.30 and g.efficiency(h, 0) == 0.30
    assert g.efficiency(m, np.int64(16_000_000_000)) == 0.90  # numpy sizes work
    assert GpuSpec.efficiency(m, 16e9) == 0.90  # a static method


@pytest.mark.parametrize("x", [-1, math.nan, "16e9", None])
def test_efficiency_lookup_refuses_bad_sizes(x):
    with pytest.raises(ConfigError, match="efficiency lookup: size=.* must be a number >= 0"):
        gpu().efficiency(gpu().matrix_efficiency, x)


def test_bytes_per_element():
    g = gpu()
    assert [g.bytes_per_element(p) for p in PRECISIONS] == [4, 4, 2, 2]
    assert GpuSpec.bytes_per_element("bf16") == 2


def test_geforce_presets_agree_with_sms_times_rate_times_clock():
    """RTX 3090 (GA102) and RTX 4090 (AD102): 128 FP32 units per SM, 256 FLOPs per SM per clock."""
    for name in ("rtx-3090", "rtx-4090"):
        g = gpu(name)
        assert g.fp32_flops == pytest.approx(g.sms * 256 * g.clock_hz, rel=0.01)
        assert g.tf32_flops == g.fp32_flops and g.fp16_flops == pytest.approx(2 * g.fp32_flops, rel=0.01)
        assert g.hbm_bytes == 24 * 2**30
