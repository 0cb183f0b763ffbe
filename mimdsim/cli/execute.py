"""Running the settings of ``simulate``, ``compare`` and ``run FILE``: check every output path
first, build the run of the workload the settings choose (its declaration's ``build``:
:mod:`mimdsim.workloads.registry`), run it (``run``, or ``compare``), write the outputs, then print
the table. A workload that writes a comparison table only (and its JSON) runs through
:mod:`mimdsim.cli.workloads`; one that writes the per-superstep outputs (CSV, plots, trace: the SNN
step) runs here, with a progress bar over its timesteps."""
from __future__ import annotations

import numpy as np

from ..errors import Message, MimdsimError
from ..workloads.registry import workload_of


def _locate(values, error: MimdsimError) -> MimdsimError:
    """Prefix an error about a preset with the file and line that chose it."""
    where = values.get("_where")
    if not where:
        return error
    msg = str(error)
    for key, token in (("chip.preset", "chip"), ("gpu.preset", "GPU"), ("gpu.systolic", "systolic"),
                       ("chip.set", "chip field")):
        if key in where and f"unknown {token}" in msg:
            return error.prefixed(f"{where[key]}: ") if not hasattr(error, "tile") else error
    return error


def execute(values: dict, command: str, *, out=print):
    """Run the settings (``simulate`` or ``compare``): check every output path first, run, write
    the outputs, then print the table (a reader that closes the pipe early loses no file)."""
    from ..report.outputs import check_output_paths

    check_output_paths(values)  # before the run: a bad path costs nothing
    from .workloads import check_unused, execute_workload
    check_unused(values)  # a flag the workload would ignore is refused
    workload = workload_of(values)
    if set(workload.outputs) <= {"output.json"}:  # a comparison table and its JSON (Kalman track fitting, MLP inference)
        return execute_workload(values, out=out)
    from ..report.outputs import write_outputs
    from ..report.progress import Progress

    # the engine counts every iteration of the program's loops: T forward steps, then T backward
    progress = Progress(f"{'simulating' if command == 'simulate' else 'comparing'} (timesteps of the forward, then "
                        f"backward loop)", "timestep", enabled=not values["output.quiet"])
    try:
        net, sys_spec, kw = workload.entry("build")(values)
        timeline = [] if values["output.trace"] else None
        if command == "compare":
            compare = workload.entry("compare")
            kw = dict(kw)
            chip_precision = kw.pop("precision", None)  # the chip's (--chip-precision); precision= is the GPU's
            result = compare(net, sys_spec, values["gpu.preset"], strategies=values["gpu.strategies"],
                             precision=values["gpu.precision"], systolic=values["gpu.systolic"],
                             gpu_trace=values.get("gpu.trace"), gpu_trace_mode=values.get("gpu.trace_mode", "eager"),
                             gpu_trace_timeout=values.get("gpu.trace_timeout", 600.0),
                             host=values.get("gpu.host"),
                             chip_precision=chip_precision, timeline=timeline, progress=progress, **kw)
            run, gpu_reports = result.run, [*result.gpu.values(), *([result.systolic] if result.systolic else [])]
            text = result.format()
        else:
            run = workload.entry("run")(net, sys_spec, timeline=timeline, progress=progress, **kw)
            result, gpu_reports, text = run, [], run.report.format(full=bool(values.get("output.full")))
    except MimdsimError as e:
        raise _locate(values, e)
    finally:
        progress.close()
    if values.get("output.assumptions"):  # the tornado of each column, top drivers first
        from ..report.report import tornado_lines
        for name, r in [("MIMD " + run.report.architecture, run.report)] + \
                [(f"{r.architecture} {k}", r) for k, r in (getattr(result, "others", {}) or {}).items()]:
            if r.uncertainty:
                text = Message(text, f"\n\n  {name}, named assumptions:" + "\n".join(tornado_lines(r.uncertainty)))
    if run.loss is not None:
        norms = "" if run.grads is None else "; gradient norms " + ", ".join(f"{np.linalg.norm(g):.3g}" for g in run.grads)
        text = Message(text, f"\n\n  loss {run.loss:.6f}" + norms)
    written = write_outputs(values, run, result, gpu_reports, timeline)  # before anything is printed
    out(text)
    for line in written:
        out(line)
    return result
