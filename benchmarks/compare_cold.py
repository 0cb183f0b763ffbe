"""`mimdsim compare` with no arguments, cold (fresh process, numba cache warm) and warm.

    python benchmarks/compare_cold.py [--repeats 3]

Cold: wall time of `python -m mimdsim compare` in a new process (imports, numba functions
loaded from the on-disk cache, compilation of the program, simulation, GPU estimates).
Warm: the same comparison called again inside one process. Baseline in the same run: a bare
`python -c "import numpy"` process start.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time


def wall(cmd):
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    wall([sys.executable, "-m", "mimdsim", "compare"])  # fills the numba cache if it is empty
    cold = statistics.median(wall([sys.executable, "-m", "mimdsim", "compare"]) for _ in range(args.repeats))
    base = statistics.median(wall([sys.executable, "-c", "import numpy"]) for _ in range(args.repeats))
    import mimdsim
    net = mimdsim.Network.feedforward([2312, 978, 978, 976, 10])
    kw = dict(timesteps=100, batch_size=48, activity=0.005)
    mimdsim.compare(net, "ipu-mk2", "a100-40gb", **kw)
    t0 = time.perf_counter()
    for _ in range(args.repeats):
        mimdsim.compare(net, "ipu-mk2", "a100-40gb", **kw)
    warm = (time.perf_counter() - t0) / args.repeats
    print(f"mimdsim compare, cold process: {cold:.2f} s (python + numpy start alone: {base:.2f} s); "
          f"warm call: {warm:.3f} s")


if __name__ == "__main__":
    main()
