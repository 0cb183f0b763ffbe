"""Named assumptions and bands: the registry is the docs' table and the specs' values; every driver
moves the time the way its meaning says, the re-costed band equals a full re-run, the corners
bracket every one-at-a-time result; --assume on the command line, in files and as a sweep axis."""
import json
import pathlib
import re

import pytest

from mimdsim import assumptions as A
from mimdsim.arch import chip, system
from mimdsim.arch.gpu import gpu
from mimdsim.cli import main
from mimdsim.compare import compare
from mimdsim.engine.band import Recoster
from mimdsim.engine.run import run_program
from mimdsim.errors import ConfigError
from mimdsim.kernels.graphcore_snn import vertices as graphcore_snn
from mimdsim.poplibs.ops import _OneGroup
from mimdsim.program import Launch, Program, ProgramMeta, Superstep
from mimdsim.snn import Network
from mimdsim.workloads.snn.simulate import simulate

ROOT = pathlib.Path(__file__).resolve().parents[1]
# a small published-op network (fast) and a two-chip one (cross-chip links)
SMALL = dict(sizes=[200, 64, 64, 4], T=12, B=4)
FASTER_AT_HIGH = {"mk1_exchange_broadcast_bytes_per_cycle", "gpu_matrix_efficiency_scale",  # a rate, not a cost
                  "compiled_coissue_fraction"}  # a share of instructions that cost nothing


def _run(preset="ipu-mk2", chips=1, assume=None, band=True, neurons_per_tile=None):
    net = Network.feedforward(SMALL["sizes"], max_activity=0.1)
    return simulate(net, system(preset, chips=chips), timesteps=SMALL["T"], batch_size=SMALL["B"], activity=0.05,
                    assume=assume, band=band, neurons_per_tile=neurons_per_tile).report


def test_the_docs_table_is_the_registry():
    text = (ROOT / "docs/cost-model.md").read_text()
    start = text.index("<!-- assumptions table: generated from mimdsim/assumptions.py -->")
    end = text.index("<!-- end of assumptions table -->")
    assert text[start:end].split("\n", 1)[1].strip() == A.markdown_table()


def test_the_specs_and_codelets_use_the_registry_values():
    for a in A.REGISTRY.values():
        for p in a.presets:
            if a.kind == "chip":
                assert float(getattr(chip(p), a.field)) == a.value, (a.name, p)
            elif a.kind == "gpu" and a.field != "matrix_efficiency_scale":
                assert float(getattr(gpu(p), a.field)) == a.value, (a.name, p)
    assert A.REGISTRY["surrogate_arithmetic_instructions"].value == graphcore_snn.SURROGATE_SOFT_DOUBLE == 505
    # 14 listed ids, hand: SOG_SETUP 10 + 14 x (SOG_PER_ID 13 - 2 bundled + 505) = 7,234; pinned to the
    # float path 4: 10 + 14 x (11 + 4) = 220; with no co-issue: 10 + 14 x (13 + 505) = 7,262
    assert graphcore_snn.state_out_grad_instructions(14) == 7234
    assert graphcore_snn.state_out_grad_instructions(14, pinned=A.check({"surrogate_arithmetic_instructions": 4})) \
        == 220 == graphcore_snn.state_out_grad_instructions(14, surrogate="float")
    assert graphcore_snn.state_out_grad_instructions(14, pinned=A.check({"compiled_coissue_fraction": 0})) == 7262


