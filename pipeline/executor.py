"""Where a sweep's jobs run and how it follows them: the executor for --executor (processes on this
machine, this process, or submitit's SLURM arrays), the threads each job gets, the shared probes
trained first, and the loop that submits the runs at most --max-parallel at once, waits for runs
another process holds, and reports each job's end (its error line from the job log when submitit
gives none). Interrupts stop local jobs, never lose a run.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

from pipeline import processes
from pipeline import sweep_jobs as jobs
from pipeline import sweep_plan as plan
from pipeline.processes import last_error
from empirical.training import lock
from empirical.training.probes import probe_folder
from core.progress import bar as progress_bar
from core import cli

POLL_S = 1.0


def cores() -> int:
    """CPU cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS
        return os.cpu_count() or 1


def job_threads(args: argparse.Namespace, env) -> int:
    """Threads per job: --cpus-per-job, else the cores divided by --max-parallel (local) or 4
    (slurm), never more than a positive OMP_NUM_THREADS the user set (a user's thread cap is theirs
    to set)."""
    if args.cpus_per_job:
        return args.cpus_per_job
    default = 4 if args.executor == "slurm" else max(1, cores() // args.max_parallel)
    user = env.get("OMP_NUM_THREADS", "").strip()
    return min(default, int(user)) if user.isdigit() and int(user) > 0 else default


def make_executor(args: argparse.Namespace, folder: Path, threads: int):
    """The executor for --executor: processes on this machine (local), this process (debug), or
    submitit's SLURM executor with the job resources set (the only one that needs submitit)."""
    if args.executor == "local":
        return processes.ProcessExecutor(folder, threads, args.gpus_per_job, args.timeout_min)
    if args.executor == "debug":
        return processes.InProcessExecutor()
    try:
        import submitit
    except ImportError:
        raise cli.UsageError(
            "python -m pipeline.sweep --executor slurm needs submitit: pip install "
            "'concept-dynamics[sweep]' "
            "(or pip install submitit); --executor local needs nothing more"
        ) from None
    ex = submitit.AutoExecutor(folder=folder, cluster="slurm")
    params: dict[str, Any] = {
        "name": f"sweep-{folder.parent.name}",
        "timeout_min": args.timeout_min,
        "cpus_per_task": threads,
        "slurm_setup": jobs.thread_exports(threads),
        "slurm_array_parallelism": args.max_parallel,
    }
    if args.gpus_per_job:
        params["gpus_per_node"] = args.gpus_per_job
    if args.slurm_partition:
        params["slurm_partition"] = args.slurm_partition
    ex.update_parameters(**params)
    return ex


@dataclass
class Follow:
    """The jobs of a sweep as they run: queued, running, done, failed, and runs in use elsewhere
    (busy)."""

    specs: dict[str, plan.RunSpec]
    queued: list[str]
    running: dict[str, Any] = field(default_factory=dict)
    busy: list[str] = field(default_factory=list)
    done: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)

    def submit(self, names: Sequence[str], ex, executor: str, make_job) -> None:
        """Submit these runs' jobs (SLURM: as one array) and mark them running."""
        if executor == "slurm" and len(names) > 1:
            with ex.batch():
                submitted = [ex.submit(make_job(self.specs[n])) for n in names]
            self.running.update(zip(names, submitted))
            return
        with starting_local_jobs(executor):
            for n in names:
                self.running[n] = ex.submit(make_job(self.specs[n]))

    def finish(self, name: str, job) -> str:
        """Read a finished job's result; returns what happened to the run, in words."""
        del self.running[name]
        try:
            result = job.result()
        # the job raised (its message is recorded in the run's stages.json too)
        except Exception as err:
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
        log = job_log(job)
        message = with_cause(str(result.get("message")), log)
        self.failed[name] = f"{message}; log: {log}"
        return f"FAILED ({message})"


def job_log(job) -> Path | None:
    """A job's error log (None for a job run in this process)."""
    return getattr(getattr(job, "paths", None), "stderr", None)


