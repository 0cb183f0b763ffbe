"""Models. Knows no hardware."""
from .network import LIFParams, Network, Structure, capacity_for
from .neurons import NeuronSpec, Surrogate, neuron
from .readout import Readout

__all__ = ["Network", "LIFParams", "capacity_for", "NeuronSpec", "Surrogate", "neuron", "Readout", "Structure"]
