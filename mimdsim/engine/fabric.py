"""Exchange and sync cost model.

Per tile (IPU Model, poplibs ``ExchangeEstimator``)::

    send_cycles[tile] = bytes sent / exchange_send_bytes_per_cycle   (a multicast is sent once)
    recv_cycles[tile] = paired bytes / exchange_broadcast_bytes_per_cycle
                        + other bytes / exchange_recv_bytes_per_cycle
    tile_cycles       = max(send_cycles, recv_cycles)

"paired" bytes are a multicast that the tile's supertile partner (tile ^ 1) receives
too, which the pair receives at the broadcast rate. Across chips, each chip's link
traffic (a multicast crosses once per destination chip) costs bytes / link bytes per
cycle plus the link latency. Host transfers (``src = -1``) cost bytes / host bytes per
cycle plus the host latency per stream (Transfer). A message from a tile to itself is
a local copy and costs no fabric time. The exchange phase costs::

    max(max over tiles(tile_cycles), max over chips(link cycles), host cycles)
      + exchange_latency_cycles + exchange_phase_overhead_cycles

Streams to the host (``dst = -1``) are costed as their mirror image: the host link runs at
``host_bytes_per_second`` in each direction (PCIe and Ethernet are full duplex) and a tile sends at
``exchange_send_bytes_per_cycle``. :func:`exchange_phase` splits a phase into the on-chip
part and ``host``, only the time the host link adds beyond the on-chip and link traffic.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError
from ..program import HOST, Transfer


@dataclass(frozen=True)
class ExchangeCost:
    cycles: float  # the whole exchange phase, on-chip and off-chip
    host_cycles: float  # the part waiting on the host link
    tile_cycles: np.ndarray  # per tile, on-chip fabric only
    link_cycles: float  # slowest chip's link traffic (0 if none)


def fabric_messages(tr):
    """``(src, dst, group, nbytes)`` of a transfer's messages that cross the fabric: a tile "sending" to
    itself is a local copy, not fabric traffic (arrays of the transfer itself when it has none)."""
    keep = tr.src != tr.dst
    if keep.all():  # no local copies (most transfers): no filtered copies either
        src, dst, group, nbytes = tr.src, tr.dst, tr.group, tr.nbytes
    else:
        src, dst, group, nbytes = tr.src[keep], tr.dst[keep], tr.group[keep], tr.nbytes[keep]
    return src, dst, group.astype(np.int64, copy=False), nbytes.astype(np.float64, copy=False)


@dataclass(frozen=True)
class _Messages:
    """What a transfer puts on the fabric, whatever its rates: the exchange rates divide these bytes, so a
    band's re-costs at other rates (and a mirrored stream's) reuse them (:func:`exchange_cost`)."""
    host_bytes: float | None  # bytes of a host stream into the tiles (each group once); None: no host stream
    send: np.ndarray  # bytes each tile sends (a multicast once per (group, src))
    dst: np.ndarray
    nbytes: np.ndarray
    paired: np.ndarray | None  # whether the supertile partner receives the message's group too; None: none does
    links: tuple | None  # (source chip, destination chip, bytes) of each group crossing chips; None: none crosses

    @property
    def size(self) -> int:
        return sum(a.nbytes for a in (self.send, self.dst, self.nbytes, self.paired) if a is not None)


def _messages(tr, system) -> _Messages | None:
    """``tr``'s fabric traffic on ``system`` (None: only local copies)."""
    chip = system.chip
    n = system.tiles
    src, dst, group, nbytes = fabric_messages(tr)
    if src.size == 0:
        return None
    host = src < 0
    host_bytes = None
    if host.any():
        _, idx = np.unique(group[host], return_index=True)
        host_bytes = float(nbytes[host][idx].sum())
    # a multicast leaves its sender once: one send per (group, src)
    unicast = group.size < 2 or bool(np.all(group[1:] > group[:-1]))  # one message per group, in order
    pair = group * (n + 1) + (src + 1)
    if unicast or bool(np.all(pair[1:] > pair[:-1])):  # every pair once, in order (most transfers)
        on = np.flatnonzero(src >= 0)
    else:
        _, first = np.unique(pair, return_index=True)  # (group, src) pairs in order
        on = first[src[first] >= 0]
    send = np.bincount(src[on], nbytes[on], minlength=n)  # integer bytes: exact in any order
    # supertile pairing: the partner receives the same group too (never where each group is one message)
    paired = None
    if not unicast:
        partner_tile = dst ^ 1
        keys = group * n + dst  # np.isin(group * n + partner_tile, group * n + dst), by one sort
        if not bool(np.all(keys[1:] >= keys[:-1])):
            keys = np.sort(keys)
        want = group * n + partner_tile
        at = np.minimum(np.searchsorted(keys, want), keys.size - 1)
        paired = (keys[at] == want) & (partner_tile < n)
    links = None
    # cross-chip: a group crosses once per destination chip, out of the source chip and into dst chip
    if system.chips > 1:  # on one chip nothing crosses
        src_chip = np.where(src >= 0, src // chip.tiles, -1)
        dst_chip = dst // chip.tiles
        cross = (src_chip >= 0) & (src_chip != dst_chip)
        if cross.any():
            _, idx = np.unique(group[cross] * system.chips + dst_chip[cross], return_index=True)
            links = (src_chip[cross][idx], dst_chip[cross][idx], nbytes[cross][idx])
    return _Messages(host_bytes, send, dst, nbytes, paired, links)


_MESSAGES: dict = {}  # _Messages by (transfer content, direction, tiles, chips, tiles per chip), bounded in bytes
_MESSAGES_BYTES = [0]
MESSAGES_KEPT_BYTES = 64 << 20


def _messages_of(tr, system, key):
    """:func:`_messages`, kept by ``key`` (a transfer's content and direction) where one is given."""
    if key is None:
        return _messages(tr, system)
    key = (key, system.tiles, system.chips, system.chip.tiles)
    if key in _MESSAGES:
        return _MESSAGES[key]
    got = _messages(tr, system)
    size = got.size if got is not None else 0
    if len(_MESSAGES) >= 4096 or _MESSAGES_BYTES[0] + size > MESSAGES_KEPT_BYTES:
        _MESSAGES.clear()  # a sweep of many shapes: never past the bound
        _MESSAGES_BYTES[0] = 0
    _MESSAGES[key] = got
    _MESSAGES_BYTES[0] += size
    return got


def exchange_cost(transfers, system, keys=None) -> ExchangeCost:
    """The phase's cost (module docstring). ``keys``: one content key per transfer, under which its
    rate-free traffic (:class:`_Messages`) is kept for re-costs at other rates (the band's)."""
    chip = system.chip
    n = system.tiles
    send = np.zeros(n)
    recv = np.zeros(n)
    link_bytes = np.zeros(system.chips)
    host_bytes, host_streams, moved = 0.0, 0, False
    # integer bytes over power-of-two rates (the presets) add exactly in any order
    exact_sums = all(math.frexp(r)[0] == 0.5 for r in (chip.exchange_broadcast_bytes_per_cycle,
                                                        chip.exchange_recv_bytes_per_cycle))
    for i, tr in enumerate(transfers):
        m = _messages_of(tr, system, None if keys is None else keys[i])
        if m is None:
            continue
        moved = True
        if m.host_bytes is not None:
            host_bytes += m.host_bytes
            host_streams += 1
        send += m.send
        if m.paired is None:
            per = m.nbytes / chip.exchange_recv_bytes_per_cycle
        else:
            per = np.where(m.paired, m.nbytes / chip.exchange_broadcast_bytes_per_cycle,
                           m.nbytes / chip.exchange_recv_bytes_per_cycle)
        if exact_sums:  # dyadic values: any order of adding them is exact, so one bincount adds as add.at
            recv += np.bincount(m.dst, per, minlength=n)
        else:
            np.add.at(recv, m.dst, per)
        if m.links is not None:
            src_chip, dst_chip, b = m.links
            np.add.at(link_bytes, src_chip, b)
            np.add.at(link_bytes, dst_chip, b)
    tile_cycles = np.maximum(send / chip.exchange_send_bytes_per_cycle, recv)
    if not moved:
        return ExchangeCost(0.0, 0.0, tile_cycles, 0.0)
    link = float(link_bytes.max() / chip.link_bytes_per_cycle + chip.link_latency_cycles) if link_bytes.any() else 0.0
    host = float(host_bytes / chip.host_bytes_per_cycle + host_streams * chip.host_latency_cycles) \
        if host_streams else 0.0
    busiest = max(float(tile_cycles.max()), link, host)
    return ExchangeCost(busiest + chip.exchange_latency_cycles + chip.exchange_phase_overhead_cycles,
                        host, tile_cycles, link)


def _split(ex: ExchangeCost) -> tuple[float, float]:
    if not ex.cycles:
        return 0.0, 0.0
    on_chip = max(float(ex.tile_cycles.max(initial=0.0)), ex.link_cycles)
    host = max(0.0, ex.host_cycles - on_chip)
    return ex.cycles - host, host


def _mirror_system(system):
    """The system whose host -> tile cost equals this system's tile -> host cost."""
    c = system.chip
    send = c.exchange_send_bytes_per_cycle
    chip = c.replace(exchange_recv_bytes_per_cycle=send,
                     exchange_broadcast_bytes_per_cycle=max(send, c.exchange_broadcast_bytes_per_cycle))
    return type(system)(chip=chip, chips=system.chips)


_PHASES: dict = {}  # exchange phases by content: programs of one batch size share them across timesteps
_TRAFFIC: dict = {}  # their bytes moved, by content and the system's layout (no rate moves them: a band's
# re-costs at other rates reuse the run's)


def exchange_phase(transfers, system) -> tuple[float, float]:
    """``(exchange, host)`` cycles of one exchange phase (streams to the host mirrored); computed
    once per distinct phase content and system."""
    key = (system, tuple(t.content() for t in transfers))
    hit = _PHASES.get(key)
    if hit is None:
        if len(_PHASES) > 4096:
            _PHASES.clear()
        hit = _PHASES[key] = _exchange_phase(transfers, system)
    return hit


def _exchange_phase(transfers, system) -> tuple[float, float]:
    into, out = [], []
    for t in transfers:
        to_host = t.dst < 0
        if to_host.any() and not to_host.all():
            raise ConfigError(f"transfer {t.name!r} mixes messages to the host with on-chip ones; split it in two")
        (out if to_host.any() else into).append(t)
    exchange, host = _split(exchange_cost(into, system, [(t.content(), "in") for t in into]))
    if out:
        back = [Transfer(t.name, src=np.full_like(t.src, HOST), dst=t.src, nbytes=t.nbytes, group=t.group)
                for t in out]
        e, h = _split(exchange_cost(back, _mirror_system(system), [(t.content(), "mirrored") for t in out]))
        exchange, host = exchange + e, host + h
    return exchange, host


def traffic(transfers, system) -> np.ndarray:
    """Bytes one exchange phase moves (see :func:`_traffic`; once per distinct content and layout)."""
    key = (system.chip.tiles, system.chips, tuple(t.content() for t in transfers))
    hit = _TRAFFIC.get(key)
    if hit is None:
        if len(_TRAFFIC) > 4096:
            _TRAFFIC.clear()
        hit = _TRAFFIC[key] = _traffic(transfers, system)
        hit.flags.writeable = False
    return hit


def _traffic(transfers, system) -> np.ndarray:
    """Bytes one exchange phase moves, for the energy model: ``[on-chip, chip-to-chip link, host]``.

    On-chip bytes count every delivered copy (a multicast drives each receiver); a message
    crossing chips counts once per (group, destination chip) on the link, as the fabric costs it;
    host bytes count a host stream's group once (into the tiles) or every message (to the host).
    A message from a tile to itself is a local copy and moves nothing."""
    out = np.zeros(3)
    tiles = system.chip.tiles
    for tr in transfers:
        src, dst, group, nbytes = fabric_messages(tr)
        host = (src < 0) | (dst < 0)
        out[0] += float(nbytes[~host].sum())
        if host.any():
            h = src < 0
            _, idx = np.unique(group[h], return_index=True)
            out[2] += float(nbytes[h][idx].sum()) + float(nbytes[dst < 0].sum())
        if system.chips == 1:  # every tile on the one chip: nothing crosses
            continue
        cross = ~host & (src // tiles != dst // tiles)
        if cross.any():
            _, idx = np.unique(group[cross] * system.chips + dst[cross] // tiles, return_index=True)
            out[1] += float(nbytes[cross][idx].sum())
    return out


def sync_cost(kind: str, system) -> int:
    """Cycles of one barrier: on-chip, spanning the system's chips, or before a program with no
    exchange ("local": ``local_sync_cycles``, 0 by default: no barrier at all)."""
    if kind not in ("chip", "global", "local"):
        raise ConfigError(f"sync kind {kind!r}: expected 'chip', 'global' or 'local'")
    if kind == "local":
        return system.chip.local_sync_cycles
    return system.chip.global_sync_cycles if kind == "global" else system.chip.sync_cycles
