"""``mimdsim.op`` and ``mimdsim op``: one operation through the programs' own costing path, checked
by hand against poplibs' estimator formulas and the fabric's rates (docs/cost-model.md)."""
import json
import math

import pytest

import mimdsim
from mimdsim.cli import main
from mimdsim.errors import ConfigError
from mimdsim.kernels.tile import VERTEX_RUN_INSTRUCTIONS
from mimdsim import op
from mimdsim.poplibs.matmul_plan import plan_matmul

MK2 = mimdsim.chip("ipu-mk2")
FIXED = MK2.exchange_latency_cycles + MK2.exchange_phase_overhead_cycles  # one exchange phase's fixed cycles


def test_elementwise_scalar_by_hand():
    # BroadcastScalar1DInPlace, float MULTIPLY, 1000 elements on each tile (PCE broadcastArithmetic1DCycleEstimate):
    # 6 (20 + ceil(ceil(1000 / 6) / 2) * 2) + 11 = 6 (20 + 84 * 2) + 11 = 1139
    r = op("elementwise", "ipu-mk2", elements=1000 * 1472)
    assert r.cycles == {"compute": 1139, "exchange": 0, "sync": MK2.sync_cycles, "host": 0}
    assert math.isclose(r.seconds, (1139 + MK2.sync_cycles) / MK2.clock_hz)


def test_copy_and_dynamic_slice_by_hand():
    # DynamicSlice1D, float, one region of 1000: nCopies = ceil(1000 / 6) // 2 = 83;
    # 11 + 1 + 6 + 1 + 6 + 6 (35 + (24 + 2 * 83) slices)
    assert op("copy", "ipu-mk2", elements=1000 * 1472).cycles["compute"] == 25 + 6 * (35 + 190)
    assert op("dynamic-slice", "ipu-mk2", elements=1000 * 1472, slices=2).cycles["compute"] == 25 + 6 * (35 + 2 * 190)
    # two regions of 500: DynamicSlice2D workers, 2 vertices of one region each, nVectors = 250:
    # 6 (run + 23 + (29 + 250) + 13) + 11
    two = op("copy", "ipu-mk2", elements=1000 * 1472, regions=2).cycles["compute"]
    assert two == 6 * (VERTEX_RUN_INSTRUCTIONS + 23 + 279 + 13) + 11


def test_reduce_by_hand():
    # 8 float outputs per tile, 2 partials each, one region: 2 workers of one 4-wide accumulator vector each.
    # getCyclesEstimateForReduce: 7 + 26 + [24 + 2*2 checks + (3 + 2 + store 5 + 1) + 2 (7 + 3) + 2 (6 + 3)] = 110
    r = op("reduce", "ipu-mk2", outputs=8 * 1472, partials=2)
    assert r.cycles["compute"] == 6 * (VERTEX_RUN_INSTRUCTIONS + 110) + 11


def test_exchange_patterns_by_hand():
    # point to point: every tile sends and receives 1024 B at 4 B/cycle
    p2p = op("exchange", "ipu-mk2", bytes=1024)
    assert p2p.cycles["exchange"] == 1024 / 4 + FIXED and p2p.cycles["sync"] == MK2.sync_cycles
    # broadcast of 384 B from tile 0: tile 0 sends once (96 cycles); pairs receive at 8 B/cycle (48), but tile 1,
    # whose partner is the sender, at 4 (96)
    assert op("exchange", "ipu-mk2", bytes=384, pattern="broadcast").cycles["exchange"] == 96 + FIXED
    # all to all on 4 tiles, 100 B each way: each tile sends and receives 3 distinct messages, 300 B at 4 B/cycle
    assert op("exchange", "ipu-mk2", bytes=100, pattern="all-to-all", tiles=4).cycles["exchange"] == 75 + FIXED


def test_sync_and_host_by_hand():
    assert op("sync", "ipu-mk2").cycles["sync"] == MK2.sync_cycles
    assert op("sync", "ipu-mk2", scope="global", chips=2).cycles["sync"] == MK2.global_sync_cycles
    # 1 MiB from the host over PCIe Gen4 x16 (31.5 GB/s one way) plus one stream's latency; the tiles' own
    # receive (713 B each, 178.25 cycles) hides under it
    r = op("host", "ipu-mk2", bytes_in=2**20)
    host_link = 2**20 / MK2.host_bytes_per_cycle + MK2.host_latency_cycles
    assert math.isclose(r.cycles["exchange"] + r.cycles["host"], host_link + FIXED)
    assert math.isclose(r.cycles["exchange"], math.ceil(2**20 / 1472) / 4 + FIXED)


