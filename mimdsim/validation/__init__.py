"""Every stored measurement against the model: ``mimdsim validate``.

Each source is a data file in ``mimdsim/validation/data/`` holding the measured points and where
they come from (repository, file, commit, what the number is). A source's runner rebuilds each
point as a user would run it (the same ``simulate``, ``kalman``, GPU ``estimate`` calls) and
returns model ÷ measured. Every ratio is a ratio of **times** (seconds per step, per call or per
track): above 1 the model is slower than measured, below 1 faster. Nothing here is fitted; a
source whose measurement decided a constant says so in its ``fitted`` note. Each workload declares
its sources (``mimdsim/workloads/<name>/workload.py``: the name, what it measures, its runner); the
runners of today's sources are below.

Imported by: cli (``mimdsim validate``).
"""
from __future__ import annotations

import json
import pathlib
import statistics
from dataclasses import dataclass, field

from ..errors import ConfigError, Param
from ..checks import did_you_mean
from ..workloads.declaration import resolve
from ..workloads.registry import validation_sources
from . import study_activity

DATA = pathlib.Path(__file__).resolve().parent / "data"


@dataclass
class Point:
    label: str
    model: float  # in the source's unit
    measured: float
    unit: str
    ratio: float  # model time / measured time
    note: str = ""
    band: list | None = None  # the model's [low, high] in the source's unit when named assumptions move
    resolution: float = 0.0  # the measurement's printed step: the true value lies within +- resolution / 2

    @property
    def inside(self) -> bool | None:
        """Whether the measurement, as far as its printed resolution tells it, falls inside the model's
        band (None: no band): the intervals [measured -+ resolution / 2] and [low, high] overlap."""
        if self.band is None:
            return None
        half = self.resolution / 2
        return self.band[0] <= self.measured + half and self.measured - half <= self.band[1]

    def to_dict(self) -> dict:
        return {**self.__dict__, "inside_band": self.inside}


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


# How full the study's spike lists are: executed (the default: the study's network run on N-MNIST-like input,
# stored once by mimdsim/validation/study_activity.py), or an assumed share of each layer's max activity
STUDY_LISTS = {"executed": (None, "lists as the study's network executes them (issue 37; seeds and steps in the "
                                  "note): per-layer list fills from mimdsim/validation/data/executed/study_activity.json"),
               "half": (0.5, "lists half full: activity = max activity / 2 per layer (before issue 37)"),
               "full": (1.0, "lists full: activity = max activity per layer (issue 25's band check)")}


def _map(fn, args: list) -> list:
    """``[fn(*a) for a in args]``, over two forked worker processes where the machine has two cores or more (the
    12 study points are independent and deterministic: the same numbers, about half the wall time)."""
    import multiprocessing
    import os

    if len(args) < 4 or (os.cpu_count() or 1) < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return [fn(*a) for a in args]
    with multiprocessing.get_context("fork").Pool(2) as pool:
        return pool.starmap(fn, args)


def _study_point(p, share, executed, resolution):
    """One study-log point (:func:`study_log_points`), a top-level function so a worker process can run it."""
    from ..snn import Network
    from ..workloads.snn.simulate import simulate

    label = f"{p['hidden_layers']} hidden, {p['max_activity']:.0%}"
    net = Network.feedforward(p["sizes"], max_activity=p["max_activity"], capacities=p["capacities"])
    shape = {"timesteps": 100, "batch_size": 48}
    if share is not None:
        r = simulate(net, "ipu-mk2", **shape, activity=p["max_activity"] * share).report
        ms, band, note = r.seconds_per_step * 1e3, [1e3 * x for x in r.uncertainty["seconds_per_step"]], ""
    else:
        rates = study_activity.executed_rates(executed[label])
        rate = lambda which: {k: rates[which][k] for k in ("activity", "candidate_activity",  # noqa: E731
                                                           "input_activity")}
        r = simulate(net, "ipu-mk2", **shape, **rate("central")).report
        ms = r.seconds_per_step * 1e3
        low, high = (simulate(net, "ipu-mk2", **shape, **rate(w), band=False).report.seconds_per_step * 1e3
                     for w in ("low", "high"))
        assumed = [1e3 * x for x in r.uncertainty["seconds_per_step"]]
        band = [min(assumed[0], low), max(assumed[1], high)]
        caps = p["capacities"]
        fills = ", ".join(f"{k / K:.2f}/{v / K:.2f}" for k, v, K in
                          zip(rates["central"]["kept"][1:-1], rates["central"]["listed"][1:-1], caps[1:-1]))
        ex = rates["executed_chip_ms"]
        note = (f"hidden kept/listed per K {fills}, input {rates['central']['kept'][0]:.1f} of 32; activity band "
                f"{low:.3g}-{high:.3g} ms ({rates['seeds']} seeds, steps {'/'.join(map(str, rates['steps']))}); "
                f"executed steps {ex[0]:.3g} ms")
    return Point(label, ms, p["measured_ms_per_step"], "ms/step", ms / p["measured_ms_per_step"], note, band=band,
                 resolution=resolution)


