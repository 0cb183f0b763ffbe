"""The SNN work sources' contract with the engine: ``work(vertex_set, t) -> work counts``.

Both sources (``RateSource``: counts drawn from activities; ``ExecutionSource``: counts
from the real dynamics) must hand every codelet's cost route the keys it reads, shaped
per sample (or per tile and sample), bounded by the static capacities; their counters
(``SpikeStats``) must agree with the lists they produced. Runs are tiny: a 40-30-20-10
network on 16 tiles, 6 steps, 3 samples.
"""
from __future__ import annotations

import numpy as np

import mimdsim
from mimdsim.engine import run_program
from mimdsim.workloads.snn.programs.compile import compile_program
from mimdsim.workloads.snn.sources import ExecutionSource, RateSource

SIZES = [40, 30, 20, 10]
CHIP = mimdsim.chip("ipu-mk2", tiles=16)
T, B = 6, 3
L = len(SIZES) - 1

# the work keys each data-dependent codelet's cost route reads (kernels/*.py ``_*_cost``)
ROUTE_KEYS = {
    "lif_forward": {"in_spikes"},
    "spike_scan": {"entries"},
    "spike_combine": {"listed"},
    "count_spikes": {"spikes"},
    "surrogate_scatter": {"listed", "own_listed"},
    "weight_grad": {"in_spikes"},
    "input_grad": {"in_listed"},
}
STATIC = {"count_cross_entropy", "partial_reduce", "grad_copies_reduce", "sgd", "adam"}


def network():
    """The published sparse LIF (delay 1, two thresholds), capacities below the layer sizes."""
    return mimdsim.Network.feedforward(SIZES, max_activity=0.2, weight_scale=5.0)


def spikes_in(seed=0, rate=0.2):
    rng = np.random.default_rng(seed)
    return (rng.random((T, B, SIZES[0])) < rate).astype(np.uint8), rng.integers(0, SIZES[-1], B)


def program(net):
    """The fused spike-list program (tests/test_published.py checks the published schedule's sources)."""
    return compile_program(net.sizes, net.capacities, mimdsim.system(CHIP), timesteps=T, batch_size=B,
                           structure=net.structure, schedule="fused")


class Recording:
    """Passes the engine's calls to ``source`` and records ``(vertex set, t, work)``."""

    def __init__(self, source):
        self.source, self.mode, self.calls = source, source.mode, []

    def work(self, vs, t):
        w = self.source.work(vs, t)
        self.calls.append((vs, t, w))
        return w


def rate_source(prog, net, activity, candidate=None, seed=0):
    act = [activity] * (L + 1) if np.isscalar(activity) else list(activity)
    cand = [0.0] + [activity if candidate is None else candidate] * L
    return RateSource(prog, net.sizes, net.capacities, act, cand, seed=seed)


def run_rate(activity, candidate=None, seed=0):
    net = network()
    prog = program(net)
    rec = Recording(rate_source(prog, net, activity, candidate, seed))
    report = run_program(prog, rec)
    return net, prog, rec, report


def run_execution(net=None, seed=0):
    net = network() if net is None else net
    prog = program(net)
    x, y = spikes_in(seed)
    rec = Recording(ExecutionSource(prog, net, x, y))
    report = run_program(prog, rec)
    return net, prog, rec, report


