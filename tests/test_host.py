"""The host CPU as a part of the GPU platform (mimdsim/arch/host.py): presets, the scaling of a framework's host
times, the --host setting, the host in every GPU report and in the bands, and `mimdsim gpus`."""
import json
import pathlib

import numpy as np
import pytest

import mimdsim
from mimdsim import assumptions as A
from mimdsim.arch.gpu import PRESETS as GPU_PRESETS
from mimdsim.arch.host import DEFAULT_HOSTS, MEASUREMENT_HOST, PRESETS, HostSpec, default_host, host
from mimdsim.cli import main
from mimdsim.compare import compare
from mimdsim.engine.band import host_spec_with
from mimdsim.errors import ConfigError
from mimdsim.gpu.framework import FRAMEWORKS, HOST_TIME_FIELDS, framework, timeline
from mimdsim.kernels.assumed import Pinned
from mimdsim.workloads.snn.baselines import eager
from mimdsim.workloads.snn.baselines.gpu_kernels import estimate

ROOT = pathlib.Path(__file__).resolve().parents[1]
SMALL = dict(sizes=[200, 64, 10], T=8, B=4)


def _hosts_section() -> str:
    text = (ROOT / "docs/gpu-model.md").read_text()
    start = text.index("## Hosts")
    return text[start:text.index("\n## ", start + 1)]


def _speed_entries(name):
    return [a for a in A.REGISTRY.values() if a.kind == "hostcpu" and name in a.presets]


def test_every_preset_is_valid_sourced_and_its_speed_is_a_registry_entry():
    section = _hosts_section()
    for name in PRESETS:
        h = host(name)
        assert isinstance(h, HostSpec) and h.cores >= 2 and h.op_time_scale > 0
        assert f"`{name}`" in section and h.cpu in section, f"docs/gpu-model.md, Hosts, lacks {name}'s row"
        entries = _speed_entries(name)
        if name == MEASUREMENT_HOST:  # the host the per-op figures were measured on: 1 by definition
            assert h.op_time_scale == 1.0 and not entries
        else:  # the preset's value is its named assumption's, inside its range
            (a,) = entries
            assert a.target == "hostcpu.op_time_scale" and a.value == h.op_time_scale and a.low < a.value < a.high
            assert f"`{a.name}`" in (ROOT / "docs/cost-model.md").read_text()
    assert set(DEFAULT_HOSTS) == set(GPU_PRESETS) and set(DEFAULT_HOSTS.values()) <= set(PRESETS)
    assert default_host("a100-40gb") == "dgx-a100" and default_host("rtx-4090") == "desktop-zen4"
    assert default_host("a gpu of no preset") == MEASUREMENT_HOST


def test_bad_hosts_name_the_fix():
    with pytest.raises(ConfigError, match="Did you mean 'dgx-a100'"):
        host("dgx-a10")
    with pytest.raises(ConfigError, match="op_time_scale"):
        host("dgx-a100", op_time_scale=0)
    with pytest.raises(ConfigError, match="boost_clock_hz"):
        host("desktop-zen4", boost_clock_hz=4e9)
    with pytest.raises(ConfigError, match="unknown host field"):
        host("dgx-a100", speed=2)


