"""mimdsim's own SNN training codelets: neuron forward (:mod:`.lif`), spike lists (:mod:`.spikes`),
surrogates (:mod:`.surrogate`), sparse BPTT (:mod:`.bptt`), reductions (:mod:`.reduce`), readout and loss
(:mod:`.loss`), optimizers (:mod:`.optim`), dense activations (:mod:`.dense_snn`) and a layer's whole
time loop in one compiled call (:mod:`.layer_loops`). Imports the shared base and poplin's AMP estimator.

Imported by: kernels (the registry), optim, snn (the model's numerics), training,
workloads.snn.
"""
from . import bptt, dense_snn, layer_loops, lif, loss, optim, reduce, spikes, surrogate  # noqa: F401 (registers the codelets)
