"""Every stored measurement against the model: ``mimdsim validate``.

Each source is a data file in ``mimdsim/validation/data/`` holding the measured points and where
they come from (repository, file, commit, what the number is). A source's runner rebuilds each
point as a user would run it (the same ``simulate``, ``kalman``, GPU ``estimate`` calls) and
returns model ÷ measured. Every ratio is a ratio of **times** (seconds per step, per call or per
track): above 1 the model is slower than measured, below 1 faster.

Every stored row is counted, in one of five kinds: **predicted** (nothing the row's model reads was set from
a validation source's own measurement), **fitted** (something was: :data:`FITS` names each such value, the
source it was set from and the rows that read it; a GPU microbenchmark row is fitted where a named assumption
whose reasoning cites the row's own source moves its figure), **suspect** (the model holds the measurement
cannot be the quantity it models: the reason is shown and the row is summarised apart), **not run** (its
library is not installed: the install line that runs it is named) and **left out** (not compared, with the
reason: a row the source itself sets aside, a quantity the model has no part for, ``--quick``). Medians, worst
ratios and in-band counts are given for predicted and fitted rows apart. Each workload declares
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
from ..report.accuracy import accuracy, accuracy_line  # noqa: F401 (compare's line, read from the stored summary)
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
    fitted: str = ""  # what of this row's model was set from a validation source's own measurement ("": predicted)
    suspect: str = ""  # why the model holds the measurement cannot be what it models ("": compared)

    @property
    def kind(self) -> str:
        """"suspect", "fitted" or "predicted" (see the module's text)."""
        return "suspect" if self.suspect else "fitted" if self.fitted else "predicted"

    @property
    def inside(self) -> bool | None:
        """Whether the measurement, as far as its printed resolution tells it, falls inside the model's
        band (None: no band): the intervals [measured -+ resolution / 2] and [low, high] overlap."""
        if self.band is None:
            return None
        half = self.resolution / 2
        return self.band[0] <= self.measured + half and self.measured - half <= self.band[1]

    def to_dict(self) -> dict:
        return {**self.__dict__, "kind": self.kind, "inside_band": self.inside}


@dataclass(frozen=True)
class LeftOut:
    """A stored row not compared: ``kind`` "not run" (its library is absent: ``install`` runs it) or "left out"
    (``reason`` says why)."""
    label: str
    kind: str
    reason: str
    install: str = ""


@dataclass(frozen=True)
class Fit:
    """A value set from a validation source's own end-to-end measurement, not from a part's own source."""
    name: str
    value: str  # what was set, with its value
    source: str  # the validation source whose measurement set it
    how: str  # how it was read off that measurement
    readers: tuple  # the sources whose rows read it (each of their rows is fitted)


# Every value set from a stored validation source's own measurement. TRACKR's launch: no figure for Poplar's
# Engine::run and the host syncs around it was found apart from TRACKR's logs (Graphcore's lightweight-profiling
# tutorial bounds it below only: run_launch_s's range), so the intercept stays and every row reading it is fitted.
FITS = (
    Fit("trackr-launch", "the per-run launch: run_launch_s 192 us (ipu-mk2, bow: the MK1 figure) and TRACKR's program's "
        "trackr_launch_cycles (the 190.8 us MK1 intercept, its per-vertex work taken out)", "trackr",
        "the fixed term of TRACKR's warm MK1 scalar logs (docs/workloads.md §1.6)",
        ("trackr", "sun-poptorch")),
)


def fit_note(source: str) -> str:
    """A row's ``fitted`` note for every :data:`FITS` entry ``source``'s rows read ("" where none)."""
    return "; ".join(f"{f.name}: set from {'this source' if f.source == source else f.source}'s own logs"
                     for f in FITS if source in f.readers)


@dataclass
class SourceResult:
    source: str
    title: str
    provenance: dict
    points: list = field(default_factory=list)
    assumption: str = ""
    left_out: list = field(default_factory=list)  # LeftOut rows: every stored row is a point or one of these

    def of_kind(self, kind: str) -> list:
        """The points of one kind: "predicted", "fitted" or "suspect"."""
        return [p for p in self.points if p.kind == kind]

    @property
    def compared(self) -> list:
        """Predicted and fitted points (a suspect row is shown, never summarised with them)."""
        return [p for p in self.points if not p.suspect]

    @property
    def ratios(self) -> list[float]:
        return [p.ratio for p in self.compared]

    @property
    def median(self) -> float | None:
        return statistics.median(self.ratios) if self.ratios else None

    @property
    def worst(self) -> float | None:
        """The ratio furthest from 1 (either way, in factor terms), over the compared points."""
        return _worst(self.ratios) if self.ratios else None

    @property
    def stored(self) -> int:
        return len(self.points) + len(self.left_out)

    def not_run(self) -> list:
        return [r for r in self.left_out if r.kind == "not run"]

    def summary(self, kind: str) -> dict:
        """Rows, median, best, worst and inside-band count of one kind's points (None where it has none)."""
        return _summary(self.of_kind(kind))

    def to_dict(self) -> dict:
        return {"source": self.source, "title": self.title, "provenance": self.provenance,
                "assumption": self.assumption, "stored": self.stored, "median": self.median, "worst": self.worst,
                "predicted": self.summary("predicted"), "fitted": self.summary("fitted"),
                "suspect": self.summary("suspect"),
                "fits": [f.__dict__ | {"readers": list(f.readers)} for f in FITS if self.source in f.readers],
                "points": [p.to_dict() for p in self.points],
                "left_out": [r.__dict__ for r in self.left_out]}


def _worst(ratios) -> float:
    return max(ratios, key=lambda r: max(r, 1 / r))


def _summary(points) -> dict | None:
    if not points:
        return None
    ratios = [p.ratio for p in points]
    banded = [p.inside for p in points if p.inside is not None]
    return {"rows": len(points), "median": statistics.median(ratios), "best": min(ratios, key=lambda r: max(r, 1 / r)),
            "worst": _worst(ratios), "inside_band": sum(banded) if banded else None, "banded": len(banded)}


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

    label = _study_label(p)
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
    skipped = [LeftOut(_study_label(p), "left out", QUICK) for p in pts if quick and p["max_activity"] != 0.01]
    if quick:
        pts = [p for p in pts if p["max_activity"] == 0.01]
    executed = study_activity.stored()["points"] if share is None else None
    out = _map(_study_point, [(p, share, executed, doc["provenance"]["resolution_ms"]) for p in pts])
    return out, stated, skipped


QUICK = "outside the quick subset (quick=True)"


def _study_label(p) -> str:
    return f"{p['hidden_layers']} hidden, {p['max_activity']:.0%}"


def sun_poptorch_points(doc, quick):
    """``schedule="poptorch"``, Leaky 784-1000-10, T = 25, B = 128, fp32, static input, ipu-mk2."""
    from ..snn import Network
    from ..snn.zoo import ZOO
    from ..workloads.snn.simulate import simulate

    net = Network.build([784, 1000, 10], ZOO["leaky"], bias=True, loss="ce_count")
    rep = simulate(net, "ipu-mk2", timesteps=25, batch_size=128, activity=0.1, precision="fp32",
                   schedule="poptorch", static_input=True).report
    model, band = rep.samples_per_second, list(rep.uncertainty["samples_per_second"])
    label = lambda p: f"{p['file'][36:-4]} epoch {p['epoch']} step {p['steps']}"  # noqa: E731
    fitted = fit_note("sun-poptorch")
    out = [Point(label(p), model, p["samples_per_second"], "samples/s", p["samples_per_second"] / model, band=band,
                 fitted=fitted) for p in doc["points"] if p["use"]]
    # the source's own rule (its provenance): step 0 of epoch 0 holds the compilation, step 0 of epoch 1 the
    # data loader's restart
    left = [LeftOut(label(p), "left out", f"step {p['steps']}: {'compilation' if p['epoch'] == 0 else 'the data loader restarting'}"
                    " in the call's time (the source's rule: step-250 rows only)") for p in doc["points"] if not p["use"]]
    mean = doc["provenance"]["mean_of_used_rows"]
    return out, f"mean of the used rows {mean:,.0f} samples/s, model ÷ measured {mean / model:.2f}", left


def trackr_points(doc, quick):
    """TRACKR's program as built (schedule "published"), hits resident, as TRACKR timed it."""
    from ..workloads import kalman

    label = lambda p: f"{p['chip']} {p['variant']} {p['tracks_per_tile']}/tile, {p['tiles']} tiles"  # noqa: E731
    out, left = [], []
    for p in doc["points"]:
        if quick and p["tiles"] not in (2, 152, 1216):
            left.append(LeftOut(label(p), "left out", QUICK))
            continue
        r = kalman(p["tracks_per_tile"], 5, p["chip"], tiles=p["tiles"], variant=p["variant"], stream=False).report
        model = r.samples_per_second / 1e6
        m = p["measured_mtracks_per_second"]
        fitted = fit_note("trackr") + ("; this row is one the intercept was fitted on" if p["launch_from_these_logs"]
                                       else "")
        out.append(Point(label(p), model, m, "10^6 tracks/s", m / model, fitted=fitted))
    return out, "", left


def trackr_cpu_points(doc, quick):
    from ..workloads import trackr_cpu

    out = []
    for p in doc["points"]:
        r = trackr_cpu(p["tracks"], threads=p["threads"])
        model, m, pl = r.samples_per_second / 1e6, p["measured_mtracks_per_second"], r.placement
        note = (f"{pl['cycles_per_track']:.0f} cycles/track + {pl['fixed_cycles_per_batch']:,.0f} per batch, "
                f"{pl['batches']} batch(es) at {pl['clock_hz'] / 1e9:.2f} GHz")
        out.append(Point(f"{p['threads']} thread(s), {p['tracks']} tracks", model, m, "10^6 tracks/s", m / model,
                         note))
    return out, trackr_cpu_parts()


def trackr_cpu_parts() -> str:
    """What TRACKR's Eigen reference is costed from (``mimdsim/workloads/kalman/cpu.py``): its SSE2 instructions
    per track and per batch as the Eigen build evaluates them, on the i7-9750H's published ports and clocks."""
    from ..arch.cpu import cpu
    from ..workloads.kalman import cpu as kc

    spec, ops = cpu("i7-9750h"), kc.trackr_track_ops(5)
    ports = {"FP": ops["fp"] / spec.fp_per_cycle, "load": ops["loads"] / spec.loads_per_cycle,
             "store": ops["stores"] / spec.stores_per_cycle, "shuffle": ops["shuffles"] / kc.SHUFFLES_PER_CYCLE,
             "issue": sum(ops.values()) / kc.ISSUE_PER_CYCLE}
    bound = max(ports, key=ports.get)
    return (f"costed from its parts, nothing fitted: per track {ops['fp']} FP, {ops['loads']} load, {ops['stores']} "
            f"store and {ops['shuffles']} shuffle SSE2 instructions (5 planes, Eigen's lazy products re-evaluated), "
            f"{ports[bound]:.0f} cycles on the {bound} port(s) ({', '.join(f'{k} {v:.0f}' for k, v in ports.items())}); "
            f"per batch of {kc.TRACKR_BATCH}: 4x4 products and inverses, {kc.HEAP_ALLOCATIONS} heap allocations; "
            f"{spec.turbo_clock_hz / 1e9:.1f} GHz on one thread, {spec.clock_hz / 1e9:.1f} GHz on {spec.cores} cores")


# The Open Neuromorphic benchmark names its GPU (an RTX 4090) and no CPU (docs/validation-history.md, "Hosts of the
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
    from ..workloads.snn.baselines import eager_trace

    fallback = ("" if eager_trace.versions() is not None else "torch or snnTorch is not installed, so the rows are "
                "costed from snnTorch 1.0's hand census, not the traced 0.7 call (run them traced: pip install "
                "\"mimdsim[torch]\"); ")
    return out, fallback + _host_stated()


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


def _quick_skips(row: dict, quick: bool) -> bool:
    """Whether the quick subset leaves a library row out: a traced program's rows at n > 4096."""
    from . import traced_libraries

    return quick and row["program"] in traced_libraries.PROGRAMS and row["n"] > 4096


def library_rows(doc, quick: bool = False):
    """Each modelled row of the other libraries (``program`` set) with its model seconds and the seconds of
    its GEMMs at the GPU's peak; ``excluded`` names why a row cannot be a device time (faster than its own
    GEMMs at peak: the call returned before the GPU finished). A ``traced:`` program is the library's call
    traced (:mod:`.traced_libraries`); where the library is not installed its row is not costed (``absent``
    names it, ``install`` the line that installs it) and, with ``quick``, a row at n > 4096 is not returned
    (:func:`snn_libraries_gpu_points` counts it as left out)."""
    from ..workloads.snn.baselines import libraries

    from . import traced_libraries

    out = []
    for p in doc["points"]:
        prog = p["program"]
        if not prog:
            continue
        m = p["measured_seconds"]
        if prog in traced_libraries.PROGRAMS:
            if _quick_skips(p, quick):
                continue
            if traced_libraries.version(prog) is None:
                out.append({**p, "absent": traced_libraries.PROGRAMS[prog][1], "excluded": "",
                            "install": traced_libraries.install_line(prog)})
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
    (``baselines/libraries.py``), the PyTorch-op-by-op ones traced (``traced_libraries.py``). A row faster than
    its own GEMMs at the GPU's peak is suspect (shown with that reason, summarised apart); a traced library
    that is not installed leaves its rows not run, with the line that installs it (docs/validation.md)."""
    label = lambda r: f"{r['framework']}, n = {r['n']}, {r['phase']}"  # noqa: E731
    out, left = [], [LeftOut(label(p), "left out", QUICK) for p in doc["points"] if _quick_skips(p, quick)]
    for r in library_rows(doc, quick):
        if r.get("absent"):
            left.append(LeftOut(label(r), "not run", f"{r['absent']} is not installed", r["install"]))
            continue
        note = "unsynchronised" + (f"; traced, host alone {r['host_seconds'] / r['measured_seconds']:.2f}"
                                   if "host_seconds" in r else "")
        if "eager_seconds" in r:
            note += f"; torch.compile {r['compiled']}, eager {r['eager_seconds'] / r['measured_seconds']:.2f}"
        out.append(Point(label(r), r["model_seconds"], r["measured_seconds"], "s",
                         r["model_seconds"] / r["measured_seconds"], note, band=r.get("host_band"),
                         suspect=r["excluded"]))
    return out, "rows are not synchronised (time() around an asynchronous call): not held to x1.35; " + _host_stated(), left



def gpu_microbenchmarks_points(doc, quick):
    """Each row the GPU model has a part for (:mod:`mimdsim.gpu.microbenchmarks`: its predictor, on the presets
    the row's GPU can be), as a time: a copy's bandwidth becomes the seconds its bytes take. The band is the named
    GPU assumptions'; the note is the row's documented state. A row is fitted where a named assumption whose
    reasoning cites the row's own source moves the row's figure over its range (:func:`microbenchmark_fits`).
    Rows the model has no part for, or whose GPU no preset matches, are left out with that reason
    (``mimdsim/gpu/microbenchmarks.py`` lists them)."""
    from ..gpu.microbenchmarks import PENDING, checks

    out, left = [], []
    for c in checks(doc["points"]):
        r = c.row
        if c.model is None:
            why = (f"pending: the model has no part for {r['quantity']}" + (f" ({PENDING[r['quantity']]})"
                                                                            if r["quantity"] in PENDING else "")
                   if c.state == "pending" else f"unmatched: {r.get('state_reason') or 'no preset of the GPU'}")
            left.append(LeftOut(r["id"], "left out", why))
            continue
        fitted = "; ".join(f"{name} ({reason})" for name, reason in microbenchmark_fits(r))
        if r["unit"] == "B/s":  # seconds for the row's bytes; a higher rate is a shorter time
            model, measured, band = (r["bytes"] / c.model, r["bytes"] / r["value"],
                                     [r["bytes"] / c.band[1], r["bytes"] / c.band[0]])
        else:
            model, measured, band = c.model, r["value"], list(c.band)
        out.append(Point(r["id"], model, measured, "s", model / measured, c.state, band=band, fitted=fitted))
    return out, "a row on an unnamed or non-preset GPU is compared where every preset it could be gives one figure", left


def tensix_matmul_points(doc, quick):
    """tt-metal's published ttnn matmul times (GEMM_FLOPS, out-of-box configs), each beside the Tensix model's
    eager or trace-replayed time for its shape, data type and fidelity (:func:`mimdsim.tensix.ops.tensix_op`) and
    its band over the op's named assumptions. Predicted: no constant of the model is set from these rows (the
    predictions were committed before them, docs/tensix.md). ``quick``: the largest shape of each chip and mode."""
    from ..tensix.ops import op_band, tensix_op

    rows = doc["points"]
    if quick:
        largest = {}
        for r in rows:
            key = (r["chip"], r["precision"], r["trace"])
            if key not in largest or r["m"] * r["k"] * r["n"] > largest[key]["m"] * largest[key]["k"] * largest[key]["n"]:
                largest[key] = r
    keep = [r for r in rows if not quick or r is largest[(r["chip"], r["precision"], r["trace"])]]
    left = [LeftOut(_tensix_label(r), "left out", QUICK) for r in rows if quick and r not in keep]
    out = []
    for r in keep:
        shape = {"m": r["m"], "k": r["k"], "n": r["n"], "precision": r["precision"], "fidelity": r["fidelity"]}
        op = tensix_op("matmul", r["chip"], band=False, **shape)
        model = op.traced_seconds if r["trace"] else op.seconds
        measured = r["measured_ns"] * 1e-9
        band = list(op_band("matmul", r["chip"], shape, traced=r["trace"])["seconds"])
        out.append(Point(_tensix_label(r), model, measured, "s", model / measured, op.config["config"], band=band))
    return out, "every operand DRAM-interleaved on the full compute grid, as the report's out-of-box configs", left


def _tensix_label(r: dict) -> str:
    return f"{r['chip']} {r['m']}x{r['k']}x{r['n']} {r['precision']} {r['fidelity']} {'traced' if r['trace'] else 'eager'}"


def _cites(text: str, source: dict) -> bool:
    """Whether ``text`` cites a microbenchmark row's source: its repository's name and, where it has one, its
    issue or pull-request number."""
    name = source["repository"].split("/")[-1]
    return name in text and (source.get("number") is None or f"#{source['number']}" in text)


def microbenchmark_fits(row: dict) -> list:
    """[(assumption name, why)] for each named assumption whose reasoning cites ``row``'s own source and whose
    range moves the row's figure on its first preset: the row's model then holds a value read off the row's
    own measurement."""
    from .. import assumptions as A
    from ..arch.gpu import gpu
    from ..gpu.microbenchmarks import PREDICTORS, _predict

    if row["quantity"] not in PREDICTORS:
        return []
    spec = gpu(row["compare_on"][0])
    base = _predict(row, spec)
    out = []
    for a in A.REGISTRY.values():
        if _cites(a.reasoning, row["source"]) and any(
                abs(_predict(row, spec, {a.name: v}) - base) > 1e-9 * abs(base) for v in (a.low, a.high)):
            out.append((a.name, f"{a.value:g} {a.unit}, set from this row's source"))
    return out

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
    out = runner(doc, quick, lists) if source.takes_lists else runner(doc, quick)
    points, assumption, left = out if len(out) == 3 else (*out, [])  # a runner that leaves no row out returns two
    return SourceResult(name, doc["title"], doc["provenance"], points, assumption, list(left))


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


def fitted_lines(results) -> list[str]:
    """What was fitted, exactly: each :data:`FITS` entry a run's sources read, and each other fitted note with its
    rows; "Nothing fitted." only where no row is fitted."""
    names = {r.source for r in results}
    lines = [f"  {f.name}: {f.value}; set from {f.source}: {f.how}. Its readers' rows are fitted: "
             f"{', '.join(x for x in f.readers if x in names)}" for f in FITS if names & set(f.readers)]
    covered = {x for f in FITS for x in f.readers}
    for r in results:
        if r.source in covered:
            continue
        by_note: dict = {}
        for p in r.of_kind("fitted") + [p for p in r.of_kind("suspect") if p.fitted]:
            by_note.setdefault(p.fitted, []).append(p.label)
        lines += [f"  {r.source}: {note}: {', '.join(labels)}" for note, labels in by_note.items()]
    return ["Fitted (a value set from a validation source's own measurement; a row that reads one is fitted, "
            "summarised apart from the predicted rows):", *lines] if lines else ["Nothing fitted."]


def _cells(summary: dict | None) -> str:
    if summary is None:
        return f"{'-':>6}{'':>8}{'':>8}{'':>9}"
    banded = f"{summary['inside_band']}/{summary['banded']}" if summary["banded"] else "-"
    return f"{summary['rows']:>6}{summary['median']:>8.2f}{summary['worst']:>8.2f}{banded:>9}"


def _grouped(rows) -> list:
    """[(reason, install, labels)] of LeftOut rows with the same reason, in first-seen order."""
    out: dict = {}
    for x in rows:
        out.setdefault((x.reason, x.install), []).append(x.label)
    return [(reason, install, labels) for (reason, install), labels in out.items()]


def summary_table(results, points: bool = False) -> str:
    head = f"{'source':<20}{'stored':>7}  {'predicted':-^29}  {'fitted':-^29}{'suspect':>9}{'not run':>9}{'left out':>10}"
    sub = f"{'':<27}  " + f"{'rows':>6}{'median':>8}{'worst':>8}{'in band':>9}  " * 2
    lines = ["model ÷ measured, as times (above 1: the model is slower than measured); every stored row counted.",
             *fitted_lines(results), "", head, sub.rstrip()]
    totals = dict.fromkeys(("stored", "predicted", "fitted", "suspect", "not run", "left out"), 0)
    for r in results:
        n_suspect, n_not_run = len(r.of_kind("suspect")), len(r.not_run())
        n_left = len(r.left_out) - n_not_run
        lines.append(f"{r.source:<20}{r.stored:>7}  {_cells(r.summary('predicted'))}  {_cells(r.summary('fitted'))}"
                     f"{n_suspect:>9}{n_not_run:>9}{n_left:>10}")
        for k, v in (("stored", r.stored), ("predicted", len(r.of_kind("predicted"))),
                     ("fitted", len(r.of_kind("fitted"))), ("suspect", n_suspect), ("not run", n_not_run),
                     ("left out", n_left)):
            totals[k] += v
    lines.append(f"{'all':<20}{totals['stored']:>7}  {totals['predicted']:>6}{'':>25}  {totals['fitted']:>6}{'':>25}"
                 f"{totals['suspect']:>9}{totals['not run']:>9}{totals['left out']:>10}")
    for r in results:
        lines += ["", f"{r.source}: {r.title}"]
        if r.provenance.get("fitted"):
            lines.append(f"  fitted: {r.provenance['fitted']}")
        if r.assumption:
            lines.append(f"  basis: {r.assumption}")
        suspect = r.of_kind("suspect")
        if suspect:
            lines.append(f"  suspect ({len(suspect)}, shown per row, not summarised): the model holds the "
                         f"measurement cannot be the time it models, e.g. {suspect[0].label}: {suspect[0].suspect}")
        for reason, install, labels in _grouped(r.not_run()):
            lines.append(f"  not run ({len(labels)}): {reason}; run them: {install}")
        for reason, _, labels in _grouped([x for x in r.left_out if x.kind != "not run"]):
            lines.append(f"  left out ({len(labels)}): {reason}" + (f": {', '.join(labels)}" if len(labels) <= 3 else ""))
    if points:
        for r in results:
            lines += ["", f"{r.source}: {r.title}",
                      f"  {'point':<44}{'kind':>10}{'model':>12}{'band':>22}{'measured':>12}{'ratio':>8}  unit"]
            lines += [f"  {p.label:<44}{p.kind:>10}{p.model:>12.4g}"
                      + (f"  {f'{p.band[0]:.4g}-{p.band[1]:.4g}':>16}{' in ' if p.inside else ' out'}" if p.band else f"{'-':>22}")
                      + f"{_measured_text(p):>12}{p.ratio:>8.2f}  {p.unit}"
                      + "".join(f"  ({t})" for t in (p.note, p.fitted and "fitted: " + p.fitted,
                                                      p.suspect and "suspect: " + p.suspect) if t)
                      for p in r.points]
            lines += [f"  {x.label:<44}{x.kind:>10}  {x.reason}" + (f"; {x.install}" if x.install else "")
                      for x in r.left_out]
    return "\n".join(lines)
