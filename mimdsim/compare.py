"""``compare``: the same training step on the MIMD chip and on GPU models, side by side.

The MIMD chip is simulated (execution- or rate-driven); the activity it measures feeds the
GPU's ``sparse`` strategy, so both sides see the same spikes. Speedup is MIMD samples/s
over GPU samples/s. The result is a :class:`mimdsim.report.Comparison`.
"""
from __future__ import annotations

from . import assumptions as A
from .arch import as_system
from .arch.gpu import GpuSpec, gpu as gpu_spec
from .arch.host import default_host
from .engine.band import gpu_band, gpu_spec_with, systolic_band, systolic_spec_with
from .gpu.framework import host_spec
from .errors import ConfigError, Message, OutOfDeviceMemory, Param, UnsupportedModel
from .report.comparison import Comparison
from .checks import check_choice, check_number
from .workloads.snn.baselines.gpu_kernels import STRATEGIES, estimate
from .workloads.snn.simulate import simulate
from .workloads.snn.baselines.systolic import systolic_estimate

__all__ = ["compare", "Comparison"]
IPU_BESIDE_TENSIX = "ipu-mk2"  # compare --chip <Tensix preset> adds this IPU's column (key "IPU")


def default_strategies(net) -> tuple:
    """The GPU columns ``compare`` runs when none are named: the generic compiled loop, eager PyTorch and the fused
    CUDA step, and first, for a network the sparse-BPTT study's Keras cell can be, the study's own GPU program
    (``keras-rnn-xla``), so its claim is read against the program it was measured against."""
    from .workloads.snn.baselines.keras_rnn import builds

    return (("keras-rnn-xla",) if builds(net) else ()) + ("compiled", "eager", "fused")