def test_matmul_on_one_tile_by_hand():
    # [16 x 16] . [16 x 16] fp16 on one tile: the operands are already there (a tile sending to itself is a
    # local copy), one ConvPartial1x1Out vertex: in/out groups 1, loads 4 * 8 * 16 * 2 / 16 = 64, 16 field
    # elements over 6 workers (3 and 2 each; sdk-release-2.6 PerformanceEstimation.hpp, HalfFloat): worker(3)
    # = 37 - 7 = 30, worker(2) = 40 + 1 - 7 = 34; inner = max(6 * 30, 6 * 34 + 14) = 218;
    # 50 + 6 * 7 + 12 + 1 + 10 + 1 + (19 - 1 + 7 + 64 + 218) = 423. Square: both operand orders cost the
    # same vertex; the swapped one pays no rearrangement, so poplin keeps it (the order does not show here)
    r = op("matmul", mimdsim.chip("ipu-mk2", tiles=1), m=16, k=16, n=16, precision="fp16")
    assert r.plan["split"] == [1, 1, 1] and r.plan["swapped"] and r.plan["transform_cycles"] == 0
    assert r.cycles == {"compute": 423, "exchange": 0, "sync": 2 * MK2.sync_cycles, "host": 0}


def test_matmul_is_the_planners_split():
    r = op("matmul", "bow", m=1024, k=1024, n=1024, precision="fp16")
    p = plan_matmul("op", 1024, 1024, 1024, mimdsim.chip("bow"), "fp16")
    assert r.plan["split"] == [p.pM, p.pK, p.pN] and r.plan["tiles"] == p.tiles
    assert r.cycles["compute"] > 0 and r.cycles["exchange"] > 0
    d = r.to_dict()
    assert d["seconds"] == r.seconds and d["plan"]["block"] == [p.m, p.k, p.n]
    json.dumps(d)


def test_op_errors_name_the_value_and_fix():
    with pytest.raises(ConfigError, match="needs m, k, n"):
        op("matmul", "ipu-mk2")
    with pytest.raises(ConfigError, match="kind='conv' is not one of 'matmul'"):
        op("conv", "ipu-mk2")
    with pytest.raises(ConfigError, match="op 'copy' takes elements"):
        op("copy", "ipu-mk2", elements=10, bytes=4)
    with pytest.raises(ConfigError, match="tiles=2000"):
        op("copy", "ipu-mk2", elements=10, tiles=2000)