def check_work_contract(net, prog, calls):
    """Every data-dependent codelet gets its route's keys, shaped and bounded as the program fixes."""
    caps = net.capacities
    seen = set()
    for vs, t, w in calls:
        seen.add(vs.codelet)
        if vs.codelet in STATIC:
            continue
        assert ROUTE_KEYS[vs.codelet] <= w.keys(), (vs.codelet, w.keys())
        l = vs.layer
        assert t is not None and 0 <= t < T
        if vs.codelet in ("lif_forward", "weight_grad"):
            assert w["in_spikes"].shape == (B,)
            assert (0 <= w["in_spikes"]).all() and (w["in_spikes"] <= caps[l - 1]).all()
        elif vs.codelet == "input_grad":
            assert w["in_listed"].shape == (B,)
            assert (0 <= w["in_listed"]).all() and (w["in_listed"] <= caps[l - 1]).all()
        elif vs.codelet == "spike_scan":
            assert w["entries"].shape == (B, vs.geometry["chunks"])
            assert (0 <= w["entries"]).all() and (w["entries"] <= vs.geometry["cap"]).all()
        elif vs.codelet == "spike_combine":
            assert w["listed"].shape == (B,)
            assert (0 <= w["listed"]).all() and (w["listed"] <= caps[l]).all()
        elif vs.codelet == "count_spikes":
            assert l == L and w["spikes"].shape == (B,)
            assert (0 <= w["spikes"]).all() and (w["spikes"] <= caps[L]).all()
        elif vs.codelet == "surrogate_scatter":
            tiles = prog.mapping.layers[l - 1].tiles
            assert w["listed"].shape == (B,) and w["own_listed"].shape == (tiles, B)
            assert (w["listed"] <= caps[l]).all() and (w["own_listed"] >= 0).all()
            # each listed id is owned by exactly one of the layer's tiles
            np.testing.assert_array_equal(w["own_listed"].sum(axis=0), w["listed"])
    # the program uses every data-dependent codelet whose contract is checked
    assert set(ROUTE_KEYS) <= seen


# ---------------------------------------------------------------- RateSource


def test_rate_source_work_has_each_cost_route_keys_shaped_and_bounded():
    net, prog, rec, report = run_rate(0.3, 0.2)
    check_work_contract(net, prog, rec.calls)
    assert report.mode == "rate-driven"


def test_rate_source_gives_static_codelets_no_work():
    net, prog, rec, _ = run_rate(0.3, 0.2)
    static = [w for vs, _, w in rec.calls if vs.codelet in STATIC]
    assert static and all(w == {} for w in static)


def test_rate_source_at_zero_activity_counts_nothing():
    net, prog, rec, _ = run_rate(0.0, 0.0)
    for vs, _, w in rec.calls:
        for key, v in w.items():
            if key != "random":
                assert not np.any(v), (vs.codelet, key, v)
    s = rec.source.stats
    for arr in (s.spikes, s.kept, s.listed, s.dropped_spikes, s.dropped_candidates):
        assert all(not a.any() for a in arr)


def test_rate_source_keeps_at_most_capacity_and_counts_the_rest_as_dropped():
    net, prog, rec, _ = run_rate(0.8, 0.5)
    s = rec.source.stats
    for l, K in enumerate(net.capacities):
        assert (s.kept[l] <= K).all() and (s.listed[l] <= K).all()
        assert (s.kept[l] <= s.listed[l]).all()
        np.testing.assert_array_equal(s.kept[l], np.minimum(s.spikes[l], K))
        np.testing.assert_array_equal(s.spikes[l], s.kept[l] + s.dropped_spikes[l])
    assert sum(int(d.sum()) for d in s.dropped_spikes) > 0  # the truncation was exercised


def test_rate_source_layers_are_silent_before_their_input_arrives_with_delay_one():
    net, prog, rec, _ = run_rate(0.5, 0.3)
    assert prog.plan.delay == 1
    s = rec.source.stats
    for l in range(1, L + 1):
        assert not s.spikes[l][: l - 1].any() and not s.listed[l][: l - 1].any(), l
        assert s.spikes[l][l - 1:].any(), l  # and active from step l - 1 on
    # the first step a layer reads is its input layer's previous step: nothing at t = 0
    fwd = [w["in_spikes"] for vs, t, w in rec.calls if vs.codelet == "lif_forward" and vs.layer == 2 and t == 0]
    assert len(fwd) == 1 and not fwd[0].any()


def test_rate_source_same_seed_gives_the_same_counts():
    _, _, a, ra = run_rate(0.3, 0.2, seed=7)
    _, _, b, rb = run_rate(0.3, 0.2, seed=7)
    _, _, c, _ = run_rate(0.3, 0.2, seed=8)
    for l in range(L + 1):
        np.testing.assert_array_equal(a.source.stats.spikes[l], b.source.stats.spikes[l])
        np.testing.assert_array_equal(a.source.stats.listed[l], b.source.stats.listed[l])
    assert ra.steps == rb.steps
    assert any((a.source.stats.spikes[l] != c.source.stats.spikes[l]).any() for l in range(L + 1))


