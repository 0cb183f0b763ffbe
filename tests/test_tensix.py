"""Tenstorrent Tensix chips: presets and their sources, ttnn's matmul program configs, the dataflow rules
worked by hand on a 2 x 2 grid (data-movement and compute bound), the op command and its refusals."""
from __future__ import annotations

import dataclasses
import pathlib
import re
import subprocess
import sys
import time

import numpy as np
import pytest

import mimdsim.assumptions as A
from mimdsim.arch import chip
from mimdsim.arch.execution import DATAFLOW, family_of
from mimdsim.arch.tensix import TensixSpec
from mimdsim.errors import ConfigError, DoesNotFit
from mimdsim.tensix import tensix_op
from mimdsim.tensix.matmul_config import matmul_config
from mimdsim.tensix.ops import matmul_plan

ROOT = pathlib.Path(__file__).resolve().parents[1]
BF16 = (2048, 2048, 2048)
WH_FREE = 1464 * 1024 - 100 * 1024


def small(preset="wormhole-n150") -> TensixSpec:
    return chip(preset, grid_x=2, grid_y=2)


def test_presets_are_a_dataflow_family_with_their_sourced_values():
    wh, bh = chip("wormhole-n150"), chip("blackhole-p150")
    assert family_of("wormhole-n150").execution == DATAFLOW == family_of(bh).execution
    assert (wh.cores, wh.tensix_cores, wh.l1_bytes, wh.clock_hz, wh.noc_bytes_per_cycle) == (64, 72, 1464 * 1024, 1e9, 32)
    assert (bh.cores, bh.tensix_cores, bh.l1_bytes, bh.clock_hz, bh.noc_bytes_per_cycle) == (130, 140, 1536 * 1024, 1.35e9, 64)
    # 2,048 MACs per cycle on 64 cores at 1 GHz, LoFi: the n150's 262 TFLOPS (its spec sheet's FP8 figure)
    assert wh.peak_flops("lofi") == pytest.approx(262.1e12, rel=1e-3)
    assert [wh.cycles_per_tile_matmul(f) for f in ("lofi", "hifi2", "hifi3", "hifi4")] == [16, 32, 48, 64]


def test_every_preset_field_is_cited_in_the_docs():
    page = (ROOT / "docs/tensix.md").read_text()
    for f in dataclasses.fields(TensixSpec):
        if f.name != "name":
            assert f"`{f.name}`" in page or f"`{f.name}`," in page or f.name in page, f.name
    for a in A.REGISTRY.values():
        if a.applies("wormhole-n150"):
            assert a.name in page, a.name


def test_ttnn_2d_config_follows_create_simple_matmul_program_config():
    c = matmul_config(4096, 4096, 4096, 8, 8, BF16, WH_FREE)
    # Mt = Kt = Nt = 128: per_core 128 / 8 = 16, in0_block_w = Kt / grid_x = 16; CBs of 16 x 16 x 16 need
    # 2 x 16 x 16 x 2 x 2048 + 256 x 2048 = 2.6 MB > free L1, so the output block shrinks (k kept) to 8 x 8
    assert (c.kind, c.grid_x, c.grid_y, c.per_core_M, c.per_core_N, c.in0_block_w) == ("2d-mcast", 8, 8, 16, 16, 16)
    assert (c.out_block_h, c.out_block_w, c.out_subblock_h, c.out_subblock_w) == (8, 8, 4, 2)
    assert (c.k_blocks, c.out_blocks) == (8, 4)
    assert c.cb_bytes == 2 * 8 * 16 * 2 * 2048 + 64 * 2048


@pytest.mark.parametrize("shape, kind", [((512, 8192, 8192), "1d-mcast-in0"), ((8192, 4096, 256), "1d-mcast-in1"),
                                         ((32, 4096, 4096), "1d-mcast-in0"), ((2048, 2048, 2048), "2d-mcast")])
