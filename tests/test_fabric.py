"""Exchange and sync cost model (``mimdsim.engine.fabric``) against hand-worked cycles.

Model (``docs/cost-model.md`` §2, the docstring of ``mimdsim/engine/fabric.py``)::

    tile  = max(sent / send B/cycle, paired received / broadcast B/cycle
                                     + other received / recv B/cycle)
    link  = max over chips(link bytes) / (link_bytes_per_second / clock_hz) + link latency
    host  = host bytes / (host_bytes_per_second / clock_hz) + host latency
    phase = max(tile, link, host) + exchange_latency_cycles + exchange_phase_overhead_cycles

MK2 defaults: send = recv = 4 B/cycle, broadcast (supertile pair) 8 B/cycle, latency
98, phase overhead 0 (issue 24; 600 before), link latency 1 us, host latency 1.5 us (one per host stream),
host link PCIe Gen4 x16 one direction (31.5 GB/s), sync 126 / 600.
Every expectation is a literal expression, not a call of the model's formula.
"""
from __future__ import annotations

import numpy as np
import pytest

import mimdsim
from mimdsim.engine.fabric import ExchangeCost, exchange_cost, sync_cost
from mimdsim.program import Transfer

MK2_CLOCK = 62.5e12 / (1472 * 32)  # Hz: 62.5 TFLOPS fp32 / (1472 tiles * 32 FLOPs/cycle)


PCIE4 = 16e9 * 16 * (128 / 130) / 8  # PCIe Gen4 x16, one direction


def tr(src, dst, nbytes, group=None, name="t"):
    src = np.atleast_1d(np.asarray(src, dtype=np.int64))
    dst = np.atleast_1d(np.asarray(dst, dtype=np.int64))
    nbytes = np.broadcast_to(np.asarray(nbytes, dtype=np.int64), dst.shape).copy()
    src = np.broadcast_to(src, dst.shape).copy()
    group = np.arange(dst.size) if group is None else np.broadcast_to(np.asarray(group), dst.shape).copy()
    return Transfer(name, src, dst, nbytes, group)


def sys8(**kw):
    return mimdsim.system("ipu-mk2", tiles=8, **kw)


def bare(**kw):
    """No fixed latency or phase overhead: the cycles are the busiest resource alone."""
    return sys8(exchange_latency_cycles=0, exchange_phase_overhead_cycles=0, **kw)


def _eq(actual, expected):
    np.testing.assert_allclose(np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64),
                               rtol=1e-12, atol=1e-9)


# ---------------------------------------------------------------- on-chip


def test_point_to_point_single_message():
    ex = exchange_cost((tr(0, 5, 400),), sys8())
    assert isinstance(ex, ExchangeCost)
    # 400 B at 4 B/cycle out of tile 0 and into tile 5, plus latency 98 (no phase overhead)
    assert ex.cycles == pytest.approx(400 / 4 + 98)
    _eq(ex.tile_cycles, [400 / 4, 0, 0, 0, 0, 400 / 4, 0, 0])
    assert ex.host_cycles == 0 and ex.link_cycles == 0


def test_point_to_point_terms_isolated():
    assert exchange_cost((tr(0, 5, 400),), bare()).cycles == pytest.approx(400 / 4)
    assert exchange_cost((tr(0, 5, 400),), sys8(exchange_phase_overhead_cycles=0)).cycles == \
        pytest.approx(400 / 4 + 98)
    assert exchange_cost((tr(0, 5, 400),), sys8(exchange_latency_cycles=0, exchange_phase_overhead_cycles=600)
                         ).cycles == pytest.approx(400 / 4 + 600)
    # non-default rates: send 2 B/cycle, receive 5 B/cycle -> the sender is the bottleneck
    ex = exchange_cost((tr(0, 5, 400),), bare(exchange_send_bytes_per_cycle=2.0,
                                              exchange_recv_bytes_per_cycle=5.0,
                                              exchange_broadcast_bytes_per_cycle=10.0))
    _eq(ex.tile_cycles, [400 / 2, 0, 0, 0, 0, 400 / 5, 0, 0])
    assert ex.cycles == pytest.approx(400 / 2)


def test_multicast_to_supertile_pair_uses_broadcast_rate():
    # tiles 2 and 3 (2 ^ 1 == 3) receive the same group: 8 B/cycle each
    ex = exchange_cost((tr(0, [2, 3], 64, group=0),), bare())
    _eq(ex.tile_cycles, [64 / 4, 0, 64 / 8, 64 / 8, 0, 0, 0, 0])
    # the sender sends the multicast once: 64 B at 4 B/cycle is the busiest
    assert ex.cycles == pytest.approx(64 / 4)


