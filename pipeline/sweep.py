"""Run a grid of training runs (processes on this machine, or SLURM job arrays with submitit), then
collect them.

  python -m pipeline.sweep --preset PRESET --grid KEY=V1,V2,.. [--grid ...] [--set KEY=VALUE ...]
         [--then 'STEP [ARGS]' ...] --executor {local,slurm,debug} [--max-parallel N]
         [--cpus-per-job C] [--gpus-per-job G] [--timeout-min M] [--slurm-partition P] [--no-wait]
         --out DIR
  python -m pipeline.sweep collect DIR     # DIR/sweep.csv and DIR/covariates.csv
  python -m pipeline.sweep status DIR      # each run's stages, what runs, what failed (its log);
                                            # exit 1 when a run or stage failed

The runs are the product of the --grid values (every --set key is a grid key, seeds included: --grid
seed=0,1,2; tuple values are separated by ';': --grid 'channels=16,32;32,64'), each an ordinary run
of empirical.train in DIR/runs/<key=value,...>/ (config.json, trajectories.csv, metrics.jsonl,
checkpoints). Every run reads one shared probe, DIR/probe/<concepts>-<resolution>px, trained once by
a job the runs wait for. After training, each --then step runs on the run folder, in order:

  elicit ARGS             python -m empirical.elicit RUN ARGS   (e.g. --then 'elicit --every 3')
  capability ARGS         python -m fitting.capability RUN ARGS
  capability-figure ARGS  python -m figures.capability RUN ARGS
  turn ARGS               python -m fitting.turn RUN ARGS
  fit ARGS                python -m fitting.fit RUN/trajectories.csv ARGS
  fit-figure ARGS         python -m figures.fit RUN/fit ARGS
  figure ARGS             python -m figures.training RUN ARGS
  forecast ARGS           python -m fitting.forecast RUN ARGS   (writes RUN/forecast.json)

so a whole study is one command. Every step's flags and values are checked by its own command
(``--check-args``: it reads and writes nothing) before anything is written, and a step that fails
later is reported with its own error line. Each run folder is locked while a job works on it (two
sweeps, or a resubmission, never train one run at once); each finished stage is recorded in
RUN/stages.json. Run the same command again at any time: finished runs are skipped (nothing is
submitted when all are done), interrupted ones resume from their last checkpoint, runs in use by
another process are waited for, and new --then steps run on runs that have trained.

Executors: local (jobs are processes on this machine, started by pipeline.processes, the runner
pipeline.batch uses too: no submitit needed; at most --max-parallel at once, default 1, each stopped
after
--timeout-min and seeing --gpus-per-job GPUs, none by default,
each capped to --cpus-per-job threads, default the cores divided by --max-parallel, or
OMP_NUM_THREADS where you set it lower: two torch jobs with default threads on two cores were
measured 30x slower); slurm (submitit, pip install 'concept-dynamics[sweep]': one job array, at most
--max-parallel tasks at once, --slurm-partition, --gpus-per-job, --cpus-per-job, --timeout-min;
preempted or timed-out tasks are requeued and resume); debug (in this process, one after the other).
The command follows the jobs with a progress bar (runs done / running / failed) and lists the failed
runs with their logs at the end (exit code 1 if any failed); --no-wait submits and returns (slurm).
Logs of every job are in DIR/logs/.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
from pathlib import Path
from typing import Sequence

from pipeline import collect as collect_mod
from pipeline import sweep_jobs as jobs
from pipeline import sweep_plan as plan
from pipeline import sweep_status
from pipeline.executor import (
    follow,
    interrupt,
    job_threads,
    make_executor,
    probe_jobs,
    run_probes,
    submit_and_leave,
)
from empirical.training.config import TRAIN_PRESETS, check_folder
from core import cli
from core.files import write_json
from core.stamp import stamp

EXECUTORS = ("local", "slurm", "debug")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The sweep's flags, checked, with the executor's defaults filled in."""
    parser = cli.parser()
    _run_arguments(parser)
    _job_arguments(parser)
    return _checked(parser.parse_args(argv))