def test_cli_op(tmp_path, capsys):
    path = tmp_path / "op.json"
    assert main(["op", "copy", "--elements", "1472000", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "mimdsim op copy on ipu-mk2" in out and "1,375" in out
    assert json.loads(path.read_text())["cycles"]["compute"] == 1375
    assert main(["op", "matmul", "--chip", "bow", "--m", "512", "--k", "512", "--n", "512"]) == 0
    assert "pM x pK x pN" in capsys.readouterr().out
    assert main(["op", "matmul", "--k", "3", "--n", "4"]) == 2
    assert "--m 1024" in capsys.readouterr().err  # the flag, not the Python argument
    assert main(["op", "exchange", "--bytes", "8", "--pattern", "bcast"]) == 2
    assert "Did you mean 'broadcast'" in capsys.readouterr().err


# ---- poplin's planner: serial splits, the reduction counted, the memory rule (issue 24)
import numpy as np  # noqa: E402
from mimdsim.arch import as_system as _as_system  # noqa: E402
from mimdsim.kernels.poplin.matmul import conv_reduce_cycles, reduce_stage_depths  # noqa: E402
from mimdsim.poplibs.matmul_plan import AVAILABLE_MEMORY_PROPORTION  # noqa: E402


def test_serial_split_by_hand():
    """[16 x 64] . [64 x 32] fp16 on one MK2 tile, forced to 2 serial input-channel iterations
    (ConvModel.cpp addEstimates). Per iteration: the input slice DynamicSlice1D(ceil(1024 / 2) =
    512 halves) = 25 + 6 (35 + 24 + 2 (86 // 4)) = 631, the weight slice (1024 halves, 171 per
    worker) = 25 + 6 (59 + 2 x 42) = 883, the in-place add of the 512 float outputs
    BinaryOp1DInPlace = 6 (58 + ceil(86 / 2) x 3) + 11 = 1133; once: the deferred cast
    (ceil(86 / 2) = 43 + 26) x 6 = 414. Serial cycles 2 (631 + 883 + 1133) + 414 = 5708; the AMP
    runs twice on a 16 x 32 x 32 block."""
    mk2 = _as_system("ipu-mk2").chip
    p = plan_matmul("x", 16, 64, 32, mk2, "fp16", tiles=1, force=(1, 1, 1, 2, 1))
    assert (p.sK, p.sN, p.m, p.k, p.n) == (2, 1, 16, 32, 32)
    assert p.serial_cycles == 2 * (631 + 883 + 1133) + 414 == 5708
    one = plan_matmul("x", 16, 32, 32, mk2, "fp16", tiles=1, force=(1, 1, 1))
    assert p.compute_cycles == 2 * one.compute_cycles
    # temporaries: the iteration's lhs 16 x 32 x 2, rhs 32 x 32 x 2, partials 16 x 32 x 4 (5,120 B), under
    # the unswapped matmul's rearrangement, twice the largest of its inputs 2,048, weights 4,096 and output
    # 1,024 B (addTransformCycleEstimate, totalTransformTempBytes) = 8,192 B; plus the in-place add's copy
    # of the outputs 16 x 32 x 4 (addInPlaceEstimate)
    assert p.temp_bytes == max(1024 + 2048 + 2048, 2 * 4096) + 2048 == 10240
    # the rearrangement, per iteration (inside the serial loop): copies ceil(B x 5 / (2 x 4)) and exchange
    # ceil(B / 4) of 2,048 + 4,096 + 1,024 B: (1280 + 512) + (2560 + 1024) + (640 + 256) = 6,272
    assert not p.swapped and p.transform_cycles == 2 * 6272


def test_conv_reduce_by_hand():
    """estimateConvReduceCycles: 96 outputs of depth 11, one stage (depth < 16), the single-input
    ReduceAdd (96 % 4 == 0): 6 (20 + (2 x 10 + 8) ceil(24 / 6)) + 33 = 825. Depth 32 runs two
    stages of 6 (getMultiStageReducePlan: 32^(1/2) -> 5 or 6, 6 costs fewer messages)."""
    assert conv_reduce_cycles(np.array([96]), 11, 1, True, 638976)[0] == 825
    assert reduce_stage_depths(32) == [6, 6] and reduce_stage_depths(11) == [11]
    assert reduce_stage_depths(200) == [6, 6, 6]


def test_4096_cubed_fp16_on_a_bow_is_placed_with_a_serial_split():
    bow = _as_system("bow").chip
    r = op("matmul", "bow", m=4096, k=4096, n=4096, precision="fp16")
    p = r.plan
    # swapped (square: the same vertex, no rearrangement), the conv's split and blocks
    assert p["swapped"] and p["serial"] == [1, 10] and p["split"] == [14, 8, 13] and p["block"] == [293, 512, 32]
    assert p["temp_bytes"] <= AVAILABLE_MEMORY_PROPORTION * bow.sram_per_tile  # the chosen split fits
    assert r.steps["matmul"]["count"] == 10 and r.steps["inputs"]["count"] == 1  # broadcastInputBeforeLoop
    assert "serial output channels x 10" in r.summary()


def test_forced_splits_are_slower_and_the_reduction_is_counted():
    bow = _as_system("bow").chip
    best = plan_matmul("x", 4096, 4096, 4096, bow, "fp16")
    assert best.cycles == (best.compute_cycles + best.exchange_cycles + best.reduce_cycles + best.serial_cycles
                           + best.transform_cycles)
    for f in [(13, 8, 14, 1, 20), (13, 8, 14, 1, 38), (14, 8, 13, 1, 20), (13, 4, 28, 1, 10), (7, 8, 26, 1, 10),
              (13, 8, 14, 2, 1)]:
        forced = plan_matmul("x", 4096, 4096, 4096, bow, "fp16", force=f)
        if forced.temp_bytes <= AVAILABLE_MEMORY_PROPORTION * bow.sram_per_tile:
            assert forced.cycles > best.cycles, f
    # pK = 8 reduces 8 partials: its reduction and the partial sums' exchange are in the estimate
    assert best.pK == 8 and best.reduce_cycles > 0
    # more tiles never plan slower (the choice counts the reduction it creates)
    for M, K, N in [(128, 784, 1008), (1024, 1024, 1024), (512, 2048, 256)]:  # whole AMP groups (a plain matmul)
        assert plan_matmul("x", M, K, N, bow, "fp16").cycles <= plan_matmul("x", M, K, N, bow, "fp16",
                                                                            tiles=1216).cycles
