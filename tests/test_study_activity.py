"""The study's activity from its executed dynamics (issue 37, mimdsim/validation/study_activity.py): the input
generator against the research note's N-MNIST statistics, the recordings' reader, the execution's records, the
stored file's provenance and coverage, and the rates the validation derives from it."""
import json

import numpy as np
import pytest

from mimdsim.validation import load, study_activity as sa


def test_generated_input_has_the_notes_nmnist_statistics():
    """docs/research/study-activity.md §1.3: capped ids per step by 10-step block, ON share 0.483, at most 32 a
    step, bin 0 empty; distinct ids per event and the 20-step recurrence as the 1,100 recordings give them."""
    rng = np.random.default_rng(3)
    x, labels, templates = sa.nmnist_like(rng, batch=96)
    assert x.shape == (100, 96, 2312) and labels.shape == (96,) and len(templates) == 10
    per_step = x.sum(axis=2)
    assert per_step.max() <= 32 and per_step[0].sum() == 0
    stats = sa.input_statistics(x)
    assert np.allclose(stats["block_mean"], sa.BLOCK_CAPPED_MEAN, rtol=0.1, atol=0.4), stats["block_mean"]
    assert abs(stats["on_share"] - sa.ON_SHARE) < 0.02
    assert abs(stats["recurrence_20"] - sa.RECURRENCE_20) < 0.04
    events, distinct = stats["events_per_sample"][0], stats["distinct_ids_per_sample"][0]
    assert abs(distinct / events - sa.IDS_PER_EVENT) < 0.03
    assert 1287 * 0.9 < events < 1287 * 1.1  # §1.3: 1,287 +- 379 per sample after the cap


def test_input_profile_reproduces_the_block_means_and_implies_the_overflow():
    """The uncapped means are solved so the capped means are §1.3's; the share of bins over 32 they imply is a
    check, not an input: within 0.07 of the note's per block."""
    raw, over = sa.input_profile()
    shape = 1 / sa.SAMPLE_CV ** 2
    capped = [sa._negbin_capped_mean(m, shape, 32)[0] for m in raw]
    blocks = np.array(capped).reshape(10, 10).mean(axis=1)
    assert raw[0] == 0 and np.allclose(blocks, sa.BLOCK_CAPPED_MEAN, atol=1e-6)
    assert np.allclose(over.reshape(10, 10).mean(axis=1), sa.BLOCK_OVER_K, atol=0.07)


def _bs2(events):
    """N-MNIST's 40-bit records: x, y, polarity bit + 23-bit microseconds."""
    out = bytearray()
    for x, y, p, t in events:
        out += bytes([x, y, (p << 7) | (t >> 16), (t >> 8) & 255, t & 255])
    return bytes(out)


def test_recording_statistics_reads_denoises_and_bins_as_the_study(tmp_path):
    """Denoise(10 ms) keeps an event whose 4-neighbour fired in the last 10 ms (tonic's memory starts at 10 ms, so
    events are placed after it); 1 ms bins start at the first kept event (bin 0 empty) and end at bin 99; a repeat
    is the same id 1-20 bins later."""
    ev = [(5, 5, 0, 20000),  # dropped: no neighbour fired in the last 10 ms
          (6, 5, 0, 21000),  # kept: (5, 5) fired 1 ms before -> t0, bin 1
          (5, 5, 1, 21500),  # kept (neighbour (6, 5), polarity ignored): bin 1
          (5, 5, 1, 26000),  # kept: bin 6, the same id 5 bins later: a repeat
          (5, 5, 1, 220000),  # dropped
          (6, 5, 0, 220500)]  # kept, but after the 99 ms window
    (tmp_path / "1.bs2").write_bytes(_bs2(ev))
    s = sa.recording_statistics(tmp_path)
    assert s["files"] == 1 and s["events_per_sample"][0] == 3 and s["distinct_ids_per_sample"][0] == 2
    assert s["recurrence_20"] == pytest.approx(1 / 3)


