"""Codelet cycle estimators against cycle counts worked out by hand.

Every expected value below is a literal arithmetic expression derived from the
instruction counts documented in the codelet modules and the barrel model of
``kernels/tile.py`` (``docs/cost-model.md`` §1)::

    cycles = workers * max over workers(instructions) + vertex_launch_cycles

with the default tile: 6 workers, 2 float32 SIMD lanes, 11 launch cycles. The tests
never call the estimator's own formula to produce an expectation.

Also: the code + vertex-state footprint, the CODELETS registry, and hypothesis
properties of the barrel model (monotone in work; spreading work never hurts).
"""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import mimdsim
from mimdsim.kernels import CODELETS, Tile
from mimdsim.kernels.mimdsim_snn.bptt import input_grad_cycles, surrogate_scatter_cycles, weight_grad_cycles
from mimdsim.kernels.codelet import VERTEX_STATE_BYTES
from mimdsim.kernels.mimdsim_snn.lif import lif_forward_cycles
from mimdsim.kernels.mimdsim_snn.loss import count_cycles, loss_cycles
from mimdsim.kernels.mimdsim_snn.optim import optimizer_cycles
from mimdsim.kernels.mimdsim_snn.reduce import grad_copies_cycles, partial_reduce_cycles
from mimdsim.kernels.mimdsim_snn.spikes import spike_combine_cycles, spike_scan_cycles
from mimdsim.kernels.tile import barrel_cycles, deal_jobs, per_worker, worker_of_sample

TILE = Tile()  # workers=6, simd=2, load_bytes=8, vertex_launch_cycles=11


def _eq(actual, expected):
    np.testing.assert_array_equal(np.asarray(actual, dtype=np.float64),
                                  np.asarray(expected, dtype=np.float64))


# ---------------------------------------------------------------- tile / barrel model


def test_default_tile_and_tile_of_chip():
    assert (TILE.workers, TILE.simd, TILE.load_bytes, TILE.vertex_launch_cycles) == (6, 2, 8, 11)
    assert Tile.of(mimdsim.chip("ipu-mk2")) == Tile(workers=6, simd=2, load_bytes=8, vertex_launch_cycles=11)
    t = Tile.of(mimdsim.chip("ipu-mk2", workers=4, simd_fp32=4, load_bytes=16, vertex_launch_cycles=3))
    assert t == Tile(workers=4, simd=4, load_bytes=16, vertex_launch_cycles=3, simd_fp32=4)
    assert Tile.of(mimdsim.chip("ipu-mk2"), "fp16").simd == 4


def test_worker_of_sample_contiguous_blocks():
    # B=3 on 6 workers: b * 6 // 3 -> one sample each on workers 0, 2, 4; the others idle
    _eq(worker_of_sample(3, 6), [0, 2, 4])
    # B=7 on 6 workers: b * 6 // 7 -> worker 0 gets two samples, the others one
    _eq(worker_of_sample(7, 6), [0, 0, 1, 2, 3, 4, 5])
    # B=12 on 6 workers: exactly 2 each
    _eq(worker_of_sample(12, 6), [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5])
    _eq(worker_of_sample(1, 6), [0])


def test_per_worker_sums_contiguous_blocks():
    instr = np.array([[1, 2, 3, 4, 5, 6, 7],
                      [10, 0, 0, 0, 0, 0, 1]])
    # balanced blocks (0,1) (2) (3) (4) (5) (6): (1+2, 3, 4, 5, 6, 7) and (10+0, 0, 0, 0, 0, 1)
    _eq(per_worker(instr, 6), [[3, 3, 4, 5, 6, 7],
                               [10, 0, 0, 0, 0, 1]])
    # fewer samples than workers: samples on workers 0, 2, 4, the rest zero
    _eq(per_worker(np.array([[5, 6, 7]]), 6), [[5, 0, 6, 0, 7, 0]])


def test_per_worker_agrees_with_worker_of_sample():
    rng = np.random.default_rng(0)
    for B in range(1, 20):
        instr = rng.integers(0, 100, size=(2, B))
        w = worker_of_sample(B, 6)
        expect = np.stack([np.bincount(w, weights=row, minlength=6) for row in instr])
        _eq(per_worker(instr, 6), expect)


