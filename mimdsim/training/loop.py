"""Training on the simulated chip: mini-batches through the execution-driven engine.

Every training step is one :func:`mimdsim.simulate` call with real inputs and labels:
the chip's codelets compute the forward pass, the loss, the sparse BPTT gradients and
the optimizer update (applied to ``net.weights`` in place), so the numerics are the
chip's, and the step's report gives its simulated time. Per epoch :func:`train` records
the loss, train and test accuracy (prediction = argmax of the output spike counts), mean
activity and dropped spikes per layer, the simulated chip seconds and the GPU model's
seconds for the same steps.

The theta2 schedule of ``reference/algorithms.md`` §1: the gradient-candidate threshold
starts at -100 (every neuron a candidate: a dense gradient, up to the capacity K) and
moves halfway towards its target (0.9) after each training step::

    theta2[k] = target + (start - target) * 0.5**k        (k = 0, 1, ... training steps)
"""
from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..kernels.mimdsim_snn import loss as loss_k

from ..arch import as_system
from ..errors import ConfigError, OutOfDeviceMemory, Param, UnsupportedModel
from ..optim import SGD, Adam
from ..report import JsonOutput
from ..workloads.snn.simulate import simulate
from ..snn import Network
from ..checks import check_choice, check_int, check_number
from . import checkpoint as ckpt
from ..report.progress import Progress, wanted


@dataclass(frozen=True)
class Theta2Schedule:
    """``theta2[k] = target + (start - target) * rate**k`` after k training steps.

    ``target=None``: the network's own theta2. When the target is not above ``start``
    (e.g. theta2 = -inf for dense gradients) the schedule leaves theta2 at the target.
    """

    start: float = -100.0
    target: float | None = 0.9
    rate: float = 0.5

    def __post_init__(self):
        where = "theta2 schedule "
        check_number("start", self.start, where=where, fix="the paper's is -100")
        check_number("target", self.target, finite=False, allow_none=True, where=where,
                     fix="None: the network's own theta2")
        check_number("rate", self.rate, low=0, high=1, open_high=True, where=where, fix="0.5: halfway each step")

    def value(self, step: int, target: float) -> float:
        if not target > self.start:
            return float(target)
        return float(target + (self.start - target) * self.rate ** step)


HALFWAY = Theta2Schedule(start=-100.0, target=None, rate=0.5)
LR_SCHEDULES = (None, "cosine", "step")
COSINE_FLOOR = 0.01
STEP_AT, STEP_FACTOR = 0.75, 0.1


def lr_at(schedule, lr, epoch, epochs) -> float:
    """The learning rate of epoch ``epoch`` (0-based): constant; ``"cosine"`` from ``lr`` down
    to ``COSINE_FLOOR * lr`` at the last epoch; ``"step"``: ``lr`` for the first 75% of the
    epochs, then ``lr / 10``."""
    if schedule is None or epochs <= 1:
        return lr
    if schedule == "step":
        return lr * (STEP_FACTOR if epoch >= math.ceil(STEP_AT * epochs) else 1.0)
    frac = epoch / (epochs - 1)
    return lr * (COSINE_FLOOR + (1 - COSINE_FLOOR) * 0.5 * (1 + math.cos(math.pi * frac)))


def _schedule(arg):
    if arg is None or arg is False or arg == "off":
        return None
    if arg is True or arg == "halfway":
        return HALFWAY
    if isinstance(arg, Theta2Schedule):
        return arg
    raise ConfigError(f"theta2_schedule={arg!r}; pass 'halfway' (the paper's), None/'off', or a Theta2Schedule")


@dataclass
class Epoch:
    """What one epoch did. Layer lists run over all layers, the input (layer 0) first."""

    epoch: int  # 1-based
    steps: int  # training steps so far
    loss: float  # mean training loss over the epoch's batches
    train_accuracy: float  # on the epoch's training batches, as the weights were when each ran
    test_loss: float | None
    test_accuracy: float | None
    activity: list  # mean spike fraction per step, per layer
    listed_fraction: list  # mean fraction of neurons in the lists (spikes + candidates), per layer
    dropped_spikes: list  # per layer, summed over the epoch (layer 0: the input capacity rule)
    dropped_candidates: list
    theta2: float  # at the epoch's last step
    lr: float  # the optimizer's learning rate during the epoch
    chip_seconds: float  # simulated training time of this epoch on the chip
    gpu_seconds: float | None  # the GPU model's time for the same training steps
    wall_seconds: float  # host time of this epoch (training and evaluation)
    chip_seconds_total: float = 0.0  # summed over this and every earlier epoch
    gpu_seconds_total: float | None = None

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass
class TrainResult(JsonOutput):
    history: list
    net: Network
    optimizer: object
    config: dict = field(default_factory=dict)

    @property
    def final(self) -> Epoch:
        return self.history[-1]

    def best_test_accuracy(self) -> float | None:
        accs = [e.test_accuracy for e in self.history if e.test_accuracy is not None]
        return max(accs) if accs else None

    def to_dict(self) -> dict:
        return {"config": self.config, "history": [e.to_dict() for e in self.history]}

    def format(self) -> str:
        return "\n".join([header(self.config.get("gpu"))] + [format_epoch(e) for e in self.history])


