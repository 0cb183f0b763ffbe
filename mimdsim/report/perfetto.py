"""Execution traces in the Chrome / Perfetto trace-event JSON format (open in ui.perfetto.dev).

Process 0 ("system") has one track of nested slices: phase > superstep > sync / exchange /
host / compute (the report's kinds, each its own slice), in BSP order. Each chip is a process with one track per tile group (the tiles
before the first layer, each layer's tile range, the rest) showing that group's slowest
tile's compute inside every compute phase: the load imbalance. Counters: kept spikes per
layer and timestep, and the fullest tile's SRAM per chip.

Long runs are bounded: of each time loop only the first and last ``keep`` iterations are
drawn step by step; the iterations between are one aggregated slice per superstep kind,
and the file says so in ``otherData``.
"""
from __future__ import annotations

import json



def _runs(timeline):
    """Split the timeline into (loop name or None, [records]) blocks of consecutive records."""
    blocks, cur_key, cur = [], None, []
    for rec in timeline:
        key = rec["phase"] if rec["t"] is not None else None
        if rec["t"] is None or key != cur_key:
            if cur:
                blocks.append((cur_key, cur))
            cur_key, cur = key, []
        cur.append(rec)
    if cur:
        blocks.append((cur_key, cur))
    return blocks


def build_trace(program, timeline, run=None, keep: int = 20) -> dict:
    hz = program.system.chip.clock_hz
    us = 1e6 / hz
    events = [{"ph": "M", "pid": 0, "tid": 0, "name": "process_name", "args": {"name": "system (BSP supersteps)"}},
              {"ph": "M", "pid": 0, "tid": 0, "name": "thread_name", "args": {"name": "supersteps"}}]
    starts, labels = program.mapping.tile_groups(program.system.tiles)
    tpc = program.system.chip.tiles
    group_chip = starts // tpc
    for chip in range(program.system.chips):
        events.append({"ph": "M", "pid": chip + 1, "tid": 0, "name": "process_name", "args": {"name": f"chip {chip}"}})
    for g, (s, label) in enumerate(zip(starts, labels)):
        events.append({"ph": "M", "pid": int(group_chip[g]) + 1, "tid": g + 1, "name": "thread_name",
                       "args": {"name": label}})
    aggregated = []
    now = 0.0

    def ns(t_us: float) -> int:
        return int(round(t_us * 1000))

    def slice_(name, start, end, pid=0, tid=0, args=None):
        """A slice from ``start`` to ``end`` (µs): both ends rounded to whole nanoseconds the same
        way, so a slice that ends inside its parent in exact arithmetic also does in the file."""
        ts = ns(start)
        e = {"ph": "X", "name": name, "ts": ts / 1000, "dur": (ns(end) - ts) / 1000, "pid": pid, "tid": tid}
        if args:
            e["args"] = args
        events.append(e)

    def draw(rec, label):
        nonlocal now
        # the report's kinds apart, in BSP order: the host's streams are not tile-to-tile exchange
        parts = [("sync", rec["sync"]), ("exchange", rec["exchange"]), ("host", rec["host"]), ("compute", rec["compute"])]
        t0, first = now, len(events)
        for name, c in parts:
            if c > 0:
                slice_(name, t0, t0 + c * us)
                if name == "compute" and "group_compute" in rec:
                    for g, gc in enumerate(rec["group_compute"]):
                        if gc > 0:  # a group's slowest tile is at most the superstep's slowest
                            slice_(f"{rec['name']} compute", t0, t0 + min(gc, c) * us, pid=int(group_chip[g]) + 1,
                                   tid=g + 1)
            t0 += c * us
        slice_(label, now, t0, args={"phase": rec["phase"], "t": rec["t"]})  # ends where its last part ends
        events.insert(first, events.pop())
        now = t0

    for key, recs in _runs(timeline):
        phase_start = now
        ts = sorted({r["t"] for r in recs if r["t"] is not None}, reverse=key == "backward")
        detail = set(ts[:keep] + ts[-keep:]) if len(ts) > 2 * keep else set(ts)
        middle = [r for r in recs if r["t"] is not None and r["t"] not in detail]
        done_middle = False
        for rec in recs:
            if rec["t"] is None or rec["t"] in detail:
                draw(rec, rec["name"] if rec["t"] is None else f"{rec['name']} t={rec['t']}")
            elif not done_middle:
                done_middle = True
                mts = sorted({r["t"] for r in middle})
                kinds = {}
                for r in middle:
                    k = kinds.setdefault(r["name"], {"name": r["name"], "phase": r["phase"], "t": None, "count": 0,
                                                     "sync": 0.0, "exchange": 0.0, "host": 0.0, "compute": 0.0})
                    k["count"] += 1
                    for f in ("sync", "exchange", "host", "compute"):
                        k[f] += r[f]
                for k in kinds.values():
                    draw(k, f"{k['name']} x{k['count']} (aggregated, t={mts[0]}..{mts[-1]})")
                aggregated.append(f"{key}: timesteps {mts[0]}..{mts[-1]} ({len(mts)}) drawn as one slice per superstep kind")
        if key is not None and now > phase_start:
            # the phase slice must enclose its supersteps: insert it before them
            slice_(key, phase_start, now, args={"loop": True})
    if run is not None and getattr(run, "stats", None) is not None:
        st = run.stats
        # counter values at the start of each forward step
        t_us, now2 = {}, 0.0
        for rec in timeline:
            if rec["phase"] == "forward" and rec["t"] is not None:  # the step's first forward superstep
                t_us.setdefault(rec["t"], now2)
            now2 += (rec["sync"] + rec["exchange"] + rec["host"] + rec["compute"]) * us
        for t, ts_ in sorted(t_us.items()):
            events.append({"ph": "C", "name": "kept spikes", "pid": 0, "ts": ns(ts_) / 1000,
                           "args": {f"layer {l}": int(st.kept[l][t].sum()) for l in range(1, len(st.kept))}})
    used = program.tile_bytes()
    for chip in range(program.system.chips):
        events.append({"ph": "C", "name": "fullest tile SRAM (bytes)", "pid": chip + 1, "ts": 0,
                       "args": {"bytes": int(used[chip * tpc:(chip + 1) * tpc].max())}})
    events.sort(key=lambda e: (e.get("ts", -1), -e.get("dur", 0)))
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"generator": "mimdsim", "model": program.meta.model, "timestamps": "whole nanoseconds",
                          "system": program.system.name, "aggregated": aggregated or "none",
                          "time unit": "microseconds of simulated chip time"}}


def write_trace(path, program, timeline, run=None, keep: int = 20) -> None:
    with open(path, "w") as f:
        json.dump(build_trace(program, timeline, run, keep), f)