def test_barrel_cycles_by_hand():
    # the busiest worker has 20 instructions; idle slots are not reclaimed
    _eq(barrel_cycles(np.array([[20, 0, 0, 0, 0, 0]]), TILE), [6 * 20 + 11])
    _eq(barrel_cycles(np.array([[3, 20, 4, 4, 4, 4], [1, 1, 1, 1, 1, 1]]), TILE),
        [6 * 20 + 11, 6 * 1 + 11])
    _eq(barrel_cycles(np.array([[0, 0, 0, 0, 0, 0]]), TILE), [11])  # launch only
    # a 4-worker tile with 2 launch cycles
    _eq(barrel_cycles(np.array([[7, 9, 1, 0]]), Tile(workers=4, vertex_launch_cycles=2)), [4 * 9 + 2])


def test_deal_jobs_round_robin_several_jobs_per_tile():
    # tile 3 gets 8 jobs (instructions 10..17): rank r -> worker r % 6, so
    # worker 0 = 10 + 16 = 26, worker 1 = 11 + 17 = 28, workers 2..5 = 12..15
    # tile 5 gets one job of 40 instructions
    tiles = [3, 3, 3, 3, 5, 3, 3, 3, 3]
    instr = [10, 11, 12, 13, 40, 14, 15, 16, 17]
    t, cyc = deal_jobs(tiles, instr, TILE)
    _eq(t, [3, 5])
    _eq(cyc, [6 * (11 + 17) + 11, 6 * 40 + 11])


def test_deal_jobs_interleaved_tiles_keep_job_order():
    # jobs alternate between tiles 1 and 2; each tile's jobs are dealt in job order
    # tile 1: jobs 0,2,4,6,7,8,9 with 1,1,1,1,1,1,9 -> ranks 0..6, worker 0 = 1 + 9 = 10
    # tile 2: jobs 1,3,5 with 5,6,7 -> one job per worker, max 7
    tiles = [1, 2, 1, 2, 1, 2, 1, 1, 1, 1]
    instr = [1, 5, 1, 6, 1, 7, 1, 1, 1, 9]
    t, cyc = deal_jobs(tiles, instr, TILE)
    _eq(t, [1, 2])
    _eq(cyc, [6 * (1 + 9) + 11, 6 * 7 + 11])


def test_deal_jobs_scalar_instructions():
    # 13 identical jobs of 4 instructions on tile 0 -> worker 0 gets jobs 0, 6, 12
    t, cyc = deal_jobs(np.zeros(13, dtype=int), 4, TILE)
    _eq(t, [0])
    _eq(cyc, [6 * (3 * 4) + 11])


# ---------------------------------------------------------------- lif_forward


def test_lif_forward_matches_brief_example_fewer_samples_than_workers():
    # n_local=2 -> 1 vector (register accumulator); 3 samples on 6 workers -> max 1 sample
    # per worker; the busiest sample has 2 spikes:
    _eq(lif_forward_cycles(np.array([2]), np.array([2, 1, 0]), TILE),
        [6 * (10 + 2 * (4 + 1 * 1) + 1 * 10) + 11])


def test_lif_forward_register_accumulator_n_local_8():
    # n_local=8, simd 2 -> 4 vectors <= 4 accumulator registers -> 1 instr/vector per row
    # samples: (10 + s*(4 + 4*1) + 4*10) -> s=3 is the busiest (one sample per worker)
    _eq(lif_forward_cycles(np.array([8]), np.array([2, 1, 3]), TILE),
        [6 * (10 + 3 * (4 + 4 * 1) + 4 * 10) + 11])


def test_lif_forward_memory_accumulator_n_local_10():
    # n_local=10, simd 2 -> 5 vectors > 4 registers -> 3 instr/vector per row (ld, add, st)
    _eq(lif_forward_cycles(np.array([10]), np.array([2, 1, 3]), TILE),
        [6 * (10 + 3 * (4 + 5 * 3) + 5 * 10) + 11])


def test_lif_forward_several_vertices_and_odd_n_local():
    # n_local 7 -> ceil(7/2) = 4 vectors (register); n_local 9 -> 5 vectors (memory)
    # n_local 1 -> 1 vector. in_spikes [4, 0]: busiest sample has 4 spikes.
    _eq(lif_forward_cycles(np.array([7, 9, 1]), np.array([4, 0]), TILE),
        [6 * (10 + 4 * (4 + 4 * 1) + 4 * 10) + 11,
         6 * (10 + 4 * (4 + 5 * 3) + 5 * 10) + 11,
         6 * (10 + 4 * (4 + 1 * 1) + 1 * 10) + 11])


