"""Writing a run's outputs: JSON, CSV, figures and trace (paths from the settings)."""
from __future__ import annotations

import csv
import dataclasses
import os

from ..errors import ConfigError, Param

OUTPUT_KEYS = ("output.json", "output.csv", "output.plot", "output.trace")
# The file extension each output writes, for the examples in messages.
SUFFIXES = {"output.json": ".json", "train.json": ".json", "output.csv": ".csv", "output.trace": ".json",
            "sweep.results": ".jsonl"}


def output(key: str) -> Param:
    """The output setting ``key`` (``output.json``) as a message names it (its flag on the command line)."""
    return Param(key.rsplit(".", 1)[-1], key=key)


def _with(what, shown: str):
    """``what`` (a Param, or a file key such as ``sweep.results``) with a value shown beside it."""
    return dataclasses.replace(what, shown=shown) if isinstance(what, Param) else f"{what} {shown}"


def check_file_path(path, what) -> str:
    """Refuse, before a run, a file path that cannot be written: its folder missing or not a
    folder, the path a folder, or no write permission. Returns the path. ``what`` names the
    output: a :class:`~mimdsim.errors.Param` (its setting) or a file key (``sweep.results``)."""
    path = os.fspath(path)
    named = _with(what, repr(path))
    if not path.strip():
        raise ConfigError(what, " is empty: give a file name (e.g. ", _with(what, "out" + _suffix(what)), "), or leave ",
                          what, " out to write nothing")
    if path.endswith(("/", os.sep)) and not os.path.isdir(path):
        raise ConfigError(named, " ends with a path separator, so it names a folder; give a file name "
                          f"(e.g. {os.path.join(path, 'out' + _suffix(what))!r})")
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise ConfigError(named, f" is a folder; give a file name, e.g. {os.path.join(path, 'out')!r}")
    if not os.path.isdir(folder):
        state = "is not a folder" if os.path.exists(folder) else "does not exist"
        raise ConfigError(named, f": the folder {folder!r} {state}; create it first or choose another path")
    refused = _write_refused(path)
    if refused:
        raise ConfigError(named, f" cannot be written ({refused}); choose another path")
    return path


def _write_refused(path: str, folder: bool = False) -> str:
    """Why the system refuses to write the file ``path`` (or a file in the folder ``path``), found by
    trying (a permission check alone passes a read-only file system, and anything for root); ""
    when it can be written. Nothing is left behind and an existing file is not changed."""
    try:
        if folder:
            import tempfile
            handle, probe = tempfile.mkstemp(dir=path, prefix=".mimdsim-write-check-")
            os.close(handle)
            os.remove(probe)
        elif os.path.exists(path):
            with open(path, "ab"):  # opened for appending, nothing written: the file is unchanged
                pass
        else:
            with open(path, "xb"):
                pass
            os.remove(path)
    except OSError as e:
        return e.strerror or type(e).__name__
    return ""


def _suffix(what) -> str:
    return SUFFIXES.get(what.key if isinstance(what, Param) else what, "")


def check_folder_path(path, what) -> str:
    """Refuse, before a run, a folder for figures that cannot be made or written (``what`` as for
    :func:`check_file_path`)."""
    path = os.fspath(path)
    named = _with(what, repr(path))
    if not path.strip():
        raise ConfigError(what, " is empty: give a folder (e.g. ", _with(what, "figures"), "; it is created if "
                          "missing), or leave ", what, " out to draw nothing")
    if os.path.exists(path):
        if not os.path.isdir(path):
            raise ConfigError(named, " is a file; give a folder (it is created if missing)")
        refused = _write_refused(path, folder=True)
        if refused:
            raise ConfigError(named, f" cannot be written ({refused}); choose another folder")
        return path
    parent = os.path.abspath(path)
    while not os.path.exists(parent):  # the folder and its missing parents are made when written
        parent = os.path.dirname(parent)
    refused = "not a folder" if not os.path.isdir(parent) else _write_refused(parent, folder=True)
    if refused:
        raise ConfigError(named, f" cannot be created under {parent!r} ({refused}); choose another folder")
    return path


def check_output_paths(values: dict, keys=OUTPUT_KEYS) -> None:
    """Check every output path the settings name before anything runs (one-line ConfigError),
    and that no two outputs share a path."""
    seen = {}
    for key in keys:
        path = values.get(key)
        if path is None or path is False:
            continue  # not asked for; an empty string is asked for and refused below
        what = output(key)
        (check_folder_path if key == "output.plot" else check_file_path)(path, what)
        real = os.path.abspath(path)
        if real in seen:
            raise ConfigError(seen[real], " and ", what, f" both write {path!r}; give each output its own path")
        seen[real] = what


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
    written: list = []
    writing: list = []  # the output being written, for the message if it fails
    try:
        _write_outputs(values, run, result, gpu_reports, timeline, written, writing)
    except OSError as e:
        what = output(writing[-1]) if writing else "an output"
        kept = f"; written before it: {', '.join(map(repr, written))}" if written else ""
        raise ConfigError("could not write ", what, f" {e.filename or values.get(writing[-1] if writing else '')!r}: "
                          f"{e.strerror or e} (found after the run{kept}); free disk space or choose another path, "
                          f"then run again") from None
    return [f"  wrote {os.path.relpath(p)}" for p in written]


def _write_outputs(values, run, result, gpu_reports, timeline, written: list, writing: list) -> None:
    writing.append("output.json")
    if values.get("output.json"):
        result.to_json(values["output.json"]) if hasattr(result, "gpu") else run.report.to_json(values["output.json"])
        written.append(values["output.json"])
    writing.append("output.csv")
    if values.get("output.csv"):
        write_csv(values["output.csv"], [run.report, *gpu_reports])
        written.append(values["output.csv"])
    writing.append("output.plot")
    if values.get("output.plot"):
        from .plots import plot_run
        written += plot_run(values["output.plot"], run, gpu_reports)
    writing.append("output.trace")
    if values.get("output.trace"):
        from .perfetto import write_trace
        write_trace(values["output.trace"], run.program, timeline, run)
        written.append(values["output.trace"])
