"""Every stored measurement against the model: ``mimdsim validate``.

Each source is a data file in ``mimdsim/validation/data/`` holding the measured points and where
they come from (repository, file, commit, what the number is). A source's runner rebuilds each
point as a user would run it (the same ``simulate``, ``kalman``, GPU ``estimate`` calls) and
returns model ÷ measured. Every ratio is a ratio of **times** (seconds per step, per call or per
track): above 1 the model is slower than measured, below 1 faster. Nothing here is fitted; a
source whose measurement decided a constant says so in its ``fitted`` note.
"""
from __future__ import annotations

import json
import pathlib
import statistics
from dataclasses import dataclass, field

from ..errors import ConfigError
from ..validate import did_you_mean

DATA = pathlib.Path(__file__).resolve().parent / "data"


@dataclass
class Point:
    label: str
    model: float  # in the source's unit
    measured: float
    unit: str
    ratio: float  # model time / measured time
    note: str = ""

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class SourceResult:
    source: str
    title: str
    provenance: dict
    points: list = field(default_factory=list)
    assumption: str = ""

    @property
    def ratios(self) -> list[float]:
        return [p.ratio for p in self.points]

    @property
    def median(self) -> float:
        return statistics.median(self.ratios)

    @property
    def worst(self) -> float:
        """The ratio furthest from 1 (either way, in factor terms)."""
        return max(self.ratios, key=lambda r: max(r, 1 / r))

    def to_dict(self) -> dict:
        return {"source": self.source, "title": self.title, "provenance": self.provenance,
                "assumption": self.assumption, "median": self.median, "worst": self.worst,
                "points": [p.to_dict() for p in self.points]}


def load(name: str) -> dict:
    with open(DATA / f"{name.replace('-', '_')}.json") as f:
        return json.load(f)


def _study_log(doc, quick):
    """The study's op as built (``schedule="published"``, the default for its model), rate-driven with
    every list half full (activity = max activity / 2, the command line's default), on ipu-mk2."""
    from ..snn import Network
    from ..workloads.snn.simulate import simulate

    pts = doc["points"]
    if quick:
        pts = [p for p in pts if p["max_activity"] == 0.01]
    out = []
    for p in pts:
        net = Network.feedforward(p["sizes"], max_activity=p["max_activity"], capacities=p["capacities"])
        r = simulate(net, "ipu-mk2", timesteps=100, batch_size=48, activity=p["max_activity"] / 2).report
        ms = r.seconds_per_step * 1e3
        out.append(Point(f"{p['hidden_layers']} hidden, {p['max_activity']:.0%}", ms, p["measured_ms_per_step"],
                         "ms/step", ms / p["measured_ms_per_step"]))
    return out, "lists half full: activity = max activity / 2 per layer (the command line's default)"


def _sun_poptorch(doc, quick):
    """``schedule="poptorch"``, Leaky 784-1000-10, T = 25, B = 128, fp32, static input, ipu-mk2."""
    from ..snn import Network
    from ..snn.zoo import ZOO
    from ..workloads.snn.simulate import simulate

    net = Network.build([784, 1000, 10], ZOO["leaky"], bias=True, loss="ce_count")
    model = simulate(net, "ipu-mk2", timesteps=25, batch_size=128, activity=0.1, precision="fp32",
                     schedule="poptorch", static_input=True).report.samples_per_second
    rows = [p for p in doc["points"] if p["use"]]
    out = [Point(f"{p['file'][36:-4]} epoch {p['epoch']} step {p['steps']}", model, p["samples_per_second"],
                 "samples/s", p["samples_per_second"] / model) for p in rows]
    mean = doc["provenance"]["mean_of_used_rows"]
    out.append(Point("mean of the rows", model, mean, "samples/s", mean / model))
    return out, ""


