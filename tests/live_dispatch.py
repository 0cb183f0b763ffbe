"""Test-only helper: count what a step dispatches live, independently of ``mimdsim.trace_torch``."""


def live_count(step) -> int:
    """Every aten op one call of ``step`` dispatches, counted by a plain dispatch mode."""
    from torch.utils._python_dispatch import TorchDispatchMode

    n = [0]

    class Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            n[0] += 1
            return func(*args, **(kwargs or {}))

    with Count():
        step()
    return n[0]