def with_cause(message: str, log: Path | str | None) -> str:
    """A failed job's message with its cause from the job log when the message itself has none
    (submitit reports a job that died in its own code as 'failed during processing with trace:
    -----')."""
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
    """Submit the runs' jobs and follow them to the end (local and debug: at most --max-parallel at
    once; slurm: one array). Runs found in use by another process are resubmitted once their lock is
    free."""
    state = Follow({s.name: s for s in specs}, [s.name for s in specs])
    bar = progress_bar(total=len(specs), desc="sweep", unit="run", enabled=progress)
    limit = {"local": args.max_parallel, "debug": 1}.get(args.executor, len(specs))
    try:
        while state.queued or state.running or state.busy:
            state.queued += [n for n in state.busy if not lock.held(out / "runs" / n)]
            state.busy = [n for n in state.busy if n not in state.queued]
            room = limit - len(state.running)
            if room > 0 and state.queued:
                now, state.queued = state.queued[:room], state.queued[room:]
                state.submit(now, ex, args.executor, make_job)
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
    """While local jobs start. They inherit SIGINT blocked, so Ctrl-C reaches the sweep alone, which
    stops them with SIGTERM (:func:`stop`), instead of every job printing its own KeyboardInterrupt.
    An interrupt that arrives meanwhile (Ctrl-C, or SIGTERM) is held, not lost, and raised as
    KeyboardInterrupt once the jobs have started, so the sweep knows every job it has to stop."""
    if executor != "local":
        yield
        return
    held: list[int] = []
    # the children inherit this thread's mask; another thread of the sweep (tqdm's monitor) may
    # still take a
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
        # a Ctrl-C held by the mask is recorded here
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    if held:
        raise KeyboardInterrupt


def stop(job) -> None:
    """Stop a local job: SIGTERM to its process, which ends it (the run resumes from its last
    checkpoint). Ctrl-C never reaches a job (it starts with SIGINT blocked), and a sweep started in
    the background ignores it."""
    process = getattr(job, "_process", None)
    if process is not None and process.poll() is None:
        process.send_signal(signal.SIGTERM)


def probe_jobs(
    specs: Sequence[plan.RunSpec], out: Path, threads: int, raise_errors: bool
) -> dict[str, jobs.ProbeJob]:
    """One job per shared probe the runs need that does not exist yet, keyed by its folder."""
    need = {}
    for spec in specs:
        path, exists = probe_folder(spec.cfg, out / "runs" / spec.name)
        if not exists:
            need.setdefault(
                str(path), jobs.ProbeJob(spec.cfg.preset, spec.overrides, threads, raise_errors)
            )
    return need


def run_probes(
    ex, args: argparse.Namespace, need: dict[str, jobs.ProbeJob]
) -> tuple[list[str], list[str]]:
    """Train the missing probes: wait for them (local, debug), or return their SLURM job ids for the
    runs to depend on. Returns (job ids, failures)."""
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
                failures.append(f"{path}: {result.get('message')}; log: {job_log(job)}")
    # no probe job may train on (two sweeps would then write one probe at once)
    except KeyboardInterrupt:
        if args.executor == "local":
            for job in submitted.values():
                stop(job)
        raise
    return [], failures


def submit_and_leave(
    ex, out: Path, todo: Sequence[plan.RunSpec], make_job, depend: list[str]
) -> int:
    """--no-wait (SLURM): submit the runs as one array (after the probe job, if any: `depend`) and
    return."""
    with ex.batch():
        submitted = [ex.submit(make_job(s)) for s in todo]
    ids = sorted({j.job_id.split("_")[0] for j in submitted})
    print(
        f"submitted {len(todo)} runs as SLURM job {', '.join(ids)}"
        + (f" (after the probe job {', '.join(depend)})" if depend else "")
        + f"; follow with: python -m pipeline.sweep status {out}"
    )
    return 0


def interrupt(signum, frame):
    """A SIGTERM handler: stop the sweep as Ctrl-C would (its local jobs are stopped too)."""
    raise KeyboardInterrupt
