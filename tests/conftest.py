"""Test-session settings: traces of the eager baseline and sweeps' placement searches are cached in a folder
of this session (mimdsim/workloads/snn/baselines/eager_trace.py, mimdsim/workloads/snn/placement.py), not in
the user's cache, and the folder is removed at the
session's end (pytest's tmp_path_factory; a folder the user set in MIMDSIM_CACHE_DIR is left alone)."""
import os

import pytest


@pytest.fixture(scope="session", autouse=True)
def _trace_cache(tmp_path_factory):
    if os.environ.get("MIMDSIM_CACHE_DIR"):
        yield
        return
    import shutil

    folder = tmp_path_factory.mktemp("mimdsim-cache")
    os.environ["MIMDSIM_CACHE_DIR"] = str(folder)
    try:
        yield
    finally:
        del os.environ["MIMDSIM_CACHE_DIR"]
        shutil.rmtree(folder, ignore_errors=True)