def test_framework_host_times_scale_with_the_host():
    base = FRAMEWORKS["pytorch-eager"]
    a100 = framework("pytorch-eager", host="dgx-a100")
    assert a100.host == "dgx-a100" and a100.host_scale == 1.46
    for f in HOST_TIME_FIELDS:
        assert getattr(a100, f) == pytest.approx(1.46 * getattr(base, f))
    assert a100.while_iteration_s == base.while_iteration_s and a100.float32_matmul == base.float32_matmul
    # moved onto another host from the scaled spec: the measurement host's figures x the new scale, not compounded
    zen4 = framework(a100, host="desktop-zen4")
    assert zen4.host_forward_op_s == pytest.approx(0.68 * base.host_forward_op_s)
    # a pinned eager_* value is a figure on the measurement host; a pinned speed moves the host
    pins = Pinned.of({"eager_host_forward_op_s": 10e-6, "dgx_a100_op_time_scale": 1.3})
    pinned = framework("pytorch-eager", pins, host="dgx-a100")
    assert pinned.host_forward_op_s == pytest.approx(13e-6)
    assert pinned.host_backward_op_s == pytest.approx(1.3 * base.host_backward_op_s)
    assert framework(a100, Pinned.of({"eager_host_forward_op_s": 10e-6})).host_forward_op_s == pytest.approx(14.6e-6)
    assert host_spec_with(host("dgx-a100"), {"dgx_a100_op_time_scale": 1.3}).op_time_scale == 1.3
    assert host_spec_with(host("dgx-h100"), {"dgx_a100_op_time_scale": 1.3}).op_time_scale == 1.2
    # a framework without host time per op is the same on every host
    cuda = framework("cuda", host="dgx-1")
    assert all(getattr(cuda, f) == 0 for f in HOST_TIME_FIELDS)


def test_an_eager_step_on_a_slower_host_is_slower_by_its_host_bound_share():
    net = mimdsim.Network.feedforward(SMALL["sizes"])
    kw = dict(timesteps=SMALL["T"], batch_size=SMALL["B"], strategy="eager", eager_source="census")
    measured = estimate(net, "a100-40gb", host=MEASUREMENT_HOST, **kw)
    slow = estimate(net, "a100-40gb", **kw)  # the A100's default host, dgx-a100 (x1.46)
    assert slow.placement["host"] == "dgx-a100" and measured.placement["host"] == MEASUREMENT_HOST
    # the step is the overlap of the host's issue times with the device's kernels: re-derive it on the scaled host
    ops = eager.step_ops(SMALL["sizes"], SMALL["T"], SMALL["B"], e=4, specs=getattr(net, "specs", None),
                         bias=[b is not None for b in net.biases])
    spec = mimdsim.gpu.gpu("a100-40gb")
    host_s = eager.host_seconds(ops, FRAMEWORKS["pytorch-eager"])
    device_s = eager.device_seconds(ops, spec, "fp32")
    for scale, rep in ((1.0, measured), (1.46, slow)):
        assert rep.seconds_per_step == pytest.approx(timeline(scale * host_s, device_s)[0], rel=1e-9)
    # this small step is host-bound: the device waits for the host nearly the whole step, so the step grows by
    # nearly 46 % of the host's time, never by more
    wait = measured.kind_totals()["host"] / measured.clock_hz
    assert wait > 0.5 * measured.seconds_per_step
    grew = slow.seconds_per_step - measured.seconds_per_step
    assert 0.46 * wait <= grew <= 0.46 * host_s.sum() * (1 + 1e-9)
    # the hand-written CUDA strategies spend no host time per op: the host does not move them
    fused = dict(kw, strategy="fused")
    fused.pop("eager_source")
    assert estimate(net, "a100-40gb", host="dgx-1", **fused).seconds_per_step == \
        estimate(net, "a100-40gb", host="desktop-zen4", **fused).seconds_per_step


def test_host_flag_is_shown_in_compare_and_its_json(tmp_path, capsys):
    path = tmp_path / "c.json"
    assert main(["compare", "--layers", "200,64,10", "--timesteps", "5", "--batch", "4", "--strategy", "eager,fused",
                 "--host", "desktop-zen4", "--quiet", "--json", str(path)]) == 0
    d = json.loads(path.read_text())
    assert {k: g["placement"]["host"] for k, g in d["gpu"].items()} == dict.fromkeys(("eager", "fused"), "desktop-zen4")
    row = next(ln for ln in capsys.readouterr().out.splitlines() if ln.strip().startswith("host"))
    assert row.split()[1:] == ["-", "desktop-zen4", "desktop-zen4"]
    assert main(["compare", "--timesteps", "5", "--host", "dgx-a10"]) == 2
    assert "Did you mean 'dgx-a100'" in capsys.readouterr().err
    assert main(["compare", "--workload", "kalman", "--host", "dgx-a100"]) == 2  # the Kalman GPU model has no host
    assert "does not use --host" in capsys.readouterr().err