# ---------------------------------------------------------------- ExecutionSource


def test_execution_source_work_has_each_cost_route_keys_shaped_and_bounded():
    net, prog, rec, report = run_execution()
    check_work_contract(net, prog, rec.calls)
    assert report.mode == "execution-driven"


def test_execution_source_counts_equal_the_spike_lists_it_produced():
    x, y = spikes_in()
    net = network()
    run = mimdsim.simulate(net, CHIP, inputs=x, labels=y, schedule="fused")
    s = run.stats
    spk = [x.astype(bool)] + [tr["spk"].astype(bool) for tr in run.traces]
    assert sum(int(c.sum()) for c in s.listed[1:]) > sum(int(c.sum()) for c in s.kept[1:]) > 0
    for l in range(L + 1):
        ids = run.lists[l]
        valid = ids >= 0
        k = np.arange(ids.shape[2])
        np.testing.assert_array_equal(valid, k[None, None, :] < s.listed[l][..., None])  # ids up to listed, -1 after
        assert (s.listed[l] >= s.kept[l]).all()
        tt, bb, kk = np.nonzero(valid)
        is_spike = spk[l][tt, bb, ids[tt, bb, kk]]
        kept = kk < s.kept[l][tt, bb]
        np.testing.assert_array_equal(is_spike, kept)  # spikes first, then candidates
        # spikes before truncation = the dynamics' spikes
        np.testing.assert_array_equal(s.spikes[l], spk[l].sum(axis=2))


def test_execution_source_step_work_matches_its_stats():
    net, prog, rec, _ = run_execution()
    s = rec.source.stats
    for vs, t, w in rec.calls:
        if vs.codelet == "spike_combine":
            np.testing.assert_array_equal(w["listed"], s.listed[vs.layer][t])
        elif vs.codelet == "count_spikes":
            np.testing.assert_array_equal(w["spikes"], s.kept[L][t])
        elif vs.codelet == "lif_forward" and vs.layer == 1:  # the input list of the same step
            np.testing.assert_array_equal(w["in_spikes"], s.kept[0][t])
        elif vs.codelet == "lif_forward":  # delay 1: the input layer's list of the previous step
            np.testing.assert_array_equal(w["in_spikes"], s.kept[vs.layer - 1][t - 1] if t else 0)


def test_execution_source_output_counts_are_the_sent_output_spikes():
    x, y = spikes_in()
    run = mimdsim.simulate(network(), CHIP, inputs=x, labels=y, schedule="fused")
    np.testing.assert_array_equal(run.counts.sum(axis=1), run.stats.kept[L].sum(axis=0))


def test_execution_source_counts_equal_traced_output_spikes_when_no_list_overflows():
    net = mimdsim.Network.build([40, 30, 10], "leaky", beta=0.9, weight_scale=5.0)  # capacities = sizes: exact
    rng = np.random.default_rng(1)
    x, y = (rng.random((T, B, 40)) < 0.3).astype(np.uint8), rng.integers(0, 10, B)
    run = mimdsim.simulate(net, CHIP, inputs=x, labels=y, schedule="fused")
    assert all(not d.any() for d in run.stats.dropped_spikes)
    spk = run.traces[-1]["spk"]
    assert spk.sum() > 0
    np.testing.assert_array_equal(run.counts, spk.sum(axis=0))


# ---------------------------------------------------------------- both sources, one program


STATIC_STEPS = ("io.inputs", "loss", "loss.grad", "bwd.reduce1", "bwd.reduce2", "update.copies", "update.optimizer")