def test_study_network_is_initialised_as_the_code_does():
    """keras_train_util.py@afd6c70:74-95: U(+-4 sqrt(6 / N_in)); the output layer's theta2 -100."""
    point = load("study-log")["points"][0]
    net = sa.study_network(point, np.random.default_rng(0))
    limits = [float(np.abs(w).max()) for w in net.weights]
    assert limits == pytest.approx([4 * np.sqrt(6 / n) for n in point["sizes"][:-1]], rel=1e-3)
    assert net.specs[0].theta2 == 0.9 and net.specs[-1].theta2 == -100.0 and net.delay == 1
    assert net.specs[0].input_gain() == pytest.approx(0.5) and net.specs[0].beta == 0.95


def test_execution_records_each_layers_lists_per_step_and_trains():
    """A small network of the study's kind, two steps: per step and layer the kept count never exceeds the listed,
    nor the listed K; the profiles are per timestep; Adam moves the weights (the loss changes)."""
    point = {"sizes": [2312, 40, 10], "capacities": [32, 4, 2]}
    run = sa.execute(point, seed=0, steps=2)
    kept, listed = np.array(run["per_step"]["kept"]), np.array(run["per_step"]["listed"])
    assert kept.shape == (2, 3) and (kept <= listed + 1e-9).all() and (listed <= np.array([32, 4, 2])).all()
    assert listed[:, 2] == pytest.approx(2.0)  # theta2 -100: the output list is always full
    assert 8 < kept[0, 0] < 18  # the input: ~13 ids a step (§1.3)
    assert len(run["profile"]["step0"]["kept"][1]) == 100
    assert run["per_step"]["loss"][0] != run["per_step"]["loss"][1]
    assert all(ms > 0 for ms in run["per_step"]["chip_ms"])


@pytest.mark.parametrize("n, K, target", [(1466, 72, 22.07), (1466, 14, 7.0), (10, 2, 0.33), (2312, 32, 13.0)])
def test_rate_for_fill_gives_the_mean_truncated_count(n, K, target):
    p = sa.rate_for_fill(n, K, target)
    draws = np.minimum(np.random.default_rng(0).binomial(n, p, 400_000), K)
    assert draws.mean() == pytest.approx(target, rel=0.01)
    assert sa.rate_for_fill(n, K, K) == 1.0 and sa.rate_for_fill(n, K, 0) == 0.0


def test_the_stored_execution_covers_every_point_with_its_provenance():
    """Step 0 for all 12 points with at least 3 seeds, the command that made it, the knobs and the code."""
    doc = sa.stored()
    prov = doc["provenance"]
    assert prov["command"].startswith("python -m mimdsim.cli.study_activity")
    assert prov["knobs"]["weight_mul"] == 4.0 and prov["knobs"]["theta2_output"] == -100.0
    assert prov["derivation"] == "docs/research/study-activity.md" and prov["code"]["commit"]
    log = load("study-log")["points"]
    assert set(doc["points"]) == {f"{p['hidden_layers']} hidden, {p['max_activity']:.0%}" for p in log}
    for key, entry in doc["points"].items():
        assert len(entry["runs"]) >= 3 and all(r["steps"] >= 1 for r in entry["runs"]), key
        rates = sa.executed_rates(entry)
        for which in ("low", "central", "high"):
            assert len(rates[which]["activity"]) == len(entry["sizes"]) - 1
        lo, mid, hi = (np.array(rates[w]["listed"]) for w in ("low", "central", "high"))
        assert (lo <= mid + 1e-9).all() and (mid <= hi + 1e-9).all()


def test_validate_reads_the_stored_execution_and_never_executes(monkeypatch):
    from mimdsim.validation import run_source

    def refuse(*a, **k):
        raise AssertionError("validate executed the network")
    monkeypatch.setattr(sa, "execute", refuse)
    monkeypatch.setattr(sa, "nmnist_like", refuse)
    res = run_source("study-log", quick=True)
    assert res.assumption.startswith("lists as the study's network executes them")
    assert all("activity band" in p.note and p.band[0] <= p.model <= p.band[1] for p in res.points)
    assert json.loads(sa.DATA_FILE.read_text())["points"]
