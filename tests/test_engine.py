"""The BSP engine (``mimdsim.engine.run_program``) on small hand-built programs.

Every expectation is worked out from the chip's constants (read from the spec, never a
preset's literal) and from the codelets' own estimators called directly:

    superstep = max over tiles(sum of the tile's vertices' cycles)    compute
              + exchange phase (on-chip part, host part)               exchange, host
              + sync_cycles (chip) or global_sync_cycles (global)      sync
    launch    = run_launch_cycles, on the host, no sync
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import mimdsim
from mimdsim.kernels.mimdsim_snn.optim import sgd_cycles
from mimdsim.kernels.mimdsim_snn.reduce import grad_copies_cycles
from mimdsim.kernels.tile import Tile
from mimdsim.compiler.transfers import host_stream, point_to_point
from mimdsim.engine import memory_summary, run_program
from mimdsim.engine.fabric import exchange_cost, exchange_phase
from mimdsim.program import Launch, Loop, Program, ProgramMeta, Superstep, TensorAlloc, Transfer, VertexSet
from mimdsim.report import KINDS, PHASES

SYS = mimdsim.system("ipu-mk2", tiles=8)
CHIP = SYS.chip
TILE = Tile.of(CHIP)


@dataclass(frozen=True)
class Halves:
    """A mapping of two tile groups: the lower and the upper half of the tiles."""

    def tile_groups(self, n_tiles: int):
        return np.array([0, n_tiles // 2]), ["low half", "high half"]


def make_program(schedule, system=SYS, tensors=(), timesteps=1, batch_size=1) -> Program:
    return Program(system, Halves(), timesteps, batch_size, list(tensors), list(schedule), ProgramMeta("hand-built"))


def sgd_set(tiles=(0, 1, 1, 5), elements=(100, 200, 300, 50), copies=6, layer=1) -> VertexSet:
    return VertexSet("sgd", layer, np.array(tiles), {"elements": np.array(elements), "copies": copies})


def copies_set(tiles=(1, 2, 6), elements=(600, 40, 2000), copies=6, layer=1) -> VertexSet:
    return VertexSet("grad_copies_reduce", layer, np.array(tiles), {"elements": np.array(elements), "copies": copies})


def per_tile(tiles, cycles, n=SYS.tiles) -> np.ndarray:
    """Sum of per-vertex cycles on each tile (by hand: a loop, not the engine's bincount)."""
    out = np.zeros(n)
    for t, c in zip(tiles, cycles):
        out[t] += c
    return out


def sgd_tiles() -> np.ndarray:
    vs = sgd_set()
    return per_tile(vs.tiles, sgd_cycles(vs.geometry["elements"], 6, TILE))


def copies_tiles() -> np.ndarray:
    vs = copies_set()
    return per_tile(vs.tiles, grad_copies_cycles(vs.geometry["elements"], 6, TILE))


def zero_kinds() -> dict:
    return dict.fromkeys(KINDS, 0.0)


class Recorder:
    """A minimal work source: no work (static codelets), every call recorded."""

    def __init__(self, mode="rate"):
        self.mode = mode
        self.calls: list[tuple[str, int | None]] = []

    def work(self, vs, t):
        self.calls.append((vs.codelet, t))
        return {}


# ---------------------------------------------------------------- compute and sync


def test_static_superstep_charges_slowest_tile_compute_and_chip_sync():
    step = Superstep("update.sgd", "update", compute=(sgd_set(),))
    rep = run_program(make_program([step]))
    tiles = sgd_tiles()
    # tile 1 runs two vertices: their cycles add up on it
    assert tiles[1] == pytest.approx(sum(sgd_cycles(np.array([200, 300]), 6, TILE)))
    expected = {"count": 1, "phase": "update", "compute": tiles.max(), "exchange": 0.0,
                "sync": float(CHIP.sync_cycles), "host": 0.0}
    assert rep.steps == {"update.sgd": pytest.approx(expected)}
    assert rep.cycles["update"] == pytest.approx({"compute": tiles.max(), "exchange": 0.0,
                                                  "sync": CHIP.sync_cycles, "host": 0.0})
    for phase in set(PHASES) - {"update"}:
        assert rep.cycles[phase] == zero_kinds()
    np.testing.assert_allclose(rep.tile_compute_cycles, tiles)
    assert rep.total_cycles == pytest.approx(tiles.max() + CHIP.sync_cycles)
    assert rep.mode == "analytical" and rep.platform == "mimd" and rep.clock_hz == CHIP.clock_hz


def test_two_codelets_in_one_superstep_add_per_tile_before_the_max():
    step = Superstep("update", "update", compute=(sgd_set(), copies_set()))
    rep = run_program(make_program([step]))
    tiles = sgd_tiles() + copies_tiles()
    # the slowest tile of the sum is not the sum of the two sets' slowest tiles
    assert tiles.max() < sgd_tiles().max() + copies_tiles().max()
    assert rep.steps["update"]["compute"] == pytest.approx(tiles.max())
    np.testing.assert_allclose(rep.tile_compute_cycles, tiles)


def test_superstep_without_compute_charges_exchange_and_sync_only():
    step = Superstep("move", "forward", exchange=(point_to_point("p", [0], [5], 400),))
    rep = run_program(make_program([step]))
    on_chip = 400 / CHIP.exchange_send_bytes_per_cycle  # = 400 / recv rate: both 4 B/cycle on MK2
    assert CHIP.exchange_send_bytes_per_cycle == CHIP.exchange_recv_bytes_per_cycle
    assert rep.steps["move"] == pytest.approx({
        "count": 1, "phase": "forward", "compute": 0.0, "sync": float(CHIP.sync_cycles), "host": 0.0,
        "exchange": on_chip + CHIP.exchange_latency_cycles + CHIP.exchange_phase_overhead_cycles})
    assert not rep.tile_compute_cycles.any()


def test_launch_charges_run_launch_cycles_to_host_without_sync():
    rep = run_program(make_program([Launch()]))
    assert CHIP.run_launch_cycles == pytest.approx(CHIP.run_launch_s * CHIP.clock_hz)
    assert rep.steps == {"launch": pytest.approx({"count": 1, "phase": "io", "compute": 0.0, "exchange": 0.0,
                                                  "sync": 0.0, "host": CHIP.run_launch_cycles})}
    assert rep.cycles["io"] == pytest.approx({"compute": 0.0, "exchange": 0.0, "sync": 0.0,
                                              "host": CHIP.run_launch_cycles})
    assert rep.total_cycles == pytest.approx(CHIP.run_launch_cycles)
    assert not rep.tile_compute_cycles.any()


def test_launch_then_superstep_pays_one_sync_for_the_superstep_only():
    rep = run_program(make_program([Launch(), Superstep("update.sgd", "update", compute=(sgd_set(),))]))
    assert rep.kind_totals()["sync"] == CHIP.sync_cycles
    assert rep.total_cycles == pytest.approx(CHIP.run_launch_cycles + sgd_tiles().max() + CHIP.sync_cycles)


def test_global_sync_on_two_chips_charges_global_sync_cycles():
    two = mimdsim.system("ipu-mk2", chips=2, tiles=8)
    assert two.tiles == 16
    far = VertexSet("sgd", 1, np.array([12]), {"elements": np.array([100]), "copies": 6})
    steps = [Superstep("across", "update", compute=(far,), sync="global"),
             Superstep("local", "update", compute=(far,), sync="chip")]
    rep = run_program(make_program(steps, system=two))
    assert rep.steps["across"]["sync"] == two.chip.global_sync_cycles
    assert rep.steps["local"]["sync"] == two.chip.sync_cycles
    assert two.chip.global_sync_cycles != two.chip.sync_cycles
    assert rep.architecture == "2xipu-mk2"
    one = sgd_cycles(np.array([100]), 6, TILE)[0]
    expected = np.zeros(16)
    expected[12] = 2 * one
    np.testing.assert_allclose(rep.tile_compute_cycles, expected)
    assert rep.cycles["update"]["sync"] == two.chip.global_sync_cycles + two.chip.sync_cycles


# ---------------------------------------------------------------- host streams


def _host_only_cycles(total_bytes, streams=1, chip=CHIP):
    return total_bytes / chip.host_bytes_per_cycle + streams * chip.host_latency_cycles


FIXED = CHIP.exchange_latency_cycles + CHIP.exchange_phase_overhead_cycles


def test_host_to_tile_stream_matches_exchange_cost_split_into_exchange_and_host():
    stream = host_stream("in", [1, 2, 3], [400, 800, 1200])
    rep = run_program(make_program([Superstep("io.in", "io", exchange=(stream,))]))
    tile = 1200 / CHIP.exchange_recv_bytes_per_cycle  # the busiest receiver
    host = _host_only_cycles(2400)
    assert host > tile  # the host link is the bottleneck: it adds host - tile beyond the fabric
    rec = rep.steps["io.in"]
    assert rec["exchange"] == pytest.approx(tile + FIXED)
    assert rec["host"] == pytest.approx(host - tile)
    ex = exchange_cost((stream,), SYS)
    assert ex.cycles == pytest.approx(host + FIXED)
    assert rec["exchange"] + rec["host"] == pytest.approx(ex.cycles)
    assert rep.cycles["io"]["host"] == pytest.approx(host - tile)


def test_host_stream_hidden_behind_the_receiving_tile_charges_no_host_cycles():
    stream = host_stream("in", [3], [200_000])
    rep = run_program(make_program([Superstep("io.in", "io", exchange=(stream,))]))
    tile = 200_000 / CHIP.exchange_recv_bytes_per_cycle
    assert _host_only_cycles(200_000) < tile
    assert rep.steps["io.in"]["exchange"] == pytest.approx(tile + FIXED)
    assert rep.steps["io.in"]["host"] == 0.0


def test_tile_to_host_stream_costs_the_mirror_of_host_to_tile():
    # a slow sender (2 B/cycle) against a 4 B/cycle receiver: the mirror uses the send rate
    slow_send = mimdsim.system("ipu-mk2", tiles=8, exchange_send_bytes_per_cycle=2.0)
    slow_recv = mimdsim.system("ipu-mk2", tiles=8, exchange_recv_bytes_per_cycle=2.0,
                               exchange_send_bytes_per_cycle=4.0)
    chip = slow_send.chip
    out = host_stream("out", [1, 2, 3], [400, 800, 1200], to_host=True)
    rep = run_program(make_program([Superstep("io.out", "io", exchange=(out,))], system=slow_send))
    tile = 1200 / chip.exchange_send_bytes_per_cycle
    host = _host_only_cycles(2400, chip=chip)
    assert host > tile
    assert rep.steps["io.out"]["exchange"] == pytest.approx(tile + FIXED)
    assert rep.steps["io.out"]["host"] == pytest.approx(host - tile)
    # the same bytes into the tiles of a chip that receives at the sender's rate cost the same
    into = host_stream("in", [1, 2, 3], [400, 800, 1200])
    mirror = run_program(make_program([Superstep("io.out", "io", exchange=(into,))], system=slow_recv))
    assert mirror.steps["io.out"] == pytest.approx(rep.steps["io.out"])
    assert exchange_phase((out,), slow_send) == pytest.approx(exchange_phase((into,), slow_recv))


def test_streams_both_ways_in_one_superstep_add_their_exchange_and_host_parts():
    into = host_stream("in", [1, 2, 3], [400, 800, 1200])
    out = host_stream("out", [4, 5], [1600, 400], to_host=True)
    rep = run_program(make_program([Superstep("io", "io", exchange=(into, out))]))
    in_tile, out_tile = 1200 / CHIP.exchange_recv_bytes_per_cycle, 1600 / CHIP.exchange_send_bytes_per_cycle
    in_host, out_host = _host_only_cycles(2400), _host_only_cycles(2000)
    assert in_host > in_tile and out_host > out_tile
    rec = rep.steps["io"]
    assert rec["exchange"] == pytest.approx(in_tile + FIXED + out_tile + FIXED)
    assert rec["host"] == pytest.approx(in_host - in_tile + out_host - out_tile)
    assert (rec["exchange"], rec["host"]) == pytest.approx(exchange_phase((into, out), SYS))


def test_host_stream_leaves_out_empty_messages():
    stream = host_stream("in", [1, 2, 3], [400, 0, 1200])
    assert list(stream.dst) == [1, 3] and list(stream.src) == [-1, -1]
    rep = run_program(make_program([Superstep("io.in", "io", exchange=(stream,))]))
    tile = 1200 / CHIP.exchange_recv_bytes_per_cycle
    assert rep.steps["io.in"]["host"] == pytest.approx(_host_only_cycles(1600) - tile)


# ---------------------------------------------------------------- loops, sources, progress


# ---------------------------------------------------------------- barrier-free local supersteps

def test_local_superstep_runs_on_from_the_last_barrier_without_a_sync():
    """A then B (local): each tile runs B right after its own A; B is charged what it adds to the
    slowest tile: max(A + B) - max(A), and no sync."""
    steps = [Superstep("a", "update", compute=(sgd_set(),)),
             Superstep("b", "update", compute=(copies_set(),), sync="local")]
    rep = run_program(make_program(steps))
    a, b = sgd_tiles(), copies_tiles()
    assert CHIP.local_sync_cycles == 0
    assert (a + b).max() < a.max() + b.max()  # the sets' slowest tiles differ: overlap saves
    assert rep.steps["a"]["compute"] == pytest.approx(a.max())
    assert rep.steps["b"]["compute"] == pytest.approx((a + b).max() - a.max())
    assert rep.steps["b"]["sync"] == 0.0
    assert rep.total_cycles == pytest.approx((a + b).max() + CHIP.sync_cycles)
    assert rep.activity["local_overlap_cycles"] == pytest.approx(a.max() + b.max() - (a + b).max())
    np.testing.assert_allclose(rep.tile_compute_cycles, a + b)


def test_local_superstep_with_a_barrier_cost_is_an_ordinary_superstep():
    """local_sync_cycles > 0: a barrier before it, so the tiles wait and nothing overlaps."""
    system = mimdsim.system("ipu-mk2", tiles=8, local_sync_cycles=40)
    steps = [Superstep("a", "update", compute=(sgd_set(),)),
             Superstep("b", "update", compute=(copies_set(),), sync="local")]
    rep = run_program(make_program(steps, system=system))
    assert rep.steps["b"]["compute"] == pytest.approx(copies_tiles().max())
    assert rep.steps["b"]["sync"] == 40.0
    assert "local_overlap_cycles" not in rep.activity


def local_body():
    return (Superstep("b", "forward", compute=(copies_set(),), sync="local"),
            Superstep("a", "forward", compute=(sgd_set(),)),
            Superstep("c", "forward", compute=(copies_set(layer=2),), sync="local"))


@pytest.mark.parametrize("how", ["analytical", "source", "timeline"])
def test_a_run_of_local_supersteps_is_cut_at_each_loop_iteration(how):
    """Per iteration: b opens a run (nothing before it in the iteration): max(b); a is a barrier:
    max(a); c runs on after a: max(a + c) - max(a). The three engine paths agree."""
    prog = make_program([Loop("steps", 3, local_body())])
    rep = run_program(prog, None if how == "analytical" else Recorder(),
                      timeline=[] if how == "timeline" else None)
    a, c = sgd_tiles(), copies_tiles()
    assert rep.steps["b"]["compute"] == pytest.approx(3 * c.max())
    assert rep.steps["a"]["compute"] == pytest.approx(3 * a.max())
    assert rep.steps["c"]["compute"] == pytest.approx(3 * ((a + c).max() - a.max()))
    assert rep.kind_totals()["sync"] == pytest.approx(3 * CHIP.sync_cycles)


def loop_body():
    return (Superstep("a", "forward", compute=(sgd_set(),), exchange=(point_to_point("p", [0], [3], 400),)),
            Superstep("b", "backward", compute=(copies_set(),)))


def test_analytical_loop_charges_its_body_count_times():
    rep = run_program(make_program([Loop("steps", 5, loop_body())]))
    a_exchange = 400 / CHIP.exchange_recv_bytes_per_cycle + FIXED
    assert rep.steps["a"] == pytest.approx({"count": 5, "phase": "forward", "compute": 5 * sgd_tiles().max(),
                                            "exchange": 5 * a_exchange, "sync": 5 * CHIP.sync_cycles, "host": 0.0})
    assert rep.steps["b"] == pytest.approx({"count": 5, "phase": "backward", "compute": 5 * copies_tiles().max(),
                                            "exchange": 0.0, "sync": 5 * CHIP.sync_cycles, "host": 0.0})
    np.testing.assert_allclose(rep.tile_compute_cycles, 5 * (sgd_tiles() + copies_tiles()))


def test_analytical_loop_equals_a_source_run_that_returns_no_work():
    prog = make_program([Launch(), Superstep("pre", "io", compute=(sgd_set(layer=2),)), Loop("steps", 5, loop_body())])
    analytical = run_program(prog)
    source = Recorder()
    driven = run_program(prog, source)
    assert driven.mode == "rate-driven" and analytical.mode == "analytical"
    assert driven.steps.keys() == analytical.steps.keys()
    for name in analytical.steps:
        assert driven.steps[name] == pytest.approx(analytical.steps[name])
    for phase in PHASES:
        assert driven.cycles[phase] == pytest.approx(analytical.cycles[phase])
    np.testing.assert_allclose(driven.tile_compute_cycles, analytical.tile_compute_cycles)
    # the source was asked once per vertex set per execution: 1 outside the loop, 2 x 5 inside
    assert len(source.calls) == 1 + 2 * 5


def test_source_sees_none_outside_loops_and_t_in_order_inside():
    source = Recorder()
    run_program(make_program([Superstep("pre", "io", compute=(sgd_set(),)), Loop("fwd", 3, loop_body())]), source)
    assert source.calls == [("sgd", None)] + [(c, t) for t in range(3) for c in ("sgd", "grad_copies_reduce")]


def test_reverse_loop_passes_t_to_the_source_in_reverse_order():
    source = Recorder()
    run_program(make_program([Loop("bwd", 4, loop_body(), reverse=True)]), source)
    assert source.calls == [(c, t) for t in (3, 2, 1, 0) for c in ("sgd", "grad_copies_reduce")]


def test_progress_is_called_after_every_iteration_with_a_source():
    calls = []
    prog = make_program([Loop("fwd", 3, loop_body()), Superstep("mid", "update", compute=(sgd_set(),)),
                         Loop("bwd", 4, loop_body(), reverse=True)])
    run_program(prog, Recorder(), progress=lambda done, total: calls.append((done, total)))
    assert calls == [(i, 7) for i in range(1, 8)]


def test_progress_is_called_once_per_loop_without_a_source():
    calls = []
    prog = make_program([Loop("fwd", 3, loop_body()), Loop("bwd", 4, loop_body(), reverse=True)])
    run_program(prog, progress=lambda done, total: calls.append((done, total)))
    assert calls == [(3, 7), (7, 7)]


# ---------------------------------------------------------------- timeline


def test_timeline_has_one_record_per_superstep_execution_with_group_compute():
    timeline = []
    prog = make_program([Launch(), Loop("fwd", 3, loop_body()), Superstep("upd", "update", compute=(sgd_set(),))])
    rep = run_program(prog, Recorder(), timeline=timeline)
    assert [(r["name"], r["t"]) for r in timeline] == (
        [("launch", None)] + [(n, t) for t in range(3) for n in ("a", "b")] + [("upd", None)])
    n_groups = len(Halves().tile_groups(SYS.tiles)[0])
    assert all(len(r["group_compute"]) == n_groups for r in timeline)
    half = SYS.tiles // 2
    a = timeline[1]
    np.testing.assert_allclose(a["group_compute"], [sgd_tiles()[:half].max(), sgd_tiles()[half:].max()])
    b = timeline[2]
    np.testing.assert_allclose(b["group_compute"], [copies_tiles()[:half].max(), copies_tiles()[half:].max()])
    assert not np.any(timeline[0]["group_compute"])  # a launch computes nothing
    assert timeline[0]["host"] == pytest.approx(CHIP.run_launch_cycles) and timeline[0]["sync"] == 0.0
    assert a["phase"] == "forward" and a["compute"] == pytest.approx(sgd_tiles().max())
    assert a["sync"] == CHIP.sync_cycles
    # the timeline's records add up to the report
    assert sum(r[k] for r in timeline for k in KINDS) == pytest.approx(rep.total_cycles)


def test_analytical_timeline_repeats_the_body_count_times_in_execution_order():
    timeline = []
    rep = run_program(make_program([Loop("fwd", 4, loop_body())]), timeline=timeline)
    assert [r["name"] for r in timeline] == ["a", "b"] * 4
    assert all(r["t"] is None for r in timeline)  # no source: no iteration index
    assert sum(r[k] for r in timeline for k in KINDS) == pytest.approx(rep.total_cycles)


# ---------------------------------------------------------------- errors


def test_unknown_codelet_raises_config_error_naming_it():
    vs = VertexSet("no_such_codelet", None, np.array([0]), {})
    with pytest.raises(mimdsim.ConfigError, match="no_such_codelet"):
        run_program(make_program([Superstep("s", "forward", compute=(vs,))]))


def test_superstep_with_a_bad_phase_raises_config_error():
    with pytest.raises(mimdsim.ConfigError, match="sideways"):
        Superstep("s", "sideways")


def test_superstep_with_a_bad_sync_kind_raises_config_error():
    with pytest.raises(mimdsim.ConfigError, match="galactic"):
        Superstep("s", "forward", sync="galactic")


def test_transfer_mixing_to_host_and_on_chip_messages_raises_config_error():
    mixed = Transfer("mixed", src=np.array([1, 2]), dst=np.array([-1, 3]), nbytes=np.array([8, 8]),
                     group=np.array([0, 1]))
    with pytest.raises(mimdsim.ConfigError, match="mixed"):
        run_program(make_program([Superstep("s", "io", exchange=(mixed,))]))


# ---------------------------------------------------------------- memory


def memory_tensors():
    return [TensorAlloc("w", "weights", np.array([0, 1, 2]), np.array([100, 200, 50])),
            TensorAlloc("w2", "weights", np.array([2]), np.array([40])),
            TensorAlloc("buf", "buffers", np.array([1, 2, 7]), np.array([60, 30, 500])),
            TensorAlloc("code", "code", np.array([1]), np.array([5]))]


def test_memory_summary_names_the_fullest_tile_and_its_bytes_by_category():
    prog = make_program([], tensors=memory_tensors())
    mem = memory_summary(prog)
    # per tile: 0: 100, 1: 200 + 60 + 5 = 265, 2: 50 + 40 + 30 = 120, 7: 500
    assert mem == {"max_tile_bytes": 500, "tile_bytes_limit": CHIP.sram_per_tile, "fullest_tile": 7,
                   "fullest_tile_by_category": {"weights": 0, "buffers": 500, "code": 0},
                   "total_bytes": 100 + 265 + 120 + 500}


def test_report_memory_and_tile_bytes_come_from_the_tensor_allocs():
    tensors = memory_tensors()[:2] + [TensorAlloc("buf", "buffers", np.array([1, 2]), np.array([60, 30])),
                                      memory_tensors()[3]]
    rep = run_program(make_program([Superstep("s", "update", compute=(sgd_set(),))], tensors=tensors))
    np.testing.assert_array_equal(rep.tile_memory_bytes, [100, 265, 120, 0, 0, 0, 0, 0])
    assert rep.memory["fullest_tile"] == 1 and rep.memory["max_tile_bytes"] == 265
    assert rep.memory["fullest_tile_by_category"] == {"weights": 200, "buffers": 60, "code": 5}
    assert rep.memory["tile_bytes_limit"] == CHIP.sram_per_tile


def test_program_without_tensors_reports_empty_memory():
    rep = run_program(make_program([Launch()]))
    assert rep.memory["max_tile_bytes"] == 0 and rep.memory["total_bytes"] == 0
    assert rep.memory["fullest_tile_by_category"] == {}
    assert not rep.tile_memory_bytes.any()


# ---------------------------------------------------------------- defects found by these tests, fixed


def test_supersteps_sharing_a_name_are_each_charged_their_own_exchange():
    small = Superstep("x", "forward", exchange=(point_to_point("a", [0], [1], 400),))
    large = Superstep("x", "forward", exchange=(point_to_point("b", [0], [1], 4000),))
    rep = run_program(make_program([small, large]))
    expected = (400 + 4000) / CHIP.exchange_recv_bytes_per_cycle + 2 * FIXED
    assert rep.steps["x"]["exchange"] == pytest.approx(expected)


def test_dynamic_codelet_without_a_source_raises_config_error():
    vs = VertexSet("lif_forward", 1, np.array([0, 1]), {"n_local": np.array([4, 4])})
    with pytest.raises(mimdsim.ConfigError, match="lif_forward"):
        run_program(make_program([Superstep("fwd", "forward", compute=(vs,))]))


def test_a_loop_charged_at_once_records_what_per_execution_charges_record():
    """The engine hands every charge to one recorder (``mimdsim.engine.recorder``): a loop body charged
    at once (a cumulative sum per phase) and charged execution by execution (a timeline asked for) leave
    the same tallies, exactly, and the loop-cycle records add up to the loops' share."""
    body = local_body() + loop_body() + (Launch(),)
    prog = make_program([Launch(), Loop("fwd", 3, body), Superstep("upd", "update", compute=(sgd_set(),)),
                         Loop("bwd", 2, body, reverse=True)])
    loops = []
    at_once = run_program(prog, Recorder(), loop_cycles=loops)
    timeline = []
    each = run_program(prog, Recorder(), timeline=timeline)
    assert at_once.to_dict() == each.to_dict()
    assert [list(t) for t, _ in loops] == [[0, 1, 2], [1, 0]]
    in_loops = sum(r[k] for r in timeline if r["t"] is not None for k in KINDS)
    assert sum(c.sum() for _, c in loops) == in_loops
