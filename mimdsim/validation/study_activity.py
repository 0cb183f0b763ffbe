"""The study's activity from its executed dynamics: the 2022-09-12 log's network, as its code initialises and
trains it, run on N-MNIST-like input, every layer's list fill recorded per timestep (issue 37).

The research behind every knob is ``docs/research/study-activity.md`` (its sections are cited as §n). The log's
runs are graphcore_snn ``benchmark_multi_layer_nmnist.py`` at afd6c70 with the op of 9e30597 (§0.1).

=========================  ===========================================  ==============================================
knob                       value                                        source
=========================  ===========================================  ==============================================
sizes, list capacities K   the 12 points of ``study_log.json``          LOG DENSE_SIZES / SPARSE_SIZES (§3.1)
T, B                       100, 48                                      benchmark_multi_layer_nmnist.py@afd6c70:153,
                                                                        runfile (§3.1)
weights                    U(+-4.0 sqrt(6 / N_in)), no bias             keras_train_util.py@afd6c70:74-95, LOG:307
                                                                        ``limit=0.2037...`` (§3.1)
leak alpha, input gain     0.95; c (1 - alpha) = 0.5                    DECAY_CONSTANT :200; op 9e30597:1977-1986
theta1, theta2             1.0; 0.9 hidden, -100 output (every output   benchmark_multi_layer_nmnist.py@afd6c70:202,
                           neuron a candidate)                          LOG:310-318 (§3.1)
reset, delay, list order   state-based hard reset; one-step delay       op 9e30597 (§3.2), as mimdsim's published
                           between layers; lowest ids, spikes first     program executes it (``ExecutionSource``)
surrogate                  SuperSpike, beta 10, over listed ids         custom_codelet.cpp@9e30597:865-891 (§3.3)
loss                       softmax CE of the summed output spikes,      benchmark_multi_layer_nmnist.py@afd6c70:93-95
                           mean over B                                  (§3.1); mimdsim's ``ce_count``
optimizer                  Adam lr 1e-3, betas 0.9 / 0.999, eps 1e-7    multi_ipu.py@afd6c70:726, Keras defaults (§3.1)
steps                      52 per epoch (25 epochs in the log)          STEPS_PER_EPOCH = int(9984 / 48 / 4) (§3.1)
input per step             capped mean 1.7, 4.6, 14.0, 22.4, 25.4,      §1.3 (1,100 real N-MNIST recordings through
                           26.2, 22.2, 9.7, 1.7, 0.9 per 10-step         the study's pipeline: Denoise(10 ms), 1 ms
                           block; bin 0 empty                           bins from the first event, bin 0 empty)
sample-to-sample spread    coefficient of variation 487 / 1381 of the   §1.3 (events in the 99 ms window per sample)
                           events in the window
more than 32 in a bin      a uniformly random 32 kept                   nmnist_util.py@afd6c70:58-65 (§2)
ON share                   0.483                                        §1.3 (events in the window)
ids per sample             0.322 distinct ids per event (403 +- 104     computed here from the same 1,100 recordings
                           distinct of 1,287 +- 379 events)             (:func:`recording_statistics`)
id recurrence              0.665 of a sample's events repeat an id      computed here likewise; the generator's
                           seen in the 20 bins before                   window (sd 9 steps) gives 0.66
class structure            a sample's ids come from its class's         **assumption** (recordings' classes are not
                           template of twice the mean support            in the repository): same-class samples share
                                                                        ids, so the labels can be learnt
seeds                      3 per point: weights, input, > 32 choice     §5.1 (the study ran unseeded)
=========================  ===========================================  ==============================================

The execution is mimdsim's own: ``simulate(net, "ipu-mk2", inputs=, labels=, optimizer=Adam(...))`` runs the
published program's numerics (the op's lists, reset, delay and gradients, ``sources/execution.py``) and applies
Adam, one call per training step. Each step records, per layer and timestep, the batch means of the kept
(num[0]) and listed (num[1]) counts, the raw spikes and candidates, and the input count; and the chip's
seconds per step for that executed step.

``python -m mimdsim.cli.study_activity`` (:mod:`mimdsim.cli.study_activity`) writes
``mimdsim/validation/data/executed/study_activity.json`` (the command, the knobs, the seeds and steps covered and
the code version go in the file); ``mimdsim validate`` reads it (:func:`executed_rates`) and never executes.

Imported by: validation (``study_log_points``), cli.study_activity (the script that stores the execution).
"""
from __future__ import annotations

