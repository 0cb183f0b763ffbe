"""``mimdsim train``: train a feed-forward SNN on the simulated chip from the command line."""
from __future__ import annotations

import argparse
import dataclasses
import sys

import numpy as np


def _floats(text):
    try:
        vals = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number or comma-separated list of numbers")
    if not vals:
        raise argparse.ArgumentTypeError("give at least one number")
    return vals[0] if len(vals) == 1 else vals


def _hidden(text):
    try:
        vals = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of hidden-layer sizes, e.g. 512,512")
    if not vals or min(vals) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give one positive size per hidden layer, e.g. 512,512")
    return vals


def load_dataset(args):
    from .. import data

    seed = args.seed if args.data_seed is None else args.data_seed
    if args.data == "digits":
        return data.digits(args.encoding, args.timesteps, max_rate=args.max_rate, seed=seed)
    if args.data == "randman":
        return data.randman(args.classes, args.inputs, args.timesteps, args.samples_per_class,
                            manifold_dim=args.manifold_dim, seed=seed)
    if not args.events:
        from ..errors import ConfigError
        raise ConfigError("--data events needs --events FILE.npz (and optionally --test-events FILE.npz)")
    return data.events(args.events, args.timesteps, test=args.test_events, duration=args.duration, seed=seed)


def build_network(args, dataset):
    net = _feedforward(args, dataset)
    if args.activity_l1:
        net.readout = dataclasses.replace(net.readout, activity_l1=args.activity_l1)
    return net


def _feedforward(args, dataset):
    from ..snn import Network

    sizes = [dataset.n_inputs] + args.hidden + [dataset.n_classes]
    common = dict(overflow=args.overflow, seed=args.seed, weight_scale=args.weight_scale)
    if args.dense:
        caps = list(sizes)
        if args.input_capacity is not None:
            caps[0] = args.input_capacity
        return Network.feedforward(sizes, capacities=caps, theta2=-np.inf, **common)
    k0 = args.input_capacity if args.input_capacity is not None else dataset.input_capacity()
    return Network.feedforward(sizes, max_activity=args.max_activity, input_capacity=k0, theta2=args.theta2,
                               dense_output=args.dense_output, **common)


def cmd_train(args) -> int:
    from .. import arch
    from ..optim import SGD, Adam
    from .init import calibrate_activity
    from .loop import Theta2Schedule, format_epoch, header, train

    dataset = load_dataset(args)
    net = build_network(args, dataset)
    overrides = dict(args.set or [])
    if args.tiles is not None:
        overrides["tiles"] = args.tiles
    system = arch.system(args.chip, chips=args.chips, **overrides)
    quiet = args.quiet
    say = (lambda *a: None) if quiet else print
    say(dataset.describe())
    say(f"network {net.describe()}, capacities K = {','.join(map(str, net.capacities))}"
        + (" (dense)" if args.dense else f" (max activity {100 * args.max_activity:g}%"
           + (", dense readout)" if args.dense_output else ")")) + f", on {system.name}")
    if args.init_activity is not None and not args.resume:
        scales = calibrate_activity(net, system, dataset, args.init_activity, batch_size=args.batch, seed=args.seed,
                                    neurons_per_tile=args.neurons_per_tile)
        say("initial weights scaled to activity " + ", ".join(f"{100 * a:.2f}% (x{s:.3g})" for s, a in scales))
    optimizer = Adam(lr=args.lr) if args.optimizer == "adam" else SGD(lr=args.lr)
    schedule = None if args.dense or args.no_theta2_schedule else Theta2Schedule(args.theta2_start, None, 0.5)
    gpu = None if args.no_gpu else args.gpu
    if not quiet:
        print(header(gpu))

    def log(e):
        if not quiet:
            print(format_epoch(e), flush=True)

    result = train(net, system, dataset, epochs=args.epochs, batch_size=args.batch, optimizer=optimizer,
                   theta2_schedule=schedule, seed=args.seed, gpu=gpu, gpu_strategy=args.gpu_strategy,
                   precision=args.precision, checkpoint=args.checkpoint, resume=args.resume,
                   checkpoint_every=args.checkpoint_every, lr_schedule=None if args.lr_schedule == "none" else args.lr_schedule,
                   layerwise_lr=args.layerwise_lr,
                   progress=False if quiet else None, log=log, neurons_per_tile=args.neurons_per_tile)
    e = result.final
    acc = f"{100 * e.test_accuracy:.2f}%" if e.test_accuracy is not None else "-"
    gpu_s = f"; {gpu} ({args.gpu_strategy}) {e.gpu_seconds_total:.4g} s" if e.gpu_seconds_total is not None else ""
    print(f"final test accuracy {acc} after {e.epoch} epochs ({e.steps} steps); simulated time on "
          f"{system.name} {e.chip_seconds_total:.4g} s{gpu_s}")
    for note in result.config.get("notes", []):
        print(f"note: {note}", file=sys.stderr)
    if args.json:
        result.to_json(args.json)
        print(f"wrote {args.json}")
    if args.checkpoint:
        say(f"checkpoint {args.checkpoint}")
    return 0


