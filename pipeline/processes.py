"""Jobs as processes on this machine: the one runner under ``python -m pipeline.batch`` (a job
file's lines, each a ``python -m empirical.train`` process) and the sweep's ``--executor local``
(each job a Python callable, pickled and run by ``python -m pipeline.processes JOB.pkl``), so
neither needs submitit.

A process gets its own log, its threads capped (every pool in THREAD_VARIABLES), and a stop that
asks first (SIGTERM, then SIGKILL after GRACE seconds: training is kill-safe, so neither loses more
than the steps since the last checkpoint). A callable's job (plain pickle: a module-level function
or object, not a lambda) runs in a worker that unwinds on SIGTERM (its run's lock released, a
chained step it started stopped too) and writes its result (or its error line; the traceback goes to
its log) beside its log; a job whose process ended without one (killed, out of memory) fails with
the last error line of its log. Job ids are unique (host, pid, time, a random part), so a rerun
never reads an earlier job's files.
"""

from __future__ import annotations

import os
import pickle
import socket
import signal
import subprocess
import sys
import time
import traceback
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "NUMBA_NUM_THREADS",
)
GRACE = 15  # seconds a stopped process gets to end before it is killed
# a job's own log, for the errors it records (sweep_jobs.log_path)
LOG_VARIABLE = "CONCEPT_DYNAMICS_JOB_LOG"
WORKER = ("-m", "pipeline.processes")
SUBMITTED = "_submitted.pkl"


def thread_env(threads: int, gpus: Sequence[str] | None = None) -> dict[str, str]:
    """This process's environment with every thread pool capped at ``threads`` and, where ``gpus``
    is given, only those GPUs visible (an empty list: none)."""
    env = os.environ | {name: str(threads) for name in THREAD_VARIABLES}
    if gpus is not None:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(gpus)
    return env


def visible_gpus(wanted: int, env=os.environ) -> list[str]:
    """The first ``wanted`` GPUs of those this process sees (CUDA_VISIBLE_DEVICES where set, else 0,
    1, ...); ValueError where it lists fewer."""
    if "CUDA_VISIBLE_DEVICES" not in env:
        return [str(k) for k in range(wanted)]
    listed = [g.strip() for g in env["CUDA_VISIBLE_DEVICES"].split(",") if g.strip()]
    if len(listed) < wanted:
        raise ValueError(
            f"--gpus-per-job {wanted}: CUDA_VISIBLE_DEVICES={env['CUDA_VISIBLE_DEVICES']!r} lists "
            f"{len(listed)} GPU(s)"
        )
    return listed[:wanted]


def _die_with_parent() -> None:
    """In the child, before it runs (Linux): the kernel sends it SIGTERM when its parent dies, kill
    -9 included, so a killed batch leaves no run training on past its deadline beside a rerun."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: nothing to ask
        pass


def start(
    argv: Sequence[str],
    log: Path,
    env: dict[str, str],
    *,
    err: Path | None = None,
    die_with_parent: bool = False,
):
    """Start ``argv`` with its output appended to ``log`` (its error output to ``err`` where given);
    ``die_with_parent``: the child ends when the thread that started it dies
    (:func:`_die_with_parent`)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a") as out, open(err or os.devnull, "a") as errors:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=errors if err is not None else subprocess.STDOUT,
            env=env,
            preexec_fn=_die_with_parent if die_with_parent and sys.platform == "linux" else None,
        )


def end(proc: subprocess.Popen) -> None:
    """Stop a process: SIGTERM, then SIGKILL when it has not ended after GRACE seconds."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=GRACE)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def last_error(log: Path | str | None, lines: int = 200) -> str | None:
    """The last error line of a job's log (``SomeError: what``), or its last non-empty line; None
    without a log."""
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


class JobFailed(RuntimeError):
    """A job's callable raised, or its process ended without a result."""


@dataclass(frozen=True)
class Paths:
    """A job's files: its pickled callable, its result, its output and error logs."""

    job: Path
    result: Path
    stdout: Path
    stderr: Path