def test_lif_forward_uneven_split_b7():
    # B=7 on 6 workers: workers get samples (0,1) (2) (3) (4) (5) (6)
    # n_local=2 (1 vector): per sample 10 + s*(4+1) + 10 = 20 + 5s
    # spikes [0,0, 0, 0, 0, 6, 9]: worker 0 = 20 + 20 = 40; worker 4 = 20 + 30 = 50; worker 5 = 20 + 45 = 65
    _eq(lif_forward_cycles(np.array([2]), np.array([0, 0, 0, 0, 0, 6, 9]), TILE),
        [6 * (10 + 9 * (4 + 1) + 10) + 11])
    # all samples with 1 spike: two samples on the busiest worker: 2 * (10 + 5 + 10)
    _eq(lif_forward_cycles(np.array([2]), np.ones(7, dtype=int), TILE),
        [6 * (2 * (10 + 1 * (4 + 1) + 1 * 10)) + 11])


def test_lif_forward_idle_workers_waste_slots():
    # one sample costs as much as six equal samples: idle workers do not speed it up
    one = lif_forward_cycles(np.array([4]), np.array([5]), TILE)
    six = lif_forward_cycles(np.array([4]), np.full(6, 5), TILE)
    _eq(one, [6 * (10 + 5 * (4 + 2 * 1) + 2 * 10) + 11])
    _eq(six, one)


def test_lif_forward_uses_tile_parameters():
    # 4 workers, 4 SIMD lanes, launch 0: n_local=16 -> 4 vectors (register);
    # B=5 -> blocks of 2: (0,1) (2,3) (4); spikes all 1: per sample 10 + (4 + 4) + 40 = 58
    t = Tile(workers=4, simd=4, vertex_launch_cycles=0)
    _eq(lif_forward_cycles(np.array([16]), np.ones(5, dtype=int), t),
        [4 * (2 * (10 + 1 * (4 + 4 * 1) + 4 * 10)) + 0])


# ---------------------------------------------------------------- BPTT codelets


def test_surrogate_scatter_by_hand():
    # n_local=8 -> 4 vectors. Per sample: 10 + 4*5 (carry) + listed*3 (scan) + own*15
    # vertex 0: own [2, 0]; vertex 1: own [0, 1]; listed [3, 1]
    # v0: b0 = 10 + 20 + 9 + 30 = 69, b1 = 10 + 20 + 3 + 0 = 33 -> 69
    # v1: b0 = 10 + 20 + 9 + 0 = 39, b1 = 10 + 20 + 3 + 15 = 48 -> 48
    cyc = surrogate_scatter_cycles(np.array([8, 8]), np.array([3, 1]), np.array([[2, 0], [0, 1]]), TILE)
    _eq(cyc, [6 * (10 + 4 * 5 + 3 * 3 + 2 * 15) + 11,
              6 * (10 + 4 * 5 + 1 * 3 + 1 * 15) + 11])


def test_surrogate_scatter_uneven_split():
    # B=7, n_local=2 (1 vector): per sample 10 + 5 + 3*listed + 15*own
    # listed all 2, own = [1,1, 0,0, 0,0, 3]: worker 0 = workers get (0,1) (2) (3) (4) (5) (6): worker 0 = 2*(15+6+15) = 72, worker 5 = 15+6+45 = 66
    cyc = surrogate_scatter_cycles(np.array([2]), np.full(7, 2), np.array([[1, 1, 0, 0, 0, 0, 3]]), TILE)
    _eq(cyc, [6 * (2 * (10 + 1 * 5 + 2 * 3 + 1 * 15)) + 11])


def test_weight_grad_by_hand():
    # n_local=10 -> 5 vectors; per sample 6 + s*(4 + 5*3); 3 samples -> busiest s=4
    _eq(weight_grad_cycles(np.array([10]), np.array([4, 0, 1]), TILE), [6 * (6 + 4 * (4 + 5 * 3)) + 11])
    # B=7, s all 2, n_local 3 -> 2 vectors: 2 samples on worker 0: 2*(6 + 2*(4 + 2*3))
    _eq(weight_grad_cycles(np.array([3]), np.full(7, 2), TILE), [6 * (2 * (6 + 2 * (4 + 2 * 3))) + 11])
    # no input spikes: only the per-sample overhead
    _eq(weight_grad_cycles(np.array([10]), np.zeros(3, dtype=int), TILE), [6 * 6 + 11])


