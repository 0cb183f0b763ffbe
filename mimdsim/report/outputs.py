"""Writing a run's outputs: JSON, CSV, figures and trace (paths from the settings)."""
from __future__ import annotations

import csv
import os


def csv_rows(reports) -> list[dict]:
    """One row per superstep (MIMD) or kernel (GPU) kind and phase, for every report."""
    kinds = []
    for r in reports:
        kinds += [k for k in r.kinds if k not in kinds]
    rows = []
    for r in reports:
        for name, s in r.steps.items():
            cycles = {k: float(s.get(k, 0.0)) for k in kinds}
            rows.append({"platform": r.platform, "architecture": r.architecture, "mode": r.mode,
                         "model": r.model, "step": name, "phase": s.get("phase", ""), "count": s["count"],
                         **cycles, "total_cycles": sum(cycles.values()),
                         "seconds": sum(cycles.values()) / r.clock_hz})
    return rows


def write_csv(path, reports) -> None:
    rows = csv_rows(reports)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def write_outputs(values, run, result, gpu_reports, timeline) -> list[str]:
    """Write what ``output.*`` asks for; return one line per file written."""
    written = []
    if values.get("output.json"):
        result.to_json(values["output.json"]) if hasattr(result, "gpu") else run.report.to_json(values["output.json"])
        written.append(values["output.json"])
    if values.get("output.csv"):
        write_csv(values["output.csv"], [run.report, *gpu_reports])
        written.append(values["output.csv"])
    if values.get("output.plot"):
        from .plots import plot_run
        written += plot_run(values["output.plot"], run, gpu_reports)
    if values.get("output.trace"):
        from .trace import write_trace
        write_trace(values["output.trace"], run.program, timeline, run)
        written.append(values["output.trace"])
    return [f"  wrote {os.path.relpath(p)}" for p in written]
