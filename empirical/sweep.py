"""Run a grid of training runs with submitit (on this machine or as SLURM job arrays), then collect them.

  python -m empirical.sweep --preset PRESET --grid KEY=V1,V2,.. [--grid ...] [--set KEY=VALUE ...]
         [--then 'STEP [ARGS]' ...] --executor {local,slurm,debug} [--max-parallel N]
         [--cpus-per-job C] [--gpus-per-job G] [--timeout-min M] [--slurm-partition P] [--no-wait] --out DIR
  python -m empirical.sweep collect DIR     # DIR/sweep.csv and DIR/covariates.csv
  python -m empirical.sweep status DIR      # what each run has done, what runs, what failed (and its log);
                                            # exit 1 when a run or stage failed

The runs are the product of the --grid values (every --set key is a grid key, seeds included: --grid
seed=0,1,2; tuple values are separated by ';': --grid 'channels=16,32;32,64'), each an ordinary run of
empirical.train in DIR/runs/<key=value,...>/ (config.json, trajectories.csv, metrics.jsonl,
checkpoints). Every run reads one shared probe, DIR/probe/<concepts>-<resolution>px, trained once by
a job the runs wait for. After training, each --then step runs on the run folder, in order:

  elicit ARGS      python -m empirical.elicit RUN ARGS          (e.g. --then 'elicit --every 3')
  capability ARGS  python -m fitting.capability RUN ARGS   (capability-figure: figures.capability RUN)
  turn ARGS        python -m fitting.turn RUN ARGS
  fit ARGS         python -m fitting.fit RUN/trajectories.csv ARGS   (fit-figure: figures.fit RUN/fit)
  figure ARGS      python -m figures.training RUN ARGS

so a whole study is one command. Every step's flags and values are checked by its own command
(``--check-args``: it reads and writes nothing) before anything is written, and a step that fails
later is reported with its own error line. Each run folder is locked while a job works on it (two sweeps, or a
resubmission, never train one run at once); each finished stage is recorded in RUN/stages.json. Run
the same command again at any time: finished runs are skipped (nothing is submitted when all are
done), interrupted ones resume from their last checkpoint, runs in use by another process are waited
for, and new --then steps run on runs that have trained.

Executors: local (jobs are processes on this machine, at most --max-parallel at once, default 1,
each capped to --cpus-per-job threads, default the cores divided by --max-parallel, or OMP_NUM_THREADS
where you set it lower: two torch jobs with default threads on two cores were measured 30x slower); slurm (one job array, at most
--max-parallel tasks at once, --slurm-partition, --gpus-per-job, --cpus-per-job, --timeout-min;
preempted or timed-out tasks are requeued and resume); debug (in this process, one after the other).
The command follows the jobs with a progress bar (runs done / running / failed) and lists the failed
runs with their logs at the end (exit code 1 if any failed); --no-wait submits and returns (slurm).
Logs of every job are in DIR/logs/.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

from empirical import collect as collect_mod
from empirical import jobs, lock, plan
from empirical.config import TRAIN_PRESETS, check_folder
from theory import cli
from theory.files import read_json, write_json
from theory.stamp import stamp

EXECUTORS = ("local", "slurm", "debug")
POLL_S = 1.0


def cores() -> int:
    """CPU cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS
        return os.cpu_count() or 1


