"""The commands: ``chips``, ``gpus``, ``simulate``, ``compare``, ``run FILE``, ``op KIND``,
``validate`` and ``sweep`` (``train``: :mod:`mimdsim.cli.train`)."""
from __future__ import annotations

import dataclasses

from .. import arch
from ..arch.execution import find_family
from ..arch.tensix import TENSIX
from ..config import FILE_KEYS, check_value
from ..errors import ConfigError
from .flags import values_from_args
from .output import INTERRUPTED, say, say_report
from .terms import OP_FLAGS


def cmd_chips(args) -> int:
    header = f"{'preset':<9}{'tiles':>7}{'SRAM/tile':>12}{'SRAM total':>12}{'clock':>10}{'workers':>9}" \
             f"{'FP32 peak':>12}{'FP16 peak':>12}{'exch B/cyc':>12}{'sync':>7}{'links':>11}  description"
    print(header)
    for name in arch.PRESETS:
        c = arch.chip(name)
        print(f"{name:<9}{c.tiles:>7}{c.sram_per_tile / 1024:>9.0f} KiB{c.sram_bytes / 2**20:>8.0f} MiB"
              f"{c.clock_hz / 1e9:>7.3f} GHz{c.workers:>9}{c.peak_fp32_flops / 1e12:>7.1f} TFLOP"
              f"{c.peak_fp16_flops / 1e12:>7.1f} TFLOP{c.exchange_recv_bytes_per_cycle:>12.0f}"
              f"{c.sync_cycles:>7}{c.link_bytes_per_second / 1e9:>7.0f} GB/s  {arch.chip_description(name)}")
    print("\nOverride any field: mimdsim simulate --chip ipu-mk2 --set sram_per_tile=1248000; "
          "sources in docs/cost-model.md")
    print(f"\nTenstorrent Tensix chips (dataflow; ttnn's ops, docs/tensix.md)\n{'preset':<16}{'grid':>7}{'cores':>7}"
          f"{'L1/core':>11}{'clock':>10}{'LoFi peak':>12}{'DRAM':>10}{'board':>8}  description")
    for name in TENSIX.specs.presets:
        c = arch.chip(name)
        print(f"{name:<16}{f'{c.grid_x}x{c.grid_y}':>7}{c.tensix_cores:>7}{c.l1_bytes / 1024:>7.0f} KiB"
              f"{c.clock_hz / 1e9:>7.2f} GHz{c.peak_flops('lofi') / 1e12:>7.0f} TFLOP{c.dram_bytes_per_second / 1e9:>6.0f} GB/s"
              f"{c.board_power_w:>6.0f} W  {TENSIX.specs.description(name)}")
    return 0


def cmd_simulate(args) -> int:
    from .execute import execute

    execute(values_from_args(args), "simulate", out=say_report)
    return 0


def cmd_compare(args) -> int:
    from .execute import execute

    execute(values_from_args(args), "compare", out=say_report)
    return 0


def cmd_run(args) -> int:
    """An experiment file, with any of its keys overridden on the command line: a flag
    (``--tiles 256``, ``--json r.json``) or ``--set KEY=VALUE`` (``model.batch=32``, or a chip field
    such as ``sram_per_tile=1248000``). Flags given win over the file."""
    from ..config import load_experiment
    from .execute import execute

    values, command = load_experiment(args.file)
    given = values_from_args(args)  # only the flags given: the run parser's defaults are suppressed
    for key, value in given.items():
        values[key] = value
    from .flags import table_of_pairs
    for key, value in table_of_pairs("--set", args.run_set or []).items():  # each key once
        if key.startswith("chip.set."):
            values["chip.set"] = {**(values["chip.set"] or {}), key.split(".", 2)[2]: value}
        elif key.startswith("assume."):  # beside (and over) the file's [assume] table
            values["assume"] = {**(values.get("assume") or {}), key.removeprefix("assume."): value}
        else:
            values[key] = check_value(FILE_KEYS[key], value, where="--set: ")
    if any(k.startswith("gpu.") for k in given) or any(k.startswith("gpu.") for k, _ in args.run_set or []):
        command = "compare"
    execute(values, command, out=say_report)
    return 0


