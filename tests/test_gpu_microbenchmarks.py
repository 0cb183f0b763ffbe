"""The GPU model's parts against published microbenchmarks (mimdsim/gpu/microbenchmarks.py, the rows in
mimdsim/validation/data/gpu_microbenchmarks.json, docs/gpu-model.md "Microbenchmark checks").

Every compared row is in the state its data documents: within the quantity's tolerance ("inside"), held only by
the named assumptions' band ("band"), or "outside" with its reason; a row the model cannot yet predict is
"pending", one whose GPU no preset matches "unmatched". A change to the model that moves a row across states
fails here and must update the row's documented state and reason (never the other way round)."""
import math
import pathlib

import pytest

from mimdsim.arch.gpu import PRESETS, gpu
from mimdsim.gpu import microbenchmarks as mb
from mimdsim.gpu.model import gemm, host_link_bytes_per_second, kernel_seconds, workload_estimate

ROOT = pathlib.Path(__file__).resolve().parents[1]
ROWS = mb.rows()


def _factor(ratio):
    return max(ratio, 1 / ratio)


def test_every_row_names_its_source_gpu_and_shape():
    ids = [r["id"] for r in ROWS]
    assert len(ids) == len(set(ids)) == 38
    for r in ROWS:
        assert r["unit"] in ("s", "B/s") and r["value"] > 0, r["id"]
        if r["range"]:
            assert r["range"][0] <= r["value"] <= r["range"][1], r["id"]
        assert r["quantity"] in mb.PREDICTORS or r["quantity"] in mb.PENDING, r["id"]
        assert r["gpu"] is None or r["gpu"] in PRESETS, r["id"]
        assert r["compare_on"] and set(r["compare_on"]) <= set(PRESETS), r["id"]
        if r["gpu"]:  # a named preset is compared on itself alone
            assert r["compare_on"] == [r["gpu"]], r["id"]
        assert r["gpu_name"] and r["host"] and r["software"] and r["printed"], r["id"]
        src = r["source"]
        assert src["repository"] and src["url"].startswith("https://github.com/") and (src["number"] or src["where"])
        assert r["confidence"] in ("high", "medium", "low"), r["id"]
        assert r["state"] in mb.STATES and (r["state_reason"] or r["state"] in ("inside", "pending")), r["id"]
        if r["quantity"] == "gemm_seconds":
            assert min(r["m"], r["n"], r["k"]) > 0 and r["precision"] in ("fp32", "tf32", "fp16", "bf16")
        if r["quantity"] == "h2d_bytes_per_second":
            assert r["bytes"] > 0 and r["memory"] in ("pinned", "pageable")


def test_each_row_is_in_its_documented_state():
    checks = mb.checks()
    assert [(c.row["id"], c.state) for c in checks] == [(r["id"], r["state"]) for r in ROWS]
    for c in checks:
        r = c.row
        if c.state in ("pending", "unmatched"):
            assert c.model is None
            continue
        factor = mb.TOLERANCE[r["quantity"]].factor
        lo, hi = r["range"] or (r["value"], r["value"])
        within = lo / factor <= c.model <= hi * factor
        assert within == (c.state == "inside"), (r["id"], c.ratio)
        if c.state == "outside":  # neither the tolerance nor the named assumptions' band reaches it
            assert c.band[1] < lo or c.band[0] > hi, r["id"]
    compared = [c for c in checks if c.model is not None]
    assert sum(1 for c in compared if "a100" in "".join(c.row["compare_on"])) >= 15  # the A100 rows lead


def test_an_unmatched_row_is_one_whose_figure_differs_between_the_presets_it_could_be():
    for r in (r for r in ROWS if r["state"] == "unmatched"):
        figures = [mb.PREDICTORS[r["quantity"]](r, gpu(p)) for p in r["compare_on"]]
        assert max(figures) > mb.AGREE * min(figures), r["id"]


