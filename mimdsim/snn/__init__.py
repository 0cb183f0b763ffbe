"""The model: what is simulated, with no hardware in it. :class:`Network` (layer sizes, spike-list
capacities, weights, readout and loss; built in Python, from TOML or from NIR by :mod:`.nir_io`), the
neuron models with snnTorch's semantics (:mod:`.neurons`, :mod:`.zoo`) and the readouts.

Imported by: workloads, training, validation, cli, mimdsim (the package exports Network).
"""
from .network import LIFParams, Network, Structure, capacity_for
from .neurons import NeuronSpec, Surrogate, neuron
from .readout import Readout

__all__ = ["Network", "LIFParams", "capacity_for", "NeuronSpec", "Surrogate", "neuron", "Readout", "Structure"]
