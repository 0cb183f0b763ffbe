"""Systolic-array GEMM cost model: hand-worked counts, SCALE-Sim's own counts, errors.

Notation: array R rows x C cols; GEMM C[M,N] = A[M,K] @ B[K,N].
  os: S_R=M, S_C=N, T=K, per fold  R + C + T - 2
  ws: S_R=K, S_C=N, T=M, per fold 2R + C + T - 2
  is: S_R=K, S_C=M, T=N, per fold 2R + C + T - 2
  cycles = ceil(S_R/R) * ceil(S_C/C) * per_fold - 1   (SCALE-Sim reports the last cycle's index)
"""
import numpy as np
import pytest

from mimdsim.arch.systolic import DATAFLOWS, SYSTOLIC_PRESETS, SystolicSpec, systolic
from mimdsim.errors import ConfigError
from mimdsim.gpu.systolic import (
    array_gemm_cycles, array_gemm_seconds, gemm_utilization, systolic_gemm_cycles, systolic_gemm_folds,
)


# --- hand-worked counts -------------------------------------------------------------------
HAND = [
    # (rows, cols, dataflow, m, n, k, expected)
    # os on 4x4: per fold 4 + 4 + K - 2 = K + 6
    (4, 4, "os", 1, 1, 1, 6),     # GEMM smaller than the array: 1 fold x (1 + 6) - 1
    (4, 4, "os", 5, 1, 5, 21),    # S_R=M=5 -> 2 row folds, S_C=N=1 -> 1: 2 x (5 + 6) - 1
    (4, 4, "os", 5, 5, 5, 43),    # 2 x 2 folds (both partial on the 2nd) x 11 - 1
    (4, 4, "os", 3, 4, 5, 10),    # 1 fold (3 of 4 rows used, padded to 4): 1 x 11 - 1
    # os on 8x4: per fold 8 + 4 + K - 2 = K + 10
    (8, 4, "os", 13, 3, 8, 35),   # ceil(13/8)=2 x ceil(3/4)=1 folds x (8 + 10) - 1
    (8, 4, "os", 3, 13, 8, 71),   # ceil(3/8)=1 x ceil(13/4)=4 folds x 18 - 1
    # ws on 4x4: per fold 2*4 + 4 + M - 2 = M + 10
    (4, 4, "ws", 1, 1, 1, 10),    # smaller than the array: 1 x (1 + 10) - 1
    (4, 4, "ws", 5, 1, 1, 14),    # M is temporal: still 1 fold, 1 x (5 + 10) - 1
    (4, 4, "ws", 1, 1, 5, 21),    # S_R=K=5 -> 2 row folds: 2 x 11 - 1
    (4, 4, "ws", 5, 5, 5, 59),    # S_R=K=5, S_C=N=5 -> 2 x 2 folds x (5 + 10) - 1
    # ws on 8x4: per fold 2*8 + 4 + M - 2 = M + 18
    (8, 4, "ws", 13, 5, 8, 61),   # S_R=K=8 -> 1, S_C=N=5 -> 2 folds x (13 + 18) - 1
    (8, 4, "ws", 8, 4, 13, 51),   # S_R=K=13 -> 2, S_C=N=4 -> 1: 2 x (8 + 18) - 1
    # is on 4x4: per fold 2*4 + 4 + N - 2 = N + 10
    (4, 4, "is", 1, 1, 1, 10),    # smaller than the array: 1 x 11 - 1
    (4, 4, "is", 1, 5, 1, 14),    # N is temporal: 1 fold x (5 + 10) - 1
    (4, 4, "is", 5, 1, 1, 21),    # S_C=M=5 -> 2 col folds: 2 x 11 - 1
    (4, 4, "is", 3, 4, 5, 27),    # S_R=K=5 -> 2, S_C=M=3 -> 1: 2 x (4 + 10) - 1
    # is on 8x4: per fold N + 18
    (8, 4, "is", 13, 3, 8, 83),   # S_R=K=8 -> 1, S_C=M=13 -> 4 folds x (3 + 18) - 1
    (8, 4, "is", 3, 13, 8, 30),   # 1 fold (3 of 4 cols used) x (13 + 18) - 1
]


@pytest.mark.parametrize("rows,cols,df,m,n,k,expected", HAND)
def test_hand_worked(rows, cols, df, m, n, k, expected):
    got = systolic_gemm_cycles(m, n, k, rows=rows, cols=cols, dataflow=df)
    assert got == expected
    assert isinstance(got, int)


def test_folds():
    # os: S_R=M=13 over 8 rows -> 2, S_C=N=13 over 4 cols -> 4
    assert systolic_gemm_folds(13, 13, 1, rows=8, cols=4, dataflow="os") == 8
    # ws: S_R=K=1 -> 1, S_C=N=13 -> 4
    assert systolic_gemm_folds(13, 13, 1, rows=8, cols=4, dataflow="ws") == 4
    # is: S_R=K=1 -> 1, S_C=M=5 -> 2
    assert systolic_gemm_folds(5, 13, 1, rows=8, cols=4, dataflow="is") == 2