def test_multicast_to_non_pair_uses_receive_rate():
    # tiles 2 and 4 are not a supertile pair: 4 B/cycle each
    ex = exchange_cost((tr(0, [2, 4], 64, group=0),), bare())
    _eq(ex.tile_cycles, [64 / 4, 0, 64 / 4, 0, 64 / 4, 0, 0, 0])
    assert ex.cycles == pytest.approx(64 / 4)


def test_pair_receiving_different_data_is_not_a_broadcast():
    # tiles 2 and 3 receive different groups: 4 B/cycle each, and the sender sends both
    ex = exchange_cost((tr(0, [2, 3], 64, group=[0, 1]),), bare())
    _eq(ex.tile_cycles, [(64 + 64) / 4, 0, 64 / 4, 64 / 4, 0, 0, 0, 0])
    assert ex.cycles == pytest.approx(128 / 4)


def test_same_group_id_in_two_transfers_is_different_data():
    # group ids are local to a Transfer: two transfers with group 0 are two messages
    ex = exchange_cost((tr(0, 2, 64, group=0, name="a"), tr(0, 3, 64, group=0, name="b")), bare())
    _eq(ex.tile_cycles, [(64 + 64) / 4, 0, 64 / 4, 64 / 4, 0, 0, 0, 0])


def test_multicast_to_all_tiles_is_sent_once():
    # tile 0 multicasts 400 B to tiles 1..7 (one group)
    # sender: 400 / 4 = 100 (not 7 * 100)
    # tile 1: partner 0 does not receive -> 400 / 4; pairs (2,3) (4,5) (6,7) -> 400 / 8
    ex = exchange_cost((tr(0, np.arange(1, 8), 400, group=0),), sys8())
    _eq(ex.tile_cycles, [400 / 4, 400 / 4, 400 / 8, 400 / 8, 400 / 8, 400 / 8, 400 / 8, 400 / 8])
    assert ex.cycles == pytest.approx(400 / 4 + 98)


def test_receiver_from_several_senders_bytes_add():
    # tiles 0, 1, 2 each send one message (own group) to tile 5: 100 + 200 + 40 B
    ex = exchange_cost((tr([0, 1, 2], [5, 5, 5], [100, 200, 40]),), sys8())
    _eq(ex.tile_cycles, [100 / 4, 200 / 4, 40 / 4, 0, 0, (100 + 200 + 40) / 4, 0, 0])
    assert ex.cycles == pytest.approx((100 + 200 + 40) / 4 + 98)


def test_bytes_add_across_transfers_of_one_exchange():
    # two transfers each 0 -> 5: the sender and receiver carry both
    ex = exchange_cost((tr(0, 5, 100, name="a"), tr(0, 5, 300, name="b"), tr(6, 7, 40, name="c")), bare())
    _eq(ex.tile_cycles, [(100 + 300) / 4, 0, 0, 0, 0, (100 + 300) / 4, 40 / 4, 40 / 4])
    assert ex.cycles == pytest.approx(400 / 4)


def test_sender_of_several_point_to_point_messages_bytes_add():
    # tile 4 sends 80 B to each of tiles 0, 1, 2 as separate messages (distinct groups)
    ex = exchange_cost((tr(4, [0, 1, 2], 80),), bare())
    _eq(ex.tile_cycles, [80 / 4, 80 / 4, 80 / 4, 0, 3 * 80 / 4, 0, 0, 0])
    assert ex.cycles == pytest.approx(3 * 80 / 4)


def test_two_senders_of_one_group_each_send():
    # tiles 0 and 1 both send group 0 (same data) to tiles 4 and 6 respectively
    ex = exchange_cost((tr([0, 1], [4, 6], 100, group=0),), bare())
    _eq(ex.tile_cycles, [100 / 4, 100 / 4, 0, 0, 100 / 4, 0, 100 / 4, 0])


# ---------------------------------------------------------------- empty exchange


def test_empty_exchange_costs_nothing():
    for s in (sys8(), mimdsim.system("ipu-mk2", chips=2, tiles=8)):
        for empty in ((), []):
            ex = exchange_cost(empty, s)
            assert ex.cycles == 0 and ex.host_cycles == 0 and ex.link_cycles == 0
            _eq(ex.tile_cycles, np.zeros(s.tiles))


def test_exchange_of_transfers_without_messages_costs_nothing():
    e = np.array([], dtype=np.int64)
    ex = exchange_cost((Transfer("empty", e, e, e, e),), sys8())
    assert ex.cycles == 0


# ---------------------------------------------------------------- cross-chip


