"""``mimdsim train``: train a feed-forward SNN on the simulated chip from the command line.

Its flags are rows of the settings table (:mod:`mimdsim.config`, ``commands=("train",)``);
the functions below read the parsed values by key, as :func:`~mimdsim.cli.flags.values_from_args`
gives them."""
from __future__ import annotations

import argparse
import dataclasses
import sys

import numpy as np

from ..config import CHIP, DATA, DEFAULT_THETA2, NETWORK, TRAINING, build_system
from .flags import add_arguments, values_from_args
from .terms import cli_text


def load_dataset(v: dict):
    """The data set the ``data.*`` settings ``v`` describe."""
    from .. import data

    seed = v["run.seed"] if v["data.seed"] is None else v["data.seed"]
    T = v["data.timesteps"]
    if v["data.name"] == "digits":
        return data.digits(v["data.encoding"], T, max_rate=v["data.max_rate"], seed=seed)
    if v["data.name"] == "randman":
        return data.randman(v["data.classes"], v["data.inputs"], T, v["data.samples_per_class"],
                            manifold_dim=v["data.manifold_dim"], seed=seed)
    if not v["data.events"]:
        from ..errors import ConfigError
        raise ConfigError("--data events needs --events FILE.npz (and optionally --test-events FILE.npz)")
    return data.events(v["data.events"], T, test=v["data.test_events"], duration=v["data.duration"], seed=seed)


def build_network(v: dict, dataset):
    """The network the ``network.*`` (and shared ``model.*``) settings ``v`` describe, sized for ``dataset``."""
    net = _feedforward(v, dataset)
    if v["network.activity_l1"]:
        net.readout = dataclasses.replace(net.readout, activity_l1=v["network.activity_l1"])
    return net


def _feedforward(v, dataset):
    from ..snn import Network

    sizes = [dataset.n_inputs] + v["network.hidden"] + [dataset.n_classes]
    common = dict(overflow=v["network.overflow"], seed=v["run.seed"], weight_scale=v["model.weight_scale"])
    if v["model.weight_scale"] is None:  # the activity rule, at the data's input activity
        common.update(init_activity=init_targets(v, len(sizes) - 1), input_activity=dataset.train.activity())
    k0 = v["network.input_capacity"]
    if v["network.dense"]:
        caps = list(sizes)
        if k0 is not None:
            caps[0] = k0
        return Network.feedforward(sizes, capacities=caps, theta2=-np.inf, max_activity=v["network.max_activity"],
                                   **common)
    return Network.feedforward(sizes, max_activity=v["network.max_activity"],
                               input_capacity=dataset.input_capacity() if k0 is None else k0,
                               theta2=DEFAULT_THETA2 if v["model.theta2"] is None else v["model.theta2"],
                               dense_output=v["network.dense_output"], **common)


def init_targets(v: dict, layers: int):
    """The initial spike fraction per neuron layer: ``--init-activity``, by default half the max
    activity in every layer (the lists start half full of spikes, room for candidates)."""
    a = v["network.init_activity"]
    if a is None or a == 0:
        return [v["network.max_activity"] / 2] * layers
    return a


def cmd_train(args) -> int:
    from ..optim import SGD, Adam
    from ..training.init import calibrate_activity
    from ..training.loop import Theta2Schedule, format_epoch, header, train

    v = values_from_args(args)
    dataset = load_dataset(v)
    net = build_network(v, dataset)
    system = build_system(v)
    dense, quiet, seed, B = v["network.dense"], v["train.quiet"], v["run.seed"], v["train.batch"]
    say = (lambda *a: None) if quiet else print
    say(dataset.describe())
    say(f"network {net.describe()}, capacities K = {','.join(map(str, net.capacities))}"
        + (" (dense)" if dense else f" (max activity {100 * v['network.max_activity']:g}%"
           + (", dense readout)" if v["network.dense_output"] else ")")) + f", on {system.name}")
    calibrate = v["network.init_activity"] != 0 and (v["model.weight_scale"] is None
                                                     or v["network.init_activity"] is not None)
    if calibrate and not v["train.resume"]:
        scales = calibrate_activity(net, system, dataset, init_targets(v, net.num_layers), batch_size=B, seed=seed,
                                    neurons_per_tile=v["run.neurons_per_tile"])
        say("initial weights scaled to activity " + ", ".join(f"{100 * a:.2f}% (x{s:.3g})" for s, a in scales))
    optimizer = (Adam if v["train.optimizer"] == "adam" else SGD)(lr=v["train.lr"])
    schedule = None if dense or v["network.no_theta2_schedule"] else Theta2Schedule(v["network.theta2_start"], None,
                                                                                   0.5)
    gpu = None if v["train.no_gpu"] else v["gpu.preset"]
    if not quiet:
        print(header(gpu))

    def log(e):
        if not quiet:
            print(format_epoch(e), flush=True)

    result = train(net, system, dataset, epochs=v["train.epochs"], batch_size=B, optimizer=optimizer,
                   theta2_schedule=schedule, seed=seed, gpu=gpu, gpu_strategy=v["train.gpu_strategy"],
                   precision=v["gpu.precision"], checkpoint=v["train.checkpoint"], resume=v["train.resume"],
                   checkpoint_every=v["train.checkpoint_every"],
                   lr_schedule=None if v["train.lr_schedule"] == "none" else v["train.lr_schedule"],
                   layerwise_lr=v["train.layerwise_lr"], progress=False if quiet else None, log=log,
                   neurons_per_tile=v["run.neurons_per_tile"], gpu_host=v["gpu.host"])
    e = result.final
    acc = f"{100 * e.test_accuracy:.2f}%" if e.test_accuracy is not None else "-"
    gpu_s = f"; {gpu} ({v['train.gpu_strategy']}) {e.gpu_seconds_total:.4g} s" if e.gpu_seconds_total is not None \
        else ""
    print(f"final test accuracy {acc} after {e.epoch} epochs ({e.steps} steps); simulated time on "
          f"{system.name} {e.chip_seconds_total:.4g} s{gpu_s}")
    for note in result.config.get("notes", []):
        print(f"note: {cli_text(note)}", file=sys.stderr)
    if v["train.json"]:
        result.to_json(v["train.json"])
        print(f"wrote {v['train.json']}")
    if v["train.checkpoint"]:
        say(f"checkpoint {v['train.checkpoint']}")
    return 0


def add_parser(sub):
    """Add the ``train`` subcommand to the ``mimdsim`` subparsers ``sub``."""
    t = sub.add_parser("train", help="train an SNN on the simulated chip (execution-driven) and time it",
                       formatter_class=argparse.HelpFormatter,  # settings.help_text states each default once
                       description="Train a feed-forward LIF network with sparse BPTT through the chip's codelets; "
                                   "per epoch: loss, accuracy, activity, dropped spikes, simulated chip and GPU seconds.")
    add_arguments(t, "train", groups=(DATA, NETWORK, TRAINING, CHIP))
    t.set_defaults(func=cmd_train)
    return t