def job_threads(args: argparse.Namespace, env) -> int:
    """Threads per job: --cpus-per-job, else the cores divided by --max-parallel (local) or 4 (slurm), never more
    than a positive OMP_NUM_THREADS the user set (a user's thread cap is theirs to set)."""
    if args.cpus_per_job:
        return args.cpus_per_job
    default = 4 if args.executor == "slurm" else max(1, cores() // args.max_parallel)
    user = env.get("OMP_NUM_THREADS", "").strip()
    return min(default, int(user)) if user.isdigit() and int(user) > 0 else default


def make_executor(args: argparse.Namespace, folder: Path, threads: int):
    """The submitit executor for --executor, with the job resources set."""
    try:
        import submitit
    except ImportError:
        raise cli.UsageError(
            "python -m empirical.sweep needs submitit: pip install 'concept-dynamics[sweep]' "
            "(or pip install submitit)"
        ) from None
    ex = submitit.AutoExecutor(folder=folder, cluster=args.executor)
    params: dict[str, Any] = {
        "name": f"sweep-{folder.parent.name}",
        "timeout_min": args.timeout_min,
        "cpus_per_task": threads,
    }
    if args.gpus_per_job:
        params["gpus_per_node"] = args.gpus_per_job
    if (
        args.executor == "local"
    ):  # local jobs inherit this environment (no setup shell, so a stop signal reaches them)
        os.environ.update({name: str(threads) for name in jobs.THREAD_VARIABLES})
    elif args.executor == "slurm":
        params["slurm_setup"] = jobs.thread_exports(threads)
        params["slurm_array_parallelism"] = args.max_parallel
        if args.slurm_partition:
            params["slurm_partition"] = args.slurm_partition
    ex.update_parameters(**params)
    return ex


@dataclass
class Follow:
    """The jobs of a sweep as they run: queued, running, done, failed, and runs in use elsewhere (busy)."""

    specs: dict[str, plan.RunSpec]
    queued: list[str]
    running: dict[str, Any] = field(default_factory=dict)
    busy: list[str] = field(default_factory=list)
    done: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)

    def finish(self, name: str, job) -> str:
        """Read a finished job's result; returns what happened to the run, in words."""
        del self.running[name]
        try:
            result = job.result()
        except (
            Exception
        ) as err:  # the job raised (its message is recorded in the run's stages.json too)
            result = {
                "status": "failed",
                "message": cli.one_line(str(err)).split(" Traceback")[0][-400:],
            }
        status = result.get("status")
        if status == "busy":
            self.busy.append(name)
            return f"waiting: {result.get('message')}"
        if status == "done":
            self.done.append(name)
            return "finished"
        log = getattr(getattr(job, "paths", None), "stderr", None)
        message = with_cause(str(result.get("message")), log)
        self.failed[name] = f"{message}; log: {log}"
        return f"FAILED ({message})"


def last_error(log: Path | str | None, lines: int = 200) -> str | None:
    """The last error line of a job's log (``SomeError: what``), or its last non-empty line; None without a log."""
    if log is None or not Path(log).is_file():
        return None
    tail = [
        ln.strip()
        for ln in Path(log).read_text(errors="replace").splitlines()[-lines:]
        if ln.strip()
    ]
    errors = [
        ln
        for ln in tail
        if ln.split(":", 1)[0].split(".")[-1].endswith(("Error", "Exception", "Interrupt"))
    ]
    return (errors or tail or [None])[-1]


def with_cause(message: str, log: Path | str | None) -> str:
    """A failed job's message with its cause from the job log when the message itself has none (submitit reports
    a job that died in its own code as 'failed during processing with trace: -----')."""
    if message.strip(" -:") and "with trace" not in message:
        return message
    cause = last_error(log)
    return f"{message.split(' with trace')[0]}: {cause}" if cause else message


