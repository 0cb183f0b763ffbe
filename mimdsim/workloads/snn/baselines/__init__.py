"""The same training step on other machines: :mod:`.gpu_kernels` (kernel lists per execution strategy),
:mod:`.eager` (eager PyTorch/snnTorch's op stream), :mod:`.systolic` (a systolic array).

Imported by: compare, training, validation, trace_seed, mimdsim (GPU and systolic estimates of the step).
"""