def test_execution_and_rate_runs_share_every_static_superstep_cost():
    net = network()
    x, y = spikes_in()
    ex = mimdsim.simulate(net, CHIP, inputs=x, labels=y, schedule="fused")
    rt = mimdsim.simulate(net, CHIP, timesteps=T, batch_size=B, activity=0.1, schedule="fused")
    assert ex.program is rt.program  # one compiled program
    assert ex.report.steps.keys() == rt.report.steps.keys()
    for name in STATIC_STEPS:
        assert ex.report.steps[name] == rt.report.steps[name], name
    # exchanges are compiled at fixed sizes: every superstep's exchange, sync and count agree too
    for name, rec in ex.report.steps.items():
        other = rt.report.steps[name]
        assert (rec["count"], rec["exchange"], rec["sync"], rec["host"]) == \
            (other["count"], other["exchange"], other["sync"], other["host"]), name
    # while the data-dependent compute differs (the comparison is not of two identical runs)
    assert ex.report.steps["fwd.neuron"]["compute"] != rt.report.steps["fwd.neuron"]["compute"]


# ---- the rate source's whole-loop path and its compiled helpers give the per-iteration numbers
def _draw_case():
    sizes = [978, 40, 10]
    widths = [np.diff(np.linspace(0, n, 7).astype(int)) for n in sizes]
    return sizes, widths


def test_whole_loop_scan_draws_equal_numpy_per_draw_compiled_and_not():
    import numba  # noqa: F401  (the compiled path runs where numba is loaded)
    from mimdsim.workloads.snn.sources.rate_draws import _bind_numba, _scan_draws, scan_draws_numpy
    sizes, widths = _draw_case()
    for seed, act in [(0, [0.005, 0.2, 0.9]), (1, [0.6, 0.0, 1.0])]:  # inversion, BTPE, p > 1/2, zero, one
        for ts in (np.arange(12), np.arange(11, -1, -1)):
            r1, r2 = np.random.default_rng(seed), np.random.default_rng(seed)
            want = scan_draws_numpy(r2, ts, sizes, act, act[::-1], [0, 1, 2], widths, 5)
            _bind_numba()
            W = max(len(w) for w in widths)
            pix = np.zeros((3, W))
            for k, (w, n) in enumerate(zip(widths, sizes)):
                pix[k, :len(w)] = w / n
            s, c = np.empty((3, len(ts), 5), np.int64), np.empty((3, len(ts), 5), np.int64)
            hits = np.zeros((3, len(ts), 5, 2, W), np.int64)
            _scan_draws(r1, ts, np.array(sizes), np.array(act), np.array(act[::-1]), np.array([0, 1, 2]), pix,
                        np.array([len(w) for w in widths]), s, c, hits)
            for k in range(3):
                assert np.array_equal(s[k], want[k][0]) and np.array_equal(c[k], want[k][1])
                assert np.array_equal(hits[k, ..., :len(widths[k])], want[k][2])
            assert r1.random() == r2.random()  # the generator moved on exactly as far


def test_rate_loops_whole_or_per_iteration_give_the_same_report():
    net = network()
    program = compile_program(net.sizes, net.capacities, mimdsim.system(CHIP), timesteps=T, batch_size=B,
                              structure=net.structure, schedule="published")
    kw = dict(seed=4, random_policy=(False, False))
    whole = run_program(program, RateSource(program, SIZES, net.capacities, [0.2] * 4, [0.0] + [0.3] * 3, **kw))
    per = RateSource(program, SIZES, net.capacities, [0.2] * 4, [0.0] + [0.3] * 3, **kw)
    per.loop_work = lambda vertex_sets, ts: None  # the engine asks iteration by iteration
    assert whole.to_dict() == run_program(program, per).to_dict()


def test_deal_jobs_compiled_equals_numpy():
    import numba  # noqa: F401
    from mimdsim.kernels import tile as tl
    rng = np.random.default_rng(0)
    jobs = rng.integers(0, 9, 200)  # several jobs per slot, out of order
    instr = rng.integers(0, 50, (7, 200)).astype(np.float64)
    t = tl.Tile(workers=6, simd=2, vertex_launch_cycles=30)
    got = tl.deal_jobs(jobs, instr, t)
    want = [tl.deal_jobs(jobs, row, t) for row in instr]  # one row: the numpy path
    assert np.array_equal(got[0], want[0][0])
    assert np.array_equal(got[1], np.stack([w[1] for w in want]))


