"""What bounds a run: a label and notes from a report's cycles (launch, host I/O, sync, compute or exchange)."""
from __future__ import annotations

from ..errors import Message, Param
from .report import KINDS


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
        notes.append(Message(f"sync-bound: sync is {share['sync']:.0f}% of the run and on-tile compute only "
                             f"{share['compute']:.0f}% over {supersteps} supersteps; fuse the operations into fewer "
                             f"supersteps (", Param("schedule", "fused"), ")"))
    else:
        bound = max(("compute", "exchange"), key=lambda k: totals[k])
        notes.append(f"{bound}-bound: {bound} is {share[bound]:.0f}% of the run")
    return bound, notes
