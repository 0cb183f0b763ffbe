"""The engine: runs compiled programs execution- or rate-driven; costs through codelets and the fabric model."""
from .activity import ExecutionSource, RateSource
from .run import run_program

__all__ = ["run_program", "ExecutionSource", "RateSource"]
