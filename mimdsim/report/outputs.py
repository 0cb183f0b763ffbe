"""Writing a run's outputs: JSON, CSV, figures and trace (paths from the settings)."""
from __future__ import annotations

import csv
import os

from ..errors import ConfigError

OUTPUT_FLAGS = {"output.json": "--json", "output.csv": "--csv", "output.plot": "--plot", "output.trace": "--trace"}


def check_file_path(path, flag: str) -> str:
    """Refuse, before a run, a file path that cannot be written: its folder missing or not a
    folder, the path a folder, or no write permission. Returns the path."""
    path = os.fspath(path)
    if not path.strip():
        raise ConfigError(f"{flag} is empty: give a file name (e.g. {flag} out{_suffix(flag)}), or leave {flag} out "
                          f"to write nothing")
    if path.endswith(("/", os.sep)) and not os.path.isdir(path):
        raise ConfigError(f"{flag} {path!r} ends with a path separator, so it names a folder; give a file name "
                          f"(e.g. {os.path.join(path, 'out' + _suffix(flag))!r})")
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise ConfigError(f"{flag} {path!r} is a folder; give a file name, e.g. {os.path.join(path, 'out')!r}")
    if not os.path.isdir(folder):
        what = "is not a folder" if os.path.exists(folder) else "does not exist"
        raise ConfigError(f"{flag} {path!r}: the folder {folder!r} {what}; create it first or choose another path")
    if not os.access(path if os.path.exists(path) else folder, os.W_OK):
        raise ConfigError(f"{flag} {path!r} cannot be written (no write permission); choose another path")
    return path


def _suffix(flag: str) -> str:
    """The file extension an output flag writes, for the examples in messages."""
    return {"--json": ".json", "--csv": ".csv", "--trace": ".json", "sweep.results": ".jsonl"}.get(flag, "")


def check_folder_path(path, flag: str) -> str:
    """Refuse, before a run, a folder for figures that cannot be made or written."""
    path = os.fspath(path)
    if not path.strip():
        raise ConfigError(f"{flag} is empty: give a folder (e.g. {flag} figures; it is created if missing), or leave "
                          f"{flag} out to draw nothing")
    if os.path.exists(path):
        if not os.path.isdir(path):
            raise ConfigError(f"{flag} {path!r} is a file; give a folder (it is created if missing)")
        if not os.access(path, os.W_OK):
            raise ConfigError(f"{flag} {path!r} cannot be written (no write permission); choose another folder")
        return path
    parent = os.path.abspath(path)
    while not os.path.exists(parent):  # the folder and its missing parents are made when written
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent) or not os.access(parent, os.W_OK):
        raise ConfigError(f"{flag} {path!r} cannot be created under {parent!r} ("
                          f"{'not a folder' if not os.path.isdir(parent) else 'no write permission'}); choose "
                          f"another folder")
    return path


def check_output_paths(values: dict, keys=tuple(OUTPUT_FLAGS)) -> None:
    """Check every output path the settings name before anything runs (one-line ConfigError),
    and that no two outputs share a path."""
    seen = {}
    for key in keys:
        path = values.get(key)
        if path is None or path is False:
            continue  # not asked for; an empty string is asked for and refused below
        flag = OUTPUT_FLAGS.get(key, key)
        (check_folder_path if key == "output.plot" else check_file_path)(path, flag)
        real = os.path.abspath(path)
        if real in seen:
            raise ConfigError(f"{seen[real]} and {flag} both write {path!r}; give each output its own path")
        seen[real] = flag


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
    """Write what ``output.*`` asks for; return one line per file written. A write that fails
    anyway (the disk filled up during the run) is a one-line ConfigError naming the output."""
    try:
        return _write_outputs(values, run, result, gpu_reports, timeline)
    except OSError as e:
        raise ConfigError(f"could not write {e.filename or 'an output'!r}: {e.strerror or e}; the run itself "
                          f"finished (re-run with another path)") from None


def _write_outputs(values, run, result, gpu_reports, timeline) -> list[str]:
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
