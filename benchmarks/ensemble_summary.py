"""What an ensemble (python -m empirical.ensemble) did in the time it had, and what its whole sweep would take.

    python benchmarks/ensemble_summary.py RUNS --preset NAME --started UNIX_SECONDS [--json FILE] [--set KEY=VALUE ...]

RUNS: the ensemble's --runs folder (one member a subfolder); KEY=VALUE: the --set it was given (for its length and
checkpoints). Reads each member's metrics.jsonl: the step reached, its training seconds, its evaluations. The
projection: the run's length at the measured training rate, plus every checkpoint at the measured cost of one
(the wall-clock since --started not spent training, over the checkpoints passed: evaluating, saving, and opening
the members, so an upper bound while few checkpoints have passed).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def member(folder: Path) -> dict:
    rows = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in rows if r["kind"] == "train"]
    evals = [r for r in rows if r["kind"] == "eval"]
    return {
        "member": folder.name,
        "step": train[-1]["step"] if train else 0,
        "training_s": train[-1]["wall_s"] if train else 0.0,
        "evaluations": len(evals),
        "eval_s": [r["eval_s"] for r in evals],
    }


def summarize(runs: Path, preset: str, overrides: list[str], wall: float) -> dict:
    from empirical.training.config import make_config

    cfg = make_config(preset, overrides)
    members = [member(p) for p in sorted(runs.iterdir()) if (p / "metrics.jsonl").is_file()]
    if not members:
        raise SystemExit(f"ensemble_summary: no member with a metrics.jsonl under {runs}")
    # the members train in lockstep but are saved one by one: a sweep stopped mid-save leaves some a checkpoint
    # behind, so the furthest member's step, training time and evaluations are the ensemble's (taking the least
    # step over the most time understated the rate)
    lead = max(members, key=lambda m: (m["step"], -m["training_s"]))
    steps, training, passed = lead["step"], lead["training_s"], lead["evaluations"]
    rate = steps / training if training else 0.0
    other = (wall - training) / max(passed, 1)
    checkpoints = len(cfg.eval_schedule())
    full = cfg.steps / rate + checkpoints * other if rate else None
    return {
        "preset": preset,
        "overrides": overrides,
        "members": len(members),
        "steps_reached": steps,
        "wall_s": round(wall, 1),
        "training_s": round(training, 1),
        "steps_per_s_a_run": round(rate, 3),
        "member_steps_per_s": round(rate * len(members), 1),
        "checkpoints_passed": passed,
        "other_s_a_checkpoint": round(other, 2),
        "steps_in_a_run": cfg.steps,
        "checkpoints_in_a_run": checkpoints,
        "projected_whole_sweep_min": None if full is None else round(full / 60, 1),
        "detail": members,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("runs", type=Path)
    parser.add_argument("--preset", required=True)
    parser.add_argument("--started", type=float, required=True, help="when the ensemble started")
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--set", dest="overrides", nargs="*", default=[], help="the ensemble's --set KEY=VALUE"
    )
    args = parser.parse_args()
    doc = summarize(args.runs, args.preset, args.overrides, time.time() - args.started)
    if args.json:
        args.json.write_text(json.dumps(doc, indent=1) + "\n")
    print({k: v for k, v in doc.items() if k != "detail"})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
