"""The shipped seed of the eager trace cache (mimdsim/workloads/snn/baselines/eager_trace.py, ``SEED_DIR``):
the traces a default ``mimdsim compare`` writes, so that its first run on a fresh machine with the pinned
torch and snnTorch imports no torch. ``python -m mimdsim.trace_seed`` rewrites it; tests/test_trace_period.py
traces it anew and checks the shipped files are those traces, under today's keys."""
from __future__ import annotations

import os
import pickle

from .workloads.snn.baselines import eager_trace


def default_compare_traces() -> dict:
    """{key: trace} of every step a default ``mimdsim compare`` traces, traced now (seed and disk cache
    bypassed: a fresh cache folder, ``MIMDSIM_TRACE_SEED=0``)."""
    import tempfile

    from .cli import build_parser
    from .cli.execute import execute
    from .cli.flags import values_from_args

    saved = {v: os.environ.get(v) for v in ("MIMDSIM_CACHE_DIR", "MIMDSIM_TRACE_SEED")}
    memory = dict(eager_trace._MEMORY)
    with tempfile.TemporaryDirectory() as d:
        try:
            os.environ.update(MIMDSIM_CACHE_DIR=d, MIMDSIM_TRACE_SEED="0")
            eager_trace._MEMORY.clear()
            execute(values_from_args(build_parser().parse_args(["compare"])), "compare", out=lambda *a, **k: None)
            return {name[:-4]: eager_trace._load(os.path.join(d, "traces", name))
                    for name in sorted(os.listdir(os.path.join(d, "traces")))}
        finally:
            eager_trace._MEMORY.clear()
            eager_trace._MEMORY.update(memory)
            for v, old in saved.items():
                if old is None:
                    os.environ.pop(v, None)
                else:
                    os.environ[v] = old


def write_seed() -> list:
    """Rewrite :data:`eager_trace.SEED_DIR` with :func:`default_compare_traces`; returns the files written."""
    import gzip

    traces = default_compare_traces()
    os.makedirs(eager_trace.SEED_DIR, exist_ok=True)
    for name in os.listdir(eager_trace.SEED_DIR):
        if name.endswith(".pkl.gz"):
            os.remove(os.path.join(eager_trace.SEED_DIR, name))
    out = []
    for k, trace in traces.items():
        out.append(os.path.join(eager_trace.SEED_DIR, k + ".pkl.gz"))
        with gzip.GzipFile(out[-1], "wb", mtime=0) as f:  # mtime 0: the same trace, the same bytes
            pickle.dump(trace, f, protocol=pickle.HIGHEST_PROTOCOL)
    return out


if __name__ == "__main__":
    for written in write_seed():
        print(written)