import json
import math
import pathlib

import numpy as np

from ..workloads.snn.activity import rate_for_fill, rates_for_fills  # noqa: F401 (rate_for_fill: used by tests)

DATA_FILE = pathlib.Path(__file__).resolve().parent / "data" / "executed" / "study_activity.json"

# --- the network and its training (docs/research/study-activity.md §3.1)
TIMESTEPS, BATCH = 100, 48
WEIGHT_MUL = 4.0
ALPHA, C, THETA1, THETA2_HIDDEN, THETA2_OUTPUT, SURROGATE_BETA = 0.95, 10.0, 1.0, 0.9, -100.0, 10.0
ADAM = {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-7}
STEPS_PER_EPOCH = 52

# --- N-MNIST through the study's pipeline (§1.3; the last two computed by recording_statistics)
INPUT_SIZE, INPUT_K, CLASSES = 2312, 32, 10
BLOCK_CAPPED_MEAN = (1.7, 4.6, 14.0, 22.4, 25.4, 26.2, 22.2, 9.7, 1.7, 0.9)  # ids per step, per 10-step block
BLOCK_OVER_K = (0.0, 0.0, 0.022, 0.21, 0.39, 0.39, 0.14, 0.005, 0.0, 0.0)  # share of bins over 32: a check
SAMPLE_CV = 487 / 1381  # events in the 99 ms window per sample, sd / mean
ON_SHARE = 0.483
IDS_PER_EVENT = 0.322
RECURRENCE_20 = 0.665
# An id's activity window (sd, steps): it sets the share of events repeating an id of the last 20 steps, 0.66 at
# 9 steps against RECURRENCE_20 = 0.665 (0.66-0.68 from 4 to 9 steps: the support size, not the window, sets it)
WINDOW_STEPS = 9.0
TEMPLATE_PER_SUPPORT = 2.0  # the assumption: a class's template holds twice a sample's mean support


def _negbin_capped_mean(mean, shape, cap):
    """E[min(N, cap)] and P(N > cap) for N negative-binomial (a Poisson count whose rate is gamma-distributed
    with the given shape: the per-sample scale), by the pmf's recursion."""
    p0 = (shape / (shape + mean)) ** shape
    r = mean / (shape + mean)
    pmf = np.empty(cap + 1)
    pmf[0] = p0
    for n in range(cap):
        pmf[n + 1] = pmf[n] * (n + shape) / (n + 1) * r
    over = 1.0 - pmf.sum()
    return float((np.arange(cap + 1) * pmf).sum() + cap * over), float(max(over, 0.0))


def input_profile():
    """Per step: the uncapped mean count whose capped mean is §1.3's block mean (bin 0 empty, its block's mean
    carried by bins 1-9), and the share of bins over 32 it implies (a check against ``BLOCK_OVER_K``)."""
    shape = 1 / SAMPLE_CV ** 2
    raw, over = np.zeros(TIMESTEPS), np.zeros(TIMESTEPS)
    for b, target in enumerate(BLOCK_CAPPED_MEAN):
        steps = np.arange(10 * b, 10 * b + 10)
        if b == 0:
            steps, target = steps[1:], target * 10 / 9
        lo, hi = 0.0, 500.0
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if _negbin_capped_mean(mid, shape, INPUT_K)[0] < target else (lo, mid)
        raw[steps] = lo
        over[steps] = _negbin_capped_mean(lo, shape, INPUT_K)[1]
    return raw, over


