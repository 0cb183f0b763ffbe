"""TRACKR's Kalman codelet as built (kernels/trackr/kalman_filter.py) and its program and CPU reference.

The hand counts below are made from the source text of ``src/KalmanFilterCodelet.cpp``
(lohedges/trackr; V_e for the vectorised build, V_b @0e1f12e for the scalar one), one line of
``compute()`` at a time, with the constants of docs/workloads.md §1.3b:
FIELD_LOAD 1, ROW_LOAD 1, SIZE_LOAD 1, SHIFT 1, OFFSET 1, LOOP_SETUP 2, LOOP_BRANCH 1,
ROW_STEP 1, ALIAS_CHECK 4, SPLAT 1, and the MatOp rule (a load co-issues with an FP
instruction; stores and branches take a slot). Literals only: never the estimator's formulae.
"""
import numpy as np
import pytest

import mimdsim
from mimdsim.kernels import CODELETS, Tile
from mimdsim.kernels.trackr import kalman_filter as tk
from mimdsim.kernels.popops.vertices import copy_cycles
from mimdsim.errors import ConfigError
from mimdsim.workloads import kalman, trackr_cpu
from mimdsim.workloads.kalman import cpu as kcpu
from mimdsim.workloads.kalman.program import trackr_launch_cycles

TILE = Tile()

# One forward plane of V_e (KalmanFilterCodelet.cpp, compute(), L138-L166 and the loop branch L135):
# (line, fixed instructions per call, instructions per track)
V_E_PLANE = [
    # mul_4x4_4xN: 3 fields + size + 4 rows x (3 row ptrs + 2 x (ld coefficient + splat) + alias check 4
    # + loop set-up 2 + row branch 1); per track 4 rows x (2 ld64 ‖ 2 f32v2mul, f32v2add, st64, brnzdec) / 2 columns
    ("L138", 3 + 1 + 4 * (3 + 2 * 2 + 4 + 2 + 1), 4 * (3 + 1 + 1) / 2),
    # copy into p_projs[i]: 2 fields + size + shift + offset + 4 rows x (2 row ptrs + set-up 2 + branch 1);
    # per track 4 rows x (2 ld64, 2 st64, brnzdec) / 4 floats
    ("L139", 2 + 1 + 1 + 1 + 4 * (2 + 2 + 1), 4 * (2 + 2 + 1) / 4),
    # mul_4x4_4x4: 3 fields + 12 row ptrs + set-up 2 + 4 columns x (4 outputs x (2 mul + add, st, and 4 loads
    # of which 3 co-issue with the FP: one more slot) + brnzdec)
    ("L142", 3 + 12 + 2 + 4 * (4 * (3 + 1 + 1) + 1), 0),
    ("L143", 3 + 12 + 2 + 4 * (4 * (3 + 1 + 1) + 1), 0),
    # fast_copy into C_projs[i]: 2 fields + offset + 8 row ptrs + 8 x (ld32, st32)
    ("L144", 2 + 1 + 8 + 16, 0),
    # inverse_4x4: 2 fields + FP 27 minors + 4 products + det 9 + 34 mul + 4 sub + 8 neg + reciprocal 4 = 90
    # (20 loads co-issue) + 16 stores
    ("L147", 2 + 90 + 16, 0),
    # sum of two 4x4 as float4: 3 fields + size + shift + 4 rows x (3 row ptrs + 2 + 1); 4 rows x 1 float4
    # x (4 ld64 ‖ 2 f32v2add, 2 st64, brnzdec)
    ("L148", 3 + 1 + 1 + 4 * (3 + 2 + 1) + 4 * (2 + 2 + 2 + 1), 0),
    ("L149", 2 + 90 + 16, 0),
    ("L150", 2 + 1 + 8 + 16, 0),
    # copy(p0[i] -> m, stride 2): rows 0 and 2 only
    ("L153", 2 + 1 + 1 + 1 + 2 * (2 + 2 + 1), 2 * (2 + 2 + 1) / 4),
    ("L154", 3 + 1 + 4 * 14, 10),
    ("L155", 3 + 1 + 4 * 14, 10),
    # sum of two 4xN: 3 fields + size + shift + 4 rows x 6; per track 4 rows x 7 / 4
    ("L156", 3 + 1 + 1 + 4 * 6, 4 * 7 / 4),
    ("L159", 3 + 1 + 4 * 14, 10),
    ("L160", 2 + 1 + 1 + 1 + 4 * 5, 5),
    ("L163", 2 + 1 + 1 + 4 * 5, 5),  # copy(p_filt -> p): no offset
    ("L166", 2 + 8 + 16, 0),  # fast_copy(C_filt -> C): no offset
    ("L135", 1, 0),  # forward loop branch
]