def compare(net, chip="ipu-mk2", gpu="a100-40gb", *, strategies=None, precision=None,
            inputs=None, labels=None, timesteps=None, batch_size=None, activity=None,
            candidate_activity=None, input_activity=None, optimizer=None, systolic=None, chip_precision=None,
            assume=None, band=True, gpu_trace=None, gpu_trace_mode="eager", gpu_trace_timeout=600.0, host=None,
            **simulate_kw) -> Comparison:
    """Simulate ``net`` on ``chip`` and estimate it on ``gpu`` under each strategy.

    Arguments as for :func:`mimdsim.simulate` plus ``gpu`` (a name or GpuSpec), ``strategies`` (None:
    :func:`default_strategies`) and ``precision`` of the GPU, and optionally a ``systolic`` array (name or SystolicSpec).
    ``chip_precision`` is the chip program's number format (``simulate``'s ``precision``).
    A strategy whose model does not fit the GPU is listed in
    ``refused`` with the reason instead of a report. ``assume`` pins named assumptions of the chip and
    the GPU; every other one moves over its range in each column's band and the speedup's
    (``Comparison.speedup_band``). ``gpu_trace`` (a Python file defining ``step()``
    or ``make_step()``, or a :class:`~mimdsim.gpu.torch_trace.Trace`) adds column ``"trace"``: that
    PyTorch training step traced and costed on ``gpu`` (:mod:`mimdsim.gpu.trace_file`), as PyTorch eager runs it
    or, ``gpu_trace_mode="reduce-overhead"``, as ``torch.compile(mode="reduce-overhead")`` does
    (:mod:`mimdsim.gpu.trace_compile`); the file runs in a child process stopped after ``gpu_trace_timeout``
    seconds. ``host`` (a host preset or HostSpec, ``mimdsim.arch.host``; None: the
    GPU preset's default host) is the CPU that drives the GPU: every GPU column's framework host times are
    times on it, and its speed moves in their bands.
    """
    assume = A.check(assume)
    from .gpu.trace_compile import MODES
    check_choice("gpu_trace_mode", gpu_trace_mode, MODES, key="gpu.trace_mode")
    if gpu_trace is None and gpu_trace_mode != "eager":
        mode, trace = Param("gpu_trace_mode", gpu_trace_mode, key="gpu.trace_mode"), Param("gpu_trace", key="gpu.trace")
        raise ConfigError(mode, " says how the ", trace, " step runs, and no ",
                          Param("gpu_trace", key="gpu.trace", shown="FILE.py"), " is given: add one, or drop ",
                          Param("gpu_trace_mode", key="gpu.trace_mode", action="drop"), param=mode)
    check_number("gpu_trace_timeout", gpu_trace_timeout, low=0.0, open_low=True, unit="seconds",
                 key="gpu.trace_timeout", fix="the seconds the traced step may take")
    if gpu_trace is None and gpu_trace_timeout != 600.0:  # a limit on a file that is not given would be read by nothing
        limit = Param("gpu_trace_timeout", gpu_trace_timeout, key="gpu.trace_timeout")
        raise ConfigError(limit, " limits the time of the ", Param("gpu_trace", key="gpu.trace"), " step, and no ",
                          Param("gpu_trace", key="gpu.trace", shown="FILE.py"), " is given: add one, or drop ",
                          Param("gpu_trace_timeout", key="gpu.trace_timeout", action="drop"), param=limit)
    if simulate_kw.get("training", True) is not True:
        inference = Param("training", False, key="run.inference", setting_value=True)
        raise ConfigError("compare times training steps (the GPU and systolic models have no inference "
                          "programs); drop ", inference, ", or simulate(..., training=False) the chip alone")
    if strategies is None:
        strategies = default_strategies(net)
    strategies = [strategies] if isinstance(strategies, str) else list(strategies)
    for s in strategies:
        check_choice("strategy", s, STRATEGIES, where="GPU ")
    chip_name = as_system(chip).chip.name
    on_chip = assume.only(k for k in assume  # the chip's own entries (simulate reads them); the rest here
                          if A.REGISTRY[k].kind in A.CHIP_KINDS
                          or (A.REGISTRY[k].kind == "energy" and A.REGISTRY[k].applies(chip_name)))
    gpu_name = gpu.name if isinstance(gpu, GpuSpec) else gpu_spec(gpu).name
    run_host = host_spec(default_host(gpu_name) if host is None else host)
    _refuse_unread_columns({k: v for k, v in assume.items() if k not in on_chip}, chip_name, gpu, strategies,
                           gpu_trace is not None, systolic, run_host.name)
    run = simulate(net, chip, inputs=inputs, labels=labels, timesteps=timesteps, batch_size=batch_size,
                   activity=activity, candidate_activity=candidate_activity, input_activity=input_activity,
                   optimizer=optimizer, **({"precision": chip_precision} if chip_precision else {}), assume=on_chip,
                   band=band, **simulate_kw)
    rep = run.report
    progress = simulate_kw.get("progress")
    stage = getattr(progress, "stage", lambda text: None)  # the GPU side has no count: say which column runs
    measured = [ly["spikes"] / (ly["neurons"] * rep.timesteps * rep.batch_size) for ly in rep.layers]
    opt = optimizer.kind if optimizer is not None else "adam"
    others, refused = {}, {}
    if run.program is None:  # a Tensix chip's step (dataflow family): the IPU's beside it, at the same rates
        others["IPU"] = simulate(net, IPU_BESIDE_TENSIX, timesteps=rep.timesteps, batch_size=rep.batch_size,
                                             activity=measured[1:], input_activity=measured[0], optimizer=optimizer,
                                             band=band).report
    spec = gpu_spec_with(gpu if isinstance(gpu, GpuSpec) else gpu_spec(gpu), assume)
    # passed where the columns are costed: eager's host work (the GPU's own fields are set on its spec) and
    # the energy constants; a band's corner adds its framework values (``moved``)
    held = A.of_kind(assume, "framework", "hostcpu", "energy")
    for s in strategies:
        stage(f"GPU column {s}" + (" and its band" if band else ""))

        def at(g, moved=A.NOTHING, s=s, check=True):
            return estimate(net, g, timesteps=rep.timesteps, batch_size=rep.batch_size, strategy=s,
                            precision=precision, activity=measured[1:], input_activity=measured[0], optimizer=opt,
                            check_memory=check, pinned=held | moved, host=run_host)
        try:
            others[s] = at(spec)
        except (OutOfDeviceMemory, UnsupportedModel) as e:  # too large for the GPU, or a program for another model
            refused[s] = Message(*e.parts)  # its parameters kept: the command line names their flags
            continue
        if band:  # memory does not move with a time assumption: checked once
            others[s].uncertainty = gpu_band(lambda g, moved: at(g, moved, check=False), spec, assume, rep.batch_size,
                                             others[s].seconds_per_step, others[s].placement.get("framework"),
                                             run_host)
    if gpu_trace is not None:
        from .energy import gpu_energy, kernel_activity
        from .gpu.torch_trace import Trace
        from .gpu.trace_cost import costed_trace
        from .gpu.trace_file import trace_file

        stage(f"tracing {gpu_trace}'s training step" if not isinstance(gpu_trace, Trace) else "costing the trace")
        tr = gpu_trace if isinstance(gpu_trace, Trace) else trace_file(
            gpu_trace, batch_size=rep.batch_size, timesteps=rep.timesteps, timeout=gpu_trace_timeout,
            note=getattr(progress, "note", None))
        from .gpu.framework import framework

        def traced(g, moved=A.NOTHING):
            return costed_trace(tr, g, framework=framework("pytorch-eager", held | moved, host=run_host),
                                precision=precision, mode=gpu_trace_mode)

        r, kernels = traced(spec)
        r.activity = kernel_activity(kernels, r.placement["precision"])
        r.energy = gpu_energy(r, spec, held)
        if band:  # the trace is costed with pytorch-eager's host constants
            r.uncertainty = gpu_band(lambda g, moved: traced(g, moved)[0], spec, assume, rep.batch_size,
                                     r.seconds_per_step, "pytorch-eager", run_host)
        others["trace"] = r
    if systolic is not None:
        from .arch.systolic import SystolicSpec, systolic as systolic_spec

        stage("systolic column")
        array = systolic_spec_with(systolic if isinstance(systolic, SystolicSpec) else systolic_spec(systolic), assume)

        def arrayed(a):
            return systolic_estimate(net, a, timesteps=rep.timesteps, batch_size=rep.batch_size, optimizer=opt,
                                     pinned=held)

        others["systolic"] = arrayed(array)
        if band:
            others["systolic"].uncertainty = systolic_band(arrayed, array, assume, rep.batch_size,
                                                           others["systolic"].seconds_per_step)
    from .report.accuracy import accuracy
    neuron = "/".join(sorted({spec.model for spec in net.specs}))
    return Comparison(rep, others, refused, run=run, validation=accuracy(rep.placement.get("schedule", ""), neuron))