# --- SCALE-Sim's own numbers ----------------------------------------------------------------
# Measured with scalesim 2.0.2 (pip, the SCALE-Sim v2 release) and re-checked with scalesim
# 3.0.0: GEMM topology "Layer, M, N, K", InterfaceBandwidth CALC (no stalls), COMPUTE_REPORT
# column "Total Cycles" (Stall Cycles = 0). See docs/systolic-model.md for the command.
SCALESIM = [
    (4, 4, "os", 1, 5, 1, 13), (4, 4, "os", 5, 1, 1, 13), (4, 4, "os", 13, 13, 13, 303),
    (8, 4, "os", 1, 1, 1, 10), (8, 4, "os", 8, 4, 13, 22), (8, 4, "os", 13, 5, 8, 71),
    (8, 4, "os", 13, 13, 13, 183), (4, 8, "os", 5, 13, 1, 43), (4, 8, "os", 13, 3, 8, 71),
    (4, 4, "ws", 1, 5, 1, 21), (4, 4, "ws", 3, 4, 5, 25), (4, 4, "ws", 5, 1, 5, 29),
    (4, 4, "ws", 13, 13, 13, 367), (8, 4, "ws", 1, 1, 1, 18), (8, 4, "ws", 13, 3, 8, 30),
    (8, 4, "ws", 3, 13, 8, 83), (4, 8, "ws", 5, 13, 1, 37), (4, 8, "ws", 13, 3, 8, 53),
    (4, 4, "is", 1, 1, 5, 21), (4, 4, "is", 5, 1, 5, 43), (4, 4, "is", 5, 5, 5, 59),
    (4, 4, "is", 13, 13, 13, 367), (8, 4, "is", 8, 4, 13, 87), (8, 4, "is", 13, 5, 8, 91),
    (8, 4, "is", 13, 13, 13, 247), (4, 8, "is", 5, 13, 1, 26), (4, 8, "is", 13, 3, 8, 67),
    # The SCALE-Sim configs behind the presets (scale.cfg 32x32 os, google.cfg 256x256 ws).
    (32, 32, "os", 64, 64, 64, 503), (32, 32, "os", 100, 200, 300, 10135),
    (32, 32, "os", 1000, 10, 50, 3583), (256, 256, "ws", 512, 512, 512, 5111),
    (256, 256, "ws", 100, 300, 700, 5195), (256, 256, "ws", 1, 1000, 256, 3067),
    (256, 256, "is", 300, 100, 700, 5195), (256, 256, "os", 300, 600, 50, 3359),
]


@pytest.mark.parametrize("rows,cols,df,m,n,k,expected", SCALESIM)
def test_matches_scalesim(rows, cols, df, m, n, k, expected):
    assert systolic_gemm_cycles(m, n, k, rows=rows, cols=cols, dataflow=df) == expected


def test_utilization_matches_scalesim_overall_util():
    # SCALE-Sim 2.0.2 "Overall Util %" for 32x32 os, M=N=K=64 and 256x256 ws, 512^3.
    assert gemm_utilization(64, 64, 64, 32, 32, "os") * 100 == pytest.approx(50.89463220675945)
    assert gemm_utilization(512, 512, 512, 256, 256, "ws") * 100 == pytest.approx(40.07043631383291)


# --- vectorised -------------------------------------------------------------------------------
def test_vectorised_matches_scalar():
    rng = np.random.default_rng(1)
    m, n, k = (rng.integers(1, 300, size=50) for _ in range(3))
    for df in DATAFLOWS:
        vec = systolic_gemm_cycles(m, n, k, rows=8, cols=4, dataflow=df)
        assert vec.shape == (50,) and vec.dtype == np.int64
        assert list(vec) == [systolic_gemm_cycles(int(a), int(b), int(c), rows=8, cols=4, dataflow=df)
                             for a, b, c in zip(m, n, k)]


def test_vectorised_broadcasts():
    m = np.array([[1], [5], [13]])          # (3, 1)
    k = np.array([1, 5, 13])                # (3,)
    got = systolic_gemm_cycles(m, 5, k, rows=4, cols=4, dataflow="os")
    assert got.shape == (3, 3)
    assert got[1, 1] == 43 and got[0, 0] == 13  # (5,5,5) and (1,5,1) from the tables above
    util = gemm_utilization(m, 5, k, 4, 4, "os")
    assert util.shape == (3, 3)


def test_literal_scalesim_table_vectorised():
    for df in DATAFLOWS:
        cases = [c for c in SCALESIM if c[2] == df and c[:2] == (4, 4)]
        m, n, k, exp = (np.array([c[i] for c in cases]) for i in (3, 4, 5, 6))
        np.testing.assert_array_equal(systolic_gemm_cycles(m, n, k, rows=4, cols=4, dataflow=df), exp)


# --- utilisation -------------------------------------------------------------------------------
@pytest.mark.parametrize("df", DATAFLOWS)
def test_utilization_at_most_one(df):
    sizes = np.array([1, 2, 3, 4, 5, 7, 8, 13, 16, 31, 64, 100])
    m, n, k = np.meshgrid(sizes, sizes, sizes, indexing="ij")
    for rows, cols in [(1, 1), (1, 4), (4, 1), (4, 4), (8, 4), (16, 16)]:
        u = gemm_utilization(m, n, k, rows, cols, df)
        assert np.all(u > 0) and np.all(u <= 1.0)