@pytest.mark.parametrize("preset,chips", [("ipu-mk2", 1), ("ipu-mk2", 2), ("ipu-mk1", 2)])
def test_each_driver_moves_the_time_its_way_and_equals_a_full_rerun(preset, chips):
    report = _run(preset, chips, neurons_per_tile=8 if chips == 2 else None)
    u = report.uncertainty
    names = {d["name"] for d in u["drivers"]}
    assert names == {a.name for a in A.for_preset("chip", preset)}
    moved = 0
    for d in u["drivers"]:
        lo_t, hi_t = d["at_low"], d["at_high"]
        if d["name"] in FASTER_AT_HIGH:
            assert hi_t <= lo_t, d
        else:
            assert lo_t <= hi_t, d
        moved += hi_t != lo_t
        for end, got in zip(d["range"], (lo_t, hi_t)):  # the band's re-cost is exact
            full = _run(preset, chips, assume={d["name"]: end}, band=False,
                        neurons_per_tile=8 if chips == 2 else None).seconds_per_step
            assert got == pytest.approx(full, rel=1e-12, abs=0), (d["name"], end)
        # the corners bracket every one-at-a-time result and the point estimate
        assert u["seconds_per_step"][0] <= min(lo_t, hi_t) <= report.seconds_per_step <= max(lo_t, hi_t) \
            <= u["seconds_per_step"][1]
    assert moved >= 3
    lo, hi = u["seconds_per_step"]
    assert u["samples_per_second"] == [SMALL["B"] / hi, SMALL["B"] / lo]
    swings = [d["seconds_per_step"][1] - d["seconds_per_step"][0] for d in u["drivers"]]
    assert swings == sorted(swings, reverse=True)  # a tornado: top drivers first


@pytest.mark.parametrize("preset,chips", [("ipu-mk2", 1), ("ipu-mk2", 2)])
def test_the_corners_equal_a_full_rerun_with_every_driver_pinned(preset, chips):
    """Both corners move every driver at once (a barrier before each local program together with the
    compiled code's bundles and the surrogate's arithmetic): the band's re-cost equals a full run with
    all of them pinned, to the cycle."""
    npt = 8 if chips == 2 else None
    report = _run(preset, chips, neurons_per_tile=npt)
    drivers = report.uncertainty["drivers"]
    for corner, pick in ((0, min), (1, max)):
        values = {}
        for d in drivers:  # the end that gives the corner's time (as band() picks it)
            values[d["name"]] = d["range"][0] if pick(d["at_low"], d["at_high"]) == d["at_low"] else d["range"][1]
        full = _run(preset, chips, assume=values, band=False, neurons_per_tile=npt).seconds_per_step
        assert report.uncertainty["seconds_per_step"][corner] == pytest.approx(full, rel=1e-12, abs=0), (corner, values)


def test_additive_constants_move_the_time_by_value_times_events():
    """exchange_phase_overhead_cycles adds (100 - 0) cycles per exchange phase: counted by hand from the
    report (every superstep whose exchange is non-zero has one phase into the tiles; io.inputs has one)."""
    r = _run()
    phases = sum(s["count"] for s in r.steps.values() if s["exchange"] > 0 or s["host"] > 0)
    d = next(d for d in r.uncertainty["drivers"] if d["name"] == "exchange_phase_overhead_cycles")
    assert (d["at_high"] - d["at_low"]) * r.clock_hz == pytest.approx(100 * phases, rel=1e-9)


def test_run_launch_is_charged_per_launch():
    sysm = system("ipu-mk2")
    prog = Program(system=sysm, mapping=_OneGroup(), timesteps=1, batch_size=1, tensors=[],
                   schedule=[Launch(), Superstep("sync", "forward", (), (), "chip"), Launch()],
                   meta=ProgramMeta(model="launch", workload="op"))
    rep = run_program(prog, record=[])
    rc = Recoster(prog, rep.total_cycles, [])
    clock = sysm.chip.clock_hz
    assert rep.total_cycles == pytest.approx(2 * 192e-6 * clock + 126)
    assert rc.total_cycles({"run_launch_s": 50e-6}) == pytest.approx(2 * 50e-6 * clock + 126)


