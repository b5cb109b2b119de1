"""Issue #57's registered runs (jobs.txt beside this file), one at a time on both cores; rerun to resume.

  python docs/results/study-small/outside/queue.py [--runs runs/study-small/outside] [--threads 2]

Refuses to start unless preregistration.json is committed and its commit is an ancestor of HEAD (no test run may
start before the registration). Each line of jobs.txt (read by empirical.job_file, the one parser of job lines)
becomes ``python -m empirical.train ARGS --out RUNS/FOLDER`` with its output in RUNS/FOLDER.log; a finished run is
marked RUNS/FOLDER/.finished and skipped on a rerun, an unfinished one resumes from its last checkpoint. As each
run finishes, what the docs keep of it (docs/results/ladder/keep.sh: no checkpoints) is copied to runs/FOLDER here.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[3]
sys.path.insert(0, str(ROOT))

from empirical.job_file import lines  # noqa: E402


def registered() -> str:
    reg = HERE / "preregistration.json"
    added = subprocess.run(
        ["git", "log", "--diff-filter=A", "--format=%H", "--", str(reg)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    ).stdout.split()
    if not added:
        raise SystemExit(
            f"queue.py: {reg} is not committed; commit the registration before any run starts"
        )
    ok = subprocess.run(["git", "merge-base", "--is-ancestor", added[-1], "HEAD"], cwd=ROOT)
    if ok.returncode != 0:
        raise SystemExit(
            f"queue.py: HEAD does not descend from the registration's commit {added[-1]}"
        )
    return added[-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="runs/study-small/outside")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    commit = registered()
    runs = ROOT / args.runs
    runs.mkdir(parents=True, exist_ok=True)
    check = [
        sys.executable,
        "-m",
        "empirical.job_file",
        str(HERE / "jobs.txt"),
        "--runs",
        str(runs),
    ]
    if subprocess.run(check, cwd=ROOT).returncode != 0:
        return 2
    env = os.environ | {f"{k}_NUM_THREADS": str(args.threads) for k in ("OMP", "MKL", "OPENBLAS")}
    print(f"registration {commit[:12]}; runs in {runs}", flush=True)
    for _, folder, train_args in lines(HERE / "jobs.txt"):
        out = runs / folder
        if (out / ".finished").exists():
            continue
        print(f"{folder}: training", flush=True)
        with open(f"{out}.log", "a") as log:
            code = subprocess.run(
                [sys.executable, "-m", "empirical.train", *train_args, "--out", str(out)],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            ).returncode
        if code != 0:
            print(f"{folder}: stopped (exit {code}; see {out}.log)", flush=True)
            return code
        (out / ".finished").touch()
        subprocess.run(
            [
                "bash",
                str(ROOT / "docs/results/ladder/keep.sh"),
                str(out),
                str(HERE / "runs" / folder),
            ],
            cwd=ROOT,
            check=True,
        )
        print(f"{folder}: finished", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