def _run_arguments(parser: argparse.ArgumentParser) -> None:
    """What to run: the preset, the grid, shared values, the steps after training, the folder."""
    parser.add_argument(
        "--preset", default="tiny", help=f"one of {', '.join(TRAIN_PRESETS)} (default tiny)"
    )
    parser.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="KEY=V1,V2,..",
        help="a grid axis (repeatable): the runs are the product of all axes",
    )
    cli.add_set(parser, "a config value shared by every run (as empirical.train --set)")
    parser.add_argument(
        "--then",
        action="append",
        default=[],
        metavar="'STEP [ARGS]'",
        help=f"a post-hoc step after training (repeatable, in order): {', '.join(plan.STEPS)}",
    )
    parser.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="DIR",
        help="the sweep folder (rerun with the same DIR to resume)",
    )


def _job_arguments(parser: argparse.ArgumentParser) -> None:
    """Where and how the jobs run: executor, parallelism, resources, waiting."""
    parser.add_argument(
        "--executor", choices=EXECUTORS, default="local", help="where jobs run (default local)"
    )
    parser.add_argument(
        "--max-parallel",
        type=int,
        default=None,
        metavar="N",
        help="jobs at once (default: local 1, slurm 256)",
    )
    parser.add_argument(
        "--cpus-per-job",
        type=int,
        default=None,
        metavar="C",
        help="CPU cores (and threads) per job (default: local, the cores divided by "
        "--max-parallel; slurm 4; "
        "never more than OMP_NUM_THREADS where it is set)",
    )
    parser.add_argument(
        "--gpus-per-job",
        type=int,
        default=0,
        metavar="G",
        help="GPUs per job (default 0; local jobs see GPUs only if >= 1)",
    )
    parser.add_argument(
        "--timeout-min",
        type=int,
        default=None,
        metavar="M",
        help="wall-clock limit per job in minutes (default: local 10080, slurm 1440): a local "
        "job is stopped "
        "(rerun to resume), a slurm job requeued",
    )
    parser.add_argument("--slurm-partition", default=None, metavar="P", help="SLURM partition")
    parser.add_argument(
        "--no-wait",
        action="store_true",
        help="submit and return (follow with: python -m pipeline.sweep status DIR)",
    )


def _checked(args: argparse.Namespace) -> argparse.Namespace:
    """The flags that go together, in range, and the executor's defaults."""
    for flag, value, low in (
        ("--max-parallel", args.max_parallel, 1),
        ("--cpus-per-job", args.cpus_per_job, 1),
        ("--gpus-per-job", args.gpus_per_job, 0),
        ("--timeout-min", args.timeout_min, 1),
    ):
        if value is not None and value < low:
            raise ValueError(f"{flag} {value}: must be >= {low}")
    if args.executor != "slurm" and args.slurm_partition:
        raise ValueError(
            f"--slurm-partition: only with --executor slurm (got --executor {args.executor})"
        )
    if args.no_wait and args.executor != "slurm":
        raise ValueError(
            f"--no-wait: only with --executor slurm (a {args.executor} job needs this process)"
        )
    args.max_parallel = args.max_parallel or (256 if args.executor == "slurm" else 1)
    args.timeout_min = args.timeout_min or (1440 if args.executor == "slurm" else 10080)
    return args


def run_sweep(argv: Sequence[str] | None) -> int:
    """Train the runs of the grid that are not done and run their steps (see the module
    docstring)."""
    args = parse_args(argv)
    if args.preset not in TRAIN_PRESETS:
        raise ValueError(f"--preset {args.preset!r}: valid: {', '.join(TRAIN_PRESETS)}")
    steps = tuple(plan.parse_step(text) for text in args.then)
    out = cli.output_dir(args.out, "--out")
    specs = plan.expand(args.preset, plan.parse_grid(args.grid), args.overrides, out)
    # every chained step's flags and values, before anything is written or trained
    for step in steps:
        step.check(out / "runs" / specs[0].name)
        step.check_runs(specs)
    if cli.checking(args):
        return 0
    if args.executor == "slurm" and shutil.which("sbatch") is None:
        raise ValueError(
            "--executor slurm: no SLURM here (sbatch is not on PATH); use --executor local on "
            "this machine"
        )
    for spec in specs:
        check_folder(out / "runs" / spec.name, spec.cfg)
    todo = [s for s in specs if plan.pending(out / "runs" / s.name, steps)]
    if not todo:
        print(
            f"all {len(specs)} runs of {out} have finished every step; nothing to do "
            f"(collect them: python -m pipeline.sweep collect {out})"
        )
        return 0
    return _launch(args, out, steps, specs, todo)