# The same plane of V_b (dense helpers; same statements in the same order)
V_B_PLANE = [
    # mul: 3 fields + 4 rows x (out, in0 and 4 in1 row ptrs + in1[0].size() + set-up 2 + branch 1); per track
    # 4 rows x (out = 0 st; 4 x (ld a, ld b, mul, add, st out): 8 FP + 5 st, 8 ld co-issued; brnzdec)
    ("L138", 3 + 4 * (6 + 1 + 2 + 1), 4 * (8 + 5 + 1)),
    # copy: 2 fields + offset + 4 rows x (2 row ptrs + in[i].size() + set-up 2 + branch 1); per float ld, st, brnzdec
    ("L139", 2 + 1 + 4 * 6, 4 * 3),
    ("L142", 43 + 4 * 56, 0),  # the same mul over a 4x4 (4 columns)
    ("L143", 43 + 4 * 56, 0),
    ("L144", 2 + 1 + 4 * 6 + 4 * 12, 0),  # copy of a 4x4 with an offset
    # inverse: 2 fields + FP 54 minors + det 27 + 4 reused brackets + 12 x 6 + 8 neg + reciprocal 4 = 169; 16 st
    ("L147", 2 + 169 + 16, 0),
    # sum of 4x4: 3 fields + 4 rows x (3 row ptrs + size + 2 + 1) + 16 x (ld, ld ‖ add, st, brnzdec)
    ("L148", 3 + 4 * 7 + 16 * 4, 0),
    ("L149", 2 + 169 + 16, 0),
    ("L150", 2 + 1 + 4 * 6 + 4 * 12, 0),
    ("L153", 2 + 1 + 4 * 6, 4 * 3),  # all 4 rows of p0[i] (V_b has no stride)
    ("L154", 43, 56),
    ("L155", 43, 56),
    ("L156", 3 + 4 * 7, 4 * 4),
    ("L159", 43, 56),
    ("L160", 2 + 1 + 4 * 6, 12),
    ("L163", 2 + 4 * 6, 12),
    ("L166", 2 + 4 * 6 + 4 * 12, 0),
    ("L135", 1, 0),
]


@pytest.mark.parametrize("variant, plane", [("vectorised", V_E_PLANE), ("scalar", V_B_PLANE)])
def test_one_plane_of_the_codelet_by_hand(variant, plane):
    calls = tk.program(variant, 1)[3:21]  # after num_planes, copy(p0, p), fast_copy(C0, C)
    assert [c.line for c in calls] == [line for line, _, _ in plane]
    for c, (line, fixed, per_track) in zip(calls, plane):
        assert (c.fixed, c.per_track) == (fixed, per_track), line
    total = {"vectorised": (914, 64.5), "scalar": (1538, 288)}[variant]
    assert (sum(c.fixed for c in calls), sum(c.per_track for c in calls)) == total


def test_per_track_totals_from_the_source_tallies():
    # P = 5 (docs/as-built/trackr.md §1.3): 24 calls of the 4xN product (4P forward + P-1 backward),
    # floats copied (V_e 128 = 2 + 14P + 8 + 12(P-1); V_b 140), 13 element-wise 4xN calls (P + 2(P-1))
    _, ve = tk.vertex_instructions("vectorised", 5)
    assert ve == 24 * 10 + 128 * 5 / 4 + 13 * 4 * 7 / 4 == 491
    _, vb = tk.vertex_instructions("scalar", 5)
    assert vb == 24 * 56 + 140 * 3 + 13 * 4 * 4 == 1972


