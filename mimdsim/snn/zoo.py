"""Named neuron models for experiment files and the command line (``model.neuron``).

snnTorch 1.0's models as the snnTorch IPU study (Sun et al., vinniesun/snntorch-ipu
``train_fcn.py``) set them up: beta = 0.9 and ``surrogate.fast_sigmoid()`` (slope 25), snnTorch's
default subtract reset; alpha (the synaptic decay) 0.8 for Synaptic and 0.95 for Alpha (which
needs beta < alpha), as ``examples/neuron_zoo.py``. Every other field keeps snnTorch's default.
"""
from __future__ import annotations

from .neurons import NeuronSpec

ZOO = {
    "leaky": NeuronSpec("leaky", beta=0.9, surrogate="fast_sigmoid"),
    "synaptic": NeuronSpec("synaptic", alpha=0.8, beta=0.9, surrogate="fast_sigmoid"),
    "alpha": NeuronSpec("alpha", alpha=0.95, beta=0.9, surrogate="fast_sigmoid"),
    "lapicque": NeuronSpec("lapicque", beta=0.9, surrogate="fast_sigmoid"),
    "rleaky": NeuronSpec("leaky", beta=0.9, recurrence="all-to-all", surrogate="fast_sigmoid"),
    "rleaky-one-to-one": NeuronSpec("leaky", beta=0.9, recurrence="one-to-one", surrogate="fast_sigmoid"),
    "rsynaptic": NeuronSpec("synaptic", alpha=0.8, beta=0.9, recurrence="all-to-all", surrogate="fast_sigmoid"),
}