def test_narrow_shapes_take_a_1d_multicast(shape, kind):
    assert matmul_config(*shape, 8, 8, BF16, WH_FREE).kind == kind


def test_matmul_data_movement_bound_by_hand_on_2x2():
    """[128 x 128] x [128 x 128] bf16 HiFi4 on 2 x 2 cores: Mt = Kt = Nt = 4, per core 2 x 2 tiles,
    in0_block_w = 4 / 2 = 2, two K blocks. Per block: in0 = 2 x 2 tiles = 8,192 B read by each row's first
    core, in1 likewise; the chip reads 2 x 8,192 + 2 x 8,192 = 32,768 B per block; DRAM gives
    288e9 x 0.92 / 1e9 = 264.96 B/cycle. read = 600 + max(8192 / 32, 32768 / 264.96) = 856; multicast one
    hop = 256 + 2 x 5 + 9 = 275; data = 1,131. compute = 2 x 2 x 2 tile products x 64 = 512 < data.
    fill 1,131 + one steady block max(1,131, 512) + drain 512 + write max(8192 / 32, 4 x 8192 / 264.96) 256."""
    r = tensix_op("matmul", small(), m=128, k=128, n=128, precision="bf16", fidelity="hifi4", band=False)
    assert r.config["grid"] == "2x2" and r.config["k_blocks"] == 2
    assert r.device_cycles == pytest.approx(1131 + 1131 + 512 + 256)
    assert r.seconds == pytest.approx(r.device_cycles / 1e9 + 25e-6)
    assert r.traced_seconds == pytest.approx(r.device_cycles / 1e9 + 3e-6)


def test_matmul_compute_bound_by_hand_on_2x2():
    """[512 x 1024] x [1024 x 512] bf16 HiFi4 on 2 x 2: per core 8 x 8 tiles, in0_block_w = 32 / 2 = 16, two
    K blocks. Block operands 8 x 16 tiles = 262,144 B: read = 600 + max(262144 / 32 = 8,192, 4 x 262144 /
    264.96 = 3,957.7) = 8,792, multicast 8,192 + 19 = 8,211, data 17,003; compute 8 x 8 x 16 x 64 = 65,536:
    the steady block is compute. Output 8 x 8 tiles = 131,072 B written in max(4,096, 1,978.7) = 4,096."""
    r = tensix_op("matmul", small(), m=512, k=1024, n=512, precision="bf16", fidelity="hifi4", band=False)
    assert (r.config["per_core_M"], r.config["in0_block_w"], r.config["k_blocks"]) == (8, 16, 2)
    assert r.device_cycles == pytest.approx(17003 + 65536 + 65536 + 4096)
    lofi = tensix_op("matmul", small(), m=512, k=1024, n=512, precision="bf16", fidelity="lofi", band=False)
    # LoFi: compute 16,384 per block < data 17,003: data-movement bound again
    assert lofi.device_cycles == pytest.approx(17003 + 17003 + 16384 + 4096)


def test_block_float_moves_fewer_bytes():
    # bfp8_b tiles are 1,088 B: the data-bound 2 x 2 case reads and multicasts about half the bytes
    bf16 = tensix_op("matmul", small(), m=128, k=128, n=128, precision="bf16", fidelity="lofi", band=False)
    bfp8 = tensix_op("matmul", small(), m=128, k=128, n=128, precision="bfp8_b", fidelity="lofi", band=False)
    assert bfp8.device_cycles < bf16.device_cycles


def test_elementwise_by_hand_on_2x2():
    """12 tiles over 4 cores, 3 each; an add reads 2 x 2,048 B and writes 2,048 B per tile: move = max(6,144 /
    32, 4 x 6,144 / 264.96) = 192 > compute 1,024 / 128 = 8; stream = 600 + 3 x 192."""
    r = tensix_op("elementwise", small(), elements=12 * 1024, operand="add", band=False)
    assert r.device_cycles == pytest.approx(600 + 3 * 192)
    unary = tensix_op("elementwise", small(), elements=12 * 1024, operand="unary", band=False)
    # one input: move max(4,096 / 32 = 128, 4 x 4,096 / 264.96) = 128 < SFPU 1,024 / 32 x 4 = 128
    assert unary.device_cycles == pytest.approx(600 + 3 * 128)