def cmd_gpus(args) -> int:
    from ..arch.gpu import PRESETS, gpu, gpu_description
    from ..arch.host import MEASUREMENT_HOST, PRESETS as HOSTS, default_host, host

    print(f"{'preset':<11}{'SMs':>5}{'clock':>10}{'FP32':>9}{'TF32':>9}{'FP16':>9}{'BF16':>9}"
          f"{'HBM':>9}{'HBM B/s':>11}{'L2':>8}  {'host':<14}description")
    for name in PRESETS:
        g = gpu(name)
        tf = lambda v: f"{v / 1e12:>6.1f} TF" if v else "     -   "  # noqa: E731
        print(f"{name:<11}{g.sms:>5}{g.clock_hz / 1e9:>6.2f} GHz{tf(g.fp32_flops)}{tf(g.tf32_flops)}"
              f"{tf(g.fp16_flops)}{tf(g.bf16_flops)}{g.hbm_bytes / 2**30:>5.0f} GiB{g.hbm_bytes_per_second / 1e12:>7.2f} TB/s"
              f"{g.l2_bytes / 2**20:>5.0f} MiB  {default_host(name):<14}{gpu_description(name)}")
    print("\nTensor-core figures are dense (no 2:4 sparsity). Sources in docs/gpu-model.md.")
    print(f"\nHosts (--host; the CPU that drives the GPU: a framework's per-op host time is {MEASUREMENT_HOST}'s "
          f"x op scale)\n{'preset':<14}{'CPU':<28}{'cores':>11}{'base':>10}{'boost':>10}{'op scale':>10}  "
          f"microarchitecture")
    for name in HOSTS:
        h = host(name)
        boost = f"{h.boost_clock_hz / 1e9:.2f} GHz" if h.boost_clock_hz else "-"
        print(f"{name:<14}{h.cpu[:27]:<28}{f'{h.sockets} x {h.cores_per_socket}':>11}{h.base_clock_hz / 1e9:>6.2f} GHz"
              f"{boost:>10}{h.op_time_scale:>10.2f}  {h.microarchitecture}")
    print(f"\nEach op scale but {MEASUREMENT_HOST}'s (1 by definition) is a named assumption with a range (--assume "
          "NAME=VALUE, e.g. dgx_a100_op_time_scale=1.3); sources in docs/gpu-model.md, Hosts.")
    return 0


OP_NAMES = {flag[2:].replace("-", "_") for flag, _, _ in OP_FLAGS} | {"update"}  # mimdsim.op's arguments


def cmd_op(args) -> int:
    from ..poplibs.ops import op
    from ..report.outputs import check_file_path, output

    if args.json:
        check_file_path(args.json, output("output.json"))
    shape = {flag[2:].replace("-", "_"): getattr(args, "op_" + flag[2:].replace("-", "_"))
             for flag, _, _ in OP_FLAGS}
    shape = {k: v for k, v in shape.items() if v is not None}
    if args.update:
        shape["update"] = True
    tensix = find_family(args.chip) is TENSIX  # a Tensix chip: ttnn's op on the dataflow family (mimdsim.tensix)
    if tensix:
        from ..tensix import tensix_op as op
    else:
        check_op_fits(args.kind, args.chip, shape)
    if args.kind == "elementwise" and "pattern" in shape and not tensix:
        try:
            shape["pattern"] = int(shape["pattern"])
        except ValueError:
            raise ConfigError(f"--pattern {shape['pattern']!r}: elementwise takes the vector's length, an "
                              f"integer") from None
    try:
        report = op(args.kind, args.chip, **shape)
    except ConfigError as e:  # its parameters are this command's flags (op.NAME), not the run settings
        raise e.with_params(lambda p: dataclasses.replace(p, key="op." + p.name) if p.name in OP_NAMES else p) \
            from None
    say(report.summary())
    if args.json:
        import json
        with open(args.json, "w") as f:
            json.dump(report.to_dict(), f, indent=1)
        say(f"wrote {args.json}")
    return 0


def check_op_fits(kind: str, chip_name: str, shape: dict) -> None:
    """Refuse, from the shape alone and before any plan is searched, a matmul or elementwise op whose
    tensors alone exceed the SRAM of the tiles it runs on (a 2e9-row matmul searched its plans for a
    minute and ran out of memory; a 1e14-element op was priced as if it fitted)."""
    from ..errors import DoesNotFit

    spec = arch.chip(chip_name)
    if shape.get("chips"):  # a barrier over N chips keeps a time per tile of each
        from ..checks import check_host_bytes
        check_host_bytes(f"the per-tile arrays of {shape['chips']:,} chip(s) x {spec.tiles:,} tiles",
                         16.0 * shape["chips"] * spec.tiles, fix="lower --chips")
    if kind == "matmul" and all(shape.get(d) for d in ("m", "k", "n")):
        m, k, n, precision = shape["m"], shape["k"], shape["n"], shape.get("precision") or "fp16"
        need, what = (m * k + k * n + m * n) * (2 if precision == "fp16" else 4), \
            f"matmul [{m} x {k}] . [{k} x {n}] ({precision}): its operands and result alone take"
        tiles, fix = spec.tiles, "lower --m, --k or --n"
    elif kind == "elementwise" and shape.get("elements"):
        dtype = shape.get("dtype") or "float"
        need, what = shape["elements"] * (2 if dtype == "half" else 4), \
            f"elementwise over {shape['elements']:,} {dtype} elements: the tensor alone takes"
        tiles, fix = shape.get("tiles") or spec.tiles, "lower --elements"
    else:
        return
    if need > tiles * spec.sram_per_tile:
        raise DoesNotFit(f"{what} {need:,} B, more than the {tiles:,} tiles' {tiles * spec.sram_per_tile:,} B of "
                         f"SRAM on {chip_name} ({spec.sram_per_tile:,} B each); {fix}")