def study_log_points(doc, quick, lists="executed"):
    """The study's op as built (``schedule="published"``, the default for its model), rate-driven on ipu-mk2.

    ``lists="executed"`` (the default): each layer's spike and candidate rates give the mean list fills of the
    stored execution (:func:`study_activity.executed_rates`: each seed's last quarter of its steps, averaged), the
    model is that run; its band spans the named assumptions at those fills and the runs at the least and most
    filled lists any seed and step covered (activities run with the assumptions at their values). ``"half"`` and
    ``"full"``: every list at half or all of its max activity, candidates at the same rate."""
    if lists not in STUDY_LISTS:
        raise ConfigError(f"lists={lists!r}: the study's list activity is one of {', '.join(STUDY_LISTS)}")
    share, stated = STUDY_LISTS[lists]
    pts = doc["points"]
    if quick:
        pts = [p for p in pts if p["max_activity"] == 0.01]
    executed = study_activity.stored()["points"] if share is None else None
    out = _map(_study_point, [(p, share, executed, doc["provenance"]["resolution_ms"]) for p in pts])
    return out, stated


def sun_poptorch_points(doc, quick):
    """``schedule="poptorch"``, Leaky 784-1000-10, T = 25, B = 128, fp32, static input, ipu-mk2."""
    from ..snn import Network
    from ..snn.zoo import ZOO
    from ..workloads.snn.simulate import simulate

    net = Network.build([784, 1000, 10], ZOO["leaky"], bias=True, loss="ce_count")
    rep = simulate(net, "ipu-mk2", timesteps=25, batch_size=128, activity=0.1, precision="fp32",
                   schedule="poptorch", static_input=True).report
    model, band = rep.samples_per_second, list(rep.uncertainty["samples_per_second"])
    rows = [p for p in doc["points"] if p["use"]]
    out = [Point(f"{p['file'][36:-4]} epoch {p['epoch']} step {p['steps']}", model, p["samples_per_second"],
                 "samples/s", p["samples_per_second"] / model, band=band) for p in rows]
    mean = doc["provenance"]["mean_of_used_rows"]
    out.append(Point("mean of the rows", model, mean, "samples/s", mean / model, band=band))
    return out, ""


def trackr_points(doc, quick):
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


def trackr_cpu_points(doc, quick):
    from ..workloads import trackr_cpu

    out = []
    for p in doc["points"]:
        model = trackr_cpu(p["tracks"], threads=p["threads"]).samples_per_second / 1e6
        m = p["measured_mtracks_per_second"]
        out.append(Point(f"{p['threads']} thread(s), {p['tracks']} tracks", model, m, "10^6 tracks/s", m / model))
    return out, ""


# The Open Neuromorphic benchmark names its GPU (an RTX 4090) and no CPU (docs/validation.md, "Hosts of the
# GPU rows"): its rows are costed on the RTX 4090's default host, a desktop of its generation.
GPU_ROWS_GPU = "rtx-4090"