def test_pinning_holds_an_assumption_and_set_fields_count_as_pinned():
    r = _run(assume={"surrogate_arithmetic_instructions": 4})
    base = _run()
    assert r.seconds_per_step < base.seconds_per_step
    assert r.uncertainty["pinned"] == {"surrogate_arithmetic_instructions": 4.0}
    assert "surrogate_arithmetic_instructions" not in {d["name"] for d in r.uncertainty["drivers"]}
    net = Network.feedforward(SMALL["sizes"], max_activity=0.1)
    held = simulate(net, chip("ipu-mk2", exchange_phase_overhead_cycles=300), timesteps=SMALL["T"],
                    batch_size=SMALL["B"], activity=0.05).report
    assert "exchange_phase_overhead_cycles" not in {d["name"] for d in held.uncertainty["drivers"]}
    same = _run(assume={"exchange_phase_overhead_cycles": 300}, band=False)
    assert held.seconds_per_step == same.seconds_per_step


def _exit(argv) -> int:
    try:
        return main(argv)
    except SystemExit as e:  # argparse's own exit
        return e.code


def test_bad_names_and_values_are_clear_errors(capsys):
    assert _exit(["simulate", "--assume", "exchange_overhead=600"]) != 0
    assert "Did you mean 'exchange_phase_overhead_cycles'" in capsys.readouterr().err
    assert _exit(["simulate", "--assume", "host_latency_s"]) != 0
    assert "--assume takes NAME=VALUE" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="Did you mean 'surrogate_arithmetic_instructions'"):
        A.check({"surrogate_arithmetic": 4})
    with pytest.raises(ConfigError, match=r"outside 4-100000"):
        A.check({"surrogate_arithmetic_instructions": 1})
    with pytest.raises(ConfigError, match="not a number"):
        A.check({"host_latency_s": "fast"})


def test_a_codelet_or_call_the_program_does_not_run_is_neither_driver_nor_pin():
    """The fused program runs none of the published op's C++ vertices and makes no PopTorch call: their
    assumptions are not in its band, and pinning one is refused naming what reads it."""
    net = Network.feedforward(SMALL["sizes"], max_activity=0.1)
    kw = dict(timesteps=SMALL["T"], batch_size=SMALL["B"], activity=0.05, schedule="fused")
    names = {d["name"] for d in simulate(net, "ipu-mk2", **kw).report.uncertainty["drivers"]}
    assert not names & {"surrogate_arithmetic_instructions", "compiled_coissue_fraction", "poptorch_call_s"}
    assert {"local_sync_cycles", "exchange_phase_overhead_cycles"} <= names
    with pytest.raises(ConfigError, match=r"compiled_coissue_fraction: this program \(fused schedule\).*"
                                          r"read by gsnn.state_update.*drop it"):
        simulate(net, "ipu-mk2", assume={"compiled_coissue_fraction": 0}, **kw)
    with pytest.raises(ConfigError, match=r"poptorch_call_s: this program \(published schedule\)"):
        _run(assume={"poptorch_call_s": 1e-5})


def test_an_assumption_the_run_does_not_read_is_refused_not_dropped(capsys):
    """Pinning an entry of another preset, or of a column the run does not have, would change nothing:
    a clear error naming what reads it, never a silent no-op."""
    # the remedy names the parameter: as Python spells it here, as its flag on the command line
    with pytest.raises(ConfigError, match=r"mk1_sync_cycles: it sets chip.sync_cycles of ipu-mk1.*simulate on bow.*"
                                          r"use chip='ipu-mk1'") as info:
        _run("bow", assume={"mk1_sync_cycles": 130})
    from mimdsim.cli.terms import cli_text
    assert cli_text(info.value).endswith("use --chip ipu-mk1")
    with pytest.raises(ConfigError, match=r"gpu_gemm_floor_s.*simulate on ipu-mk2.*would change nothing"):
        _run(assume={"gpu_gemm_floor_s": 1e-5})
    assert _exit(["simulate", "--assume", "eager_host_forward_op_s=9e-6"]) != 0
    assert "compare with a GPU column on pytorch-eager" in capsys.readouterr().err
    net = Network.feedforward(SMALL["sizes"], max_activity=0.1)
    kw = dict(timesteps=SMALL["T"], batch_size=SMALL["B"], activity=0.05, band=False)
    with pytest.raises(ConfigError, match=r"tpu_vector_flops_per_cycle.*compare systolic='tpu-v1'"):
        compare(net, strategies=["fused"], assume={"tpu_vector_flops_per_cycle": 300}, **kw)
    with pytest.raises(ConfigError, match=r"eager_host_forward_op_s.*\(fused\)"):  # fused runs on "cuda", not eager
        compare(net, strategies=["fused"], assume={"eager_host_forward_op_s": 9e-6}, **kw)
    # what the run reads is accepted: the chip's and the GPU's own entries, their energy constants, the array's
    c = compare(net, strategies=["eager"], systolic="tpu-v1",
                assume={"local_sync_cycles": 126, "gpu_gemm_floor_s": 1e-5, "eager_host_forward_op_s": 9e-6,
                        "ipu-mk2.idle_w": 50, "a100-40gb.idle_w": 40, "tpu_vector_flops_per_cycle": 300}, **kw)
    assert c.mimd.seconds_per_step > _run(band=False).seconds_per_step  # the 126-cycle barrier was applied


