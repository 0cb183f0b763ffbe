"""``python -m mimdsim.cli.study_activity``: execute the study's 12 log points and store the activity
(:mod:`mimdsim.validation.study_activity` holds the derivation; this script runs it and writes the file
``mimdsim validate`` reads, with its provenance)."""
from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import time

from ..validation import study_activity as sa

COMMAND = "python -m mimdsim.cli.study_activity"


def main(argv=None) -> int:
    """Execute the 12 study points and store the result with its provenance."""
    from .. import version

    ap = argparse.ArgumentParser(prog=COMMAND, description=main.__doc__)
    ap.add_argument("--seeds", type=int, default=3, help="seeds per point, 0, 1, ... (default 3)")
    ap.add_argument("--steps", default=str(sa.STEPS_PER_EPOCH), help="training steps from step 0: one number for "
                    f"every seed or one per seed, comma-separated (default {sa.STEPS_PER_EPOCH}: epoch 1)")
    ap.add_argument("--points", default="all", help="'all' or comma-separated indices into study_log.json")
    ap.add_argument("--out", default=str(sa.DATA_FILE))
    args = ap.parse_args(argv)
    steps = [int(v) for v in args.steps.split(",")]
    steps = steps * args.seeds if len(steps) == 1 else steps
    if len(steps) != args.seeds or min(steps) < 1:
        ap.error(f"--steps {args.steps}: give one count (at least 1) or one per seed ({args.seeds})")
    log = json.loads((sa.DATA_FILE.parent.parent / "study_log.json").read_text())
    chosen = range(len(log["points"])) if args.points == "all" else [int(i) for i in args.points.split(",")]
    out = pathlib.Path(args.out)
    doc = json.loads(out.read_text()) if out.exists() else {"points": {}}
    doc["provenance"] = provenance(args, steps, version.__version__)
    for i in chosen:
        point = log["points"][i]
        key = f"{point['hidden_layers']} hidden, {point['max_activity']:.0%}"
        start = time.time()
        runs = []
        for seed in range(args.seeds):
            runs.append(sa.execute(point, seed, steps[seed]))
            print(f"{key}: seed {seed}, {steps[seed]} steps, {time.time() - start:.0f} s, loss "
                  f"{runs[-1]['per_step']['loss'][0]:.3f} -> {runs[-1]['per_step']['loss'][-1]:.3f}", file=sys.stderr)
        doc["points"][key] = {"sizes": point["sizes"], "capacities": point["capacities"], "runs": runs}
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(doc, separators=(",", ":")) + "\n")  # after every point: a partial run keeps
    return 0


def provenance(args, steps, code_version) -> dict:
    """What the stored execution is: the command, the knobs, the seeds and steps, the code."""
    here = pathlib.Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=here,
                                check=True).stdout.strip()
        changed = subprocess.run(["git", "status", "--porcelain", "--", "mimdsim", "kernels"], capture_output=True,
                                 text=True, cwd=here.parent.parent, check=True).stdout.strip()
        commit += " (with uncommitted changes)" if changed else ""
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return {"command": f"{COMMAND} --seeds {args.seeds} --steps {args.steps} --points {args.points}",
            "code": {"mimdsim": code_version, "commit": commit, "module": "mimdsim/validation/study_activity.py"},
            "derivation": "docs/research/study-activity.md",
            "knobs": sa.knobs(),
            "seeds": list(range(args.seeds)), "steps_per_seed": steps,
            "quantities": "per point and seed: per step, per layer (input first) the batch-and-time mean of kept "
                          "(num[0]), listed (num[1]), raw spikes and raw candidates, the loss and the executed step's "
                          "chip ms; per layer and timestep the kept and listed batch means at step 0 and over the last "
                          "quarter of the steps covered"}


if __name__ == "__main__":
    sys.exit(main())