def test_input_grad_by_hand():
    # n_local=10 -> 5 vectors; per sample 6 + l*(4 + 5*1 + 3)
    _eq(input_grad_cycles(np.array([10, 2]), np.array([1, 3]), TILE),
        [6 * (6 + 3 * (4 + 5 * 1 + 3)) + 11,
         6 * (6 + 3 * (4 + 1 * 1 + 3)) + 11])
    # B=7, listed [5,0, 0,0, 0,0, 1] n_local=2: worker 0 = (6 + 5*8) + 6 = 52
    _eq(input_grad_cycles(np.array([2]), np.array([5, 0, 0, 0, 0, 0, 1]), TILE),
        [6 * ((6 + 5 * (4 + 1 + 3)) + 6) + 11])


# ---------------------------------------------------------------- spike lists


def test_spike_scan_by_hand():
    # one job per (sample, chunk): 8 + width*3 + entries*3
    # tile 4 gets 7 jobs of width 64: worker 0 gets jobs 0 and 6
    #   entries [1, 0, 0, 0, 0, 0, 2] -> worker 0 = (8 + 192 + 3) + (8 + 192 + 6) = 409
    # tile 9 gets one job of width 10 with 10 entries: 8 + 30 + 30 = 68
    tiles = [4, 4, 4, 4, 4, 4, 4, 9]
    widths = [64, 64, 64, 64, 64, 64, 64, 10]
    entries = [1, 0, 0, 0, 0, 0, 2, 10]
    t, cyc = spike_scan_cycles(tiles, widths, entries, TILE)
    _eq(t, [4, 9])
    _eq(cyc, [6 * ((8 + 64 * 3 + 1 * 3) + (8 + 64 * 3 + 2 * 3)) + 11,
              6 * (8 + 10 * 3 + 10 * 3) + 11])


def test_spike_combine_lowest_index_by_hand():
    # per sample job: 10 + partials*6 + copied*2 + 4
    # tile 0 gets 3 samples (one per worker), busiest copies 5 of 4 partials
    t, cyc = spike_combine_cycles([0, 0, 0], [4, 4, 4], [5, 2, 0], TILE)
    _eq(t, [0])
    _eq(cyc, [6 * (10 + 4 * 6 + 5 * 2 + 4) + 11])


def test_spike_combine_random_policy_extra_cost():
    # random policy: each copied entry costs 2 + 4 (a draw and swap)
    t, cyc = spike_combine_cycles([0, 0, 0], [4, 4, 4], [5, 2, 0], TILE, random_policy=True)
    _eq(cyc, [6 * (10 + 4 * 6 + 5 * (2 + 4) + 4) + 11])
    # the extra over lowest-index is exactly 6 * 4 * copied of the busiest worker
    _, lo = spike_combine_cycles([0, 0, 0], [4, 4, 4], [5, 2, 0], TILE)
    _eq(cyc - lo, [6 * 4 * 5])
    # nothing copied -> the random policy costs nothing extra
    _, r0 = spike_combine_cycles([2], [3], [0], TILE, random_policy=True)
    _, l0 = spike_combine_cycles([2], [3], [0], TILE)
    _eq(r0, [6 * (10 + 3 * 6 + 0 + 4) + 11])
    _eq(r0, l0)


def test_spike_combine_several_samples_per_worker():
    # 8 samples on tile 1: worker 0 gets samples 0 and 6, worker 1 gets 1 and 7
    # copied [9, 0, 0, 0, 0, 0, 1, 8], partials 2:
    #   worker 0 = (14 + 12 + 18) + (14 + 12 + 2) = 72; worker 1 = (26) + (26 + 16) = 68
    t, cyc = spike_combine_cycles(np.ones(8, dtype=int), np.full(8, 2), [9, 0, 0, 0, 0, 0, 1, 8], TILE)
    _eq(t, [1])
    _eq(cyc, [6 * ((10 + 2 * 6 + 9 * 2 + 4) + (10 + 2 * 6 + 1 * 2 + 4)) + 11])


# ---------------------------------------------------------------- reductions