@pytest.mark.parametrize("df", DATAFLOWS)
def test_utilization_tends_to_one(df):
    # Perfectly divisible spatial dims and a long temporal dimension: the fill/drain of
    # every fold is amortised, so utilisation -> 1.
    rows, cols, big = 8, 4, 10**7
    m, n, k = {"os": (16, 8, big), "ws": (big, 8, 16), "is": (8, big, 16)}[df]
    u = gemm_utilization(m, n, k, rows, cols, df)
    assert 0.99999 < u <= 1.0
    # and it grows with the temporal dimension
    small = {"os": (16, 8, 10), "ws": (10, 8, 16), "is": (8, 10, 16)}[df]
    assert gemm_utilization(*small, rows, cols, df) < u


def test_partial_fold_lowers_utilization():
    # One row more than fits doubles the folds.
    full = gemm_utilization(8, 4, 1000, 8, 4, "os")
    spill = gemm_utilization(9, 4, 1000, 8, 4, "os")
    assert spill < 0.6 * full


# --- spec, presets ------------------------------------------------------------------------------
def test_presets_build_and_describe():
    for name in SYSTOLIC_PRESETS:
        s = systolic(name)
        assert s.name == name and s.dataflow in DATAFLOWS
        assert array_gemm_cycles(s, 300, 200, 100) == systolic_gemm_cycles(
            300, 200, 100, rows=s.rows, cols=s.cols, dataflow=s.dataflow)
    tpu = systolic("tpu-v1")
    assert (tpu.rows, tpu.cols, tpu.dataflow, tpu.clock_hz) == (256, 256, "ws", 700e6)
    assert tpu.peak_flops == pytest.approx(2 * 65536 * 700e6)  # 92 TOPS (8-bit)
    d = systolic("scalesim-32x32")
    assert (d.rows, d.cols, d.dataflow, d.ifmap_sram_bytes) == (32, 32, "os", 64 * 1024)


def test_overrides_and_seconds():
    s = systolic("tpu-v1", dataflow="os", rows=128)
    assert (s.rows, s.cols, s.dataflow) == (128, 256, "os")
    # os on 128x256: 1 fold, per fold 128 + 256 + K - 2; K = 1000 -> 1382 - 1
    assert array_gemm_cycles(s, 100, 200, 1000) == 1381
    assert array_gemm_seconds(s, 100, 200, 1000) == pytest.approx(1381 / 700e6)
    assert systolic(s) is s
    assert systolic(s, cols=64).cols == 64


# --- errors ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("kw,match", [
    (dict(m=0), r"m=0 must be an integer >= 1"),
    (dict(n=-3), r"n=-3 must be an integer >= 1"),
    (dict(k=2.5), r"k=2.5 must be an integer >= 1"),
    (dict(m=np.array([4, 0, 2])), r"m=0 must be an integer >= 1"),
    (dict(rows=0), r"rows=0 must be an integer >= 1"),
    (dict(cols=-1), r"cols=-1 must be an integer >= 1"),
    (dict(dataflow="rs"), r"dataflow='rs' is not one of 'os', 'ws', 'is'; os: output stationary"),
    (dict(dataflow="WS"), r"dataflow='WS'"),
])
def test_errors(kw, match):
    args = dict(m=4, n=4, k=4, rows=4, cols=4, dataflow="os") | kw
    with pytest.raises(ConfigError, match=match):
        systolic_gemm_cycles(args["m"], args["n"], args["k"], rows=args["rows"],
                             cols=args["cols"], dataflow=args["dataflow"])


def test_spec_errors():
    with pytest.raises(ConfigError, match=r"systolic array 'tpu-v1': rows=0 must be an integer >= 1; pass e.g. systolic\('tpu-v1', rows=256\)"):
        systolic("tpu-v1", rows=0)
    with pytest.raises(ConfigError, match=r"dataflow='rs' is not one of 'os', 'ws', 'is'"):
        systolic("tpu-v1", dataflow="rs")
    with pytest.raises(ConfigError, match=r"clock_hz=0 must be a positive finite number"):
        systolic("tpu-v1", clock_hz=0)
    with pytest.raises(ConfigError, match=r"dram_bytes_per_second=inf"):
        systolic("tpu-v1", dram_bytes_per_second=float("inf"))
    with pytest.raises(ConfigError, match=r"unknown systolic array 'tpu-1'.*Did you mean 'tpu-v1'"):
        systolic("tpu-1")
    with pytest.raises(ConfigError, match=r"unknown systolic array field\(s\) \['tiles'\]"):
        systolic("tpu-v1", tiles=4)
    with pytest.raises(ConfigError, match=r"ifmap_sram_bytes=1.5"):
        SystolicSpec("x", 4, 4, "os", 1e9, 1.5, 1, 1, 1e9, 4.0)