class ProcessJob:
    """A callable running in its own process (see :class:`ProcessExecutor`): ``done()``,
    ``result()``, and ``_process`` (the Popen the sweep stops on an interrupt)."""

    def __init__(self, job_id: str, paths: Paths, process: subprocess.Popen, timeout_s: float):
        self.job_id, self.paths, self._process = job_id, paths, process
        self._deadline = time.monotonic() + timeout_s
        self._timed_out = False

    def done(self) -> bool:
        """Whether the process has ended (a job past its time limit is stopped first)."""
        if self._process.poll() is None and time.monotonic() > self._deadline:
            self._stop_late()
        return self._process.poll() is not None

    def _stop_late(self) -> None:
        self._timed_out = True
        end(self._process)

    def result(self) -> Any:
        """Wait for the job; its callable's return value, or JobFailed with the job's error line."""
        try:
            self._process.wait(timeout=max(self._deadline - time.monotonic(), 0))
        except subprocess.TimeoutExpired:
            self._stop_late()
        if self._timed_out:
            raise JobFailed(
                f"job {self.job_id} ran past its time limit and was stopped (rerun to resume)"
            )
        if self.paths.result.exists():
            with open(self.paths.result, "rb") as fh:
                ok, value = pickle.load(fh)
            if ok:
                return value
            raise JobFailed(value)
        cause = last_error(self.paths.stderr)
        raise JobFailed(
            f"job {self.job_id} ended with exit {self._process.returncode} and no result"
            + (f": {cause}" if cause else "")
        )


class ProcessExecutor:
    """Run callables as processes on this machine, each with ``threads`` threads, ``gpus`` GPUs
    visible and a time limit; their files go in ``folder`` (JOBID_submitted.pkl, JOBID_result.pkl,
    JOBID_log.out, JOBID_log.err)."""

    def __init__(self, folder: Path, threads: int, gpus: int = 0, timeout_min: float = 10080):
        self.folder, self.threads, self.timeout_min = Path(folder), threads, timeout_min
        self.gpu_ids = visible_gpus(gpus)

    def submit(self, fn: Callable[[], Any]) -> ProcessJob:
        """Start ``fn()`` in a new process; returns its job at once."""
        host = socket.gethostname().split(".")[0]
        job_id = f"{host}_{os.getpid()}_{time.strftime('%Y%m%d-%H%M%S')}_{uuid.uuid4().hex[:6]}"
        stem = self.folder / job_id
        paths = Paths(
            *(
                Path(f"{stem}_{name}")
                for name in ("submitted.pkl", "result.pkl", "log.out", "log.err")
            )
        )
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(paths.job, "xb") as fh:  # a new id: never an earlier job's file
            pickle.dump(fn, fh)
        env = thread_env(self.threads, self.gpu_ids) | {LOG_VARIABLE: str(paths.stderr)}
        process = start(
            [sys.executable, *WORKER, str(paths.job)], paths.stdout, env, err=paths.stderr
        )
        return ProcessJob(job_id, paths, process, 60 * self.timeout_min)


class Finished:
    """A job run already (by :class:`InProcessExecutor`): ``done()`` is true, ``result()`` returns
    or raises."""

    job_id = "in-process"
    paths = None

    def __init__(self, fn: Callable[[], Any]):
        try:
            self._value, self._error = fn(), None
        except Exception as err:  # raised again by result(), as a process's job would
            self._value, self._error = None, err

    def done(self) -> bool:
        return True

    def result(self) -> Any:
        if self._error is not None:
            raise self._error
        return self._value


class InProcessExecutor:
    """Run callables in this process, one after the other, as they are submitted (the sweep's
    --executor debug)."""

    def submit(self, fn: Callable[[], Any]) -> Finished:
        return Finished(fn)


class Stopped(SystemExit):
    """SIGTERM in a worker: the job unwinds (locks released, a chained step stopped) and the process
    ends."""


def _stopped(signum, frame):
    raise Stopped(128 + signum)


def work(job: Path) -> int:
    """The worker: load the pickled callable (``JOBID_submitted.pkl``), call it, and pickle (True,
    its value) or (False, its error line) as ``JOBID_result.pkl``; the traceback goes to the error
    log."""
    if not job.name.endswith(SUBMITTED):
        print(
            f"{job}: not a job file (JOBID{SUBMITTED}, written by ProcessExecutor)", file=sys.stderr
        )
        return 2
    result = job.with_name(job.name.removesuffix(SUBMITTED) + "_result.pkl")
    try:
        with open(job, "rb") as fh:
            fn = pickle.load(fh)
        outcome = (True, fn())
    except Exception as err:
        traceback.print_exc()
        outcome = (False, f"{type(err).__name__}: {err}")
    tmp = result.with_suffix(".tmp")
    try:
        with open(tmp, "wb") as fh:
            pickle.dump(outcome, fh)
    except Exception as err:  # a value pickle cannot write
        outcome = (False, f"the job's result could not be pickled ({type(err).__name__}: {err})")
        with open(tmp, "wb") as fh:
            pickle.dump(outcome, fh)
    os.replace(tmp, result)
    return 0 if outcome[0] else 1


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _stopped)
    if len(sys.argv) != 2:
        sys.exit(f"usage: python -m pipeline.processes JOBID{SUBMITTED}")
    sys.exit(work(Path(sys.argv[1])))