def test_refusals_name_the_limit_and_the_fix():
    with pytest.raises(ConfigError, match="bf16, bfp8_b and bfp4_b"):
        tensix_op("matmul", "wormhole-n150", m=512, k=512, n=512, precision="fp16")
    with pytest.raises(ConfigError, match="lofi, hifi2, hifi3, hifi4"):
        tensix_op("matmul", "wormhole-n150", m=512, k=512, n=512, fidelity="hifi5")
    with pytest.raises(DoesNotFit, match="12,884,901,888 B of DRAM"):
        tensix_op("matmul", "wormhole-n150", m=65536, k=65536, n=65536)
    tiny = chip("wormhole-n150", l1_bytes=200 * 1024, l1_reserved_bytes=190 * 1024)
    with pytest.raises(DoesNotFit, match="free L1 per core"):
        matmul_plan(tiny, 512, 512, 512)


def test_op_command_on_both_presets_is_fast():
    for preset in ("wormhole-n150", "blackhole-p150"):
        start = time.perf_counter()
        r = tensix_op("matmul", preset, m=16384, k=16384, n=16384, precision="bf16", fidelity="hifi2")
        assert time.perf_counter() - start < 1.0
        lo, hi = r.band["seconds"]
        assert lo <= r.seconds <= hi
        assert r.flops() / r.device_seconds < chip(preset).peak_flops("hifi2")