def test_compare_bands_every_column_with_the_gpus_assumptions():
    net = Network.feedforward(SMALL["sizes"], max_activity=0.1)
    c = compare(net, "ipu-mk2", "a100-40gb", timesteps=SMALL["T"], batch_size=SMALL["B"], activity=0.05,
                strategies=("compiled", "eager", "fused"))
    d = c.to_dict()
    assert set(d["uncertainty"]["speedup"]) == {"compiled", "eager", "fused"}
    for k, (lo, hi) in c.speedup_band.items():
        g = c.gpu[k].uncertainty
        # the host's speed drives a column whose framework spends host time per op (eager: PyTorch's dispatch)
        on_host = {a.name for a in A.for_preset("hostcpu", "dgx-a100")} if k == "eager" else set()
        assert {x["name"] for x in g["drivers"]} == {a.name for a in A.for_preset("gpu", "a100-40gb")} | \
            {a.name for a in A.for_preset("framework", c.gpu[k].placement["framework"])} | on_host
        for x in g["drivers"]:  # floors and launches cost time; a higher efficiency saves it
            assert (x["at_high"] <= x["at_low"]) if x["name"] in FASTER_AT_HIGH else (x["at_low"] <= x["at_high"])
        m = c.mimd.uncertainty["samples_per_second"]
        assert lo == pytest.approx(m[0] / g["samples_per_second"][1]) and hi == pytest.approx(m[1] / g["samples_per_second"][0])
        assert lo <= c.speedup[k] <= hi
    pinned = compare(net, "ipu-mk2", "a100-40gb", timesteps=SMALL["T"], batch_size=SMALL["B"], activity=0.05,
                     strategies=("eager",), assume={"gpu_launch_overhead_s": 6.5e-6})
    slow = next(x for x in c.gpu["eager"].uncertainty["drivers"] if x["name"] == "gpu_launch_overhead_s")["at_high"]
    assert pinned.gpu["eager"].seconds_per_step == pytest.approx(slow)
    assert pinned.gpu["eager"].uncertainty["pinned"] == {"gpu_launch_overhead_s": 6.5e-6}