def test_default_compare_prints_each_columns_host(capsys):
    assert main(["compare", "--layers", "200,64,10", "--timesteps", "5", "--batch", "4", "--quiet"]) == 0
    row = next(ln for ln in capsys.readouterr().out.splitlines() if ln.strip().startswith("host"))
    assert row.split()[1:] == ["-", "dgx-a100", "dgx-a100", "dgx-a100", "dgx-a100"]  # keras-rnn-xla, compiled, eager, fused


def test_the_eager_band_covers_the_host_and_a_pin_holds_it():
    net = mimdsim.Network.feedforward(SMALL["sizes"], max_activity=0.1)
    kw = dict(timesteps=SMALL["T"], batch_size=SMALL["B"], activity=0.05, strategies=("eager", "fused"))
    c = compare(net, "ipu-mk2", "a100-40gb", **kw)
    rows = {r["name"]: r for r in c.gpu["eager"].uncertainty["drivers"]}
    speed = rows["dgx_a100_op_time_scale"]
    assert speed["range"] == [1.3, 1.6] and speed["at_low"] < c.gpu["eager"].seconds_per_step < speed["at_high"]
    assert "dgx_a100_op_time_scale" not in {r["name"] for r in c.gpu["fused"].uncertainty["drivers"]}
    lo, hi = c.gpu["eager"].uncertainty["seconds_per_step"]
    assert lo <= speed["at_low"] and speed["at_high"] <= hi
    held = compare(net, "ipu-mk2", "a100-40gb", assume={"dgx_a100_op_time_scale": 1.6}, **kw)
    assert held.gpu["eager"].seconds_per_step == pytest.approx(speed["at_high"])
    assert held.gpu["eager"].uncertainty["pinned"] == {"dgx_a100_op_time_scale": 1.6}
    assert "dgx_a100_op_time_scale" not in {r["name"] for r in held.gpu["eager"].uncertainty["drivers"]}
    # another host: its own speed moves, the A100's default host's does not
    other = compare(net, "ipu-mk2", "a100-40gb", host="dgx-h100", **kw)
    names = {r["name"] for r in other.gpu["eager"].uncertainty["drivers"]}
    assert "dgx_h100_op_time_scale" in names and "dgx_a100_op_time_scale" not in names


def test_a_pinned_host_speed_no_column_reads_is_refused():
    net = mimdsim.Network.feedforward(SMALL["sizes"], max_activity=0.1)
    kw = dict(timesteps=SMALL["T"], batch_size=SMALL["B"], activity=0.05)
    with pytest.raises(ConfigError, match="dgx_h100_op_time_scale.*does not read.*host='dgx-h100'"):
        compare(net, "ipu-mk2", "a100-40gb", strategies=("eager",), assume={"dgx_h100_op_time_scale": 1.1}, **kw)
    with pytest.raises(ConfigError, match="no column of this comparison \\(fused\\) spends host time per op"):
        compare(net, "ipu-mk2", "a100-40gb", strategies=("fused",), assume={"dgx_a100_op_time_scale": 1.4}, **kw)
    # a spec whose speed the user set keeps it: no band driver moves it
    mine = host("dgx-a100", op_time_scale=2.0)
    c = compare(net, "ipu-mk2", "a100-40gb", strategies=("eager",), host=mine, **kw)
    assert "dgx_a100_op_time_scale" not in {r["name"] for r in c.gpu["eager"].uncertainty["drivers"]}
    assert c.gpu["eager"].placement["host"] == "dgx-a100"


def test_gpus_lists_the_default_hosts_and_the_host_presets(capsys):
    assert main(["gpus"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    a100 = next(ln for ln in lines if ln.startswith("a100-40gb"))
    assert "dgx-a100" in a100.split()
    for name in PRESETS:
        row = next(ln for ln in lines if ln.split() and ln.split()[0] == name)
        assert f"{host(name).op_time_scale:.2f}" in row.split()
    assert np.all([name in out for name in PRESETS])