def two_chips(**kw):
    return mimdsim.system("ipu-mk2", chips=2, tiles=8, **kw)


def test_cross_chip_message_link_bandwidth_and_latency():
    # clock 1 GHz, links 2 GB/s -> 2 B/cycle; tile 1 (chip 0) -> tile 9 (chip 1), 800 B
    s = two_chips(clock_hz=1e9, link_bytes_per_second=2e9)
    ex = exchange_cost((tr(1, 9, 800),), s)
    # tiles: 800 / 4 = 200; link: 800 / 2 + 1000 = 1730 is the busiest
    assert ex.link_cycles == pytest.approx(800 / 2 + 1000)
    assert ex.cycles == pytest.approx(800 / 2 + 1000 + 98)
    expect = np.zeros(16)
    expect[1] = expect[9] = 800 / 4
    _eq(ex.tile_cycles, expect)


def test_cross_chip_with_mk2_preset_rates():
    # MK2 link: 320 GB/s / clock (62.5e12 / 47104 Hz) = 241.17248 B/cycle
    s = two_chips()
    ex = exchange_cost((tr(1, 9, 4000),), s)
    link = 4000 / (320e9 / MK2_CLOCK) + 1e-6 * MK2_CLOCK
    assert ex.link_cycles == pytest.approx(link)
    assert ex.link_cycles == pytest.approx(4000 / 241.17248 + 1326.851)
    assert ex.cycles == pytest.approx(link + 98)  # link beats 4000 / 4 = 1000 tile cycles


def test_cross_chip_latency_isolated():
    s = two_chips(clock_hz=1e9, link_bytes_per_second=1e12, link_latency_s=0,
                  exchange_latency_cycles=0, exchange_phase_overhead_cycles=0)
    # 800 B at 1000 B/cycle on the link = 0.8 cycles; the tiles (800 / 4 = 200) dominate
    ex = exchange_cost((tr(1, 9, 800),), s)
    assert ex.link_cycles == pytest.approx(800 / 1000)
    assert ex.cycles == pytest.approx(800 / 4)


def test_cross_chip_multicast_crosses_once_per_chip():
    s = two_chips(clock_hz=1e9, link_bytes_per_second=2e9)
    # one group from tile 1 to tiles 9, 10, 12 on chip 1: crosses once
    once = exchange_cost((tr(1, [9, 10, 12], 800, group=0),), s)
    assert once.link_cycles == pytest.approx(800 / 2 + 1000)
    # three groups: three crossings
    three = exchange_cost((tr(1, [9, 10, 12], 800),), s)
    assert three.link_cycles == pytest.approx(3 * 800 / 2 + 1000)
    assert three.cycles == pytest.approx(3 * 800 / 2 + 1000 + 98)


def test_cross_chip_multicast_to_several_chips():
    # 4 chips: tile 1 multicasts 800 B to tiles 9 (chip 1), 17 (chip 2), 25 (chip 3)
    # chip 0's links carry it once per destination chip: 3 * 800 B at 2 B/cycle
    s = mimdsim.system("ipu-mk2", chips=4, tiles=8, clock_hz=1e9, link_bytes_per_second=2e9)
    ex = exchange_cost((tr(1, [9, 17, 25], 800, group=0),), s)
    assert ex.link_cycles == pytest.approx(3 * 800 / 2 + 1000)


def test_cross_chip_both_directions_share_the_link_budget():
    # chip 0 -> chip 1: 800 B; chip 1 -> chip 0: 200 B -> each chip's links carry 1000 B
    s = two_chips(clock_hz=1e9, link_bytes_per_second=2e9)
    ex = exchange_cost((tr([1, 9], [9, 1], [800, 200]),), s)
    assert ex.link_cycles == pytest.approx((800 + 200) / 2 + 1000)


def test_on_chip_traffic_of_a_two_chip_system_uses_no_link():
    s = two_chips(clock_hz=1e9, link_bytes_per_second=2e9)
    ex = exchange_cost((tr([1, 9], [2, 10], 800),), s)
    assert ex.link_cycles == 0
    assert ex.cycles == pytest.approx(800 / 4 + 98)


# ---------------------------------------------------------------- host


def test_host_transfer():
    # clock 1 GHz, host 4 GB/s -> 4 B/cycle; host -> tile 3, 800 B
    s = sys8(clock_hz=1e9, host_bytes_per_second=4e9)
    ex = exchange_cost((tr(-1, 3, 800),), s)
    assert ex.host_cycles == pytest.approx(800 / 4 + 1500)
    assert ex.cycles == pytest.approx(800 / 4 + 1500 + 98)
    _eq(ex.tile_cycles, [0, 0, 0, 800 / 4, 0, 0, 0, 0])  # the host is no tile: nobody sends
    assert ex.link_cycles == 0