def cmd_validate(args) -> int:
    from ..validation import run_all, summary_table
    from ..report.outputs import check_file_path, output

    if args.json:
        check_file_path(args.json, output("output.json"))
    from ..report.progress import Progress

    bar = Progress("validate", "source", delay=1.0)  # about 20 s on 2 cores: say where it is
    results = run_all(sources=args.source, quick=args.quick, lists=args.lists, progress=bar)
    bar.close()
    say(summary_table(results, points=args.points))
    if args.json:
        import json
        with open(args.json, "w") as f:
            json.dump([r.to_dict() for r in results], f, indent=1)
        say(f"wrote {args.json}")
    return 0


def cmd_sweep(args) -> int:
    from ..report.outputs import check_file_path, check_folder_path, output
    from ..report.progress import Progress
    from ..sweep import load_results, load_sweep, run_sweep
    from ..sweep.runner import pending

    sweep = load_sweep(args.file)
    check_file_path(sweep.results, "sweep.results")  # before any point runs
    if args.plot:
        check_folder_path(args.plot, output("output.plot"))
    if args.scheduler:
        check_scheduler(args.scheduler)
    total, todo = len(sweep.points), len(pending(sweep))
    say(f"sweep {args.file}: {total} points ({sweep.mode}, {sweep.command}, "
        f"{'execution' if sweep.execute else 'rate'}-driven), {todo} to compute -> {sweep.results}")
    progress = Progress("sweep", "point", enabled=not args.quiet, every=5.0)
    INTERRUPTED.append(lambda: f"{len(load_results(sweep.results))} of {total} points are kept in "
                               f"{sweep.results}; run the same command again to compute the rest")
    if todo and not args.serial and args.scheduler:
        progress.note(f"starting the Dask client at {args.scheduler} for {todo} point(s) (--serial runs in this "
                      f"process)")
    try:
        computed = run_sweep(sweep, scheduler=args.scheduler, workers=args.workers, serial=args.serial,
                             progress=progress, cache=not args.no_cache,
                             # shown with --quiet too: a run waiting on another must not look hung
                             out=lambda text: progress.note(text) if progress.enabled else say(text))
    finally:
        progress.close()
    damaged: list = []
    records = load_results(sweep.results, damaged)
    errors = [r for r in records if r.get("status") == "error"]
    written = []
    if args.plot:
        from ..sweep.plots import plot_sweep
        written = plot_sweep(sweep, records, args.plot)
    from ..sweep.plots import results_table
    for line in results_table(sweep, records):  # what the points answered, not only how many ran
        say(line)
    say(f"computed {computed} new point(s); {len(records)} point(s) in {sweep.results}, {len(errors)} with errors")
    for r in errors[:5]:
        say(f"  error at {r['params']}: {r['error']}")
    if damaged:  # every good record is kept; the points of damaged lines were computed again
        lines = ", ".join(f"{number} ({why})" for number, why in damaged[:10]) + \
            (f" and {len(damaged) - 10} more" if len(damaged) > 10 else "")
        say(f"  note: {len(damaged)} damaged line(s) in {sweep.results} skipped: line {lines}; each good record "
            f"is kept and a damaged line's point is computed again (delete the line to silence this note)")
    for p in written:
        say(f"  wrote {p}")
    return 0


def check_scheduler(address: str, timeout: float = 5.0) -> None:
    """Refuse, before the sweep, a Dask scheduler address that is malformed or does not answer."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        host = port = None
    if not host or not port:
        raise ConfigError(f"--scheduler {address!r} is not an address like tcp://host:8786; give the address the "
                          f"Dask scheduler prints, or drop --scheduler to start a LocalCluster")
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as e:
        raise ConfigError(f"--scheduler {address!r}: no Dask scheduler answers at {host}:{port} within {timeout:g} s "
                          f"({e.strerror or e}); start one (`dask scheduler`) or drop --scheduler to start a "
                          f"LocalCluster") from None