def _run_both_ways(net, x, y, chip=CHIP):
    """The same execution-driven step with the whole-loop path and iteration by iteration."""
    taken = []
    real = ExecutionSource.loop_work

    def spy(self, vertex_sets, ts):
        out = real(self, vertex_sets, ts)
        taken.append(out is not None)
        return out
    try:
        ExecutionSource.loop_work = spy
        whole = mimdsim.simulate(net, chip, inputs=x, labels=y)
        ExecutionSource.loop_work = lambda self, vertex_sets, ts: None
        per = mimdsim.simulate(net, chip, inputs=x, labels=y)
    finally:
        ExecutionSource.loop_work = real
    return whole, per, taken


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def test_execution_loops_whole_or_per_iteration_give_the_same_step():
    rng = np.random.default_rng(3)
    cases = [(network(), 6, 3, CHIP, [True, True]),  # lists overflow (capacities below the activity)
             (network(), 9, 7, mimdsim.chip("ipu-mk2", tiles=64), [True, True]),  # 7 samples on 6 workers
             # every spike listed: a spread tile's cap can cut a list, that forward loop runs per iteration
             (mimdsim.Network.feedforward([40, 600, 10], weight_scale=8.0, capacities=[40, 400, 10]),
              4, 2, "ipu-mk2", [False, True])]
    for net, steps, batch, chip, paths in cases:
        x = (rng.random((steps, batch, net.sizes[0])) < 0.3).astype(np.uint8)
        y = rng.integers(0, net.sizes[-1], batch)
        whole, per, taken = _run_both_ways(net, x, y, chip)
        assert taken == paths
        assert whole.report.to_dict() == per.report.to_dict()
        assert float(whole.loss) == float(per.loss)
        assert all(_same_bits(a, b) for a, b in zip(whole.grads, per.grads))
        assert _same_bits(whole.counts, per.counts)
        for l in range(net.num_layers + 1):
            assert _same_bits(whole.stats.listed[l], per.stats.listed[l])
            assert _same_bits(whole.stats.dropped_spikes[l], per.stats.dropped_spikes[l])
        for a, b in zip(whole.traces, per.traces):
            assert all(_same_bits(a[k], b[k]) for k in a)


def test_reduce_partials_sums_as_numpy_does():
    from mimdsim.kernels.mimdsim_snn import reduce
    from mimdsim.kernels.mimdsim_snn.layer_loops import pairwise_sum, reduce_partials, reducible
    rng = np.random.default_rng(0)
    for tiles, starts in [(489, np.arange(0, 489, 24)), (5, np.array([0])), (7, np.array([0, 1, 2, 4])),
                          (300, np.array([0, 129, 137, 138, 200])), (128, np.arange(128))]:
        assert reducible(starts, tiles)
        P = (rng.standard_normal((3, 4, tiles)) * rng.random((3, 4, tiles)) ** 6).astype(np.float32)
        P[0, 0] = -0.0  # signed zeros: NumPy's sums keep -0.0 only where every term is -0.0
        P[0, 1, ::2] = 0.0
        P[0, 1, 1::2] = -0.0
        got = np.empty((3, 4), np.float32)
        reduce_partials(P, starts, got, np.empty(starts.size, np.float32))
        assert _same_bits(got, reduce.reduce_groups(P, starts).sum(axis=-1))
    a = rng.standard_normal(200).astype(np.float32)
    for lo, hi in [(0, 0), (3, 10), (0, 8), (5, 133), (1, 17)]:
        assert _same_bits(np.float32(0) + np.float32(pairwise_sum(a, lo, hi)), a[lo:hi].sum())  # sum starts at 0
    assert not reducible(np.array([0]), 130)


