"""What a sweep's jobs run, wherever they run (a process of pipeline.processes, a SLURM array task
started by submitit, or the calling process for ``--executor debug``): train one run's probe, or
train one run and chain its post-hoc steps.

A run job holds the run folder's lock for its whole life, so two sweeps (or a requeued job and its
stale twin) never work on one run at once; a job that finds the lock taken returns ``busy`` at once.
Each stage is recorded in ``RUN/stages.json`` when it finishes, so a resubmitted job skips finished
stages, and training itself resumes from its last checkpoint. On preemption or timeout submitit
calls :meth:`RunJob.checkpoint` and requeues the same job, which then resumes.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from empirical.training import lock
from pipeline import sweep_plan as plan
from pipeline.processes import LOG_VARIABLE, THREAD_VARIABLES
from empirical.training.config import make_config


def thread_exports(threads: int) -> list[str]:
    """Shell lines that cap a job's threads before Python starts (torch and numba read them at
    import)."""
    return [f"export {name}={threads}" for name in THREAD_VARIABLES]


def limit_threads(threads: int) -> None:
    """Cap this process's threads (and its children's): parallel jobs must not oversubscribe the
    cores."""
    for name in THREAD_VARIABLES:
        os.environ[name] = str(threads)
    import torch

    torch.set_num_threads(threads)


def log_path() -> str | None:
    """The log of the running job: a local process's (pipeline.processes), or submitit's; None when
    called directly (the debug executor)."""
    if os.environ.get(LOG_VARIABLE):
        return os.environ[LOG_VARIABLE]
    try:
        import submitit

        return str(submitit.JobEnvironment().paths.stderr)
    except Exception:  # not inside a submitit job (a direct call, or the debug executor)
        return None


def run_step(argv: list[str]) -> tuple[int, str | None]:
    """Run a chained step, its error output passed on to the job's log as it comes; returns (exit
    code, the step's own error message: its last ``python -m ...: error:`` line, else its last line
    of error output). A job stopped meanwhile (SIGTERM in a local worker) stops the step too."""
    tail: list[str] = []
    with subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, errors="replace") as proc:
        try:
            for line in proc.stderr:
                sys.stderr.write(line)
                tail = [*tail[-49:], line]
        except BaseException:  # the job is stopped: so is its step
            proc.kill()
            raise
    return proc.returncode, plan.error_line(tail)


@dataclass
class ProbeJob:
    """Train the shared probe a run config names (once: provide_probe holds the probe folder's
    lock)."""

    preset: str
    overrides: tuple[str, ...]
    threads: int
    raise_errors: bool = True

    def __call__(self) -> dict:
        from empirical.training.probes import load_probe, provide_probe

        limit_threads(self.threads)
        cfg = make_config(self.preset, self.overrides)
        try:
            provide_probe(cfg, Path("."), progress=False)
            _, path, digest = load_probe(cfg, Path("."))
        except Exception as err:
            if self.raise_errors:
                raise
            return {"status": "failed", "message": f"{type(err).__name__}: {err}"}
        return {"status": "done", "probe": path, "hash": digest}

    def checkpoint(self, *args, **kwargs):
        """submitit's requeue hook: the same job again (probe training restarts; it is minutes at
        most)."""
        from submitit.helpers import DelayedSubmission

        return DelayedSubmission(self)


@dataclass
class RunJob:
    """Train one run (or resume it) and run its --then steps; returns {"status": "done" | "busy" |
    "failed", ...}.

    ``raise_errors``: re-raise a failure after recording it (so a cluster shows the job as failed);
    off for the debug executor, which would open a debugger on it."""

    run: str
    preset: str
    overrides: tuple[str, ...]
    steps: tuple[plan.Step, ...]
    threads: int
    command: tuple[str, ...]
    raise_errors: bool = True

    def __call__(self) -> dict:
        limit_threads(self.threads)
        run = Path(self.run)
        try:
            with lock.hold(run):
                return self._work(run)
        except lock.Busy as err:
            return {"status": "busy", "message": str(err)}

    def _work(self, run: Path) -> dict:
        stage = "train"
        try:
            todo = plan.pending(run, self.steps)
            if "train" in todo:
                from empirical.training.loop import train

                t0 = time.perf_counter()
                summary = train(
                    make_config(self.preset, self.overrides),
                    run,
                    progress=False,
                    command=self.command,
                )
                plan.mark(
                    run,
                    "train",
                    {"step": summary["step"], "seconds": round(time.perf_counter() - t0, 1)},
                )
            for step in self.steps:
                if step.text in todo:
                    stage, t0 = step.text, time.perf_counter()
                    rc, said = run_step(step.argv(run))
                    if rc:
                        raise RuntimeError(
                            f"step {step.text!r} exited with code {rc}"
                            + (f": {said}" if said else "")
                            + f" (python {shlex.join(step.argv(run)[1:])})"
                        )
                    plan.mark(run, step.text, {"seconds": round(time.perf_counter() - t0, 1)})
        except Exception as err:
            message = (
                f"{type(err).__name__}: {err}"
                if not isinstance(err, (ValueError, RuntimeError))
                else str(err)
            )
            plan.mark(
                run,
                stage,
                {"error": message, "log": log_path(), "traceback": traceback.format_exc(limit=-3)},
                failed=True,
            )
            if self.raise_errors:
                raise
            return {"status": "failed", "stage": stage, "message": message}
        return {"status": "done"}

    def checkpoint(self, *args, **kwargs):
        """submitit's requeue hook (preemption, timeout): the same job; it resumes from the run's
        last checkpoint."""
        from submitit.helpers import DelayedSubmission

        return DelayedSubmission(self)
