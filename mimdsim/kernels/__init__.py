"""The codelets as ``mimdsim.kernels``, from a source checkout.

The codelets live in the repository's top-level ``kernels/`` folder, grouped as a reader looks for them.
An installed package has them here already: pyproject.toml maps ``kernels/`` to ``mimdsim.kernels``
(``package-dir``) and this file is not shipped. In a source checkout (the tests run from the repository
root) this file points the package's search path at ``kernels/`` and runs that folder's ``__init__``, so
both import the same modules under the same name, with no symlink for a checkout or a scanner to follow.
"""
import pathlib as _pathlib

_SOURCE = _pathlib.Path(__file__).resolve().parents[2] / "kernels"
__path__ = [str(_SOURCE)]  # every submodule (mimdsim.kernels.mimdsim_snn.lif, ...) is found in kernels/
_init = _SOURCE / "__init__.py"
exec(compile(_init.read_text(), str(_init), "exec"))  # noqa: S102 - kernels/__init__.py is this package's body
del _init
