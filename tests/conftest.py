"""Test-session settings: traces of the eager baseline are cached in a folder of this session
(mimdsim/workloads/snn/baselines/eager_trace.py), not in the user's cache."""
import os
import tempfile

os.environ.setdefault("MIMDSIM_CACHE_DIR", tempfile.mkdtemp(prefix="mimdsim-test-cache-"))