def test_the_predictors_charge_what_the_model_charges_a_workload():
    spec = gpu("a100-40gb")
    g = next(r for r in ROWS if r["id"] == "gemm-a100-fp16-1024-t33")
    assert mb.PREDICTORS["gemm_seconds"](g, spec) == kernel_seconds(gemm("g", "forward", 1024, 1024, 1024, 2, 1),
                                                                    spec, "fp16")
    # a copy: its bytes over the host link plus one launch overhead, as workload_estimate charges its h2d
    h = next(r for r in ROWS if r["id"] == "h2d-a100-della-10MB")
    rep = workload_estimate([], spec, "fp32", model="copy", mode="train", batch_size=1, timesteps=1,
                            host_in_bytes=h["bytes"])
    charged = sum(rep.cycles["io"].values()) / spec.clock_hz
    assert h["bytes"] / mb.PREDICTORS["h2d_bytes_per_second"](h, spec) == pytest.approx(charged, rel=1e-12)
    assert mb.PREDICTORS["h2d_bytes_per_second"](h, spec) < host_link_bytes_per_second(spec)
    launch = next(r for r in ROWS if r["quantity"] == "launch_plus_sync_s")
    assert mb.PREDICTORS["launch_plus_sync_s"](launch, spec) == spec.launch_overhead_s + spec.vector_floor_s
    assert mb.PREDICTORS["kernel_launch_enqueue_s"](launch, spec) == spec.launch_overhead_s


def test_tolerances_are_one_documented_standard_for_every_compared_quantity():
    assert set(mb.TOLERANCE) == set(mb.PREDICTORS)
    assert not set(mb.PENDING) & set(mb.PREDICTORS)
    for q, t in mb.TOLERANCE.items():
        assert t.factor == mb.VALIDATION_FACTOR and t.reasoning, q
    # the same factor tests/test_validation.py holds the study log's points to
    assert "1.35" in (ROOT / "tests" / "test_validation.py").read_text()


def test_a_new_part_registers_its_predictor_and_its_rows_are_checked(monkeypatch):
    """One predictor and its tolerance per quantity; the pending rows then compare."""
    pending = [r for r in ROWS if r["quantity"] == "host_synchronize_s"]
    assert pending and all(mb.check(r).state == "pending" for r in pending)
    monkeypatch.setitem(mb.PREDICTORS, "host_synchronize_s", lambda row, spec: spec.launch_overhead_s)
    monkeypatch.setitem(mb.TOLERANCE, "host_synchronize_s", mb.Tolerance(mb.VALIDATION_FACTOR, "test"))
    states = {r["id"]: mb.check(r) for r in pending}
    assert {c.state for c in states.values()} <= {"inside", "band", "outside"}
    assert all(c.model == pytest.approx(4e-6) for c in states.values())
    assert states["host-sync-cudajl-profile"].ratio == pytest.approx(4e-6 / 3.07e-6)


def test_the_xla_rows_are_checked_against_the_xla_runtime_and_its_band():
    """The XLA loop and round-trip rows read the tensorflow-keras-xla runtime (mimdsim/gpu/xla.py): a one-kernel
    ForThunk iteration is the host's issue (4 us, slower than the 2 us floor + 1 us gap); the round trip is
    xla_loop_sync_s; each band moves the framework's named assumptions too."""
    from mimdsim import assumptions as A

    by_id = {c.row["id"]: c for c in mb.checks()}
    loop = by_id["xla-while-t4-scan-1e5"]
    assert loop.model == pytest.approx(A.REGISTRY["xla_kernel_issue_s"].value, rel=1e-3)
    assert loop.band[1] >= A.REGISTRY["xla_kernel_issue_s"].high  # the framework's drivers are in the band
    trip = by_id["d2h-4B-pinned-rtx5090"]
    assert trip.model == A.REGISTRY["xla_loop_sync_s"].value
    assert trip.band == pytest.approx((A.REGISTRY["xla_loop_sync_s"].low, A.REGISTRY["xla_loop_sync_s"].high))


def test_the_validate_source_lists_every_compared_row_as_a_time():
    from mimdsim.validation import run_source

    result = run_source("gpu-microbenchmarks")
    compared = [c for c in mb.checks() if c.model is not None]
    assert [p.label for p in result.points] == [c.row["id"] for c in compared]
    for p, c in zip(result.points, compared):
        assert p.unit == "s" and p.ratio == pytest.approx(c.ratio) and p.note == c.state
        assert math.isfinite(p.model) and p.band[0] <= p.model <= p.band[1]


def test_docs_list_every_row_as_the_data_and_the_model_give_it():
    page = (ROOT / "docs" / "gpu-model.md").read_text()
    assert "## Microbenchmark checks" in page
    assert mb.markdown_table() in page, "regenerate the table: python -c 'from mimdsim.gpu import microbenchmarks " \
                                        "as m; print(m.markdown_table())'"