def test_host_transfer_mk2_preset_rates():
    # MK2 host (an IPU-M2000's 100 GbE NIC): 12.5 GB/s / clock = 9.420800 B/cycle; 1e6 B -> 106148.1 cycles
    # + 1.5 us (1990.28 cycles)
    ex = exchange_cost((tr(-1, 3, 10**6),), sys8())
    host = 10**6 / (12.5e9 / MK2_CLOCK) + 1.5e-6 * MK2_CLOCK
    assert ex.host_cycles == pytest.approx(host)
    assert ex.host_cycles == pytest.approx(10**6 / 9.4208 + 1990.277, rel=1e-6)
    # one tile receives the 1e6 B at only 4 B/cycle: 250000 cycles beat the host link
    assert ex.cycles == pytest.approx(10**6 / 4 + 98)
    # with a 300000-cycle host latency the host is the busiest: 106148.1 + 300000 > 250000
    slow = exchange_cost((tr(-1, 3, 10**6),), sys8(host_latency_s=300000 / MK2_CLOCK))
    assert slow.cycles == pytest.approx(10**6 / (12.5e9 / MK2_CLOCK) + 300000 + 98)
    # the IPU's own PCIe Gen4 x16 (to the gateway), as a --set what-if: 23.746207 B/cycle
    pcie = exchange_cost((tr(-1, 3, 10**6),), sys8(host_bytes_per_second=PCIE4))
    assert pcie.host_cycles == pytest.approx(10**6 / 23.746207 + 1990.277, rel=1e-6)


def test_host_multicast_counts_host_bytes_once():
    # host multicasts 800 B to tiles 2, 3 (a pair) and 4
    s = sys8(clock_hz=1e9, host_bytes_per_second=4e9, host_latency_s=0)
    ex = exchange_cost((tr(-1, [2, 3, 4], 800, group=0),), s)
    assert ex.host_cycles == pytest.approx(800 / 4)
    _eq(ex.tile_cycles, [0, 0, 800 / 8, 800 / 8, 800 / 4, 0, 0, 0])


def test_host_and_tile_traffic_in_one_exchange():
    # host -> tile 3 (800 B at 4 B/cycle + 1500) alongside a heavy tile message 0 -> 1 (40000 B)
    s = sys8(clock_hz=1e9, host_bytes_per_second=4e9)
    ex = exchange_cost((tr(-1, 3, 800, name="in"), tr(0, 1, 40000, name="p2p")), s)
    assert ex.host_cycles == pytest.approx(800 / 4 + 1500)
    # the tiles (40000 / 4 = 10000) are the busiest
    assert ex.cycles == pytest.approx(40000 / 4 + 98)


# ---------------------------------------------------------------- sync


def test_sync_cost_chip_and_global():
    one = mimdsim.system("ipu-mk2", tiles=8)
    two = mimdsim.system("ipu-mk2", chips=2, tiles=8)
    assert sync_cost("chip", one) == 126
    assert sync_cost("chip", two) == 126
    assert sync_cost("global", two) == 600
    assert sync_cost("global", two) > sync_cost("chip", two)
    custom = mimdsim.system("ipu-mk2", chips=2, tiles=8, sync_cycles=50, global_sync_cycles=700)
    assert sync_cost("chip", custom) == 50
    assert sync_cost("global", custom) == 700


def test_message_to_itself_is_a_local_copy():
    # tile 2 "sends" to itself: no fabric time; the other message still costs
    ex = exchange_cost((tr([2, 2], [2, 5], 40),), bare())
    _eq(ex.tile_cycles, [0, 0, 40 / 4, 0, 0, 40 / 4, 0, 0])


def test_host_latency_per_stream():
    s = bare(host_bytes_per_second=4e9, clock_hz=1e9, host_latency_s=2e-6)
    one = exchange_cost((tr(-1, 3, 400),), s)
    two = exchange_cost((tr(-1, 3, 200), tr(-1, 5, 200, group=7)), s)
    assert one.host_cycles == pytest.approx(400 / 4 + 2000)
    assert two.host_cycles == pytest.approx(400 / 4 + 2 * 2000)


def test_sync_cost_rejects_unknown_kind():
    with pytest.raises(ValueError, match="sync kind 'galactic'"):
        sync_cost("galactic", sys8())


def test_local_sync_costs_the_chips_local_sync_cycles():
    assert sync_cost("local", sys8()) == sys8().chip.local_sync_cycles == 0
    assert sync_cost("local", bare(local_sync_cycles=40)) == 40