def gpu_rows_host() -> str:
    """The host the Open Neuromorphic rows are costed on: the one their source names, and as it names none, the
    RTX 4090's default host (``mimdsim.arch.host.default_host``)."""
    from ..arch.host import default_host

    return default_host(GPU_ROWS_GPU)


# The hosts an RTX 4090 row plausibly ran on, its source naming none: a desktop of Zen 3 to Zen 4 / Raptor Lake
# class (research notes §4); the band of a row whose model reads the host runs over their op_time_scale ranges and
# keeps the measurement host (scale 1) inside.
PLAUSIBLE_HOSTS = ("desktop-zen3", "desktop-zen4")


def host_span() -> tuple:
    """The row host (:func:`gpu_rows_host`) at the fastest and the slowest plausible op time."""
    from .. import assumptions as A
    from ..arch.host import host

    entries = [a for a in A.REGISTRY.values() if a.kind == "hostcpu" and set(a.presets) & set(PLAUSIBLE_HOSTS)]
    low, high = min(a.low for a in entries), max([a.high for a in entries] + [1.0])
    return host(gpu_rows_host(), op_time_scale=low), host(gpu_rows_host(), op_time_scale=high)


def _host_stated() -> str:
    from ..arch.host import host

    h, (lo, hi) = host(gpu_rows_host()), host_span()
    return (f"host {h.name} ({h.cpu}, op time x{h.op_time_scale:g} of the measurement host): the source names no "
            f"CPU, so the {GPU_ROWS_GPU}'s default host; band (rows whose model reads the host): the plausible "
            f"hosts {', '.join(PLAUSIBLE_HOSTS)} and the measurement host, op time x{lo.op_time_scale:g}-"
            f"x{hi.op_time_scale:g}, the host alone")


def snntorch_gpu_points(doc, quick):
    """The benchmark's snnTorch 0.7 step traced (:mod:`.snntorch07`, on the meta device) and costed on the
    rtx-4090 driven by its default host (:func:`gpu_rows_host`) with the pytorch-eager host constants, with no
    loss-call cost (``output.sum()`` builds nothing); nothing fitted to these rows. Without torch: the hand
    census of snnTorch 1.0 (strategy "eager")."""
    out = []
    by_n = {}
    hosts = (gpu_rows_host(), *host_span())
    for p in doc["points"]:
        if p["n"] not in by_n:
            by_n[p["n"]] = [snntorch07_phase_seconds(p["n"], GPU_ROWS_GPU, host=h) for h in hosts]
        model, *ends = [t[p["phase"]] for t in by_n[p["n"]]]
        out.append(Point(f"n = {p['n']}, {p['phase']}", model, p["measured_seconds"], "s",
                         model / p["measured_seconds"], band=sorted(ends)))
    return out, _host_stated()


def snntorch07_phase_seconds(n: int, gpu: str, framework=None, host=None) -> dict:
    """Forward and backward seconds of the benchmark's call at width ``n`` on ``gpu`` driven by ``host`` (None:
    the GPU's default host; see ``snntorch_gpu_points``)."""
    import dataclasses

    from ..arch.host import default_host
    from ..gpu.framework import FRAMEWORKS
    from ..gpu.trace_cost import estimate_trace
    from ..gpu.trace_period import periodic_trace
    from ..workloads.snn.baselines import eager_trace

    if eager_trace.versions() is None:  # the named fallback: snnTorch 1.0's census, no per-step sync
        from ..snn import Network
        from ..workloads.snn.baselines.gpu_kernels import estimate
        net = Network.build([n, n], "leaky", beta=0.95, bias=True, surrogate="atan")
        return estimate(net, gpu, timesteps=500, batch_size=16, strategy="eager", optimizer="sgd",
                        eager_source="census", host=host).phase_seconds()
    from . import snntorch07

    trace = eager_trace.cached(eager_trace.digest(("snntorch07", n, 500, 16), [snntorch07.__file__]),
                               lambda: periodic_trace(
                                   lambda t: snntorch07.benchmark_step(n, timesteps=t), 500, batch_size=16,
                                   libraries=(),
                                   model=f"Linear({n}, {n}) + snnTorch 0.7 Leaky (reproduced)"))
    fw = framework or dataclasses.replace(FRAMEWORKS["pytorch-eager"], loss_call_s=0.0)
    return estimate_trace(trace, gpu, framework=fw, host=default_host(gpu) if host is None else host).phase_seconds()


