"""A small BSP costing pass for the workloads: supersteps -> the shared Report's cycles.

A workload program is a list of :class:`Step` s, each repeated ``count`` times per run:

    step cycles = max over tiles(compute)                      (codelets' own estimators)
                + exchange phase(s)                            (mimdsim.engine.fabric)
                + sync                                         (one barrier per superstep)

exactly as the engine charges a superstep (docs/cost-model.md §1.1). Host -> tile streams
are ``Transfer`` s with ``src = -1``; tile -> host streams (``to_host``, ``dst = -1``) are costed
as their mirror image — the host link runs at ``host_bytes_per_second`` in each direction
(PCIe is full duplex) and the tile sends at ``exchange_send_bytes_per_cycle``. A ``launch``
step charges the chip's ``run_launch_s`` once per run to ``host``. As in the engine, ``host``
is only the time the host link adds beyond the on-chip traffic of the same phase.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..engine.fabric import exchange_cost, sync_cost
from ..program import Transfer
from ..report import KINDS, empty_cycles


@dataclass(frozen=True)
class Step:
    name: str
    phase: str  # io, forward, backward, update
    count: int = 1
    tile_cycles: np.ndarray | None = None  # compute cycles per tile (all tiles of the system)
    transfers: tuple = ()  # host -> tile (src = -1) and tile -> tile transfers
    to_host: tuple = ()  # tile -> host transfers (dst = -1)
    launch: bool = False  # the per-run launch; no sync


def _mirror_system(system):
    """The system whose host -> tile cost equals this system's tile -> host cost."""
    c = system.chip
    send = c.exchange_send_bytes_per_cycle
    chip = c.replace(exchange_recv_bytes_per_cycle=send,
                     exchange_broadcast_bytes_per_cycle=max(send, c.exchange_broadcast_bytes_per_cycle))
    return type(system)(chip=chip, chips=system.chips)


def _exchange(transfers, system):
    """(exchange, host) cycles of one exchange phase, split as the engine splits it."""
    ex = exchange_cost(transfers, system)
    if not ex.cycles:
        return 0.0, 0.0
    on_chip = max(float(ex.tile_cycles.max(initial=0.0)), ex.link_cycles)
    host = max(0.0, ex.host_cycles - on_chip)
    return ex.cycles - host, host


def run_steps(steps, system):
    """Cost a program: ``(cycles[phase][kind], steps{name: {count, kinds}}, tile compute cycles)``."""
    cycles = empty_cycles()
    per_step: dict[str, dict] = {}
    tile_compute = np.zeros(system.tiles)
    sync = float(sync_cost("global" if system.chips > 1 else "chip", system))
    mirror = None
    for s in steps:
        if s.count <= 0:
            continue
        k = dict.fromkeys(KINDS, 0.0)
        if s.launch:
            k["host"] = system.chip.run_launch_cycles
        else:
            if s.tile_cycles is not None:
                k["compute"] = float(np.max(s.tile_cycles, initial=0.0))
                tile_compute += s.count * np.asarray(s.tile_cycles)
            if s.transfers:
                ex, host = _exchange(s.transfers, system)
                k["exchange"] += ex
                k["host"] += host
            if s.to_host:
                mirror = mirror or _mirror_system(system)
                back = [Transfer(t.name, src=np.full_like(t.src, -1), dst=t.src, nbytes=t.nbytes, group=t.group)
                        for t in s.to_host]
                ex, host = _exchange(back, mirror)
                k["exchange"] += ex
                k["host"] += host
            k["sync"] = sync
        rec = per_step.setdefault(s.name, {"count": 0, **dict.fromkeys(KINDS, 0.0)})
        rec["count"] += s.count
        for kind, v in k.items():
            cycles[s.phase][kind] += s.count * v
            rec[kind] += s.count * v
    return cycles, per_step, tile_compute


def host_stream(name, tiles, nbytes, to_host=False):
    """One host stream: a distinct message between the host and each of ``tiles``."""
    tiles = np.asarray(tiles, dtype=np.int64)
    nbytes = np.asarray(nbytes, dtype=np.float64)
    keep = nbytes > 0
    tiles, nbytes = tiles[keep], nbytes[keep]
    host = np.full(tiles.shape, -1, dtype=np.int64)
    if to_host:
        return Transfer(name, src=tiles, dst=host, nbytes=nbytes, group=tiles.copy())
    return Transfer(name, src=host, dst=tiles, nbytes=nbytes, group=tiles.copy())


def bottleneck_notes(cycles, per_step, clock_hz, supersteps: int) -> tuple[str, list]:
    """What bounds the run, as a label and report notes.

    - ``launch``: the per-run launch is over half the run;
    - ``host``: host I/O beyond the on-chip traffic is the largest part of the rest;
    - ``sync``: sync is at least the on-tile compute (many tiny supersteps);
    - otherwise the largest of compute and exchange.
    """
    totals = {k: sum(p.get(k, 0.0) for p in cycles.values()) for k in KINDS}
    total = sum(totals.values()) or 1.0
    launch = per_step.get("launch", {}).get("host", 0.0)
    host_io = totals["host"] - launch
    share = {k: 100 * v / total for k, v in totals.items()}
    notes = [f"time: compute {share['compute']:.1f}%, exchange {share['exchange']:.1f}%, sync "
             f"{share['sync']:.1f}%, host {share['host']:.1f}% (launch {100 * launch / total:.1f}%, "
             f"host I/O {100 * host_io / total:.1f}%); {supersteps} supersteps per run"]
    rest = {"compute": totals["compute"], "exchange": totals["exchange"], "sync": totals["sync"], "host": host_io}
    if launch > total / 2:
        bound = "launch"
        notes.append(f"launch-bound: the per-run launch ({launch / clock_hz * 1e6:.0f} us, chip run_launch_s) is "
                     f"{100 * launch / total:.0f}% of the run; put more work in each run (more tracks per tile "
                     f"or a larger batch, or batches > 1)")
    elif host_io >= max(rest["compute"], rest["exchange"], rest["sync"]):
        bound = "host"
        notes.append(f"host-link-bound: host I/O adds {100 * host_io / total:.0f}% of the run beyond the on-chip "
                     f"traffic (chip host_bytes_per_second); keep the data on the chip or use fewer tiles per link")
    elif totals["sync"] >= totals["compute"]:
        bound = "sync"
        notes.append(f"sync-bound: sync is {share['sync']:.0f}% of the run and on-tile compute only "
                     f"{share['compute']:.0f}% over {supersteps} supersteps; fuse the operations into fewer "
                     f"supersteps (schedule='fused')")
    else:
        bound = max(("compute", "exchange"), key=lambda k: totals[k])
        notes.append(f"{bound}-bound: {bound} is {share[bound]:.0f}% of the run")
    return bound, notes
