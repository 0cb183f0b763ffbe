"""``Comparison``: the MIMD chip's report beside other architectures' reports, with the ratio.

One class for every comparison: the SNN training step (:func:`mimdsim.compare`: GPU strategies
and optionally a systolic array) and one run of a workload (``compare_kalman``, ``compare_mlp``:
GPU strategies and optionally a CPU). Every column is a :class:`Report`, so the speedup, the
JSON and the table are computed here once, from the reports alone.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import Message, Param, join
from .report import PHASES, JsonOutput, Report, matmul_plan_lines, program_lines

def tf32_note(cols: str) -> Message:
    return Message(f"  note: {cols}: GPU matmuls in strict fp32 (CUDA cores). TensorFlow and PyTorch may use TF32 "
                   f"tensor cores for float32 matmuls on Ampere and later: try ",
                   Param("precision", "tf32", key="gpu.precision"), " (docs/validation.md)")


@dataclass
class Comparison(JsonOutput):
    """The MIMD chip's Report and the other columns' Reports; speedup is MIMD throughput over each.

    ``others`` maps a column's key to its Report, in table order: the GPU strategies by name
    (platform ``"gpu"``), then ``"systolic"`` or ``"cpu"``; the same keys name the speedups.
    ``refused`` maps a GPU strategy whose model does not fit to the reason (no column, no
    speedup). ``unit`` says what ``samples_per_second`` counts (``"tracks/s"`` for the Kalman
    fit). ``workload`` is ``"snn"`` for a training step, whose MIMD :class:`~mimdsim.Run`
    is ``run``, or ``"kalman"`` / ``"mlp"`` for one run of that workload.
    """

    mimd: Report
    others: dict = field(default_factory=dict)  # key -> Report (GPU strategy, "systolic", "cpu")
    refused: dict = field(default_factory=dict)  # GPU strategy -> reason (e.g. does not fit)
    unit: str = "samples/s"
    workload: str = "snn"
    run: object = None  # the SNN step's mimdsim.Run (report, loss, grads)
    # the stored validation source of the chip's program and neuron model, and its predicted rows' median
    # model ÷ measured (mimdsim.report.accuracy); None where compare did not look it up
    validation: dict | None = None

    @property
    def gpu(self) -> dict:
        """GPU strategy -> Report."""
        return {k: r for k, r in self.others.items() if r.platform == "gpu"}

    @property
    def systolic(self) -> Report | None:
        return self.others.get("systolic")

    @property
    def cpu(self) -> Report | None:
        return self.others.get("cpu")

    @property
    def speedup(self) -> dict:
        """MIMD throughput over each other column's (keys as in ``others``)."""
        return {k: self.mimd.samples_per_second / r.samples_per_second for k, r in self.others.items()}

    @property
    def speedup_band(self) -> dict:
        """``[low, high]`` of each column's speedup when the named assumptions of both sides move
        (empty without the MIMD report's band)."""
        if not self.mimd.uncertainty:
            return {}

        def sps(r):  # [low, high] samples/s: the column's band, or its point where it has none
            return (r.uncertainty or {}).get("samples_per_second", [r.samples_per_second] * 2)
        m = sps(self.mimd)
        return {k: [m[0] / sps(r)[1], m[1] / sps(r)[0]] for k, r in self.others.items()}

    @property
    def energy_ratio(self) -> dict:
        """MIMD samples per joule over each other column's (columns without an energy model left out)."""
        if not self.mimd.energy:
            return {}
        return {k: self.mimd.energy["samples_per_joule"] / r.energy["samples_per_joule"]
                for k, r in self.others.items() if r.energy}

    def to_dict(self) -> dict:
        # The SNN step's JSON has no workload and unit keys (it is samples/s) and always a
        # refused one; a workload's lists refusals only if there are any.
        snn = self.workload == "snn"
        d = {} if snn else {"workload": self.workload, "unit": self.unit}
        d.update(mimd=self.mimd.to_dict(), gpu={k: r.to_dict() for k, r in self.gpu.items()}, speedup=self.speedup)
        if self.energy_ratio:
            d["energy_ratio"] = self.energy_ratio
        if self.speedup_band:  # each column's samples/s band (the chip's under "mimd"), then the speedup's
            d["uncertainty"] = {"samples_per_second": {k: r.uncertainty["samples_per_second"] for k, r in
                                                       [("mimd", self.mimd), *self.others.items()] if r.uncertainty},
                                "speedup": self.speedup_band}
        if snn or self.refused:
            d["refused"] = self.refused
        d.update({k: r.to_dict() for k, r in self.others.items() if r.platform != "gpu"})
        if self.validation is not None:
            d["validation"] = self.validation
        return d

    def _title(self) -> str:
        m = self.mimd
        if self.workload != "snn":
            return f"{m.model}, {m.batch_size:,} {self.unit.split('/')[0]} per run"
        precisions = {r.placement["precision"] for r in self.gpu.values()}
        program = f" ({m.placement['schedule']} program)" if m.placement.get("schedule") else ""  # 4-5x apart
        return (f"{m.model}, T={m.timesteps}, B={m.batch_size}, MIMD {m.mode}{program}"
                + (f", GPU precision {precisions.pop()}" if len(precisions) == 1 else ""))

    def format(self) -> str:
        """The columns side by side: throughput, time, phases, kinds, memory, bound, speedup."""
        snn = self.workload == "snn"
        # a CPU column is headed by its cores (its mode); the others by their key
        cols = [("MIMD " + self.mimd.architecture, self.mimd)] + \
               [(f"{r.architecture} {r.mode if r.platform == 'cpu' else k}", r) for k, r in self.others.items()]
        w = max(16, *(len(c) + 2 for c, _ in cols))
        lines = [f"mimdsim compare: {self._title()}", *(program_lines(self.mimd.placement) if snn else []), "",
                 f"  {'':<22}" + "".join(f"{c:>{w}}" for c, _ in cols)]

        def row(label, fn):
            lines.append(f"  {label:<22}" + "".join(f"{fn(r):>{w}}" for _, r in cols))

        if any("framework" in r.placement for _, r in cols):  # what runs each GPU column, as it runs
            row("framework", lambda r: r.placement.get("framework", "-"))
        if any("host" in r.placement for _, r in cols):  # each GPU column's CPU (docs/gpu-model.md, Hosts)
            row("host", lambda r: r.placement.get("host", "-"))
            # the chip's number format too (--chip-precision), beside each GPU column's
            row("precision", lambda r: r.placement.get("precision", "-") if r.platform in ("gpu", "mimd") else "-")
        row(self.unit, lambda r: f"{r.samples_per_second:,.0f}")
        if any(r.uncertainty for _, r in cols):  # each column's own band, the chip's as the GPU's
            row("  band", lambda r: "{:,.0f}-{:,.0f}".format(*r.uncertainty["samples_per_second"])
                if r.uncertainty else "-")
        row("seconds/step" if snn else "seconds/run", lambda r: f"{r.seconds_per_step:.3e}")
        for phase in [p for p in PHASES if any(r.phase_seconds().get(p) for _, r in cols)]:  # time spent
            row(f"  {phase} (ms)", lambda r, p=phase: f"{r.phase_seconds().get(p, 0.0) * 1e3:,.3f}"
                if p in r.cycles else "-")
        kinds = []
        for _, r in cols:
            kinds += [k for k in r.kinds if k not in kinds]
        for k in kinds:
            row(f"  {k} share", lambda r, k=k: f"{100 * r.kind_totals().get(k, 0.0) / r.total_cycles:.1f}%"
                if k in r.kinds else "-")
        if any(r.energy for _, r in cols):
            row("joules/step", lambda r: f"{r.energy['joules_per_step']:.3e}" if r.energy else "-")
            row("watts (band)", lambda r: "{:,.0f} ({:,.0f}-{:,.0f})".format(r.energy["watts"], *r.energy["band"]["watts"])
                if r.energy else "-")
            row("samples/J", lambda r: f"{r.energy['samples_per_joule']:,.1f}" if r.energy else "-")
        row("memory", _memory)
        if any("kernel_launches" in r.placement for _, r in self.gpu.items()):  # what the step costs the host
            row("kernels per step", lambda r: f"{r.placement['kernel_launches']:,}" if r.platform == "gpu"
                and "kernel_launches" in r.placement else "-")
            row("host waits per step", lambda r: _host_waits(r))
        if any("bound" in r.placement for _, r in cols):
            row("bound", lambda r: r.placement.get("bound", "-"))
        lines.append(f"  {'speedup MIMD/' + ('GPU' if snn else 'other'):<22}" + f"{'':>{w}}"
                     + "".join(f"{v:>{w - 1}.2f}x" for v in self.speedup.values()))
        if self.speedup_band:  # every named assumption of both sides over its range
            lines.append(f"  {'  band':<22}" + f"{'':>{w}}" + "".join(
                f"{f'{lo:.2f}-{hi:.2f}x':>{w}}" for lo, hi in self.speedup_band.values()))
        if self.energy_ratio:  # samples per joule, beside the speedup's samples per second
            lines.append(f"  {'energy ratio MIMD/' + ('GPU' if snn else 'other'):<22}" + f"{'':>{w}}"
                         + "".join(f"{self.energy_ratio[k]:>{w - 1}.2f}x" if k in self.energy_ratio else f"{'-':>{w}}"
                                   for k in self.others))
        lines += [Message(f"  {s}: refused: ", why) for s, why in self.refused.items()]
        lines += matmul_plan_lines(self.mimd.placement)
        if self.validation is not None:
            lines.append(f"  measured: {self.validation['line']} (mimdsim validate; docs/validation.md)")
        if snn:
            # the chips asked for and used, in the MIMD run's own sentence (simulate prints it among its notes)
            lines += [Message("  note: MIMD: ", n) for n in self.mimd.notes if " chips asked for, " in str(n)]
            fp32 = [k for k, r in self.gpu.items() if r.placement["precision"] == "fp32"]
            if fp32:  # name the columns: another may run tf32 already (compiled on Ampere+)
                lines.append(tf32_note(", ".join(fp32)))
            for k, r in self.gpu.items():  # where the eager op stream came from, and the versions traced
                if r.placement.get("eager_source") == "trace":
                    traced = ", ".join(f"{lib} {v}" for lib, v in r.placement["traced"].items())
                    lines.append(f"  note: {k}: the op stream of snnTorch's training step, traced ({traced}); "
                                 f"{r.placement['host_syncs']} host sync(s) per step (docs/gpu-model.md)")
                elif r.placement.get("strategy") == "eager-trace":
                    traced = ", ".join(f"{lib} {v}" for lib, v in r.placement["traced"].items())
                    lines.append(f"  note: {k}: {r.model} traced ({traced}): {r.placement['kernel_launches']:,} "
                                 f"device ops, {r.placement['host_syncs']} host sync(s) per step, B = {r.batch_size}")
                elif r.placement.get("strategy") == "compiled-trace":
                    traced = ", ".join(f"{lib} {v}" for lib, v in r.placement["traced"].items())
                    lines.append(f"  note: {k}: {r.model} traced ({traced}), costed as torch.compile(mode="
                                 f"\"{r.placement['compile_mode']}\") runs it: {r.placement['kernel_launches']:,} "
                                 f"kernels in {r.placement['cuda_graphs']} CUDA graph(s), "
                                 f"{r.placement['host_syncs']} host sync(s) per step, B = {r.batch_size}")
                elif r.placement.get("strategy") == "keras-rnn-xla":
                    lines.append(f"  note: {k}: the sparse-BPTT study's own GPU program (graphcore_snn train_gpu: a "
                                 f"Keras RNN, TensorFlow 2.8-2.10 + XLA, float32 with TF32 matmuls), its forward loop "
                                 f"a {r.placement['forward_loop']}, its backward a WhileThunk (docs/gpu-model.md)")
                elif r.placement.get("eager_source") == "census":
                    lines.append(f"  note: {k}: the hand census of snnTorch 1.0's ops (torch or snnTorch not "
                                 f"installed: pip install \"mimdsim[torch]\" to trace them; docs/gpu-model.md)")
        else:
            lines += [Message(f"  note ({name}): ", n) for name, r in cols for n in r.notes[:3]]
        return Message(*join(*lines, sep="\n"))


def _host_waits(r: Report) -> str:
    """Times per step the host waits for the GPU (an XLA WhileThunk's predicate, an eager ``.item()``)."""
    if r.platform != "gpu":
        return "-"
    waits = r.placement.get("host_waits", r.placement.get("host_syncs"))
    return "-" if waits is None else f"{waits:,}"


def _memory(r: Report) -> str:
    """The fullest tile (MIMD) or the device memory (GPU), with the share of the limit."""
    m = r.memory
    if "max_tile_bytes" in m:
        return f"{m['max_tile_bytes'] / 1024:,.0f} KiB/tile ({100 * m['max_tile_bytes'] / m['tile_bytes_limit']:.0f}%)"
    if "device_bytes" in m:
        return f"{m['device_bytes'] / 2**30:,.2f} GiB ({100 * m['device_bytes'] / m['device_bytes_limit']:.0f}%)"
    return "-"