def library_rows(doc, quick: bool = False):
    """Each modelled row of the other libraries (``program`` set) with its model seconds and the seconds of
    its GEMMs at the GPU's peak; ``excluded`` names why a row cannot be a device time (faster than its own
    GEMMs at peak: the call returned before the GPU finished). A ``traced:`` program is the library's call
    traced (:mod:`.traced_libraries`); its rows are left out where the library is not installed (``absent``
    names it) and, with ``quick``, at n > 4096."""
    from ..workloads.snn.baselines import libraries

    from . import traced_libraries

    out = []
    for p in doc["points"]:
        prog = p["program"]
        if not prog:
            continue
        m = p["measured_seconds"]
        if prog in traced_libraries.PROGRAMS:
            if quick and p["n"] > 4096:
                continue
            if traced_libraries.version(prog) is None:
                out.append({**p, "absent": traced_libraries.PROGRAMS[prog][1], "excluded": ""})
                continue
            t = traced_libraries.phase_seconds(prog, p["n"], GPU_ROWS_GPU, gpu_rows_host())
            model, peak, precision = t["model"][p["phase"]], t["gemm_peak"][p["phase"]], "fp32"
            ends = [traced_libraries.phase_seconds(prog, p["n"], GPU_ROWS_GPU, h)["model"][p["phase"]]
                    for h in host_span()]
            extra = {"host_seconds": t["host"][p["phase"]], "traced": t["summary"]["versions"],
                     "host_band": sorted(ends)}
            if "eager" in t:  # a compiled program: its eager costing beside it
                extra.update(compiled=t["mode"], eager_seconds=t["eager"][p["phase"]])
        else:
            half = bool(p.get("half"))
            model = libraries.phase_seconds(prog, p["n"], "rtx-4090", half=half)[p["phase"]]
            peak = libraries.gemm_peak_seconds(prog, p["n"], "rtx-4090", half=half)[p["phase"]]
            precision, extra = libraries.precision_of(prog, half), {}
        reason = (f"{m * 1e3:.1f} ms is faster than its GEMMs at the RTX 4090's "
                  f"{precision} peak ({peak * 1e3:.1f} ms)") if m < peak else ""
        out.append({**p, "model_seconds": model, "gemm_peak_seconds": peak, "excluded": reason, **extra})
    return out


def snn_libraries_gpu_points(doc, quick):
    """The libraries each as built on the rtx-4090: the non-PyTorch programs from their source
    (``baselines/libraries.py``), the PyTorch-op-by-op ones traced (``traced_libraries.py``); rows faster than
    their own GEMMs at the GPU's peak are left out (docs/validation.md)."""
    out = []
    for r in library_rows(doc, quick):
        if r["excluded"] or r.get("absent"):
            continue
        note = "unsynchronised" + (f"; traced, host alone {r['host_seconds'] / r['measured_seconds']:.2f}"
                                   if "host_seconds" in r else "")
        if "eager_seconds" in r:
            note += f"; torch.compile {r['compiled']}, eager {r['eager_seconds'] / r['measured_seconds']:.2f}"
        out.append(Point(f"{r['framework']}, n = {r['n']}, {r['phase']}", r["model_seconds"], r["measured_seconds"],
                         "s", r["model_seconds"] / r["measured_seconds"], note, band=r.get("host_band")))
    return out, "rows are not synchronised (time() around an asynchronous call): not held to x1.35; " + _host_stated()



