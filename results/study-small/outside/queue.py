"""Issue #57's registered runs (jobs.txt beside this file), one at a time on both cores; rerun to resume.

  python results/study-small/outside/queue.py [--runs runs/study-small/outside] [--threads 2] [--hours H]

Refuses to start unless preregistration.json is committed and its commit is an ancestor of HEAD (no test run may
start before the registration). Each line of jobs.txt is trained as pipeline.batch trains a line
(``python -m empirical.train ARGS --out RUNS/FOLDER``, its output in RUNS/FOLDER.log); a finished run is marked
RUNS/FOLDER/.finished and skipped on a rerun, an unfinished one resumes from its last checkpoint. What results/ keeps
of each finished run (python -m pipeline.keep: no checkpoints) is copied to runs/FOLDER here, and a run kept here
whole (its trajectories reach its last step) is skipped too: a new checkout has no RUNS, and would otherwise train
a committed run again. After each run the kept ones are checked as registered, blind (python -m fitting.outside
check): the queue stops at one that is not. (Where a checkout's RUNS does not outlive its session, a run left
unfinished at a session's end starts again from step 0 in the next.) Refuses a machine that trains in fp32 (errata.md, item 7: the
pool trained in bf16). With --hours, no run starts that would not finish within H hours of the queue's start (a
run takes RUN_MINUTES, or the longest this queue has taken where one took longer): where RUNS is lost with the
session, a run cut off at its end is work lost.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
# this file's folder leaves the path: its name would shadow the standard library's queue (torch imports it)
sys.path = [str(ROOT)] + [p for p in sys.path if p and Path(p).resolve() != HERE]

from pipeline import batch, job_file, keep  # noqa: E402
from pipeline import registered_queue  # noqa: E402
from pipeline.registered_queue import kept_whole, precision  # noqa: E402, F401  (what the tests read here)

# a registered run end to end on a bf16 CPU, with a margin (48.5 and 50.5 minutes measured, 2026-11-29)
RUN_MINUTES = 55.0


def registered() -> str:
    """The registration's commit, an ancestor of HEAD (followed across renames: errata item 14); SystemExit
    otherwise."""
    return registered_queue.registering_commit(HERE / "preregistration.json")


def room_for_one(left: float, took: list[float]) -> tuple[bool, float]:
    """Whether a run fits in ``left`` seconds, and the seconds it is expected to take: RUN_MINUTES, or the longest
    of ``took`` (this queue's runs) where one took longer."""
    need = max([RUN_MINUTES * 60, *took])
    return left >= need, need


def hours(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(
            f"--hours must be a positive number of hours, got {text!r}"
        )
    return value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="runs/study-small/outside")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--hours",
        type=hours,
        default=float("inf"),
        help="start no run that would not finish within this many hours of now (default: no limit)",
    )
    args = parser.parse_args()
    commit = registered()
    if precision() != "bf16":
        raise SystemExit(
            "queue.py: this CPU trains in fp32 (no AVX512-BF16 or AMX: lscpu shows neither avx512_bf16 nor amx); "
            "the pool's 20 runs trained in bf16, and every test run must too (errata.md, item 7): run the queue "
            "on a bf16 CPU"
        )
    runs = ROOT / args.runs
    jobs = HERE / "jobs.txt"
    if job_file.main([str(jobs), "--runs", str(runs)]) != 0:
        return 2
    print(f"registration {commit[:12]}; runs in {runs}", flush=True)
    deadline, took = time.monotonic() + args.hours * 3600, []
    for _, folder, train_args in job_file.lines(jobs):  # one at a time, in the registered order
        if kept_whole(HERE / "runs" / folder):
            print(f"{folder}: finished and kept (runs/{folder} here)", flush=True)
            continue
        fits, need = room_for_one(deadline - time.monotonic(), took)
        if not fits:
            print(
                f"{folder}: not started: a run takes about {need / 60:.0f} min, more than --hours leaves; "
                "rerun to go on",
                flush=True,
            )
            return 0
        start = time.monotonic()
        said = batch.train_one(folder, train_args, runs, float("inf"), args.threads)
        took.append(time.monotonic() - start)
        print(said, flush=True)
        if "FAILED" in said:
            return 1
        keep.keep(runs / folder, HERE / "runs" / folder)
        if as_registered() != 0:
            print(
                "queue.py: stopped: a kept run is not as registered (above); no more runs",
                flush=True,
            )
            return 1
    return 0


def as_registered() -> int:
    """python -m fitting.outside check on the runs kept here (it reads no event): 0 when they are as registered."""
    from fitting.analyses.outside_check import check

    kept = sorted(p for p in (HERE / "runs").iterdir() if p.is_dir())
    return check(HERE / "preregistration.json", kept)


if __name__ == "__main__":
    raise SystemExit(main())