def follow(
    ex,
    args: argparse.Namespace,
    out: Path,
    specs: Sequence[plan.RunSpec],
    make_job,
    *,
    progress: bool = True,
) -> Follow:
    """Submit the runs' jobs and follow them to the end (local and debug: at most --max-parallel at once;
    slurm: one array). Runs found in use by another process are resubmitted once their lock is free."""
    from tqdm import tqdm

    state = Follow({s.name: s for s in specs}, [s.name for s in specs])
    bar = tqdm(total=len(specs), desc="sweep", unit="run", disable=None if progress else True)

    def submit_all() -> None:
        names, state.queued = state.queued, []
        if args.executor == "slurm" and len(names) > 1:
            with ex.batch():
                submitted = [ex.submit(make_job(state.specs[n])) for n in names]
            state.running.update(zip(names, submitted))
            return
        with starting_local_jobs(args.executor):
            for n in names:
                state.running[n] = ex.submit(make_job(state.specs[n]))

    limit = (
        args.max_parallel
        if args.executor == "local"
        else 1
        if args.executor == "debug"
        else len(specs)
    )
    try:
        while state.queued or state.running or state.busy:
            state.queued += [n for n in state.busy if not lock.held(out / "runs" / n)]
            state.busy = [n for n in state.busy if n not in state.queued]
            room = limit - len(state.running)
            if room > 0 and state.queued:
                later, state.queued = state.queued[room:], state.queued[:room]
                submit_all()
                state.queued = later
            for name, job in list(state.running.items()):
                if job.done():
                    what = state.finish(name, job)
                    bar.write(f"sweep: {name}: {what}", file=sys.stderr)
                    bar.update(what in ("finished",) or what.startswith("FAILED"))
            bar.set_postfix(
                running=len(state.running),
                failed=len(state.failed),
                waiting=len(state.busy),
                refresh=False,
            )
            bar.refresh()
            if state.running or state.busy:
                time.sleep(POLL_S)
    except KeyboardInterrupt:
        if args.executor == "local":
            for job in state.running.values():
                stop(job)
        raise
    finally:
        bar.close()
    return state


@contextlib.contextmanager
def starting_local_jobs(executor: str) -> Iterator[None]:
    """While local jobs start. They inherit SIGINT blocked, so Ctrl-C reaches the sweep alone, which stops them
    with SIGTERM (:func:`stop`), instead of every submitit controller printing its own KeyboardInterrupt. An
    interrupt that arrives meanwhile (Ctrl-C, or SIGTERM) is held, not lost, and raised as KeyboardInterrupt
    once the jobs have started, so the sweep knows every job it has to stop."""
    if executor != "local":
        yield
        return
    held: list[int] = []
    # the children inherit this thread's mask; another thread of the sweep (tqdm's monitor) may still take a
    # Ctrl-C, so the sweep's own handlers record it instead of raising in the middle of a submission
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    handlers = {  # a sweep started in the background keeps ignoring Ctrl-C
        sig: signal.signal(sig, lambda signum, frame: held.append(signum))
        for sig in (signal.SIGINT, signal.SIGTERM)
        if signal.getsignal(sig) is not signal.SIG_IGN
    }
    try:
        yield
    finally:
        signal.pthread_sigmask(
            signal.SIG_SETMASK, mask
        )  # a Ctrl-C held by the mask is recorded here
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    if held:
        raise KeyboardInterrupt


def stop(job) -> None:
    """Stop a local job: SIGTERM to its controller, which passes it on to the job (submitit's own cancel sends
    SIGINT, which a sweep started in the background ignores)."""
    process = getattr(job, "_process", None)
    if process is not None and process.poll() is None:
        process.send_signal(signal.SIGTERM)


def probe_jobs(
    specs: Sequence[plan.RunSpec], out: Path, threads: int, raise_errors: bool
) -> dict[str, jobs.ProbeJob]:
    """One job per shared probe the runs need that does not exist yet, keyed by its folder."""
    need = {}
    for spec in specs:
        path = Path(spec.cfg.probe_path(str(out / "runs" / spec.name)))
        if not (path / "probe.pt").exists() and not (path.suffix == ".pt" and path.exists()):
            need.setdefault(
                str(path), jobs.ProbeJob(spec.cfg.preset, spec.overrides, threads, raise_errors)
            )
    return need


