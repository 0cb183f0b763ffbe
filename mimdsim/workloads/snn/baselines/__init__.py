"""The same training step on other machines: :mod:`.gpu_kernels` (kernel lists per execution strategy),
:mod:`.eager` (eager PyTorch/snnTorch's op stream), :mod:`.systolic` (a systolic array)."""