def test_covariance_work_is_counted_once_per_vertex():
    # 4x4 products, inverses and copies have no per-track part; 14 inverses at P = 5 (2P + P-1)
    calls = tk.program("vectorised", 5)
    assert all(c.per_track == 0 for c in calls if c.part == "cov")
    assert sum(1 for c in calls if "inverse" in c.text) == 14
    assert sum(1 for c in calls if "mul_4x4_4x4" in c.text) == 18
    f100 = tk.trackr_cycles([96], 5, TILE, "vectorised")[0]
    f200 = tk.trackr_cycles([192], 5, TILE, "vectorised")[0]
    assert f200 - f100 == 6 * 16 * 491  # only the per-track part grows


def test_vertex_cycles_worker_zero_takes_the_remainder():
    fixed, per = tk.vertex_instructions("scalar", 5)
    assert fixed == 7 + sum(c.fixed for c in tk.program("scalar", 5))
    # 100 tracks: TRACKR gives worker 0 16 + 4 = 20 (KalmanFilterIPU.cpp L246-253); run 2 + entry/exit 7
    assert tk.trackr_cycles([100], 5, TILE, "scalar")[0] == 6 * (2 + fixed + 20 * 1972) + 11
    fixed_v, _ = tk.vertex_instructions("vectorised", 5)
    assert tk.trackr_cycles([408, 0], 5, TILE, "vectorised").tolist() == [6 * (2 + fixed_v + 68 * 491) + 11, 0]
    assert "trackr_kalman.vectorised" in CODELETS and "trackr_kalman.scalar" in CODELETS


def test_memory_matches_trackr_tensors():
    m = tk.tile_bytes(np.array([400]), 5, 6, "scalar")
    assert m["hits"][0] + m["states"][0] == 400 * 4 * (28 + 20 * 5) == 400 * 512
    assert m["covariances"][0] == 6 * 4 * 416  # 11 4x4 + 2 (4P)x4 variables + 5 4x4 constants per vertex
    assert m["code"][0] == tk.code_bytes("scalar") + 6 * 8 * (24 + 192)  # 192 row descriptors at P = 5
    assert sum(v[0] for v in m.values()) < 262144  # "400 tracks is approximately at the memory limit" (MK1)


def test_published_program_by_hand():
    c = mimdsim.chip("ipu-mk1")
    r = kalman(408, 5, c, tiles=2, stream=False).report
    assert list(r.steps) == ["launch", "copies", "fit"]
    fit = tk.trackr_cycles([408], 5, TILE, "vectorised")[0]
    copies = copy_cycles(408 * 20 + 6 * 5 * 16, 36, 4, TILE)
    launch = trackr_launch_cycles()
    assert r.steps["fit"]["compute"] == fit and r.steps["copies"]["compute"] == copies
    assert r.steps["launch"]["host"] == pytest.approx(launch)
    assert r.total_cycles == pytest.approx(launch + copies + fit + 2 * 126)
    assert r.placement["schedule"] == "published" and "TRACKR as built" in r.model


def test_launch_is_in_chip_cycles_and_the_scalar_intercept_is_trackrs():
    launch = trackr_launch_cycles()
    mk1 = kalman(96, 5, "ipu-mk1", tiles=2, stream=False).report
    mk2 = kalman(96, 5, "ipu-mk2", tiles=2, stream=False).report
    assert mk1.steps["launch"]["host"] == pytest.approx(launch) == pytest.approx(mk2.steps["launch"]["host"])
    # the scalar program's fixed cycles (no tracks) add up to TRACKR's intercept: 190.8 us at 1.6 GHz
    fixed, _ = tk.vertex_instructions("scalar", 5)
    consts = copy_cycles(6 * 5 * 16, 36, 4, TILE)
    assert launch + 6 * (2 + fixed) + 11 + consts + 2 * 126 == pytest.approx(190.8e-6 * 1.6e9)
    assert kalman(96, 5, "ipu-mk1", tiles=2, stream=False, launch_cycles=0).report.steps["launch"]["host"] == 0