def test_cli_prints_the_grid_blocks_and_band():
    out = subprocess.run([sys.executable, "-m", "mimdsim", "op", "matmul", "--chip", "blackhole-p150", "--m", "2048",
                          "--k", "8192", "--n", "4096", "--precision", "bfp8_b", "--fidelity", "lofi"],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert re.search(r"program config\s+2d-mcast on a 13x10 grid", out.stdout)
    assert "band (eager)" in out.stdout and "traced" in out.stdout
    bad = subprocess.run([sys.executable, "-m", "mimdsim", "op", "matmul", "--chip", "wormhole-n150", "--m", "512",
                          "--k", "512", "--n", "512", "--precision", "fp32"], capture_output=True, text=True, cwd=ROOT)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "--precision bf16" in bad.stderr


def test_the_predicted_table_in_the_docs_is_the_model():
    from mimdsim.tensix.published import prediction_table
    page = (ROOT / "docs/tensix.md").read_text()
    start = page.index("<!-- tensix predictions: generated from mimdsim/tensix/published.py -->")
    end = page.index("<!-- end of tensix predictions -->")
    assert page[start:end].split("\n", 1)[1].strip() == prediction_table()


def test_the_comparison_in_the_docs_is_the_model_against_the_report():
    from mimdsim.tensix.published import MEASURED_NS, SHAPES, comparison_summary
    assert all(len(v) == len(SHAPES[chip]) for (chip, _, _), v in MEASURED_NS.items())
    page = (ROOT / "docs/validation.md").read_text()
    start = page.index("<!-- tensix comparison: generated from mimdsim/tensix/published.py -->")
    end = page.index("<!-- end of tensix comparison -->")
    assert page[start:end].split("\n", 1)[1].strip() == comparison_summary()


def test_snn_step_on_tensix_is_snntorch_op_stream_as_ttnn_ops():
    import mimdsim
    from mimdsim.workloads.snn.baselines import eager
    from mimdsim.workloads.snn.tensix.step import tensix_step_seconds

    net = mimdsim.Network.build([784, 1000, 10], mimdsim.NeuronSpec("leaky", beta=0.9), bias=True)
    start = time.perf_counter()
    run = mimdsim.simulate(net, "wormhole-n150", timesteps=25, batch_size=128, activity=0.05)
    assert time.perf_counter() - start < 3.0
    r = run.report
    ops = eager.step_ops(net.sizes, 25, 128, e=2.0, specs=net.specs, bias=[True, True])
    assert r.placement["kernel_launches"] == sum(op.kernel.count for op in ops)
    eager_s, traced_s, _, device, wait = tensix_step_seconds(net, chip("wormhole-n150"), 25, 128, "adam", "bf16",
                                                             "hifi2")
    # the stream rule: never faster than either stream alone, never slower than both in a row
    n = device.size
    assert max(device.sum(), n * 25e-6) <= eager_s <= device.sum() + n * 25e-6
    assert r.seconds_per_step == pytest.approx(eager_s)
    assert traced_s == pytest.approx(device.sum() + n * 3e-6)
    assert r.energy["joules_per_step"] == pytest.approx(160 * 0.7 * eager_s)
    lo, hi = r.uncertainty["seconds_per_step"]
    assert lo <= eager_s <= hi
    with pytest.raises(ConfigError, match="rate-driven"):
        mimdsim.simulate(net, "wormhole-n150", inputs=np.zeros((25, 4, 784), np.uint8), labels=np.zeros(4, int))


def test_compare_on_tensix_has_the_ipu_and_gpu_columns_with_energy():
    out = subprocess.run([sys.executable, "-m", "mimdsim", "compare", "--chip", "blackhole-p150", "--layers",
                          "784,1000,10", "--neuron", "leaky", "--timesteps", "25", "--batch", "128"],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    head = next(line for line in out.stdout.splitlines() if "MIMD blackhole-p150" in line)  # the columns' line
    assert "MIMD blackhole-p150" in head and "ipu-mk2 IPU" in head and "a100-40gb eager" in head
    assert "joules/step" in out.stdout and "samples/J" in out.stdout


def test_validate_counts_every_published_tensix_matmul_as_predicted():
    """The published times are a stored validate source: 156 rows, each compared (none fitted, suspect or left
    out), each within its band's reach or counted outside it."""
    from mimdsim.validation import run_source

    r = run_source("tensix-matmul", quick=True)
    assert r.stored == 156 and len(r.points) == 12 and {x.kind for x in r.left_out} == {"left out"}
    assert {p.kind for p in r.points} == {"predicted"}
    assert all(p.band[0] <= p.model <= p.band[1] and 0.3 < p.ratio < 3 for p in r.points)


def test_step_precision_and_fidelity_flags_are_the_families_formats():
    """--chip-precision takes each family's formats and --fidelity the Tensix fidelities, as the code has them."""
    from mimdsim.config import BY_KEY
    from mimdsim.tensix.ops import FIDELITIES, PRECISIONS
    from mimdsim.workloads.snn.step import PRECISIONS as IPU_PRECISIONS

    assert BY_KEY["run.precision"].choices == tuple(IPU_PRECISIONS) + PRECISIONS
    assert BY_KEY["run.fidelity"].choices == FIDELITIES


@pytest.mark.parametrize("command", ["simulate", "compare"])
@pytest.mark.parametrize("precision, fidelity", [("bf16", "hifi4"), ("bfp8_b", "lofi"), ("bfp4_b", "lofi")])
def test_cli_sets_the_tensix_steps_precision_and_fidelity(command, precision, fidelity, capsys):
    from mimdsim.cli import main

    small = ["--layers", "784,1000,10", "--neuron", "leaky", "--timesteps", "5", "--batch", "16", "--quiet"]
    assert main([command, "--chip", "wormhole-n150", "--chip-precision", precision, "--fidelity", fidelity, *small]) == 0
    out = capsys.readouterr().out
    assert f"ttnn eager, {precision} {fidelity}" in out
    if command == "compare":  # the Tensix column says its format beside the IPU's fp32
        row = next(line for line in out.splitlines() if line.lstrip().startswith("precision"))
        assert row.split()[1:3] == [precision, fidelity] and "fp32" in row


def test_precision_and_fidelity_change_the_step_as_the_matrix_engine_does():
    """HiFi4 runs each matmul's tile products in four passes, LoFi in one (docs/tensix.md): the step's device
    time orders with the passes, and a block-float format moves fewer bytes."""
    import mimdsim

    net = mimdsim.Network.build([784, 1000, 10], mimdsim.NeuronSpec("leaky", beta=0.9), bias=True)

    def compute(**kw):
        r = mimdsim.simulate(net, "wormhole-n150", timesteps=5, batch_size=256, activity=0.05, band=False, **kw).report
        return sum(p["compute"] for p in r.cycles.values()), r.placement["precision"]

    lofi, hifi2, hifi4 = (compute(precision="bf16", fidelity=f) for f in ("lofi", "hifi2", "hifi4"))
    assert lofi[0] < hifi2[0] < hifi4[0] and hifi4[1] == "bf16 hifi4"
    assert compute()[1] == "bf16 hifi2" and compute() == hifi2  # the defaults
    assert compute(precision="bfp8_b", fidelity="lofi")[0] < lofi[0]


@pytest.mark.parametrize("argv, match", [
    (["--chip", "wormhole-n150", "--chip-precision", "fp16"],
     r"--chip-precision fp16 is an IPU's format; ttnn has no float16 tensors .*: pass --chip-precision bf16$"),
    (["--chip", "blackhole-p150", "--chip-precision", "fp32"],
     r"--chip-precision fp32 is an IPU's format; .* not modelled .*: pass --chip-precision bf16$"),
    (["--chip", "ipu-mk2", "--chip-precision", "bf16"],
     r"--chip-precision bf16 is a Tensix chip's format .*ipu-mk2's program runs fp32 or fp16: pass --chip-precision "
     r"fp16, or a Tensix chip \(--chip wormhole-n150\)$"),
    (["--chip", "ipu-mk2", "--fidelity", "hifi4"],
     r"--fidelity hifi4 sets the passes of a Tensix chip's matrix engine; ipu-mk2 has no math-fidelity setting: "
     r"drop it, or pick a Tensix chip \(--chip wormhole-n150\)$"),
    (["--chip", "wormhole-n150", "--tiles", "4"],
     r"chip.tiles \(--tiles\): chip field 'tiles' is a graphcore-ipu chip's .*not tenstorrent-tensix's"),
    (["--chip", "ipu-mk2", "--set", "grid_x=4"],
     r"chip field 'grid_x' is a tenstorrent-tensix chip's \(presets wormhole-n150, blackhole-p150\), not "
     r"graphcore-ipu's: ipu-mk2 has no such field; drop it, or choose a tenstorrent-tensix chip; ipu-mk2's fields: "),
])
@pytest.mark.parametrize("command", ["simulate", "compare"])
def test_a_format_fidelity_or_field_of_the_other_family_is_refused_in_one_line(command, argv, match, capsys):
    from mimdsim.cli import main

    assert main([command, *argv, "--layers", "784,100,10", "--timesteps", "5", "--batch", "8", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mimdsim: error:") and err.count("\n") == 1 and "Traceback" not in err
    assert re.search(match, err.strip()), err


def test_the_api_refuses_a_format_or_fidelity_of_the_other_family():
    import mimdsim

    net = mimdsim.Network.feedforward([64, 32, 10])
    with pytest.raises(ConfigError, match=r"fidelity='lofi' sets the passes .*ipu-mk2 has no math-fidelity setting"):
        mimdsim.simulate(net, "ipu-mk2", timesteps=2, batch_size=2, activity=0.1, fidelity="lofi")
    with pytest.raises(ConfigError, match=r"precision='bfp4_b' is a Tensix chip's format .*chip='wormhole-n150'"):
        mimdsim.simulate(net, "ipu-mk2", timesteps=2, batch_size=2, activity=0.1, precision="bfp4_b")
    with pytest.raises(ConfigError, match=r"precision='fp16' is an IPU's format; ttnn has no float16"):
        mimdsim.simulate(net, "wormhole-n150", timesteps=2, batch_size=2, activity=0.1, precision="fp16")


def test_experiment_file_sets_a_tensix_chips_fields_and_format(tmp_path, capsys):
    """[chip.set] takes the chosen chip's family's fields; a field of the other family is refused naming that
    family, with the file and line; [run] precision and fidelity reach the step."""
    from mimdsim.cli import main

    run = '[model]\nlayers = [784, 100, 10]\ntimesteps = 5\nbatch = 8\n[run]\nprecision = "bfp8_b"\nfidelity = "lofi"\n'
    good = tmp_path / "tensix.toml"
    good.write_text(f'[chip]\npreset = "wormhole-n150"\n[chip.set]\ngrid_x = 4\ngrid_y = 2\n{run}')
    assert main(["run", str(good), "--quiet"]) == 0
    assert "wormhole-n150" in capsys.readouterr().out
    from mimdsim.config import build_system, load_experiment
    values, _ = load_experiment(good)
    assert build_system(values).chip.cores == 8
    for preset, field, family in (("wormhole-n150", "tiles", "graphcore-ipu"),
                                  ("ipu-mk2", "grid_x", "tenstorrent-tensix")):
        bad = tmp_path / f"{preset}.toml"
        bad.write_text(f'[chip]\npreset = "{preset}"\n[chip.set]\n{field} = 4\n{run}')
        assert main(["run", str(bad), "--quiet"]) == 2
        err = capsys.readouterr().err
        assert f"{bad}:4: chip field '{field}' is a {family} chip's" in err and err.count("\n") == 1
    typo = tmp_path / "typo.toml"
    typo.write_text('[chip]\npreset = "wormhole-n150"\n[chip.set]\ngrid_z = 4\n')
    assert main(["run", str(typo), "--quiet"]) == 2
    assert "typo.toml:4: unknown chip field(s) ['grid_z']" in capsys.readouterr().err


def test_execution_driven_settings_on_tensix_are_refused_naming_the_flag(capsys):
    from mimdsim.cli import main

    for flags in (["--execute"], ["--activity-from", "execute"]):
        assert main(["simulate", "--chip", "blackhole-p150", *flags, "--quiet"]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"mimdsim: error: {' '.join(flags)}: blackhole-p150's step is ttnn's dense op stream")
        assert err.endswith(f"drop {flags[0]} and give the rates (--activity)") and "\n" not in err


def test_a_sweep_moves_a_tensix_chips_field_and_fidelity(tmp_path, capsys):
    import json

    from mimdsim.cli import main

    path = tmp_path / "s.toml"
    path.write_text('[chip]\npreset = "wormhole-n150"\n[model]\nlayers = [784, 100, 10]\ntimesteps = 5\nbatch = 8\n'
                    '[sweep.axes]\n"chip.set.grid_x" = [2, 8]\n"run.fidelity" = ["lofi", "hifi4"]\n')
    assert main(["sweep", str(path), "--quiet"]) == 0
    records = [json.loads(line) for line in (tmp_path / "s.results.jsonl").read_text().splitlines()]
    assert len(records) == 4 and {r["status"] for r in records} == {"ok"}
    assert all(r["device_bytes_limit"] == 12 * 1024 ** 3 and "max_tile_bytes" not in r for r in records)
    compute = {(r["params"]["chip.set.grid_x"], r["params"]["run.fidelity"]): r["cycles"]["compute"] for r in records}
    # more passes cost more; the grid moves the time (at this tiny shape a wider one multicasts further for little)
    assert compute[(2, "lofi")] < compute[(2, "hifi4")] and compute[(8, "hifi4")] != compute[(2, "hifi4")]
    capsys.readouterr()