def header(gpu=None) -> str:
    """Column names that say what they count: the chip's and the GPU's simulated seconds per epoch and
    summed over every epoch so far, the host's wall seconds of the epoch."""
    g = f"{(gpu or 'gpu') + ' s total':>20}" if gpu is not None else ""
    return (f"{'epoch':>5}{'loss':>9}{'train':>8}{'test':>8}{'activity/layer':>24}{'dropped':>10}"
            f"{'theta2':>9}{'chip s/epoch':>14}{'chip s total':>14}{g}{'wall s/epoch':>14}")


def format_epoch(e: Epoch) -> str:
    pct = lambda v: f"{100 * v:7.2f}%" if v is not None else f"{'-':>8}"  # noqa: E731
    act = "/".join(f"{100 * a:.1f}" for a in e.activity[1:]) + "%"
    gpu = f"{e.gpu_seconds_total:20.4g}" if e.gpu_seconds_total is not None else ""
    return (f"{e.epoch:>5}{e.loss:9.4f}{pct(e.train_accuracy)}{pct(e.test_accuracy)}{act:>24}"
            f"{sum(e.dropped_spikes):>10,}{e.theta2:9.3g}{e.chip_seconds:14.4g}{e.chip_seconds_total:14.4g}{gpu}"
            f"{e.wall_seconds:14.1f}")


class LayerwiseLR:
    """Wraps an optimizer so that layer l's step uses ``lr * scales[l]`` (weights, biases and
    neuron parameters of that layer alike). With ``scales`` = the RMS of each layer's initial
    weights, ``lr`` becomes a *relative* step (a fraction of the layer's weight scale), as in
    layer-wise adaptive methods (LARS, Adafactor's relative step): calibrated layers whose
    weights differ by 30x in scale then learn at comparable relative speeds."""

    def __init__(self, inner, scales):
        self.inner, self.scales = inner, [float(v) for v in scales]
        self.kind = inner.kind

    def apply(self, index, w, g):
        l = index if isinstance(index, (int, np.integer)) else index[0]
        lr = self.inner.lr
        self.inner.lr = lr * self.scales[l]
        try:
            self.inner.apply(index, w, g)
        finally:
            self.inner.lr = lr


def weight_rms(net) -> list:
    return [float(np.sqrt(np.mean(np.square(w, dtype=np.float64)))) for w in net.weights]


class _GpuTimer:
    """GPU-model seconds of one training step: dense strategies once per shape, ``sparse``
    with each step's measured activity."""

    def __init__(self, net, gpu, strategy, precision, optimizer_kind, T, B, host=None):
        from ..workloads.snn.baselines.gpu_kernels import estimate

        self.estimate, self.net, self.gpu, self.strategy = estimate, net, gpu, strategy
        self.precision, self.kind, self.T, self.B = precision, optimizer_kind, T, B
        self.cached = None
        self.note = None
        from ..arch.host import host as host_preset
        self.host = host_preset(host) if isinstance(host, str) else host  # a bad name fails before training starts

    def seconds(self, report) -> float | None:
        if self.gpu is None or self.note is not None:
            return None
        if self.strategy != "sparse" and self.cached is not None:
            return self.cached
        kw = {}
        if self.strategy == "sparse":
            acts = [ly["activity"] for ly in report.layers]
            kw = dict(activity=acts[1:], input_activity=acts[0])
        try:
            r = self.estimate(self.net, self.gpu, timesteps=self.T, batch_size=self.B, strategy=self.strategy,
                              precision=self.precision, optimizer=self.kind, host=self.host, **kw)
        except OutOfDeviceMemory as e:
            self.note = f"GPU model: {e}"
            return None
        self.cached = r.seconds_per_step
        return self.cached