def nmnist_like(rng, batch=BATCH, templates=None):
    """One batch of N-MNIST-like input through the study's pipeline: ``(spikes [T, B, 2312] uint8, labels [B],
    templates)``. Per sample: a scale from the gamma of ``SAMPLE_CV``; per step a Poisson count at the scaled
    :func:`input_profile`; a support of ``IDS_PER_EVENT`` x the sample's expected events drawn from its class's
    template (``templates``: per class an id array, drawn once per seed), ON ids in ``ON_SHARE``; each support id
    active around a time drawn from the profile (Gaussian window of ``WINDOW_STEPS``); a step's ids drawn without
    replacement from the support weighted by the window; more than 32 -> a random 32."""
    T, n0 = TIMESTEPS, INPUT_SIZE
    raw, _ = input_profile()
    shape = 1 / SAMPLE_CV ** 2
    if templates is None:
        size = int(round(TEMPLATE_PER_SUPPORT * IDS_PER_EVENT * raw.sum()))
        templates = [_template(rng, size) for _ in range(CLASSES)]
    labels = rng.integers(0, CLASSES, size=batch)
    scale = rng.gamma(shape, 1 / shape, size=batch)
    counts = rng.poisson(raw[None, :] * scale[:, None])  # [B, T]
    expected = raw.sum() * scale
    profile = raw / raw.sum()
    # the support: per sample the first S_b of its class's template in a random order
    tpl = np.stack([templates[c] for c in labels])  # [B, P]
    P = tpl.shape[1]
    size = np.clip(np.round(IDS_PER_EVENT * expected).astype(np.int64), 1, P)
    order = np.argsort(rng.random((batch, P)), axis=1)
    support = np.take_along_axis(tpl, order, axis=1)  # [B, P], valid up to size
    valid = np.arange(P)[None, :] < size[:, None]
    centre = rng.choice(T, size=(batch, P), p=profile) + rng.random((batch, P)) - 0.5
    keys = -0.5 * ((np.arange(T)[None, :, None] - centre[:, None, :]) / WINDOW_STEPS) ** 2  # [B, T, P]
    keys += rng.gumbel(size=keys.shape)  # Gumbel top-k: draws without replacement weighted by the window
    keys[~np.broadcast_to(valid[:, None, :], keys.shape)] = -np.inf
    ranked = np.argsort(-keys, axis=2)
    n = np.minimum(np.minimum(counts, size[:, None]), INPUT_K)  # [B, T]; more than 32: a random 32 of them
    b_idx, t_idx, k_idx = np.nonzero(np.arange(P)[None, None, :] < n[:, :, None])
    ids = support[b_idx, ranked[b_idx, t_idx, k_idx]]
    x = np.zeros((T, batch, n0), dtype=np.uint8)
    x[t_idx, b_idx, ids] = 1
    return x, labels, templates


def _template(rng, size):
    """A class's ids: ``ON_SHARE`` of them ON (ids 1156-2311), the rest OFF (0-1155)."""
    on = int(round(ON_SHARE * size))
    half = INPUT_SIZE // 2
    return np.concatenate([rng.choice(half, size - on, replace=False), half + rng.choice(half, on, replace=False)])