def test_scan_lists_equals_the_list_builder_and_the_scan_count():
    from mimdsim.kernels.mimdsim_snn import spikes
    from mimdsim.kernels.graphcore_snn.vertices import scan_hits
    from mimdsim.kernels.mimdsim_snn.layer_loops import scan_lists
    rng = np.random.default_rng(5)
    B, n = 5, 203
    bounds = np.array([0, 30, 31, 100, 150, 203])
    W = bounds.size - 1
    worker_of = np.repeat(np.arange(W), np.diff(bounds))
    for K, th2, frac in [(4, 0.9, 0.1), (40, 0.9, 0.3), (1, -np.inf, 0.05), (8, 1.2, 0.2), (203, 0.5, 0.9)]:
        U = (rng.random((B, n)) < frac) * rng.uniform(0.5, 1.5, (B, n))
        U[0, 7] = np.nan
        U = U.astype(np.float32)
        th1 = np.full(n, 1.0, np.float32)
        t2 = np.full(n, th2, np.float32)
        t2[::7] = 0.7
        cap = rng.integers(1, 6, (B, 2, W))
        want = [np.empty((B, K), np.int32), np.empty((B, 2), np.int64), np.empty((B, 2), np.int64)]
        spikes.spike_lists_per_neuron(U, th1, t2, K, n, n, False, 0, *want, np.empty((B, 1), np.int64))
        want_hits, want_scanned = np.empty((B, 2, W), np.int64), np.empty((B, 2, W), np.int64)
        scan_hits(U, th1, t2, bounds, cap, want_hits, want_scanned)
        got = [np.empty((B, K), np.int32), np.empty((B, 2), np.int64), np.empty((B, 2), np.int64)]
        hits, scanned = np.empty((B, 2, W), np.int64), np.empty((B, 2, W), np.int64)
        scan_lists(U, th1, t2, np.minimum(th1, t2), K, bounds, cap, worker_of, *got, hits, scanned,
                   np.empty(K, np.int64), np.empty(n, np.int64))
        assert all(np.array_equal(a, b) for a, b in zip(got, want))
        assert np.array_equal(hits, want_hits) and np.array_equal(scanned, want_scanned)


def test_weight_grad_reduced_equals_the_per_worker_copies_summed():
    from mimdsim.kernels.mimdsim_snn import bptt, reduce
    from mimdsim.kernels.mimdsim_snn.layer_loops import weight_grad_reduced
    rng = np.random.default_rng(9)
    T_, B_, rows, n, K = 7, 9, 12, 10, 4
    workers = 6
    worker = np.arange(B_) * workers // B_
    ids = np.stack([[rng.permutation(rows)[:K] for _ in range(B_)] for _ in range(T_)]).astype(np.int32)
    spk = rng.integers(0, K + 1, (T_, B_))
    dI = (rng.standard_normal((T_, B_, n)) * 10.0 ** rng.integers(-8, 3, (T_, B_, n))).astype(np.float32)
    dI[0, 0] = -0.0
    dI[2, :, :3] = -0.0
    for delay in (0, 1):
        copies = np.zeros((workers, rows, n), np.float32)
        for t in range(T_ - 1, -1, -1):
            if t - delay >= 0:
                bptt.weight_grad(copies, worker, ids[t - delay], spk[t - delay], dI[t])
        got = np.empty((rows, n), np.float32)
        weight_grad_reduced(dI, worker, workers, ids, spk, delay, got)
        assert _same_bits(got, reduce.reduce_copies(copies))


def test_leaky_update_in_place_equals_leaky_update():
    from mimdsim.kernels.mimdsim_snn import lif
    from mimdsim.kernels.mimdsim_snn.layer_loops import leaky_update_in_place
    rng = np.random.default_rng(4)
    B_, n = 5, 37
    I = rng.standard_normal((B_, n)).astype(np.float32)
    m_prev = rng.uniform(-1, 2, (B_, n)).astype(np.float32)
    m_prev[0, :4] = 1.0  # at the threshold
    gain, decay = rng.uniform(0, 2, n).astype(np.float32), rng.uniform(0, 1, n).astype(np.float32)
    theta = rng.uniform(0.5, 1.5, n).astype(np.float32)
    for reset in (lif.SUBTRACT, lif.ZERO, lif.NONE):
        for whole in (False, True):
            u, m = np.empty((B_, n), np.float32), np.empty((B_, n), np.float32)
            lif.leaky_update(I, gain, m_prev, decay, theta, reset, whole, True, u, m)
            got = np.empty((B_, n), np.float32)
            leaky_update_in_place(I, gain, m_prev, decay, theta, reset, whole, got)
            assert _same_bits(got, u) and _same_bits(got, m)