def _check_args(net, dataset, epochs, batch_size):
    from ..data import Dataset

    if not isinstance(net, Network):
        raise ConfigError(f"train needs a mimdsim.Network, got {type(net).__name__}")
    if not isinstance(dataset, Dataset):
        raise ConfigError(f"train needs a mimdsim.data.Dataset (digits, randman or events), got "
                          f"{type(dataset).__name__}")
    if net.sizes[0] != dataset.n_inputs:
        raise ConfigError(f"the network has {net.sizes[0]} inputs but {dataset.name} has {dataset.n_inputs}; "
                          f"make the first layer size {dataset.n_inputs}")
    classes = net.readout.classes(net.sizes[-1])
    if classes < dataset.n_classes:
        raise ConfigError(f"the network has {classes} output classes but {dataset.name} has {dataset.n_classes}; "
                          f"make the last layer size {dataset.n_classes} (or a population code of that many classes)")
    if net.readout.on_membrane:
        raise UnsupportedModel(f"train predicts the class from output spike counts, but loss {net.readout.loss!r} "
                               f"reads the membrane; use a count or rate loss (ce_count, mse_count, ce_rate)")
    check_int("epochs", epochs, low=1)
    check_int("batch_size", batch_size, low=1)
    if len(dataset.train) < batch_size:
        raise ConfigError(Param("batch_size", batch_size), f" exceeds the {len(dataset.train)} training samples; "
                          f"lower the batch size")


class _Tally:
    """Per-layer sums over an epoch's training steps."""

    def __init__(self, L):
        self.spikes = np.zeros(L + 1, dtype=np.int64)
        self.listed = np.zeros(L + 1)
        self.dropped = np.zeros(L + 1, dtype=np.int64)
        self.dropped_cand = np.zeros(L + 1, dtype=np.int64)
        self.slots = np.zeros(L + 1)  # neurons * steps * samples

    def add(self, report):
        T, B = report.timesteps, report.batch_size
        for ly in report.layers:
            l = ly["layer"]
            self.spikes[l] += ly["spikes"]
            self.listed[l] += ly["listed_fraction"] * ly["neurons"] * T * B
            self.dropped[l] += ly["dropped_spikes"]
            self.dropped_cand[l] += ly["dropped_candidates"]
            self.slots[l] += ly["neurons"] * T * B


def predictions(net, counts) -> np.ndarray:
    """Class per sample: argmax of the output spike counts (summed per class group for a
    population code; ties go to the lower class, so an all-silent output predicts class 0)."""
    r = net.readout
    return np.argmax(loss_k.population(counts, r.classes(net.sizes[-1])), axis=1)


def _loss_from_counts(net, counts, labels, timesteps):
    """The readout's loss of whole-set counts (ce_count, mse_count), else None."""
    r = net.readout
    if r.loss not in ("ce_count", "mse_count"):
        return None
    loss, _ = loss_k.readout_loss(r.loss, labels, counts=counts, timesteps=timesteps, classes=r.num_classes,
                                  correct_rate=r.correct_rate, incorrect_rate=r.incorrect_rate)
    return float(loss)


