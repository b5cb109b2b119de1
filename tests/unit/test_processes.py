"""pipeline.processes, the one runner of jobs as processes under pipeline.batch and the sweep's
--executor local (issue #53: two ways to run a grid, and local sweeps needed submitit): a callable's value and
its error come back, the job's threads and GPUs are capped, a job past its limit or killed fails naming why, and
a local or debug sweep needs no submitit."""

from __future__ import annotations

import argparse
import functools
import os
import signal
import sys
import time

import pytest

from pipeline import processes
from pipeline.executor import make_executor


def executor(tmp_path, **kw) -> processes.ProcessExecutor:
    return processes.ProcessExecutor(tmp_path / "logs", threads=kw.pop("threads", 1), **kw)


def test_a_job_returns_its_value_from_its_own_process_with_its_threads_and_no_gpu(tmp_path):
    ex = executor(tmp_path, threads=3)
    names = ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "CUDA_VISIBLE_DEVICES", processes.LOG_VARIABLE)
    env = {name: ex.submit(functools.partial(os.getenv, name)) for name in names}
    pid = ex.submit(os.getpid)
    seen = {name: job.result() for name, job in env.items()}
    assert seen["OMP_NUM_THREADS"] == seen["NUMBA_NUM_THREADS"] == "3"
    assert seen["CUDA_VISIBLE_DEVICES"] == ""  # no GPU asked for: none seen
    log = env[processes.LOG_VARIABLE].paths.stderr
    assert seen[processes.LOG_VARIABLE] == str(log)  # where the job records its errors
    assert pid.result() != os.getpid() and pid.done()
    assert pid.paths.result.exists() and not list(ex.folder.glob("*.tmp"))


def test_a_job_that_raises_fails_with_its_error_line_and_a_traceback_in_its_log(tmp_path):
    job = executor(tmp_path).submit(functools.partial(int, "seven"))
    with pytest.raises(processes.JobFailed, match=r"^ValueError: invalid literal for int\(\)"):
        job.result()
    assert "Traceback" in job.paths.stderr.read_text()


def test_a_killed_job_fails_naming_its_exit_and_its_last_error(tmp_path):
    said = "echo 'torch.OutOfMemoryError: out of memory' >&2; sleep 4"
    job = executor(tmp_path).submit(functools.partial(os.system, said))
    deadline = time.monotonic() + 30
    while "OutOfMemoryError" not in job.paths.stderr.read_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    job._process.send_signal(signal.SIGKILL)
    with pytest.raises(
        processes.JobFailed,
        match=f"job {job.job_id} ended with exit -9 and no result: torch.OutOfMemoryError: out of",
    ):
        job.result()


def test_stopping_a_job_unwinds_it_and_stops_the_step_it_started(tmp_path):
    """A local sweep's job runs its --then steps as child processes: SIGTERM must not leave one running."""
    from pipeline.sweep_jobs import run_step

    job = executor(tmp_path).submit(functools.partial(run_step, ["sleep", "31.5"]))
    deadline = time.monotonic() + 30
    while not sleeping() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert sleeping(), "the step never started"
    processes.end(job._process)
    assert job._process.returncode == 128 + signal.SIGTERM  # unwound on SIGTERM, not killed
    deadline = time.monotonic() + 10
    while sleeping() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not sleeping()


def sleeping() -> bool:
    import subprocess

    found = subprocess.run(["pgrep", "-f", "sleep 31.5"], capture_output=True, text=True)
    return bool(found.stdout.strip())


def test_job_ids_are_unique_and_a_result_that_cannot_be_pickled_fails_in_words(tmp_path):
    import threading

    first, second = executor(tmp_path), executor(tmp_path)  # two sweeps on one folder, one process
    a, b = first.submit(functools.partial(threading.Lock)), second.submit(os.getpid)
    assert a.job_id != b.job_id and a.paths.job != b.paths.job
    with pytest.raises(processes.JobFailed, match="the job's result could not be pickled"):
        a.result()
    assert not list(first.folder.glob("*.tmp"))
    assert processes.work(tmp_path / "x.pkl") == 2  # not a job file: never overwritten


def test_a_job_past_its_time_limit_is_stopped_and_says_so(tmp_path):
    job = executor(tmp_path, timeout_min=1 / 60).submit(functools.partial(time.sleep, 60))
    with pytest.raises(processes.JobFailed, match="ran past its time limit and was stopped") as err:
        job.result()
    assert "log:" not in str(err.value)  # the sweep adds the log once
    assert job._process.returncode == 128 + signal.SIGTERM  # asked to stop, and it did


def test_asked_gpus_are_the_first_of_those_this_process_sees():
    assert processes.visible_gpus(0, {}) == []
    assert processes.visible_gpus(2, {}) == ["0", "1"]
    assert processes.visible_gpus(1, {"CUDA_VISIBLE_DEVICES": "3,5"}) == ["3"]
    with pytest.raises(ValueError, match="--gpus-per-job 2: CUDA_VISIBLE_DEVICES='3' lists 1 GPU"):
        processes.visible_gpus(2, {"CUDA_VISIBLE_DEVICES": "3"})


def test_an_in_process_job_runs_at_submission_and_raises_at_result():
    ex = processes.InProcessExecutor()
    assert ex.submit(lambda: 7).result() == 7
    failed = ex.submit(functools.partial(int, "x"))
    assert failed.done()
    with pytest.raises(ValueError):
        failed.result()


@pytest.mark.parametrize("name", ["local", "debug"])
def test_local_and_debug_sweeps_need_no_submitit(tmp_path, monkeypatch, name):
    monkeypatch.setitem(sys.modules, "submitit", None)  # as where it is not installed
    args = argparse.Namespace(executor=name, gpus_per_job=0, timeout_min=5, max_parallel=1)
    ex = make_executor(args, tmp_path / "logs", 1)
    assert ex.submit(functools.partial(sum, [1, 2])).result() == 3


def test_a_slurm_sweep_without_submitit_says_how_to_install_it(tmp_path, monkeypatch):
    from core import cli

    monkeypatch.setitem(sys.modules, "submitit", None)
    args = argparse.Namespace(executor="slurm", gpus_per_job=0, timeout_min=5, max_parallel=1)
    with pytest.raises(
        cli.UsageError, match=r"needs submitit: pip install 'concept-dynamics\[sweep\]'"
    ):
        make_executor(args, tmp_path / "logs", 1)