def gpu_microbenchmarks_points(doc, quick):
    """Each row the GPU model has a part for (:mod:`mimdsim.gpu.microbenchmarks`: its predictor, on the presets
    the row's GPU can be), as a time: a copy's bandwidth becomes the seconds its bytes take. The band is the named
    GPU assumptions'; the note is the row's documented state. Rows the model has no part for, or whose GPU no
    preset matches, are left out (``mimdsim/gpu/microbenchmarks.py`` lists them)."""
    from ..gpu.microbenchmarks import checks

    out = []
    for c in checks(doc["points"]):
        if c.model is None:
            continue
        r = c.row
        if r["unit"] == "B/s":  # seconds for the row's bytes; a higher rate is a shorter time
            model, measured, band = (r["bytes"] / c.model, r["bytes"] / r["value"],
                                     [r["bytes"] / c.band[1], r["bytes"] / c.band[0]])
        else:
            model, measured, band = c.model, r["value"], list(c.band)
        out.append(Point(r["id"], model, measured, "s", model / measured, c.state, band=band))
    return out, "a row on an unnamed or non-preset GPU is compared where every preset it could be gives one figure"

# Every stored source by name, as the workloads declare them (mimdsim/workloads/<name>/workload.py): the chip's
# first, then the CPU's, then the GPU's.
SOURCES = validation_sources()


def run_source(name: str, quick: bool = False, lists: str = "executed") -> SourceResult:
    """One source's points; ``lists``: the study log's list activity (``STUDY_LISTS``; the other sources
    have no such assumption)."""
    if name not in SOURCES:
        raise ConfigError(Param("sources", name, key="validate.source", shown=repr(name)), " is not a stored source; "
                          f"one of {', '.join(SOURCES)}." + did_you_mean(name, SOURCES))
    doc = load(name)
    source = SOURCES[name]
    runner = resolve(source.runner)
    points, assumption = runner(doc, quick, lists) if source.takes_lists else runner(doc, quick)
    return SourceResult(name, doc["title"], doc["provenance"], points, assumption)


def run_all(sources=None, quick: bool = False, lists: str = "executed", progress=None) -> list[SourceResult]:
    """Every stored source (or those named), each point's model ÷ measured; ``progress(done, total)`` is called
    after each source (the command line's bar)."""
    names = list(sources or SOURCES)
    out = []
    if progress is not None:
        progress(0, len(names))
    for i, s in enumerate(names):
        out.append(run_source(s, quick, lists))
        if progress is not None:
            progress(i + 1, len(names))
    return out


def _measured_text(p: Point) -> str:
    return f"{p.measured:.4g}" + (f"±{p.resolution / 2:g}" if p.resolution else "")


def summary_table(results, points: bool = False) -> str:
    lines = ["model ÷ measured, as times (above 1: the model is slower than measured). Nothing fitted.", "",
             f"{'source':<14}{'points':>7}{'median':>9}{'best':>8}{'worst':>8}{'in band':>9}  what"]
    for r in results:
        best = min(r.ratios, key=lambda x: max(x, 1 / x))
        banded = [p.inside for p in r.points if p.inside is not None]
        inband = f"{sum(banded)}/{len(banded)}" if banded else "-"
        lines.append(f"{r.source:<14}{len(r.points):>7}{r.median:>9.2f}{best:>8.2f}{r.worst:>8.2f}{inband:>9}  {r.title}")
        if r.provenance.get("fitted"):
            lines.append(f"{'':<14}  fitted: {r.provenance['fitted']}")
        if r.assumption:
            lines.append(f"{'':<14}  assumed: {r.assumption}")
    if points:
        for r in results:
            lines += ["", f"{r.source}: {r.title}",
                      f"  {'point':<44}{'model':>12}{'band':>22}{'measured':>12}{'ratio':>8}  unit"]
            lines += [f"  {p.label:<44}{p.model:>12.4g}"
                      + (f"  {f'{p.band[0]:.4g}-{p.band[1]:.4g}':>16}{' in ' if p.inside else ' out'}" if p.band else f"{'-':>22}")
                      + f"{_measured_text(p):>12}{p.ratio:>8.2f}  {p.unit}"
                      + (f"  ({p.note})" if p.note else "") for p in r.points]
    return "\n".join(lines)