def _launch(
    args: argparse.Namespace,
    out: Path,
    steps: tuple,
    specs: Sequence[plan.RunSpec],
    todo: Sequence[plan.RunSpec],
) -> int:
    """Submit the runs still to do (after their shared probes) and follow them, or leave
    (--no-wait)."""
    threads = job_threads(args, os.environ)
    command = tuple(getattr(sys, "orig_argv", sys.argv))
    _write_sweep_file(args, out, specs, command)
    ex = make_executor(args, out / "logs", threads)
    print(
        f"sweep: {len(todo)} of {len(specs)} runs to do in {out}/runs ({args.executor}, "
        f"{args.max_parallel} at once, "
        f"{threads} threads each)",
        file=sys.stderr,
    )

    def make_job(spec: plan.RunSpec) -> jobs.RunJob:
        return jobs.RunJob(
            str((out / "runs" / spec.name).resolve()),
            spec.cfg.preset,
            spec.overrides,
            steps,
            threads,
            command,
            raise_errors=args.executor != "debug",
        )

    previous = signal.signal(signal.SIGTERM, interrupt) if args.executor == "local" else None
    try:
        depend = _probes_first(ex, args, out, todo, threads)
        if depend is None:
            return 1
        if args.no_wait:
            return submit_and_leave(ex, out, todo, make_job, depend)
        state = follow(ex, args, out, todo, make_job)
    except KeyboardInterrupt:
        jobs_left = (
            "the local jobs were stopped"
            if args.executor == "local"
            else "the cluster jobs keep running"
        )
        print(
            f"sweep: interrupted; {jobs_left}. Run the same command again to resume (finished runs "
            "are skipped)",
            file=sys.stderr,
        )
        return 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return _report(out, len(specs) - len(todo) + len(state.done), len(specs), state.failed)


def _probes_first(
    ex, args: argparse.Namespace, out: Path, todo: Sequence[plan.RunSpec], threads: int
) -> list[str] | None:
    """Train the shared probes the runs lack (SLURM: queue them, and the runs after them). Returns
    the probe jobs the runs depend on, or None when a probe failed (then no run starts)."""
    depend, failures = run_probes(
        ex, args, probe_jobs(todo, out, threads, args.executor != "debug")
    )
    if failures:
        print(
            "the shared probe failed to train, so no run was started:\n  " + "\n  ".join(failures)
        )
        return None
    if depend:  # SLURM: the runs wait in the queue for the probe job
        ex.update_parameters(slurm_dependency="afterok:" + ":".join(depend))
    return depend


def _write_sweep_file(
    args: argparse.Namespace, out: Path, specs: Sequence[plan.RunSpec], command: tuple
) -> None:
    """DIR/sweep.json: the command's settings and every run's folder name (status lists runs not
    started)."""
    doc = {
        "preset": args.preset,
        "grid": args.grid,
        "set": args.overrides,
        "then": args.then,
        "executor": args.executor,
        "runs": [s.name for s in specs],
        "stamp": stamp(command=command),
    }
    write_json(out / "sweep.json", doc)


def _report(out: Path, finished: int, total: int, failed: dict[str, str]) -> int:
    """The sweep's end in words; exit code 1 when a run failed."""
    print(f"{finished} of {total} runs finished in {out}/runs; {len(failed)} failed")
    for name, why in failed.items():
        print(f"  {name}: {why}")
    if not failed:
        print(f"collect them: python -m pipeline.sweep collect {out}")
    return 1 if failed else 0


@cli.command
def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "collect":
        return collect_mod.main(argv[1:])
    if argv and argv[0] == "status":
        return sweep_status.status(argv[1:])
    return run_sweep(argv)


if __name__ == "__main__":
    raise SystemExit(main())
