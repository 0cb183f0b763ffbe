"""Spike data: the event store, Randman, the digits encodings, event files and their errors."""
import numpy as np
import pytest

from mimdsim import ConfigError
from mimdsim import data
from mimdsim.data import SpikeSet
from mimdsim.data.digits import load_digit_images


# the event store
def test_spikeset_round_trip_dense():
    rng = np.random.default_rng(0)
    dense = (rng.random((7, 5, 9)) < 0.3).astype(np.uint8)
    labels = rng.integers(0, 3, 7)
    s = SpikeSet.from_dense(dense, labels)
    assert len(s) == 7 and s.num_events == dense.sum()
    idx = [4, 0, 6, 4]
    np.testing.assert_array_equal(s.spikes(idx), dense[idx].transpose(1, 0, 2))
    sub = s.subset([6, 2])
    np.testing.assert_array_equal(sub.spikes([0, 1]), dense[[6, 2]].transpose(1, 0, 2))
    np.testing.assert_array_equal(sub.labels, labels[[6, 2]])
    np.testing.assert_array_equal(s.events_per_step(), dense.sum(axis=2))


def test_spikeset_from_events_merges_duplicates():
    s, merged = SpikeSet.from_events(sample=[1, 0, 1, 1], times=[2, 0, 2, 3], ids=[4, 1, 4, 0],
                                     labels=[0, 1], timesteps=4, n_inputs=5)
    assert merged == 1 and s.num_events == 3
    x = s.spikes([0, 1])
    assert x[0, 0, 1] == 1 and x[2, 1, 4] == 1 and x[3, 1, 0] == 1 and x.sum() == 3


def test_spikes_index_out_of_range():
    s = SpikeSet.from_dense(np.zeros((2, 3, 4)), [0, 1])
    with pytest.raises(ConfigError, match="out of range"):
        s.spikes([2])


def test_stratified_split_keeps_class_shares():
    labels = np.repeat(np.arange(4), [10, 20, 30, 40])
    tr, te = data.split_indices(100, 0.2, np.random.default_rng(0), labels)
    assert len(np.intersect1d(tr, te)) == 0 and len(tr) + len(te) == 100
    np.testing.assert_array_equal(np.bincount(labels[te]), [2, 4, 6, 8])


# Randman
def test_randman_one_spike_per_input_and_deterministic():
    d = data.randman(n_classes=3, n_inputs=20, timesteps=30, samples_per_class=40, seed=7)
    assert (len(d.train), len(d.test), d.n_inputs, d.timesteps, d.n_classes) == (96, 24, 20, 30, 3)
    x = np.concatenate([d.train.spikes(range(len(d.train))), d.test.spikes(range(len(d.test)))], axis=1)
    assert np.all(x.sum(axis=0) == 1), "each input spikes exactly once per sample"
    assert x[0].any() and x[-1].any(), "min-max normalisation spans the whole window"
    again = data.randman(n_classes=3, n_inputs=20, timesteps=30, samples_per_class=40, seed=7)
    assert again.fingerprint() == d.fingerprint()
    other = data.randman(n_classes=3, n_inputs=20, timesteps=30, samples_per_class=40, seed=8)
    assert other.fingerprint() != d.fingerprint()
    np.testing.assert_array_equal(np.bincount(d.test.labels), [8, 8, 8])


def test_randman_classes_differ_in_timing_not_count():
    d = data.randman(n_classes=2, n_inputs=30, timesteps=50, samples_per_class=60, seed=1, test_fraction=0.5)
    x = d.train.spikes(range(len(d.train)))  # [T, N, n]
    t_first = np.argmax(x, axis=0)  # spike time per (sample, input)
    y = d.train.labels
    mean0, mean1 = t_first[y == 0].mean(axis=0), t_first[y == 1].mean(axis=0)
    assert np.abs(mean0 - mean1).max() > 5, "class manifolds put the spikes at different times"
    assert np.all(x.sum(axis=(0, 2)) == 30)


def test_randman_spikes_per_input_and_manifold_dim():
    d = data.randman(n_classes=2, n_inputs=10, timesteps=200, samples_per_class=20, manifold_dim=2,
                     spikes_per_input=3, seed=2)
    per_sample = d.train.spikes(range(len(d.train))).sum(axis=(0, 2))
    assert np.all(per_sample <= 30) and per_sample.mean() > 28  # 3 spikes per input, rare merges
    assert d.info["merged_events"] == 30 * len(d.train) + 30 * len(d.test) - d.train.num_events - d.test.num_events


@pytest.mark.parametrize("kw, match", [(dict(n_inputs=0), "n_inputs"), (dict(alpha=-1.0), "alpha"),
                                       (dict(step_frac=1.5), "step_frac"), (dict(test_fraction=1.0), "test_fraction")])
def test_randman_bad_arguments(kw, match):
    with pytest.raises(ConfigError, match=match):
        data.randman(**kw)


# digits
def test_digits_rate_code():
    d = data.digits("rate", timesteps=30, max_rate=0.4, seed=3)
    assert (d.n_inputs, d.n_classes, d.timesteps) == (64, 10, 30)
    assert len(d.train) + len(d.test) == 1797
    images, labels = load_digit_images()
    # the spike rate of each (train) pixel follows 0.4 * intensity
    idx = np.arange(len(d.train))
    x = d.train.spikes(idx).mean(axis=0)  # [N, 64] rate per sample
    assert abs(x.mean() - 0.4 * images.mean()) < 0.01
    assert data.digits("rate", timesteps=30, max_rate=0.4, seed=3).fingerprint() == d.fingerprint()