def _trackr(doc, quick):
    """TRACKR's program as built (schedule "published"), hits resident, as TRACKR timed it."""
    from ..workloads import kalman

    pts = doc["points"]
    if quick:
        pts = [p for p in pts if p["tiles"] in (2, 152, 1216)]
    out = []
    for p in pts:
        r = kalman(p["tracks_per_tile"], 5, p["chip"], tiles=p["tiles"], variant=p["variant"], stream=False).report
        model = r.samples_per_second / 1e6
        m = p["measured_mtracks_per_second"]
        out.append(Point(f"{p['chip']} {p['variant']} {p['tracks_per_tile']}/tile, {p['tiles']} tiles", model, m,
                         "10^6 tracks/s", m / model, "launch fitted to these logs" if p["launch_from_these_logs"]
                         else ""))
    return out, ""


def _trackr_cpu(doc, quick):
    from ..workloads import trackr_cpu

    out = []
    for p in doc["points"]:
        model = trackr_cpu(p["tracks"], threads=p["threads"]).samples_per_second / 1e6
        m = p["measured_mtracks_per_second"]
        out.append(Point(f"{p['threads']} thread(s), {p['tracks']} tracks", model, m, "10^6 tracks/s", m / model))
    return out, ""


def _snntorch_gpu(doc, quick):
    """Eager snnTorch on the GPU model (strategy "eager"), rtx-4090, nothing fitted to these rows."""
    from ..snn import Network
    from ..workloads.snn.baselines.gpu import estimate

    out = []
    by_n = {}
    for p in doc["points"]:
        if p["n"] not in by_n:
            net = Network.build([p["n"], p["n"]], "leaky", beta=0.95, bias=True, surrogate="atan")
            by_n[p["n"]] = estimate(net, "rtx-4090", timesteps=500, batch_size=16, strategy="eager",
                                    optimizer="sgd").phase_seconds()
        model = by_n[p["n"]][p["phase"]]
        out.append(Point(f"n = {p['n']}, {p['phase']}", model, p["measured_seconds"], "s", model / p["measured_seconds"]))
    return out, ""


SOURCES = {"study-log": _study_log, "sun-poptorch": _sun_poptorch, "trackr": _trackr, "trackr-cpu": _trackr_cpu,
           "snntorch-gpu": _snntorch_gpu}


def run_source(name: str, quick: bool = False) -> SourceResult:
    if name not in SOURCES:
        raise ConfigError(f"--source {name!r} is not a stored source; one of {', '.join(SOURCES)}."
                          + did_you_mean(name, SOURCES))
    doc = load(name)
    points, assumption = SOURCES[name](doc, quick)
    return SourceResult(name, doc["title"], doc["provenance"], points, assumption)


def run_all(sources=None, quick: bool = False) -> list[SourceResult]:
    """Every stored source (or those named), each point's model ÷ measured."""
    return [run_source(s, quick) for s in (sources or SOURCES)]


def summary_table(results, points: bool = False) -> str:
    lines = ["model ÷ measured, as times (above 1: the model is slower than measured). Nothing fitted.", "",
             f"{'source':<14}{'points':>7}{'median':>9}{'best':>8}{'worst':>8}  what"]
    for r in results:
        best = min(r.ratios, key=lambda x: max(x, 1 / x))
        lines.append(f"{r.source:<14}{len(r.points):>7}{r.median:>9.2f}{best:>8.2f}{r.worst:>8.2f}  {r.title}")
        if r.provenance.get("fitted"):
            lines.append(f"{'':<14}  fitted: {r.provenance['fitted']}")
        if r.assumption:
            lines.append(f"{'':<14}  assumed: {r.assumption}")
    if points:
        for r in results:
            lines += ["", f"{r.source}: {r.title}", f"  {'point':<44}{'model':>12}{'measured':>12}{'ratio':>8}  unit"]
            lines += [f"  {p.label:<44}{p.model:>12.4g}{p.measured:>12.4g}{p.ratio:>8.2f}  {p.unit}"
                      + (f"  ({p.note})" if p.note else "") for p in r.points]
    return "\n".join(lines)