def test_assume_on_the_command_line_in_a_file_and_as_a_sweep_axis(tmp_path, capsys):
    flags = ["--layers", "200,64,64,4", "--timesteps", "12", "--batch", "4", "--max-activity", "0.1",
             "--quiet"]
    out = tmp_path / "a.json"
    assert main(["simulate", *flags, "--assume", "surrogate_arithmetic_instructions=4", "--assumptions",
                 "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "band " in text and "pinned: surrogate_arithmetic_instructions=4" in text and "all at once" in text
    cli = json.loads(out.read_text())
    assert set(cli["uncertainty"]) >= {"seconds_per_step", "samples_per_second", "drivers"}
    toml = tmp_path / "e.toml"
    toml.write_text('[model]\nlayers = [200, 64, 64, 4]\ntimesteps = 12\nbatch = 4\nmax_activity = 0.1\n'
                    '[assume]\nsurrogate_arithmetic_instructions = 4\n[output]\njson = "f.json"\nquiet = true\n')
    assert main(["run", str(toml)]) == 0
    assert json.loads((tmp_path / "f.json").read_text())["seconds_per_step"] == cli["seconds_per_step"]
    bad = tmp_path / "bad.toml"
    bad.write_text(toml.read_text().replace("surrogate_arithmetic_instructions", "surrogate_arith"))
    capsys.readouterr()
    assert main(["run", str(bad)]) != 0
    assert re.search(r"bad.toml:7: \[assume\] surrogate_arith = 4: no assumption of that name. Did you mean "
                     r"'surrogate_arithmetic_instructions'",
                     capsys.readouterr().err)
    sweep = tmp_path / "s.toml"
    sweep.write_text(toml.read_text().replace('[output]\njson = "f.json"\nquiet = true\n', "")
                     .replace("[assume]\nsurrogate_arithmetic_instructions = 4\n", "")
                     + '[sweep]\nresults = "r.jsonl"\n[sweep.axes]\n"assume.surrogate_arithmetic_instructions" = [4, 505]\n')
    assert main(["sweep", str(sweep)]) == 0
    recs = {r["params"]["assume.surrogate_arithmetic_instructions"]: r
            for r in map(json.loads, (tmp_path / "r.jsonl").read_text().splitlines())}
    assert recs[4]["seconds_per_step"] == cli["seconds_per_step"] < recs[505]["seconds_per_step"]
    assert recs[505]["uncertainty"]["seconds_per_step"][0] < recs[505]["seconds_per_step"]
    sweep.write_text(sweep.read_text().replace("[4, 505]", "[4, -1]"))
    assert main(["sweep", str(sweep)]) != 0
    assert re.search(r"axis 'assume.surrogate_arithmetic_instructions': value -1: outside 4-100000", capsys.readouterr().err)


def test_validate_says_whether_each_point_is_inside_its_band():
    from mimdsim.validation import Point
    assert Point("p", 8.0, 6.0, "ms/step", 8 / 6, band=[5.5, 9.0]).inside is True
    assert Point("p", 8.0, 4.0, "ms/step", 2.0, band=[5.5, 9.0]).to_dict()["inside_band"] is False
    assert Point("p", 8.0, 4.0, "ms/step", 2.0).inside is None


# ---- issue 25 (b): eager PyTorch's host constants, the systolic arrays', Bow/MK1's, the energy constants ----
EAGER = ("eager_host_forward_op_s", "eager_host_backward_op_s", "eager_loss_call_s", "eager_optimizer_call_s")


def _compare(**kw):
    net = Network.feedforward(SMALL["sizes"], max_activity=0.1)
    return compare(net, "ipu-mk2", "a100-40gb", timesteps=SMALL["T"], batch_size=SMALL["B"], activity=0.05, **kw)


def test_eager_host_constants_drive_the_eager_column_and_equal_a_full_rerun():
    c = _compare(strategies=("eager",), systolic="scalesim-32x32")
    r = c.gpu["eager"]
    drivers = {d["name"]: d for d in r.uncertainty["drivers"]}
    assert set(EAGER) <= set(drivers)
    launches = r.placement["kernel_launches"]
    for name in EAGER:
        d, a = drivers[name], A.REGISTRY[name]
        assert d["at_low"] <= r.seconds_per_step <= d["at_high"], d  # host work costs time
        # a per-op or per-call cost moves the step by at most (high - low) x its ops (the device hides the rest)
        assert d["at_high"] - d["at_low"] <= (a.high - a.low) * launches * (1 + 1e-12)
        for end, got in zip(d["range"], (d["at_low"], d["at_high"])):
            full = _compare(strategies=("eager",), assume={name: end}, band=False).gpu["eager"]
            assert got == pytest.approx(full.seconds_per_step, rel=1e-12, abs=0), (name, end)
    fwd = drivers["eager_host_forward_op_s"]
    assert fwd["at_high"] > fwd["at_low"]  # the forward pass is host-bound at this size: it moves
    lo, hi = r.uncertainty["seconds_per_step"]
    assert lo <= min(d["at_low"] for d in drivers.values()) and max(d["at_high"] for d in drivers.values()) <= hi
    # the speedup band of the column widens to hold them
    assert c.speedup_band["eager"][1] >= c.mimd.uncertainty["samples_per_second"][1] / (SMALL["B"] / fwd["at_high"])
    # pinned: a held constant is no driver and is recorded
    pinned = _compare(strategies=("eager",), assume={"eager_host_forward_op_s": 8.3e-6}, band=True).gpu["eager"]
    assert pinned.seconds_per_step == pytest.approx(fwd["at_low"], rel=1e-12)
    assert pinned.uncertainty["pinned"] == {"eager_host_forward_op_s": 8.3e-6}
    assert "eager_host_forward_op_s" not in {d["name"] for d in pinned.uncertainty["drivers"]}


def test_systolic_assumptions_band_the_systolic_column():
    c = _compare(strategies=("fused",), systolic="scalesim-32x32")
    s = c.systolic
    d = {x["name"]: x for x in s.uncertainty["drivers"]}
    assert set(d) == {"scalesim32_clock_hz", "scalesim32_vector_flops_per_cycle"}
    # the clock moves a SCALE-Sim step exactly as used / value (its DRAM bandwidth is per cycle)
    assert d["scalesim32_clock_hz"]["at_low"] == pytest.approx(s.seconds_per_step * 1e9 / 200e6, rel=1e-12)
    assert d["scalesim32_clock_hz"]["at_high"] == s.seconds_per_step
    v = d["scalesim32_vector_flops_per_cycle"]
    assert v["at_high"] <= s.seconds_per_step <= v["at_low"] and v["at_high"] < v["at_low"]  # a rate: faster at high
    for name, x in d.items():
        for end, got in zip(x["range"], (x["at_low"], x["at_high"])):
            full = _compare(strategies=("fused",), systolic="scalesim-32x32", assume={name: end}, band=False).systolic
            assert got == pytest.approx(full.seconds_per_step, rel=1e-12, abs=0), (name, end)
    lo, hi = s.uncertainty["seconds_per_step"]
    assert lo <= min(x["seconds_per_step"][0] for x in d.values()) and hi >= max(x["at_low"] for x in d.values())
    assert c.speedup_band["systolic"][1] > c.mimd.uncertainty["samples_per_second"][1] / s.samples_per_second


@pytest.mark.parametrize("preset,field,name", [("bow", "link_bytes_per_second", "bow_link_bytes_per_second"),
                                               ("bow", "host_bytes_per_second", "bow_host_bytes_per_second"),
                                               ("ipu-mk1", "link_bytes_per_second", "mk1_link_bytes_per_second")])
def test_bow_and_mk1_values_set_equal_to_another_preset_are_drivers(preset, field, name):
    assert float(getattr(chip(preset), field)) == A.REGISTRY[name].value
    assert A.REGISTRY[name].presets == (preset,) and name not in {a.name for a in A.for_preset("chip", "ipu-mk2")}
    chips = 2 if "link" in name else 1
    r = _run(preset, chips, neurons_per_tile=8 if chips == 2 else None)
    d = next(x for x in r.uncertainty["drivers"] if x["name"] == name)
    assert d["at_high"] <= r.seconds_per_step <= d["at_low"]  # a bandwidth: never slower when higher
    if "host" in name:  # the step's input stream crosses the host link: it moves
        assert d["at_high"] < d["at_low"]
    for end, got in zip(d["range"], (d["at_low"], d["at_high"])):
        full = _run(preset, chips, assume={name: end}, band=False, neurons_per_tile=8 if chips == 2 else None)
        assert got == pytest.approx(full.seconds_per_step, rel=1e-12, abs=0), (name, end)
    lo, hi = r.uncertainty["seconds_per_step"]
    assert lo <= d["at_high"] and d["at_low"] <= hi


def test_energy_constants_are_assumptions_whose_band_equals_full_reruns():
    from mimdsim.energy import CONSTANTS
    for c in CONSTANTS.values():  # every energy constant with a range is one registry entry, same value
        assert (c.name in A.REGISTRY) == (c.low < c.high), c.name
        if c.low < c.high:
            a = A.REGISTRY[c.name]
            assert (a.kind, a.value, a.low, a.high, a.unit) == ("energy", c.value, c.low, c.high, c.unit)
    r = _run()
    b = r.energy["band"]
    names = {d["name"] for d in b["drivers"]}
    assert {"ipu-mk2.idle_w", "ipu-mk2.tile_cycle_pj", "ipu.exchange_pj_per_byte", "host.pcie_pj_per_bit"} <= names
    assert all(A.REGISTRY[n].applies("ipu-mk2") for n in names)
    for d in b["drivers"]:
        assert d["at_low"] <= r.energy["joules_per_step"] <= d["at_high"], d  # every constant costs energy
        for end, got in zip(d["range"], (d["at_low"], d["at_high"])):
            full = _run(assume={d["name"]: end}, band=False).energy["joules_per_step"]
            assert got == pytest.approx(full, rel=1e-12, abs=0), (d["name"], end)
        assert b["joules_per_step"][0] <= d["at_low"] and d["at_high"] <= b["joules_per_step"][1]
    # the corners: every driver at its low (high) end at once, re-run in full
    for i, end in enumerate(("low", "high")):
        full = _run(assume={n: getattr(A.REGISTRY[n], end) for n in names}, band=False).energy
        assert b["joules_per_step"][i] == pytest.approx(full["joules_per_step"], rel=1e-12)
        assert full["band"]["joules_per_step"] == [full["joules_per_step"]] * 2 and full["band"]["assumptions"] == 0
    assert r.seconds_per_step == _run(assume={"ipu-mk2.idle_w": 100}, band=False).seconds_per_step  # energy only


def test_new_names_on_the_command_line(tmp_path, capsys):
    flags = ["--layers", "200,64,64,4", "--timesteps", "12", "--batch", "4", "--max-activity", "0.1", "--quiet"]
    out = tmp_path / "c.json"
    assert main(["compare", *flags, "--strategy", "eager", "--systolic", "scalesim-32x32", "--assume",
                 "eager_host_forward_op_s=8.3e-6", "--assume", "scalesim32_clock_hz=5e8", "--assume",
                 "ipu-mk2.idle_w=40", "--json", str(out)]) == 0
    d = json.loads(out.read_text())
    assert d["gpu"]["eager"]["uncertainty"]["pinned"] == {"eager_host_forward_op_s": 8.3e-6}
    assert d["systolic"]["uncertainty"]["pinned"] == {"scalesim32_clock_hz": 5e8}
    assert d["mimd"]["energy"]["band"]["pinned"] == {"ipu-mk2.idle_w": 40.0}
    capsys.readouterr()
    assert _exit(["simulate", "--assume", "eager_host_forward_op=1e-5"]) != 0
    assert "Did you mean 'eager_host_forward_op_s'" in capsys.readouterr().err
    with pytest.raises(ConfigError, match=r"outside 1e\+06-1e\+11"):
        A.check({"scalesim32_clock_hz": 10})


def test_the_geforce_fp32_gemm_share_is_a_driver_of_strict_fp32_gemms_only():
    """rtx4090_fp32_gemm_share scales a compute-bound strict-FP32 GEMM exactly (time x value / pinned), leaves TF32
    (tensor cores) alone, applies to no other GPU, and is among a 4090 column's band drivers."""
    from mimdsim.engine.band import gpu_spec_with
    from mimdsim.gpu.model import gemm, kernel_seconds

    g = gpu("rtx-4090")
    k = gemm("fwd", "forward", 8000, 4096, 4096, 4, 1)
    hi = gpu_spec_with(g, {"rtx4090_fp32_gemm_share": 0.709})
    assert kernel_seconds(k, hi, "fp32") == pytest.approx(kernel_seconds(k, g, "fp32") * 0.681 / 0.709, rel=1e-12)
    assert kernel_seconds(k, hi, "tf32") == kernel_seconds(k, g, "tf32")
    assert [a.name for a in A.for_preset("gpu", "rtx-4090") if a.field == "fp32_gemm_share"] == ["rtx4090_fp32_gemm_share"]
    assert not [a for a in A.for_preset("gpu", "a100-40gb") if a.field == "fp32_gemm_share"]
    net = Network.feedforward(SMALL["sizes"], max_activity=0.1)
    c = compare(net, gpu="rtx-4090", strategies=["fused"], precision="fp32", timesteps=SMALL["T"],
                batch_size=SMALL["B"], activity=0.05)
    assert "rtx4090_fp32_gemm_share" in [d["name"] for d in c.others["fused"].uncertainty["drivers"]]



def test_no_process_wide_pins_two_threads_with_different_pins_get_their_own_numbers():
    """Pinned assumptions are a value passed to the run, not a process-wide setting: two runs with
    different pins (a codelet constant, a host time, an energy constant), started together in two
    threads and each repeated, cost exactly what each costs alone, and the module holds no pin."""
    import threading

    import mimdsim.kernels.assumed as assumed

    pins = [{"surrogate_arithmetic_instructions": 40, "ipu.exchange_pj_per_byte": A.REGISTRY[
        "ipu.exchange_pj_per_byte"].low}, {"surrogate_arithmetic_instructions": 1000, "compiled_coissue_fraction": 0}]
    alone = [_run(assume=p, band=False) for p in pins]
    assert alone[0].seconds_per_step != alone[1].seconds_per_step
    assert alone[0].energy["joules_per_step"] != alone[1].energy["joules_per_step"]
    got = [[], []]
    start = threading.Barrier(2)

    def run(i):
        start.wait()
        for _ in range(3):
            got[i].append(_run(assume=pins[i], band=False))

    threads = [threading.Thread(target=run, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in (0, 1):
        for r in got[i]:
            assert (r.seconds_per_step, r.energy["joules_per_step"]) == \
                (alone[i].seconds_per_step, alone[i].energy["joules_per_step"]), i
    tables = [f"{m.__name__}.{n}" for m in (assumed, A) for n, v in vars(m).items()
              if isinstance(v, dict) and not n.startswith("__")]
    assert tables == ["mimdsim.assumptions.REGISTRY"]  # the entries only: no module-level table of pins


def test_the_placement_search_times_its_candidates_under_the_runs_pins():
    """The search's scores read the same pinned codelet constants as the run they choose for: with every
    bundle unpaired (compiled_coissue_fraction 0) each candidate is slower than at the default, and the
    chosen one's score equals the placement module's score of that program under the same pins and the
    run's rates, which at T = 12 is the run's own step time."""
    from mimdsim.workloads.snn.placement import Rates, score

    free, pinned = _run(band=False), _run(assume={"compiled_coissue_fraction": 0}, band=False)
    a, b = free.placement["search"], pinned.placement["search"]
    assert [c["neurons_per_tile"] for c in a] == [c["neurons_per_tile"] for c in b]
    assert all(y["seconds_per_step"] > x["seconds_per_step"] for x, y in zip(a, b))
    net = Network.feedforward(SMALL["sizes"], max_activity=0.1)
    run = simulate(net, "ipu-mk2", timesteps=SMALL["T"], batch_size=SMALL["B"], activity=0.05, band=False,
                   assume={"compiled_coissue_fraction": 0})
    rates = Rates((0.05,) * 4, (0.0,) + (0.05,) * 3)
    assert score(run.program, pinned=A.check({"compiled_coissue_fraction": 0}), rates=rates) == \
        b[0]["seconds_per_step"] == run.report.seconds_per_step