def run_probes(
    ex, args: argparse.Namespace, need: dict[str, jobs.ProbeJob]
) -> tuple[list[str], list[str]]:
    """Train the missing probes: wait for them (local, debug), or return their SLURM job ids for the runs to depend
    on. Returns (job ids, failures)."""
    if not need:
        return [], []
    submitted, failures = {}, []
    try:
        with starting_local_jobs(args.executor):
            for path, job in need.items():
                submitted[path] = ex.submit(job)
        if args.executor == "slurm":
            return [job.job_id for job in submitted.values()], []
        print(f"sweep: training {len(need)} shared probe(s): {', '.join(need)}", file=sys.stderr)
        for path, job in submitted.items():
            try:
                result = job.result()
            except Exception as err:
                result = {"status": "failed", "message": cli.one_line(str(err))[-300:]}
            if result.get("status") != "done":
                failures.append(f"{path}: {result.get('message')}; log: {job.paths.stderr}")
    except (
        KeyboardInterrupt
    ):  # no probe job may train on (two sweeps would then write one probe at once)
        if args.executor == "local":
            for job in submitted.values():
                stop(job)
        raise
    return [], failures


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = cli.parser("empirical.sweep", __doc__)
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
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a config value shared by every run (as empirical.train --set)",
    )
    parser.add_argument(
        "--then",
        action="append",
        default=[],
        metavar="'STEP [ARGS]'",
        help=f"a post-hoc step after training (repeatable, in order): {', '.join(plan.STEPS)}",
    )
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
        help="CPU cores (and threads) per job (default: local, the cores divided by --max-parallel; slurm 4; "
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
        help="wall-clock limit per job in minutes (default: local 10080, slurm 1440); slurm requeues on timeout",
    )
    parser.add_argument("--slurm-partition", default=None, metavar="P", help="SLURM partition")
    parser.add_argument(
        "--no-wait",
        action="store_true",
        help="submit and return (follow with: python -m empirical.sweep status DIR)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="DIR",
        help="the sweep folder (rerun with the same DIR to resume)",
    )
    args = parser.parse_args(argv)
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
    args = parse_args(argv)
    if args.preset not in TRAIN_PRESETS:
        raise ValueError(f"--preset {args.preset!r}: valid: {', '.join(TRAIN_PRESETS)}")
    steps = tuple(plan.parse_step(text) for text in args.then)
    out = cli.output_dir(args.out, "--out")
    specs = plan.expand(args.preset, plan.parse_grid(args.grid), args.overrides, out)
    for (
        step
    ) in steps:  # every chained step's flags and values, before anything is written or trained
        step.check(out / "runs" / specs[0].name)
        step.check_runs(specs)
    if cli.checking(args):
        return 0
    if args.executor == "slurm" and shutil.which("sbatch") is None:
        raise ValueError(
            "--executor slurm: no SLURM here (sbatch is not on PATH); use --executor local on this machine"
        )
    for spec in specs:
        check_folder(out / "runs" / spec.name, spec.cfg)
    todo = [s for s in specs if plan.pending(out / "runs" / s.name, steps)]
    if not todo:
        print(
            f"all {len(specs)} runs of {out} have finished every step; nothing to do "
            f"(collect them: python -m empirical.sweep collect {out})"
        )
        return 0
    threads = job_threads(args, os.environ)
    command = tuple(getattr(sys, "orig_argv", sys.argv))
    write_json(
        out / "sweep.json",
        {
            "preset": args.preset,
            "grid": args.grid,
            "set": args.overrides,
            "then": args.then,
            "executor": args.executor,
            "runs": [s.name for s in specs],
            "stamp": stamp(command=command),
        },
    )
    ex = make_executor(args, out / "logs", threads)
    print(
        f"sweep: {len(todo)} of {len(specs)} runs to do in {out}/runs ({args.executor}, {args.max_parallel} at once, "
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

    previous = signal.signal(signal.SIGTERM, _interrupt) if args.executor == "local" else None
    try:
        depend, failures = run_probes(
            ex, args, probe_jobs(todo, out, threads, args.executor != "debug")
        )
        if failures:
            print(
                "the shared probe failed to train, so no run was started:\n  "
                + "\n  ".join(failures)
            )
            return 1
        if depend:  # SLURM: the runs wait in the queue for the probe job
            ex.update_parameters(slurm_dependency="afterok:" + ":".join(depend))
        if args.no_wait:
            return submit_and_leave(ex, out, todo, make_job, depend)
        state = follow(ex, args, out, todo, make_job)
    except KeyboardInterrupt:
        print(
            "sweep: interrupted"
            + (
                "; the local jobs were stopped"
                if args.executor == "local"
                else "; the cluster jobs keep running"
            )
            + ". Run the same command again to resume (finished runs are skipped)",
            file=sys.stderr,
        )
        return 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    finished = len(specs) - len(todo) + len(state.done)
    print(f"{finished} of {len(specs)} runs finished in {out}/runs; {len(state.failed)} failed")
    for name, why in state.failed.items():
        print(f"  {name}: {why}")
    if not state.failed:
        print(f"collect them: python -m empirical.sweep collect {out}")
    return 1 if state.failed else 0


def submit_and_leave(
    ex, out: Path, todo: Sequence[plan.RunSpec], make_job, depend: list[str]
) -> int:
    """--no-wait (SLURM): submit the runs as one array (after the probe job, if any: `depend`) and return."""
    with ex.batch():
        submitted = [ex.submit(make_job(s)) for s in todo]
    ids = sorted({j.job_id.split("_")[0] for j in submitted})
    print(
        f"submitted {len(todo)} runs as SLURM job {', '.join(ids)}"
        + (f" (after the probe job {', '.join(depend)})" if depend else "")
        + f"; follow with: python -m empirical.sweep status {out}"
    )
    return 0


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def status(argv: Sequence[str] | None) -> int:
    parser = cli.parser(
        "empirical.sweep status",
        "What each run of a sweep has done: python -m empirical.sweep status DIR\n\n"
        "Exit codes: 0 when no run or stage has failed (done, running, interrupted or not started), 1 when "
        "any has (each named with its error and log), 2 for bad input.",
    )
    parser.add_argument("dir", type=Path, metavar="DIR")
    args = parser.parse_args(argv)
    if cli.checking(args):
        return 0
    rows = collect_mod.run_folders(args.dir)
    spec = args.dir / "sweep.json"
    if spec.exists():  # the sweep's own list: runs not started yet have no folder
        doc = read_json(spec, "sweep file (JSON)")
        names = doc.get("runs", []) if isinstance(doc, dict) else None
        if not isinstance(names, list) or not all(
            isinstance(n, str) and n and "/" not in n for n in names
        ):
            raise ValueError(
                f"{spec}: not a sweep file written by python -m empirical.sweep (it needs an object whose "
                "'runs' is a list of run folder names)"
            )
        rows += [args.dir / "runs" / n for n in names if not (args.dir / "runs" / n).is_dir()]
    if not rows:
        raise ValueError(
            f"{args.dir}: no runs (no run folder in runs/, no {spec.name} listing any); "
            "give the --out of python -m empirical.sweep"
        )
    counts: dict[str, int] = {}
    for run in rows:
        state = plan.read_state(run)
        if lock.held(run):
            key, what = (
                "running",
                f"running ({lock.holder(run)}), step {collect_mod.last_step(run)}",
            )
        elif "failed" in state:
            f = state["failed"]
            key, what = (
                "failed",
                f"FAILED at {f.get('stage')}: {f.get('error')}; log: {f.get('log')}",
            )
        elif state["done"]:
            key, what = "done", "done: " + ", ".join(state["done"])
        elif (run / "config.json").exists():
            key, what = (
                "interrupted",
                f"interrupted at step {collect_mod.last_step(run)} (rerun the sweep to resume)",
            )
        else:
            key, what = "not started", "not started"
        counts[key] = counts.get(key, 0) + 1
        print(f"{run.name}: {what}")
    print(f"{len(rows)} runs: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    return 1 if counts.get("failed") else 0


@cli.command("empirical.sweep")
def main(argv: Sequence[str] | None = None) -> int:
    """``python -m empirical.sweep``: see the module docstring."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "collect":
        return collect_mod.main(argv[1:])
    if argv and argv[0] == "status":
        return status(argv[1:])
    return run_sweep(argv)


if __name__ == "__main__":
    raise SystemExit(main())