def evaluate(net, chip, spikes, *, batch_size, seed=0, neurons_per_tile=None, reserve_tile0=True):
    """``(loss, accuracy, counts)`` of ``net`` on a :class:`~mimdsim.data.SpikeSet`, run on the chip.

    Batches of ``batch_size`` (the last one padded with repeats from the start, so one
    program shape serves every batch; padded samples are not scored), run as inference
    (``simulate(..., training=False)``: no gradients), so the weights are left as they are.
    """
    n = len(spikes)
    nb = -(-n // batch_size)
    idx = np.resize(np.arange(n), nb * batch_size)
    counts = np.zeros((nb * batch_size, net.sizes[-1]), dtype=np.int64)
    batch_losses = []
    for k in range(nb):  # one chip run per batch
        sel = idx[k * batch_size:(k + 1) * batch_size]
        run = simulate(net, chip, inputs=spikes.spikes(sel), labels=spikes.labels[sel], seed=seed + k,
                       neurons_per_tile=neurons_per_tile, reserve_tile0=reserve_tile0, training=False)
        counts[k * batch_size:(k + 1) * batch_size] = run.counts
        batch_losses.append(run.loss)
    counts = counts[:n]
    loss = _loss_from_counts(net, counts, spikes.labels, spikes.timesteps)
    if loss is None:  # ce_rate: the batches' mean (the padded last batch counts its repeats)
        loss = float(np.mean(batch_losses))
    acc = float(np.mean(predictions(net, counts) == spikes.labels))
    return loss, acc, counts


def theta2_of(net) -> list:
    """The gradient-candidate threshold of every neuron layer."""
    return [float(s.theta2) for s in net.layers] if net.layers else [float(net.neuron.theta2)] * net.num_layers


def set_theta2(net, values) -> None:
    """Set theta2 per neuron layer: on ``net.neuron`` while every layer shares the published
    LIF and one value, otherwise on per-layer specs (``net.layers``)."""
    values = [float(v) for v in values]
    if len(values) != net.num_layers:
        raise ConfigError(f"{len(values)} theta2 values for {net.num_layers} neuron layers; give one per layer")
    if not net.layers and all(v == values[0] for v in values):
        net.neuron = dataclasses.replace(net.neuron, theta2=values[0])
    else:
        net.layers = tuple(s.replace(theta2=v) for s, v in zip(net.specs, values))


def train(net: Network, chip="ipu-mk2", dataset=None, *, epochs: int = 10, batch_size: int = 32, optimizer=None,
          theta2_schedule="halfway", seed: int = 0, evaluate_test: bool = True, gpu="a100-40gb",
          gpu_strategy: str = "fused", precision: str = "fp32", checkpoint=None, resume: bool = False,
          checkpoint_every: int = 1, progress=None, log=None, lr_schedule=None, layerwise_lr: bool = False,
          neurons_per_tile=None, reserve_tile0: bool = True, gpu_host=None) -> TrainResult:
    """Train ``net`` on ``dataset`` on the simulated ``chip``; its parameters are updated in place.

    * ``optimizer``: :class:`mimdsim.Adam` (default ``Adam(lr=1e-3)``) or :class:`mimdsim.SGD`.
    * mini-batches of ``batch_size``, reshuffled every epoch from ``seed``; the last
      incomplete batch is dropped (the chip's program has a static batch size).
    * ``theta2_schedule``: ``"halfway"`` (start at -100, halfway towards the network's
      theta2 after every step), ``None`` (keep theta2), or a :class:`Theta2Schedule`.
    * ``lr_schedule``: ``None`` (constant), ``"cosine"`` (per epoch, from the optimizer's
      lr down to 1% of it at the last epoch) or ``"step"`` (lr / 10 for the last quarter).
    * ``layerwise_lr``: scale each layer's learning rate by the RMS of its weights when
      training starts (:class:`LayerwiseLR`; the scales are kept in checkpoints).
    * ``gpu``/``gpu_strategy``/``precision``: the GPU model timed for the same steps
      (``gpu=None`` to skip); ``gpu_host``: the host CPU that drives it (None: the GPU's default host).
    * ``checkpoint``: a ``.npz`` path written every ``checkpoint_every`` epochs and at the
      end; ``resume=True`` continues from it (same network, data and optimizer kind; give
      the same ``epochs`` for a cosine schedule).
    * ``progress``: a bar per epoch (``None``: only when stdout is a terminal); ``log``: a
      callable given each :class:`Epoch` as it ends (after its checkpoint is written).

    Deterministic for a seed; a resumed run equals an uninterrupted one bit for bit.
    """
    _check_args(net, dataset, epochs, batch_size)
    system = as_system(chip)
    optimizer = Adam(lr=1e-3) if optimizer is None else optimizer
    if not isinstance(optimizer, (Adam, SGD)):
        raise ConfigError(f"optimizer must be mimdsim.Adam or mimdsim.SGD, got {type(optimizer).__name__}")
    schedule = _schedule(theta2_schedule)
    check_choice("lr_schedule", lr_schedule, LR_SCHEDULES)
    check_int("checkpoint_every", checkpoint_every, low=1, fix="in epochs")
    if resume and checkpoint is None:
        raise ConfigError(Param("resume", True), " needs ", Param("checkpoint", python="checkpoint="),
                          " (the .npz file to resume from)")
    net.validate_weights()
    base_lr = float(optimizer.lr)
    targets = theta2_of(net)
    if schedule is not None and schedule.target is not None:  # layers at -inf are dense: nothing to schedule
        targets = [schedule.target if t > -math.inf else t for t in targets]
    T, B, L = dataset.timesteps, int(batch_size), net.num_layers
    train_set, test_set = dataset.train, dataset.test
    fingerprint = dataset.fingerprint()
    rng = np.random.default_rng(seed)
    history: list[Epoch] = []
    step, start_epoch = 0, 0
    lr_scales = None
    if resume:
        meta, arrays = ckpt.load(checkpoint)
        ckpt.check_compatible(checkpoint, meta, arrays, net=net, optimizer=optimizer, data_fingerprint=fingerprint,
                              data_name=dataset.name)
        ckpt.restore(meta, arrays, net=net, optimizer=optimizer)
        rng.bit_generator.state = meta["rng"]
        lr_scales = meta.get("lr_scales")
        step, start_epoch = int(meta["step"]), int(meta["epoch"])
        history = [Epoch(**e) for e in meta["history"]]
    config = dict(network=net.describe(), capacities=list(net.capacities), data=dataset.name,
                  data_info=dataset.info, chip=system.name, epochs=epochs, batch_size=B, seed=seed,
                  optimizer={"kind": optimizer.kind, **{k: v for k, v in vars(optimizer).items() if k != "state"}},
                  theta2_schedule=None if schedule is None else dataclasses.asdict(schedule),
                  theta2_target=targets[0], lr_schedule=lr_schedule, gpu=gpu, gpu_strategy=gpu_strategy,
                  precision=precision)
    gpu_timer = _GpuTimer(net, gpu, gpu_strategy, precision, optimizer.kind, T, B, gpu_host)
    if layerwise_lr and lr_scales is None:
        lr_scales = weight_rms(net)
    config["layerwise_lr"] = lr_scales if layerwise_lr else None
    stepper = LayerwiseLR(optimizer, lr_scales) if layerwise_lr else optimizer
    bar = Progress("training", "batch", enabled=wanted(progress), delay=0.0, every=0.2, leave=False)
    sim_kw = dict(neurons_per_tile=neurons_per_tile, reserve_tile0=reserve_tile0)
    chip_total = history[-1].chip_seconds_total if history else 0.0
    gpu_total = history[-1].gpu_seconds_total if history else (0.0 if gpu is not None else None)
    batches = len(train_set) // B
    try:
        for epoch in range(start_epoch, epochs):
            t0 = time.perf_counter()
            optimizer.lr = lr_at(lr_schedule, base_lr, epoch, epochs)
            perm = rng.permutation(len(train_set))
            tally = _Tally(L)
            loss_sum, correct, chip_s, gpu_s = 0.0, 0, 0.0, 0.0
            bar.start(batches, f"epoch {epoch + 1}/{epochs}")
            for k in range(batches):
                sel = perm[k * B:(k + 1) * B]
                y = train_set.labels[sel]
                if schedule is not None:
                    set_theta2(net, [schedule.value(step, t) for t in targets])
                run = simulate(net, system, inputs=train_set.spikes(sel), labels=y, optimizer=stepper,
                               seed=int(rng.integers(2 ** 31)), **sim_kw)
                step += 1
                loss_sum += run.loss
                correct += int(np.count_nonzero(predictions(net, run.counts) == y))
                tally.add(run.report)
                chip_s += run.report.seconds_per_step
                g = gpu_timer.seconds(run.report)
                gpu_s = None if g is None or gpu_s is None else gpu_s + g
                bar.step(f"loss {loss_sum / (k + 1):.3f} acc {100 * correct / ((k + 1) * B):.1f}%")
            bar.close()
            test_loss = test_acc = None
            if evaluate_test and len(test_set):
                test_loss, test_acc, _ = evaluate(net, system, test_set, batch_size=B, seed=seed, **sim_kw)
            chip_total += chip_s
            gpu_total = None if gpu_s is None or gpu_total is None else gpu_total + gpu_s
            e = Epoch(epoch=epoch + 1, steps=step, loss=loss_sum / batches, train_accuracy=correct / (batches * B),
                      test_loss=test_loss, test_accuracy=test_acc,
                      activity=(tally.spikes / tally.slots).tolist(),
                      listed_fraction=(tally.listed / tally.slots).tolist(),
                      dropped_spikes=tally.dropped.tolist(), dropped_candidates=tally.dropped_cand.tolist(),
                      theta2=theta2_of(net)[0], lr=float(optimizer.lr), chip_seconds=chip_s, gpu_seconds=gpu_s,
                      wall_seconds=time.perf_counter() - t0, chip_seconds_total=chip_total,
                      gpu_seconds_total=gpu_total)
            history.append(e)
            if checkpoint is not None and ((epoch + 1) % checkpoint_every == 0 or epoch + 1 == epochs):
                meta = dict(network=ckpt.network_signature(net), epoch=epoch + 1, step=step,
                            rng=rng.bit_generator.state, optimizer=config["optimizer"],
                            data={"name": dataset.name, "fingerprint": fingerprint},
                            history=[h.to_dict() for h in history], config=config, lr_scales=lr_scales)
                ckpt.save(checkpoint, net=net, optimizer=optimizer, meta=meta)
            if log is not None:
                log(e)
    finally:
        bar.close()
        optimizer.lr = base_lr
    if gpu_timer.note:
        config["notes"] = [gpu_timer.note]
    return TrainResult(history=history, net=net, optimizer=optimizer, config=config)
