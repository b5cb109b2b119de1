"""Many training runs from a job file, PARALLEL at a time, stopped at a deadline and resumed by a
rerun.

  python -m pipeline.batch JOBS --runs DIR [--parallel N] [--threads T] [--seconds S] [--pack \\
      FILE.tgz]

JOBS holds one run per line, "FOLDER --preset NAME --set KEY=VALUE ..." (# starts a comment), read
by pipeline.job_file, the one parser of job lines: quotes as the shell takes them, CRLF endings and
blank lines are fine. Every line is checked first; a bad line stops the batch before anything
trains. Each line becomes ``python -m empirical.train ARGS --out DIR/FOLDER`` (its output appended
to DIR/FOLDER.log), a process of pipeline.processes (the runner the sweep's local jobs use too), in
the file's order, N at a time with T CPU threads each. A run still training when S seconds have
passed since the start is stopped (training is kill-safe) and resumes on a rerun of the same
command; a finished run is marked DIR/FOLDER/.finished and skipped. A run that fails is named and
the others go on.

--pack writes what results/ keeps of every run (python -m pipeline.keep: no checkpoints) and every
run's log into one .tgz, e.g. the device tool's $OUT/runs.tgz.

Exit status: 0 when every run finished or was stopped by the deadline (rerun to resume), 1 when a
run failed, 2 on bad input (nothing started).

Example (a GPU machine, seven runs at a time, 9 minutes):

  python -m pipeline.batch results/ladder/device-jobs.txt --runs runs/device --parallel 7 \\
      --seconds 540
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import tarfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Sequence

from pipeline import job_file, keep
from pipeline import processes
from core import cli
from core.files import atomic_write

MIN_LEFT = 20  # a run is not started with fewer seconds left
TRAIN = ("-m", "empirical.train")  # what runs a line: python TRAIN ARGS --out DIR/FOLDER


def train_one(folder: str, args: list[str], runs: Path, deadline: float, threads: int) -> str:
    """Train one run (resuming it) until it finishes or the deadline; returns what happened, one
    line."""
    out = runs / folder
    mark, line = out / ".finished", shlex.join(args)
    if mark.is_file() and mark.read_text(errors="replace").strip() == line:
        return f"{folder}: already finished"
    # no mark, or one of another line (edited since, or an older empty mark): train, which resumes a
    # finished
    # run at once and refuses a folder trained with other settings
    left = deadline - time.monotonic()
    if left < MIN_LEFT:
        return f"{folder}: not started (no time left)"
    out.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, *TRAIN, *args, "--out", str(out)]
    # the run ends with the batch (kill -9 included): it never trains on past --seconds beside a
    # rerun
    proc = processes.start(
        command, Path(f"{out}.log"), processes.thread_env(threads), die_with_parent=True
    )
    try:
        code = proc.wait(timeout=None if left == float("inf") else left)
    except subprocess.TimeoutExpired:
        processes.end(proc)
        return f"{folder}: stopped at the deadline; rerun to resume"
    except BaseException:  # Ctrl-C: leave no run training behind
        proc.kill()
        raise
    if code != 0:
        return f"{folder}: FAILED (exit {code}; see {out}.log)"
    atomic_write(mark, lambda fh: fh.write(line + "\n"))
    return f"{folder}: finished"


def pack(runs: Path, folders: list[str], path: Path) -> int:
    """Pack the kept files of every run (and its log) into ``path``; returns the number of files."""
    count = 0

    def add(tar: tarfile.TarFile) -> None:
        nonlocal count
        for folder in folders:
            for file in keep.kept_files(runs / folder):  # its log included
                tar.add(file, arcname=file.relative_to(runs.parent).as_posix())
                count += 1

    def write(fh) -> None:
        with tarfile.open(fileobj=fh, mode="w:gz") as tar:
            add(tar)

    atomic_write(path, write, binary=True)
    return count


def add_threads(parser: argparse.ArgumentParser, default: int) -> None:
    """``--threads T``: the CPU threads each run trains with (:func:`train_one`'s ``threads``)."""
    parser.add_argument(
        "--threads", type=int, default=default, help=f"CPU threads of each run (default {default})"
    )


def _parser():
    parser = cli.parser()
    parser.add_argument("jobs", type=Path, help="the job file, one run per line")
    parser.add_argument("--runs", type=Path, required=True, help="the folder the runs go under")
    parser.add_argument("--parallel", type=int, default=1, help="runs training at once (default 1)")
    add_threads(parser, 1)
    parser.add_argument(
        "--seconds",
        type=float,
        default=float("inf"),
        help="stop every run this many seconds after the start (default: no deadline)",
    )
    parser.add_argument("--pack", type=Path, help="a .tgz to pack the kept files and logs into")
    return parser


@cli.command
def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    for flag, value in (("--parallel", args.parallel), ("--threads", args.threads)):
        if value < 1:
            raise cli.UsageError(f"{flag} {value}: must be a whole number >= 1")
    if not args.seconds > 0:
        raise cli.UsageError(f"--seconds {args.seconds}: must be > 0")
    cli.output_dir(args.runs, "--runs")
    if args.pack is not None:
        cli.output_file(args.pack, "--pack", suffix=(".tgz", ".gz"))
    if cli.checking(args):
        return 0
    found = job_file.problems(args.jobs, args.runs)
    if found:  # the first bad line in the error line, any others above it
        if len(found) > 1:
            print("\n".join(found[1:]), file=sys.stderr)
        more = f" (and {len(found) - 1} more bad line(s) above)" if len(found) > 1 else ""
        raise cli.UsageError(f"{found[0]}{more}; nothing was started")
    runs = job_file.lines(args.jobs)
    deadline = time.monotonic() + args.seconds
    args.runs.mkdir(parents=True, exist_ok=True)
    print(
        f"{len(runs)} run(s) from {args.jobs} into {args.runs}, {args.parallel} at a time",
        flush=True,
    )
    with ThreadPoolExecutor(args.parallel) as pool:
        todo = [
            pool.submit(train_one, folder, train, args.runs, deadline, args.threads)
            for _, folder, train in runs
        ]
        said = []
        for job in as_completed(todo):
            said.append(job.result())
            print(said[-1], flush=True)
    if args.pack is not None:
        count = pack(args.runs, [folder for _, folder, _ in runs], args.pack)
        print(f"packed {count} file(s) into {args.pack}")
    return 1 if any("FAILED" in line for line in said) else 0


if __name__ == "__main__":
    sys.exit(main())