def input_statistics(x):
    """The statistics §1.3 and :func:`recording_statistics` give, of a generated ``x [T, B, 2312]``: capped mean
    per 10-step block, ON share, events and distinct ids per sample, the share of events repeating an id seen in
    the previous 20 steps."""
    T, B, n = x.shape
    per_step = x.sum(axis=2)  # [T, B]
    blocks = per_step.reshape(10, T // 10, B).mean(axis=(1, 2))
    events = per_step.sum(axis=0)
    distinct = (x.any(axis=0)).sum(axis=1)
    cum = np.cumsum(x, axis=0, dtype=np.int32)
    before = cum - x  # fired before t
    lag = np.zeros_like(cum)
    lag[20:] = cum[:-20]
    repeat = (x.astype(bool) & ((before - lag) > 0)).sum()
    return {"block_mean": blocks.round(2).tolist(), "on_share": float(x[:, :, n // 2:].sum() / max(x.sum(), 1)),
            "events_per_sample": [float(events.mean()), float(events.std())],
            "distinct_ids_per_sample": [float(distinct.mean()), float(distinct.std())],
            "recurrence_20": float(repeat / max(x.sum(), 1))}


def recording_statistics(folder, seed=0):
    """Distinct ids per sample and the share of events repeating an id of the previous 20 steps, from N-MNIST
    recordings in the original 40-bit format (``*.bs2``, e.g. slayerPytorch@01beeeb ``test/test_files/NMNISTsmall``)
    through the study's pipeline (tonic's ``Denoise(10000)``, 1 ms bins from the first kept event, bin 0 empty,
    more than 32 -> a random 32): the source of ``IDS_PER_EVENT`` and ``RECURRENCE_20``. Per file, in order."""
    rng = np.random.default_rng(seed)
    events, distinct, repeats = [], [], []
    for path in sorted(pathlib.Path(folder).glob("*.bs2")):
        r = np.fromfile(path, dtype=np.uint8).astype(np.int64)
        x, y, p = r[0::5], r[1::5], (r[2::5] & 128) >> 7
        ts = ((r[2::5] & 127) << 16) | (r[3::5] << 8) | r[4::5]
        keep = _denoise(x, y, ts, 10000)
        x, y, p, ts = x[keep], y[keep], p[keep], ts[keep]
        step = (ts - ts[0]) // 1000 + 1  # bin 0 holds nothing: the window starts at the first event
        inside = step < TIMESTEPS
        ids, step = (x + 34 * (y + 34 * p))[inside], step[inside]
        rank = np.empty(ids.size)
        rank[np.lexsort((rng.random(ids.size), step))] = np.arange(ids.size)
        first = np.searchsorted(step, step, sorter=np.argsort(step, kind="stable"))  # each bin's first rank
        kept = rank - first < INPUT_K  # a random 32 of a bin's events
        ids, step = ids[kept], step[kept]
        o = np.lexsort((step, ids))  # by id, then step: a repeat is the same id within 20 steps
        gap = step[o][1:] - step[o][:-1]
        same = (ids[o][1:] == ids[o][:-1]) & (gap > 0) & (gap <= 20)
        events.append(ids.size)
        distinct.append(np.unique(ids).size)
        repeats.append(int(same.sum()))
    events, distinct = np.array(events), np.array(distinct)
    return {"files": int(events.size), "events_per_sample": [float(events.mean()), float(events.std())],
            "distinct_ids_per_sample": [float(distinct.mean()), float(distinct.std())],
            "ids_per_event": float((distinct / events).mean()),
            "recurrence_20": float(np.sum(repeats) / events.sum())}


def _denoise(x, y, ts, filter_us):
    """tonic's ``denoise_numpy`` (v1.2.1): keep an event if one of its 4 neighbours fired within ``filter_us``."""
    global _denoise_compiled
    if _denoise_compiled is None:
        from numba import njit
        _denoise_compiled = njit(cache=True)(_denoise_loop)
    return _denoise_compiled(x, y, ts, filter_us)


_denoise_compiled = None


def _denoise_loop(x, y, ts, filter_us):
    memory = np.full((34, 34), filter_us, dtype=np.int64)
    keep = np.zeros(x.size, dtype=np.bool_)
    for i in range(x.size):  # sequential by definition: each event reads the memory its predecessors wrote
        a, b, t = x[i], y[i], ts[i]
        memory[a, b] = t + filter_us
        keep[i] = ((a > 0 and memory[a - 1, b] > t) or (a < 33 and memory[a + 1, b] > t)
                   or (b > 0 and memory[a, b - 1] > t) or (b < 33 and memory[a, b + 1] > t))
    return keep


def study_network(point, rng):
    """The study's network for a ``study_log.json`` point, initialised as its code does (U(+-4 sqrt(6 / N_in))
    float32, no bias; the output layer's theta2 -100)."""
    from ..snn import Network, NeuronSpec

    spec = NeuronSpec.published(ALPHA, C, THETA1, THETA2_HIDDEN, SURROGATE_BETA)
    sizes = tuple(point["sizes"])
    L = len(sizes) - 1
    net = Network(sizes=sizes, capacities=tuple(point["capacities"]), delay=1,
                  layers=(spec,) * (L - 1) + (spec.replace(theta2=THETA2_OUTPUT),))
    net.weights = [(rng.uniform(-1.0, 1.0, size=(a, b)) * (WEIGHT_MUL * math.sqrt(6 / a))).astype(np.float32)
                   for a, b in zip(sizes[:-1], sizes[1:])]
    return net


def execute(point, seed, steps, progress=None):
    """Train the study's network for ``steps`` steps from its initialisation (seed ``seed``: weights, class
    templates, every batch and every > 32 choice), each step one execution-driven ``simulate`` on ipu-mk2 with
    Adam. Returns per step the time-averaged batch means per layer (input first) of the kept (num[0]) and listed
    (num[1]) counts, raw spikes and candidates, the loss and the executed step's chip ms; and the per-timestep
    profiles of kept and listed at step 0 and over the last quarter of the steps covered."""
    from ..optim import Adam
    from ..workloads.snn.simulate import simulate

    rng = np.random.default_rng(seed)
    net = study_network(point, rng)
    templates = None
    opt = Adam(**ADAM)
    L = net.num_layers
    per_step = {"kept": [], "listed": [], "spikes": [], "candidates": [], "loss": [], "chip_ms": []}
    profiles = []
    for step in range(steps):
        x, y, templates = nmnist_like(rng, templates=templates)
        run = simulate(net, "ipu-mk2", inputs=x, labels=y, optimizer=opt, band=False, seed=seed)
        st = run.stats
        kept = np.stack([st.kept[l].mean(axis=1) for l in range(L + 1)])  # [L + 1, T]
        listed = np.stack([st.listed[l].mean(axis=1) for l in range(L + 1)])
        spikes = np.stack([st.spikes[l].mean(axis=1) for l in range(L + 1)])
        cands = np.stack([(st.listed[l] - st.kept[l] + st.dropped_candidates[l]).mean(axis=1) for l in range(L + 1)])
        for key, v in (("kept", kept), ("listed", listed), ("spikes", spikes), ("candidates", cands)):
            per_step[key].append(v.mean(axis=1).round(4).tolist())
        per_step["loss"].append(round(float(run.loss), 5))
        per_step["chip_ms"].append(round(run.report.seconds_per_step * 1e3, 4))
        profiles.append((kept, listed))
        if progress:
            progress(step + 1, steps)
    late = profiles[max(1, steps - max(1, steps // 4)):] or profiles
    profile = {"step0": {"kept": profiles[0][0].round(3).tolist(), "listed": profiles[0][1].round(3).tolist()},
               "late": {"kept": np.mean([p[0] for p in late], axis=0).round(3).tolist(),
                        "listed": np.mean([p[1] for p in late], axis=0).round(3).tolist(),
                        "steps": [steps - len(late), steps - 1]}}
    return {"seed": seed, "steps": steps, "per_step": per_step, "profile": profile}


def knobs() -> dict:
    """Every knob of the execution, as the stored file records them."""
    return {"timesteps": TIMESTEPS, "batch": BATCH, "weight_mul": WEIGHT_MUL, "alpha": ALPHA, "c": C,
            "theta1": THETA1, "theta2_hidden": THETA2_HIDDEN, "theta2_output": THETA2_OUTPUT,
            "surrogate_beta": SURROGATE_BETA, "adam": ADAM, "block_capped_mean": BLOCK_CAPPED_MEAN,
            "sample_cv": SAMPLE_CV, "on_share": ON_SHARE, "ids_per_event": IDS_PER_EVENT,
            "recurrence_20": RECURRENCE_20, "window_steps": WINDOW_STEPS, "template_per_support": TEMPLATE_PER_SUPPORT}


# --- what the rate-driven chip run takes from the stored execution

def stored(path=DATA_FILE) -> dict:
    """The stored execution (written by :func:`main`)."""
    return json.loads(pathlib.Path(path).read_text())


def executed_rates(entry) -> dict:
    """A stored point's activities for the rate-driven run: ``central`` (each seed's last quarter of its steps,
    averaged over seeds: the state nearest the timed epochs 2-25), ``low`` and ``high`` (per layer the least and
    most filled lists over every seed and step covered, step 0 included), each as ``rates_for_fills`` gives them
    (:mod:`mimdsim.workloads.snn.activity`: the rates whose truncated draws give those mean fills);
    with the seeds and steps covered and the executed steps' own chip ms (mean, min, max)."""
    sizes, caps = entry["sizes"], entry["capacities"]
    late, every, chip = [], [], []
    for run in entry["runs"]:
        k, v = np.array(run["per_step"]["kept"]), np.array(run["per_step"]["listed"])  # [steps, L + 1]
        q = max(1, run["steps"] // 4)
        late.append((k[-q:].mean(axis=0), v[-q:].mean(axis=0)))
        every.append((k, v))
        chip += run["per_step"]["chip_ms"]
    all_k = np.concatenate([k for k, _ in every])
    all_v = np.concatenate([v for _, v in every])
    return {"central": rates_for_fills(sizes, caps, np.mean([k for k, _ in late], axis=0),
                                       np.mean([v for _, v in late], axis=0)),
            "low": rates_for_fills(sizes, caps, all_k.min(axis=0), all_v.min(axis=0)),
            "high": rates_for_fills(sizes, caps, all_k.max(axis=0), all_v.max(axis=0)),
            "seeds": len(entry["runs"]), "steps": [run["steps"] for run in entry["runs"]],
            "executed_chip_ms": [float(np.mean(chip)), float(np.min(chip)), float(np.max(chip))]}