def _refuse_unread_columns(assume: dict, chip_name: str, gpu, strategies, traced: bool, systolic,
                           host_name: str) -> None:
    """Refuse, before anything runs, a pinned GPU, framework, host, systolic or GPU-energy assumption that no
    column of this comparison reads (``assumptions.refuse_unread``): a host's speed is read where a column's
    framework spends host time per op or call, and only the run's host's."""
    if not assume:
        return
    from .gpu.framework import FRAMEWORKS, STRATEGY_FRAMEWORK, reads_host

    name = gpu.name if isinstance(gpu, GpuSpec) else gpu_spec(gpu).name
    frameworks = {STRATEGY_FRAMEWORK[s] for s in strategies} | ({"pytorch-eager"} if traced else set())
    columns = list(strategies) + ["trace"] * traced
    arrays = ()
    if systolic is not None:
        from .arch.systolic import SystolicSpec, systolic as systolic_spec

        arrays = ((systolic if isinstance(systolic, SystolicSpec) else systolic_spec(systolic)).name,)
        columns.append("systolic")
    hosts = (host_name,) if any(reads_host(FRAMEWORKS[f]) for f in frameworks) else ()
    if not hosts and (speed := next((k for k in assume if A.REGISTRY[k].kind == "hostcpu"), None)):
        raise ConfigError(Param(speed, key="assume." + speed), f": it sets a host's speed, and no column of this "
                          f"comparison ({', '.join(columns)}) spends host time per op; drop it, or add a column "
                          "that does: ", Param("strategies", "eager", key="gpu.strategies"))
    A.refuse_unread(assume, {"gpu": (name,), "framework": tuple(frameworks), "energy": (name,), "systolic": arrays,
                             "hostcpu": hosts}, f"compare on {chip_name} and {name} ({', '.join(columns)}) "
                    f"driven by host {host_name}")
