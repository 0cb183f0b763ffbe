"""How well the model has matched measurements of a program's kind: read from ``mimdsim validate``'s stored summary.

``mimdsim/validation/data/stored/summary.json`` is written by ``python -m mimdsim.validation.stored`` from a full
``mimdsim validate`` run (a test keeps it equal to a fresh run's figures). Each source names the program and the
neuron model its rows run (``program``, ``neuron``); :func:`accuracy` finds the source of the same kind and gives
its **predicted** rows' median model ÷ measured, never its fitted rows' (a fitted row read a value set from a
validation source's own measurement, so it does not test the model). Read here, low in the package, so that
``compare`` can print it without running a validation.

Imported by: compare (its validation line), validation (re-exported).
"""
from __future__ import annotations

import functools
import json
import pathlib

SUMMARY = pathlib.Path(__file__).resolve().parents[1] / "validation" / "data" / "stored" / "summary.json"
NONE = "no measurement of this kind"


@functools.lru_cache(maxsize=1)
def stored_summary() -> dict:
    with open(SUMMARY) as f:
        return json.load(f)


def accuracy(program: str, neuron: str) -> dict:
    """The stored validation source whose rows run ``program`` with ``neuron`` neurons and its predicted rows'
    median model ÷ measured: ``{"source", "program", "neuron", "predicted_rows", "median", "fitted_rows",
    "line"}``; ``source`` None (and ``line`` "no measurement of this kind") where no source is of that kind."""
    for name, s in stored_summary()["sources"].items():
        if s["program"] == program and s["neuron"] == neuron:
            predicted, fitted = s["predicted"], s["fitted"]
            rows, median = (predicted["rows"], predicted["median"]) if predicted else (0, None)
            n_fitted = fitted["rows"] if fitted else 0
            if median is None:
                line = (f"{name} ({program} program, {neuron}): no predicted rows; its {n_fitted} rows are fitted "
                        f"({s['fits']}), so they do not test the model")
            else:
                line = (f"{name} ({program} program, {neuron}): predicted rows' median model ÷ measured "
                        f"{median:.2f} over {rows} row(s)" + (f"; {n_fitted} fitted row(s) not counted" if n_fitted
                                                             else ""))
            return {"source": name, "program": program, "neuron": neuron, "predicted_rows": rows, "median": median,
                    "fitted_rows": n_fitted, "line": line}
    return {"source": None, "program": program, "neuron": neuron, "predicted_rows": 0, "median": None,
            "fitted_rows": 0, "line": f"{program} program, {neuron}: {NONE}"}


def accuracy_line(program: str, neuron: str) -> str:
    """:func:`accuracy`'s one line: the source and its predicted rows' median, or "no measurement of this kind"."""
    return accuracy(program, neuron)["line"]