def add_parser(sub):
    """Add the ``train`` subcommand to the ``mimdsim`` subparsers ``sub``."""
    from ..workloads.snn.gpu import STRATEGIES
    from ..settings import _field_value as chip_field

    t = sub.add_parser("train", help="train an SNN on the simulated chip (execution-driven) and time it",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter,
                       description="Train a feed-forward LIF network with sparse BPTT through the chip's codelets; "
                                   "per epoch: loss, accuracy, activity, dropped spikes, simulated chip and GPU seconds.")
    g = t.add_argument_group("data (nothing is downloaded)")
    g.add_argument("--data", choices=["digits", "randman", "events"], default="digits")
    g.add_argument("--timesteps", type=int, default=20, help="T: steps per sample")
    g.add_argument("--encoding", choices=["rate", "latency"], default="rate", help="digits: spike code")
    g.add_argument("--max-rate", type=float, default=0.5, help="digits rate code: spike probability of a white pixel")
    g.add_argument("--classes", type=int, default=10, help="randman: classes")
    g.add_argument("--inputs", type=int, default=100, help="randman: input neurons")
    g.add_argument("--samples-per-class", type=int, default=200, help="randman: samples per class")
    g.add_argument("--manifold-dim", type=int, default=1, help="randman: manifold dimension")
    g.add_argument("--events", metavar="FILE", help="events: .npz of times, ids, sample (or offsets), labels")
    g.add_argument("--test-events", metavar="FILE", help="events: a separate test file (default: 20%% held out)")
    g.add_argument("--duration", type=float, default=None, help="events: time span mapped onto T steps")
    g.add_argument("--data-seed", type=int, default=None, help="seed of generation and split (default: --seed)")
    m = t.add_argument_group("network")
    m.add_argument("--hidden", type=_hidden, default=[512, 512], help="hidden-layer sizes")
    m.add_argument("--max-activity", type=float, default=0.01, help="K = even floor(a*n) per layer (at least 2)")
    m.add_argument("--dense", action="store_true", help="dense gradients: K = layer size, theta2 = -inf")
    m.add_argument("--dense-output", action="store_true",
                   help="keep the readout layer dense (K = its size, theta2 = -inf); hidden layers stay sparse")
    m.add_argument("--activity-l1", type=float, default=0.0, metavar="LAMBDA",
                   help="L1 penalty on hidden spikes: loss += LAMBDA * sent hidden spikes (snnTorch l1_rate_sparsity)")
    m.add_argument("--input-capacity", type=int, default=None,
                   help="K of the input list; more input spikes are subsampled at random and counted "
                        "(default: the largest per-step count in the training data)")
    m.add_argument("--overflow", choices=["lowest-index", "random"], default="random",
                   help="which spikes a full hidden list keeps")
    m.add_argument("--weight-scale", type=float, default=1.0, help="init std = scale / sqrt(fan-in)")
    m.add_argument("--init-activity", type=_floats, default=None, metavar="A[,A...]",
                   help="scale the initial weights to this activity per layer on a training batch")
    m.add_argument("--theta2", type=float, default=0.9, help="gradient-candidate threshold (schedule target)")
    m.add_argument("--theta2-start", type=float, default=-100.0, help="theta2 at step 0; halfway to --theta2 per step")
    m.add_argument("--no-theta2-schedule", action="store_true", help="keep theta2 fixed at --theta2")
    o = t.add_argument_group("training")
    o.add_argument("--epochs", type=int, default=10)
    o.add_argument("--batch", type=int, default=16)
    o.add_argument("--optimizer", choices=["adam", "sgd"], default="adam")
    o.add_argument("--lr", type=float, default=2e-3)
    o.add_argument("--lr-schedule", choices=["none", "cosine", "step"], default="none",
                   help="per epoch: constant, cosine to 1%%, or step (lr/10 for the last quarter)")
    o.add_argument("--layerwise-lr", action="store_true",
                   help="scale each layer's lr by the RMS of its initial weights (lr becomes a relative step)")
    o.add_argument("--seed", type=int, default=0)
    o.add_argument("--checkpoint", metavar="FILE.npz", help="write weights, optimizer and RNG state every epoch")
    o.add_argument("--checkpoint-every", type=int, default=1, help="epochs between checkpoints")
    o.add_argument("--resume", action="store_true", help="continue from --checkpoint (same network, data, optimizer)")
    c = t.add_argument_group("chip and GPU model")
    c.add_argument("--chip", default="ipu-mk2", help="preset name (see `mimdsim chips`)")
    c.add_argument("--tiles", type=int, default=None, help="override tiles per chip")
    c.add_argument("--chips", type=int, default=1)
    c.add_argument("--set", type=chip_field, action="append", metavar="FIELD=VALUE", help="override a chip field")
    c.add_argument("--neurons-per-tile", type=int, default=None)
    c.add_argument("--gpu", default="a100-40gb", help="GPU preset timed for the same steps")
    c.add_argument("--gpu-strategy", choices=list(STRATEGIES), default="fused")
    c.add_argument("--precision", choices=["fp32", "tf32", "fp16", "bf16"], default="fp32")
    c.add_argument("--no-gpu", action="store_true", help="skip the GPU model")
    t.add_argument("--json", metavar="FILE", help="write the configuration and per-epoch history as JSON")
    t.add_argument("--quiet", action="store_true", help="no progress bar and no per-epoch lines")
    t.set_defaults(func=cmd_train)
    return t
