"""The package list (the rest of the build is pyproject.toml's): mimdsim's packages and the codelet groups of
the top-level kernels/ folder, which installs as mimdsim.kernels (pyproject.toml's package-dir), so that
kernels/poplin/ is mimdsim.kernels.poplin. A find in pyproject.toml cannot name packages inside a mapped
folder; nothing installs a top-level `kernels` package."""
from setuptools import find_packages, setup

setup(packages=find_packages(include=["mimdsim", "mimdsim.*"])
      + [f"mimdsim.kernels.{group}" for group in find_packages("kernels")])