def test_input_grad_reduced_equals_the_partials_reduced():
    from mimdsim.kernels.mimdsim_snn import bptt, reduce
    from mimdsim.kernels.mimdsim_snn.layer_loops import input_grad_reduced
    rng = np.random.default_rng(6)
    B_, K, rows = 4, 5, 30
    for n, starts, groups in [(20, np.arange(0, 21, 2), np.array([0, 3, 4, 9])), (13, np.array([0, 3, 4, 9, 13]),
                                                                                     np.array([0])),
                              (60, np.arange(0, 61, 2), np.array([0, 12, 13])),  # 11 and 16 after a group's first
                              (80, np.arange(0, 81, 2), np.arange(0, 40, 4))]:  # 10 groups
        W = rng.standard_normal((rows, n)).astype(np.float32)
        W[0] = -0.0
        W[1, 0] = -1.0
        dI = (rng.standard_normal((B_, n)) * (rng.random((B_, n)) < 0.5)).astype(np.float32)
        dI[1] = -0.0
        ids = np.stack([rng.permutation(rows)[:K] for _ in range(B_)]).astype(np.int32)
        ids[0, :2] = [0, 1]
        listed = np.array([5, 3, 0, 4])
        P = np.empty((B_, K, starts.size - 1), np.float32)
        bptt.input_grad_partials(W, ids, listed, dI, starts, P)
        got = np.empty((B_, K), np.float32)
        input_grad_reduced(W, ids, listed, dI, starts, groups, got, np.empty(n, np.float32),
                           np.empty(starts.size - 1, np.float32), np.empty(groups.size, np.float32))
        assert _same_bits(got, reduce.reduce_groups(P, groups).sum(axis=-1))


def test_rate_scan_work_compiled_pass_equals_numpy_route():
    """scan_work's compiled pass (numba loaded) gives numpy's integers, shapes and dtypes, in a loop
    ([I, B, 2, W] hits) and outside one; by hand: width 10, cap 2, 4 hits stop at ceil(10 * 2 / 4) = 5."""
    from types import SimpleNamespace
    from unittest import mock

    import numba  # noqa: F401  (the compiled pass runs once numba is imported)
    from mimdsim.workloads.snn.sources import rate

    rng = np.random.default_rng(3)
    B, W = 5, 6
    bounds = np.concatenate([[0], np.cumsum(rng.integers(1, 50, W))])
    vs = SimpleNamespace(geometry={"bounds": bounds, "cap": rng.integers(0, 9, B * 2 * W)}, layer=1)
    for lead in ((), (7,)):
        hits = rng.integers(0, 14, lead + (B, 2, W))
        fast, plain = SimpleNamespace(_found={}), SimpleNamespace(_found={})
        a = rate.scan_work(fast, vs, hits)
        with mock.patch.object(rate, "numba_loaded", lambda: False):
            b = rate.scan_work(plain, vs, hits)
        for k in ("found", "scanned"):
            assert a[k].shape == b[k].shape and a[k].dtype == b[k].dtype
            np.testing.assert_array_equal(a[k], b[k])
        np.testing.assert_array_equal(fast._found[1], plain._found[1])
    one = SimpleNamespace(geometry={"bounds": np.array([0, 10]), "cap": np.array([2, 2])}, layer=1)
    w = rate.scan_work(SimpleNamespace(_found={}), one, np.array([[[4], [1]]]))  # [B=1, 2, W=1]
    assert w["found"].tolist() == [2, 1] and w["scanned"].tolist() == [5, 10]