def test_partial_reduce_by_hand():
    # job: 8 + (inputs*1 + 1) * ceil(length/2); length 9 -> 5 vectors
    # tile 2: jobs with inputs [3, 5] -> one per worker -> max 8 + 6*5 = 38
    # tile 7: 7 jobs of 2 inputs -> worker 0 gets two: 2 * (8 + 3*5)
    tiles = [2, 2] + [7] * 7
    inputs = [3, 5] + [2] * 7
    t, cyc = partial_reduce_cycles(tiles, inputs, 9, TILE)
    _eq(t, [2, 7])
    _eq(cyc, [6 * (8 + (5 * 1 + 1) * 5) + 11,
              6 * (2 * (8 + (2 * 1 + 1) * 5)) + 11])


def test_grad_copies_by_hand():
    # elements 25 -> 13 vectors -> ceil(13/6) = 3 per worker; 6 copies: 6 + 3*((6-1)*1 + 2)
    # elements 12 -> 6 vectors -> 1 per worker: 6 + 1*(5 + 2)
    # elements 0 -> 0 vectors -> 6 instructions of setup
    _eq(grad_copies_cycles(np.array([25, 12, 0]), 6, TILE),
        [6 * (6 + 3 * ((6 - 1) * 1 + 2)) + 11,
         6 * (6 + 1 * ((6 - 1) * 1 + 2)) + 11,
         6 * 6 + 11])
    # a single copy: nothing to add, only the store (2 per vector)
    _eq(grad_copies_cycles(np.array([25]), 1, TILE), [6 * (6 + 3 * 2) + 11])


# ---------------------------------------------------------------- loss / counts


def test_loss_by_hand():
    # per sample 12 + classes*24; 3 samples -> one per worker
    _eq(loss_cycles(3, 10, TILE), [6 * (12 + 10 * 24) + 11])
    # B=7 -> two samples on the busiest worker
    _eq(loss_cycles(7, 10, TILE), [6 * (2 * (12 + 10 * 24)) + 11])
    # B=13 -> ceil(13/6) = 3
    _eq(loss_cycles(13, 2, TILE), [6 * (3 * (12 + 2 * 24)) + 11])


def test_count_by_hand():
    # one job per sample: 4 + spikes*4; tile 5 has 7 samples -> worker 0 gets samples 0, 6
    tiles = [5] * 7 + [6]
    spikes = [3, 10, 0, 0, 0, 0, 4, 2]
    t, cyc = count_cycles(tiles, spikes, TILE)
    _eq(t, [5, 6])
    # worker 0 = (4 + 12) + (4 + 16) = 36, worker 1 = 4 + 40 = 44 -> 44
    _eq(cyc, [6 * (4 + 10 * 4) + 11, 6 * (4 + 2 * 4) + 11])


# ---------------------------------------------------------------- optimizer


def test_optimizer_by_hand():
    # elements 25 -> 13 vectors -> 3 per worker; 6 copies zeroed
    _eq(optimizer_cycles(np.array([25]), "sgd", 6, TILE), [6 * (6 + 3 * (4 + 6 * 1)) + 11])
    _eq(optimizer_cycles(np.array([25]), "adam", 6, TILE), [6 * (6 + 3 * (23 + 6 * 1)) + 11])
    # elements 12 -> 6 vectors -> 1 per worker
    _eq(optimizer_cycles(np.array([12, 1]), "adam", 0, TILE),
        [6 * (6 + 1 * 23) + 11, 6 * (6 + 1 * 23) + 11])
    # the registry entries take (elements, copies, tile)
    _eq(CODELETS["sgd"].cycles(np.array([25]), 6, TILE), [6 * (6 + 3 * (4 + 6)) + 11])
    _eq(CODELETS["adam"].cycles(np.array([25]), 6, TILE), [6 * (6 + 3 * (23 + 6)) + 11])


# ---------------------------------------------------------------- registry and footprint

EXPECTED_CODE_BYTES = {
    "lif_forward": 1024, "surrogate_scatter": 1024, "weight_grad": 512, "input_grad": 512,
    "spike_scan": 512, "spike_combine": 768, "partial_reduce": 384, "grad_copies_reduce": 384,
    "count_cross_entropy": 768, "count_spikes": 256, "sgd": 256, "adam": 768,
    "poplin.matmul": 2048, "popops.neuron_map": 1024,  # the PopTorch program (docs/cost-model.md §3, §7)
    "popops.binary_op": 384, "poplin.reduce": 768,  # PopART's element-wise ops, poplin's partial-sum reduce
}


