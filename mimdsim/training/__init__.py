"""Training on the simulated chip (:func:`train`), checkpoints and the theta2 schedule.

``mimdsim.train`` is :func:`~mimdsim.training.loop.train`; the package is named
``training`` so that the function does not shadow a module of the same name.

Imported by: cli, mimdsim (the package exports train).
"""
from .checkpoint import load as load_checkpoint
from .init import calibrate_activity
from .loop import HALFWAY, Epoch, Theta2Schedule, TrainResult, evaluate, train

__all__ = ["train", "evaluate", "calibrate_activity", "Theta2Schedule", "HALFWAY", "Epoch", "TrainResult", "load_checkpoint"]