def test_published_errors_name_the_limit_and_fix():
    with pytest.raises(ConfigError, match=r"100 tracks on a tile: .* multiple of 24 .* tracks_per_tile=96"):
        kalman(100, 5, "ipu-mk1", tiles=2)
    with pytest.raises(ConfigError, match=r"covariance='per-track'.*schedule='fused'"):
        kalman(96, 5, "ipu-mk1", tiles=2, covariance="per-track")
    with pytest.raises(ConfigError, match=r"launch_cycles=-1"):
        kalman(96, 5, "ipu-mk1", tiles=2, launch_cycles=-1)
    kalman(100, 5, "ipu-mk1", tiles=2, variant="scalar")  # V_b had no float4 requirement


def test_trackr_tensors_run_out_of_tile_memory_first():
    from mimdsim.errors import OutOfTileMemory
    with pytest.raises(OutOfTileMemory, match=r"tracks_per_tile \(\d+ fit on a tile\), use schedule='fused'"):
        kalman(480, 5, "ipu-mk1", tiles=2, variant="scalar")
    kalman(480, 5, "ipu-mk1", tiles=2, variant="scalar", schedule="fused")  # the register-resident plan fits


def test_register_resident_variant_is_faster_than_as_built():
    built = kalman(408, 5, "ipu-mk1", tiles=2, stream=False)
    tuned = kalman(408, 5, "ipu-mk1", tiles=2, stream=False, schedule="fused")
    assert tuned.report.steps["fit"]["compute"] < built.report.steps["fit"]["compute"]
    assert "register-resident" in tuned.report.model


# ------------------------------------------------------------------ the CPU reference as built

def test_cpu_reference_ops_per_track_by_hand():
    # P = 5: 4x4-by-vector products 9 per plane forward (F p 3x, p_proj^T C_proj^-1 2x, m^T HTG 2x,
    # tmp C_filt 2x) + 1 per gap = 49; element-wise 2 per plane + 2 per gap = 18; hit copies 2 per plane
    ops = kcpu.trackr_track_ops(5)
    assert ops == {"fp": 49 * 7 + 18, "loads": 49 * 4 + 18 * 2 + 10, "stores": 49 + 18 + 10, "shuffles": 49 * 4}
    # Skylake ports: 2 FP, 2 loads, 1 store, 1 shuffle, 4 micro-ops per cycle: the issue width binds
    assert kcpu._port_cycles(mimdsim.workloads.cpu("i7-9750h"), ops) == (361 + 242 + 77 + 196) / 4 == 219


def test_cpu_reference_threads_and_rounds():
    spec = mimdsim.workloads.cpu("i7-9750h")
    one = trackr_cpu(512, threads=1)
    fixed = one.placement["fixed_cycles_per_batch"]
    assert one.total_cycles == pytest.approx(512 * 219 + fixed) and one.clock_hz == spec.turbo_clock_hz
    # 12 batches of 500 on 6 cores x 2 threads: the busiest core runs 2 batches; 13 need a second round
    r12, r13 = trackr_cpu(12 * 500), trackr_cpu(13 * 500)
    assert r12.placement["threads"] == 12
    assert r12.total_cycles == pytest.approx(2 * (500 * 219 + fixed) + 2e-6 * spec.clock_hz)
    assert r13.total_cycles == pytest.approx(3 * (500 * 219 + fixed) + 2e-6 * spec.clock_hz)
    assert r13.samples_per_second < r12.samples_per_second  # TRACKR's sawtooth at 13 batches
    with pytest.raises(ConfigError, match="threads=13"):
        trackr_cpu(100, threads=13)


def test_cli_selects_the_program(capsys):
    from mimdsim.cli import main
    assert main(["compare", "--workload", "kalman", "--chip", "ipu-mk1", "--tiles", "2", "--resident",
                 "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "TRACKR as built" in out and "TRACKR's Eigen reference" in out
    assert main(["compare", "--workload", "kalman", "--chip", "ipu-mk1", "--tiles", "2", "--resident",
                 "--schedule", "fused", "--quiet"]) == 0
    assert "register-resident" in capsys.readouterr().out
    assert main(["compare", "--workload", "kalman", "--tracks-per-tile", "100", "--quiet"]) == 2
    assert "multiple of 24" in capsys.readouterr().err
