"""Train a registered test's runs, one at a time, only after its registration is committed; rerun to
resume.

  python -m pipeline.registered_queue FOLDER [--runs DIR] [--threads 2] [--hours H]

FOLDER holds preregistration.json (committed, an ancestor of HEAD: no run may start before it) and
jobs.txt (one run a line: ``NAME ARGS...`` for python -m empirical.train, as pipeline.batch reads a
job file). Each line is trained as pipeline.batch trains one (``python -m empirical.train ARGS --out
DIR/NAME``, its output in DIR/NAME.log, DIR defaulting to runs/<FOLDER's path under results/>); a
finished run is marked and skipped on a rerun, an unfinished one resumes from its last checkpoint.
What results/ keeps of each finished run (python -m pipeline.keep: no checkpoints) is copied to
FOLDER/runs/NAME, and a run kept there whole is skipped too (a new checkout has no DIR). After each
run every kept run is checked against the registration, reading no event: it finished, its probe is
the registered one, its first stamp's commit descends from the registration's commit and every stamp
trained in the registered arithmetic. The queue stops at one that is not. With --hours, no run
starts that would not finish within H hours (a run takes the registration's ``run_minutes``, or the
longest this queue has taken).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from core import cli
from core.files import read_json
from pipeline import batch, job_file, keep
from fitting.forecast_registered import descends

ROOT = Path(__file__).resolve().parents[1]


def registering_commit(reg: Path) -> str:
    """The commit that added ``reg``, which must be an ancestor of HEAD; a UsageError otherwise."""
    from fitting.analyses.outside_score import registering_commit as added

    found = added(reg)
    if found is None:
        raise cli.UsageError(
            f"{reg} is not committed (or the clone is shallow); commit the registration before "
            "any run starts"
        )
    ok = subprocess.run(["git", "merge-base", "--is-ancestor", found[0], "HEAD"], cwd=ROOT)
    if ok.returncode != 0:
        raise cli.UsageError(f"HEAD does not descend from the registration's commit {found[0]}")
    return found[0]


def precision() -> str:
    import torch

    from empirical.nets.device import resolve_precision

    return resolve_precision("auto", torch.device("cpu"))


def check_run(run: Path, reg: dict, commit: str) -> list[str]:
    """What is not as registered about a kept run (empty when it is): no event is read."""
    from fitting.analyses.events import run_facts

    facts = run_facts(run)
    bad = []
    if not facts["finished"]:
        bad.append("not finished")
    if facts["probe_hash"] != reg["probe_hash"]:
        bad.append(f"probe {facts['probe_hash']} (registered {reg['probe_hash']})")
    if not descends(facts["first_commit"], commit):
        bad.append(
            f"first stamp's commit {facts['first_commit']} does not descend from {commit[:12]}"
        )
    arithmetic = {d.split()[-1] for d in facts["device"]}
    if arithmetic != {reg["precision"]}:
        bad.append(f"trained in {sorted(arithmetic)} (registered {reg['precision']})")
    return bad


def kept_whole(kept: Path) -> bool:
    from pipeline.collect import read_run

    if not (kept / "config.json").is_file():
        return False
    try:
        return read_run(kept).finished
    except ValueError:
        return False


def _parser():
    parser = cli.parser()
    parser.add_argument(
        "folder", type=Path, help="the test's folder (preregistration.json, jobs.txt)"
    )
    parser.add_argument(
        "--runs", type=Path, help="where the runs train (default runs/<folder under results/>)"
    )
    batch.add_threads(parser, 2)
    parser.add_argument(
        "--hours",
        type=float,
        default=float("inf"),
        help="start no run that would not finish within H hours (default: no limit)",
    )
    return parser


def _checked(args) -> Path:
    """The test's folder, checked to hold its registration and job file (UsageError otherwise)."""
    if not args.hours > 0 or args.threads < 1:
        raise cli.UsageError(
            f"--hours {args.hours} --threads {args.threads}: --hours must be > 0 and --threads >= 1"
        )
    folder = args.folder.resolve()
    for need in ("preregistration.json", "jobs.txt"):
        if not (folder / need).is_file():
            raise cli.UsageError(
                f"FOLDER {args.folder}: holds no {need}; give a registered test's folder"
            )
    return folder


@cli.command
def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    folder = _checked(args)
    reg_path = folder / "preregistration.json"
    if cli.checking(args):
        return 0
    commit = registering_commit(reg_path)
    reg = read_json(reg_path, "registration")["queue"]
    if precision() != reg["precision"]:
        raise cli.UsageError(
            f"this machine trains in {precision()}, the registration says {reg['precision']}"
        )
    rel = (
        folder.relative_to(ROOT / "results")
        if folder.is_relative_to(ROOT / "results")
        else folder.name
    )
    runs = args.runs or ROOT / "runs" / rel
    jobs = folder / "jobs.txt"
    if job_file.main([str(jobs), "--runs", str(runs)]) != 0:
        return 2
    print(f"registration {commit[:12]}; runs in {runs}", flush=True)
    deadline, took = time.monotonic() + args.hours * 3600, []
    for _, name, train_args in job_file.lines(jobs):
        kept = folder / "runs" / name
        if kept_whole(kept):
            print(f"{name}: finished and kept", flush=True)
            continue
        need = max([reg["run_minutes"] * 60, *took])
        if deadline - time.monotonic() < need:
            print(
                f"{name}: not started: a run takes about {need / 60:.0f} min; rerun to go on",
                flush=True,
            )
            return 0
        start = time.monotonic()
        said = batch.train_one(name, train_args, runs, float("inf"), args.threads)
        took.append(time.monotonic() - start)
        print(said, flush=True)
        if "FAILED" in said:
            return 1
        keep.keep(runs / name, kept)
        bad = check_run(kept, reg, commit)
        if bad:
            print(
                f"registered_queue: stopped: {name} is not as registered: {'; '.join(bad)}",
                flush=True,
            )
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