def test_registry_holds_every_codelet():
    assert set(EXPECTED_CODE_BYTES) <= set(CODELETS)
    for name, code in EXPECTED_CODE_BYTES.items():
        c = CODELETS[name]
        assert c.name == name
        assert c.code_bytes == code
        assert callable(c.cycles)
    assert CODELETS["lif_forward"].cycles is lif_forward_cycles
    assert CODELETS["spike_combine"].cycles is spike_combine_cycles
    assert "instructions" in CODELETS["lif_forward"].doc


def test_footprint_code_once_plus_vertex_state():
    assert VERTEX_STATE_BYTES == 32
    # lif_forward: 1024 B of code once per tile with vertices, 32 B per vertex
    _eq(CODELETS["lif_forward"].footprint([0, 1, 3]), [0, 1024 + 32 * 1, 1024 + 32 * 3])
    # count_spikes: 256 B code; a tile with 7 vertices
    _eq(CODELETS["count_spikes"].footprint(7), 256 + 32 * 7)
    _eq(CODELETS["count_spikes"].footprint(0), 0)
    _eq(CODELETS["adam"].footprint(np.array([[2, 0], [0, 5]])), [[768 + 64, 0], [0, 768 + 160]])
    _eq(CODELETS["poplin.matmul"].footprint([0, 1, 4]), [0, 2048 + 32, 2048 + 32 * 4])
    _eq(CODELETS["popops.binary_op"].footprint([0, 2]), [0, 384 + 32 * 2])
    _eq(CODELETS["poplin.reduce"].footprint([3]), [768 + 32 * 3])


# ---------------------------------------------------------------- properties of the barrel model

_work = st.lists(st.integers(0, 10_000), min_size=1, max_size=20)


@settings(max_examples=150, deadline=None)
@given(_work, st.data())
def test_barrel_never_cheaper_with_more_work(instr, data):
    i = data.draw(st.integers(0, len(instr) - 1))
    extra = data.draw(st.integers(0, 10_000))
    more = list(instr)
    more[i] += extra
    before = barrel_cycles(per_worker(np.array([instr]), TILE.workers), TILE)
    after = barrel_cycles(per_worker(np.array([more]), TILE.workers), TILE)
    assert after[0] >= before[0]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 50), min_size=1, max_size=14), st.integers(1, 40), st.data())
def test_lif_forward_never_cheaper_with_more_spikes(spikes, n_local, data):
    i = data.draw(st.integers(0, len(spikes) - 1))
    more = list(spikes)
    more[i] += data.draw(st.integers(0, 50))
    before = lif_forward_cycles(np.array([n_local]), np.array(spikes), TILE)
    after = lif_forward_cycles(np.array([n_local]), np.array(more), TILE)
    assert after[0] >= before[0]
    # more neurons on the tile never make it cheaper either (incl. the register->memory switch)
    wider = lif_forward_cycles(np.array([n_local + data.draw(st.integers(0, 20))]), np.array(spikes), TILE)
    assert wider[0] >= before[0]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 1000), min_size=1, max_size=20), st.data())
def test_deal_jobs_never_cheaper_with_more_work(instr, data):
    tiles = data.draw(st.lists(st.integers(0, 3), min_size=len(instr), max_size=len(instr)))
    i = data.draw(st.integers(0, len(instr) - 1))
    more = list(instr)
    more[i] += data.draw(st.integers(0, 1000))
    t0, c0 = deal_jobs(tiles, instr, TILE)
    t1, c1 = deal_jobs(tiles, more, TILE)
    _eq(t0, t1)
    assert np.all(c1 >= c0)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 10_000), min_size=6, max_size=6))
def test_spreading_fixed_work_over_six_workers_never_slower(parts):
    total = sum(parts)
    spread = barrel_cycles(np.array([parts]), TILE)
    lumped = barrel_cycles(np.array([[total, 0, 0, 0, 0, 0]]), TILE)
    assert spread[0] <= lumped[0]
    # the same through samples: six samples of `parts` vs one sample of all the work
    via_samples = barrel_cycles(per_worker(np.array([parts]), 6), TILE)
    one_sample = barrel_cycles(per_worker(np.array([[total]]), 6), TILE)
    assert via_samples[0] <= one_sample[0]
    _eq(one_sample, [6 * total + 11])