def test_digits_latency_code():
    d = data.digits("latency", timesteps=10, threshold=0.2, seed=0)
    images, _ = load_digit_images()
    total = d.train.num_events + d.test.num_events
    assert total == int((images > 0.2).sum()), "one spike per pixel above the threshold"
    x = d.train.spikes(range(len(d.train)))
    assert x.sum(axis=0).max() == 1
    assert x[0].sum() > 0 and x[-1].sum() == 0  # white pixels spike first; nothing at 0.2 < v reaches t = T-1


def test_digits_bad_encoding():
    with pytest.raises(ConfigError, match="encoding"):
        data.digits("phase")


# event files
def _events(tmp_path, name="ev.npz", **arrays):
    path = tmp_path / name
    np.savez(path, **arrays)
    return path


def test_event_file_round_trip_and_binning(tmp_path):
    path = tmp_path / "ok.npz"
    data.save_events(path, times=[0.0, 0.5, 0.99, 1.0, 0.3, 0.31], ids=[0, 1, 2, 3, 2, 2], sample=[0, 0, 0, 0, 1, 1],
                     labels=[1, 0], n_inputs=5, duration=1.0)
    spikes, n_classes, info = data.load_events(path, timesteps=4)
    assert n_classes == 2 and spikes.n_inputs == 5 and info["merged_events"] == 1
    x = spikes.spikes([0, 1])
    assert x[0, 0, 0] and x[2, 0, 1] and x[3, 0, 2] and x[3, 0, 3]  # t = duration lands in the last step
    assert x[1, 1, 2] and x[:, 1].sum() == 1  # 0.3 and 0.31 merge into one spike in step 1
    d = data.events(path, timesteps=4, test=path)
    assert len(d.train) == len(d.test) == 2


def test_event_file_offsets_layout_and_late_events(tmp_path):
    path = _events(tmp_path, times=np.array([1, 2, 9]), ids=np.array([0, 1, 1]), offsets=np.array([0, 2, 3]),
                   labels=np.array([0, 1]))
    spikes, _, info = data.load_events(path, timesteps=5, duration=5.0)
    assert info["dropped_late_events"] == 1 and spikes.num_events == 2


@pytest.mark.parametrize("arrays, match", [
    (dict(times=[-1.0, 2.0], ids=[0, 1], sample=[0, 0], labels=[0]), "negative"),
    (dict(times=[1.0, 2.0], ids=[0, 7], sample=[0, 0], labels=[0], n_inputs=5), r"outside \[0, 5\)"),
    (dict(times=[1.0, 2.0], ids=[0, -1], sample=[0, 0], labels=[0]), "outside"),
    (dict(times=[1.0, 2.0], ids=[0, 1], sample=[0, 0]), "'labels' is missing"),
    (dict(times=[1.0, 2.0], ids=[0, 1], sample=[0, 3], labels=[0, 1]), "labels missing"),
    (dict(times=[1.0, 2.0], ids=[0, 1, 2], sample=[0, 0], labels=[0]), "ragged"),
    (dict(times=[1.0, 2.0], ids=[0, 1], sample=[0], labels=[0]), "ragged"),
    (dict(times=[1.0, 2.0], ids=[0, 1], labels=[0]), "sample"),
    (dict(times=[1.0, np.nan], ids=[0, 1], sample=[0, 0], labels=[0]), "NaN"),
    (dict(times=[1.0, 2.0], ids=[0.5, 1], sample=[0, 0], labels=[0]), "non-integer"),
    (dict(times=[1.0, 2.0], ids=[0, 1], offsets=[0, 1], labels=[0]), "offsets"),
    (dict(times=[1.0], ids=[0], sample=[0], labels=[-2]), "labels must be >= 0"),
])
def test_malformed_event_files(tmp_path, arrays, match):
    path = _events(tmp_path, **{k: np.asarray(v) for k, v in arrays.items()})
    with pytest.raises(ConfigError, match=match) as e:
        data.load_events(path, timesteps=4)
    assert str(path) in str(e.value)


def test_ragged_object_arrays_refused(tmp_path):
    ragged = np.empty(2, dtype=object)
    ragged[0], ragged[1] = np.array([0.1, 0.2]), np.array([0.3])
    path = tmp_path / "ragged.npz"
    np.savez(path, times=ragged, ids=ragged, labels=np.array([0, 1]))
    with pytest.raises(ConfigError, match="ragged"):
        data.load_events(path, timesteps=4)


def test_truncated_or_missing_event_file(tmp_path):
    path = tmp_path / "ok.npz"
    data.save_events(path, times=np.arange(100.0), ids=np.zeros(100, int), sample=np.zeros(100, int), labels=[0])
    cut = tmp_path / "cut.npz"
    cut.write_bytes(path.read_bytes()[:200])
    with pytest.raises(ConfigError, match="truncated"):
        data.load_events(cut, timesteps=4)
    with pytest.raises(ConfigError, match="does not exist"):
        data.load_events(tmp_path / "nope.npz", timesteps=4)
