"""python -m pipeline.sweep end to end: a 2x2 smoke grid on the local executor (killed and resumed, then
collected, then rerun to do nothing), chained post-hoc steps and failures on the debug executor, and
the SLURM path through a fake sbatch (the job scripts and the array are checked, since no cluster is here)."""

import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline import sweep_plan as plan
from pipeline.sweep import main
from core.files import read_json
from core.trajectory import read_csv

GRID = ["--preset", "smoke", "--grid", "seed=0,1", "--grid", "sep.color=0.3,0.8"]
RUNS = [
    "seed=0,sep.color=0.3",
    "seed=0,sep.color=0.8",
    "seed=1,sep.color=0.3",
    "seed=1,sep.color=0.8",
]


def sweep_cmd(out: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pipeline.sweep",
        *GRID,
        "--executor",
        "local",
        "--max-parallel",
        "2",
        "--out",
        str(out),
        *extra,
    ]


def trained(out: Path) -> list[str]:
    return [r for r in RUNS if "train" in plan.read_state(out / "runs" / r)["done"]]


def files_under(folder: Path) -> dict[str, int]:
    return {str(p): p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}


@pytest.mark.slow  # long end to end: run with -m slow
def test_local_sweep_killed_resumed_collected_and_rerun_for_nothing(tmp_path):
    out = tmp_path / "sw"
    proc = subprocess.Popen(
        sweep_cmd(out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    deadline = time.monotonic() + 240
    while not trained(out) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)  # the sweep and every job it started, mid-work
    proc.wait()
    done_at_kill = trained(out)
    assert 1 <= len(done_at_kill) < 4, done_at_kill

    rerun = subprocess.run(sweep_cmd(out), capture_output=True, text=True, timeout=400)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "4 of 4 runs finished" in rerun.stdout
    assert f"{4 - len(done_at_kill)} of 4 runs to do" in rerun.stderr
    assert trained(out) == RUNS
    probes = sorted(p.parent for p in out.rglob("probe.pt"))
    assert probes == [out / "probe" / "color-size-8px"]  # one shared probe, none per run
    configs = [read_json(out / "runs" / r / "config.json") for r in RUNS]
    assert {c["probe"]["hash"] for c in configs} == {read_json(probes[0] / "probe.json")["hash"]}
    assert all(
        c["stamps"][-1]["commit"] is None or len(c["stamps"][-1]["commit"]) == 40 for c in configs
    )
    assert all("pipeline.sweep" in c["stamps"][0]["command"] for c in configs)
    for r in RUNS:
        naive = [
            t for t in read_csv(out / "runs" / r / "trajectories.csv") if t.protocol == "naive"
        ]
        assert len(naive) == 4 and all(
            list(t.step) == [0, 4, 17, 40] for t in naive
        )  # nothing lost or duplicated

    before = files_under(out / "runs")
    again = subprocess.run(sweep_cmd(out), capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and "nothing to do" in again.stdout
    assert files_under(out / "runs") == before

    assert main(["collect", str(out)]) == 0
    trajs = read_csv(out / "sweep.csv")
    assert len(trajs) == 16 and {t.run for t in trajs} == set(RUNS)
    rows = list(csv.DictReader((out / "covariates.csv").open()))
    assert [r["run"] for r in rows] == RUNS and [r["seed"] for r in rows] == ["0", "0", "1", "1"]
    assert {r["sep_color"] for r in rows} == {"0.3", "0.8"}
    signal_of = {r["sep_color"]: float(r["signal_color"]) for r in rows}
    assert signal_of["0.8"] > signal_of["0.3"] > 0


@pytest.mark.slow  # long end to end: run with -m slow
def test_then_steps_run_after_training_and_failures_name_their_run(tmp_path, capsys):
    out = tmp_path / "sw"
    base = [
        "--preset",
        "smoke",
        "--grid",
        "seed=0",
        "--executor",
        "debug",
        "--out",
        str(out),
        "--then",
        "elicit --protocols overprompt --classes 11 --every 2",
    ]
    assert main([*base, "--then", "turn --class 99"]) == 1
    text = capsys.readouterr().out
    assert "0 of 1 runs finished" in text and "seed=0:" in text and "turn --class 99" in text
    state = plan.read_state(out / "runs" / "seed=0")
    assert list(state["done"]) == ["train", "elicit --protocols overprompt --classes 11 --every 2"]
    assert (
        state["failed"]["stage"] == "turn --class 99"
        and "exited with code 2" in state["failed"]["error"]
    )
    assert read_json(out / "runs" / "seed=0" / "elicit" / "overprompt.json")["steps"]
    assert main(["status", str(out)]) == 1  # a failed stage counts in the exit code
    assert "FAILED at turn --class 99" in capsys.readouterr().out
    assert main(base) == 0  # without the failing step: nothing left to do
    assert "nothing to do" in capsys.readouterr().out


def test_a_folder_holding_other_runs_is_refused_before_anything_runs(tmp_path, capsys, smoke_probe):
    out = tmp_path / "sw"
    assert (
        main(
            [
                "--preset",
                "smoke",
                "--grid",
                "seed=0",
                "--set",
                f"probe={smoke_probe}",
                "--set",
                "steps=8",
                "--executor",
                "debug",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert (
        main(
            [
                "--preset",
                "smoke",
                "--grid",
                "seed=0",
                "--set",
                f"probe={smoke_probe}",
                "--set",
                "steps=9",
                "--executor",
                "debug",
                "--out",
                str(out),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "runs/seed=0 holds a run with another config (steps: 8 -> 9)" in err


@pytest.mark.parametrize(
    "argv, match",
    [
        (["--grid", "nonsense=1", "--out", "X"], "unknown key 'nonsense'"),
        (["--then", "train", "--out", "X"], "unknown step 'train'"),
        (
            ["--executor", "local", "--no-wait", "--out", "X"],
            "--no-wait: only with --executor slurm",
        ),
        (["--max-parallel", "0", "--out", "X"], "--max-parallel 0: must be >= 1"),
        (
            ["--slurm-partition", "gpu", "--out", "X"],
            "--slurm-partition: only with --executor slurm",
        ),
        (["collect", "X"], "X: not a sweep folder"),
    ],
)
def test_bad_sweeps_exit_2_naming_the_flag(tmp_path, capsys, monkeypatch, argv, match):
    monkeypatch.chdir(tmp_path)
    assert main(["--preset", "smoke", *argv] if argv[0] != "collect" else argv) == 2
    assert match in capsys.readouterr().err


FAKE_SBATCH = """#!/bin/sh
# a stand-in for SLURM's sbatch: keep the script, answer with a job id
n=$(cat "$CAPTURE/next" 2>/dev/null || echo 100)
echo $((n + 1)) > "$CAPTURE/next"
cp "$1" "$CAPTURE/job_$n.sh"
echo "Submitted batch job $n"
"""


def test_slurm_sweep_submits_a_probe_job_and_a_dependent_array(tmp_path, monkeypatch, capsys):
    bin_dir, capture = tmp_path / "bin", tmp_path / "capture"
    bin_dir.mkdir(), capture.mkdir()
    (bin_dir / "sbatch").write_text(FAKE_SBATCH)
    (bin_dir / "srun").write_text("#!/bin/sh\nexit 0\n")
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("CAPTURE", str(capture))
    out = tmp_path / "sw"
    assert (
        main(
            [
                *GRID,
                "--executor",
                "slurm",
                "--no-wait",
                "--max-parallel",
                "2",
                "--slurm-partition",
                "gpu",
                "--gpus-per-job",
                "1",
                "--cpus-per-job",
                "3",
                "--timeout-min",
                "30",
                "--then",
                "elicit --every 3",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert "submitted 4 runs as SLURM job 101 (after the probe job 100)" in capsys.readouterr().out
    probe, array = (capture / "job_100.sh").read_text(), (capture / "job_101.sh").read_text()
    assert "--array" not in probe and "#SBATCH --partition=gpu" in probe
    for line in (
        "#SBATCH --array=0-3%2",
        "#SBATCH --dependency=afterok:100",
        "#SBATCH --partition=gpu",
        "#SBATCH --gpus-per-node=1",
        "#SBATCH --cpus-per-task=3",
        "#SBATCH --time=30",
        "export OMP_NUM_THREADS=3",
    ):
        assert line in array, line
    assert "--dependency" not in probe
    from submitit.core.utils import DelayedSubmission

    jobs = [
        DelayedSubmission.load(p).function
        for p in sorted((out / "logs").glob("101_*_submitted.pkl"))
    ]
    assert sorted(Path(j.run).name for j in jobs) == RUNS
    assert all(j.threads == 3 and [s.text for s in j.steps] == ["elicit --every 3"] for j in jobs)
    assert all(
        f"probe={out.resolve()}/probe/{{concepts}}-{{resolution}}px" in j.overrides for j in jobs
    )


def test_a_probe_that_cannot_be_trained_stops_the_sweep_before_any_run(tmp_path, capsys):
    out = tmp_path / "sw"
    argv = [
        "--preset",
        "smoke",
        "--grid",
        "seed=0,1",
        "--set",
        "concepts=size,color",
        "--executor",
        "debug",
        "--out",
        str(out),
    ]
    assert main(argv) == 1
    text = capsys.readouterr().out
    assert (
        "the shared probe failed to train, so no run was started" in text
        and "no probe setup covers concepts" in text
    )
    assert not (out / "runs").exists()


def long_local_sweep(out: Path) -> list[str]:
    """A sweep of two smoke runs long enough (5,000 steps) to be stopped midway, two local jobs at once."""
    return [
        sys.executable,
        "-m",
        "pipeline.sweep",
        *("--preset", "smoke", "--grid", "seed=0,1", "--set", "steps=5000"),
        *("--executor", "local", "--max-parallel", "2", "--out", str(out)),
    ]


@pytest.mark.slow  # long end to end: run with -m slow
def test_stopping_a_sweep_started_in_the_background_stops_its_jobs(tmp_path):
    from empirical.training import lock

    out = tmp_path / "sw"
    cmd = long_local_sweep(out)
    ignore_sigint = lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)  # noqa: E731  (what `cmd &` in a script does)
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=ignore_sigint,
    )
    runs = [out / "runs" / "seed=0", out / "runs" / "seed=1"]
    try:
        deadline = time.monotonic() + 180
        while (
            not any((r / "metrics.jsonl").exists() and lock.held(r) for r in runs)
            and time.monotonic() < deadline
        ):
            time.sleep(0.2)
        assert any(lock.held(r) for r in runs), "no job started"
        os.kill(proc.pid, signal.SIGTERM)  # the sweep only, not its process group
        assert proc.wait(timeout=60) == 130
        assert "the local jobs were stopped" in proc.stderr.read().decode()
        deadline = time.monotonic() + 30
        while any(lock.held(r) for r in runs) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(lock.held(r) for r in runs)  # every job is gone: nothing trains on
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def processes_naming(folder: Path) -> list[str]:
    """Command lines of live processes that name `folder` (a local job's worker names its job file in the logs folder)."""
    found = subprocess.run(
        ["pgrep", "-af", str(folder)], capture_output=True, text=True
    ).stdout.splitlines()
    return [line for line in found if "pgrep" not in line]


@pytest.mark.parametrize(
    "phase, stop_group",
    [
        ("probe", True),
        pytest.param("probe", False, marks=pytest.mark.slow),  # the same stop by SIGTERM, 7 s
        pytest.param("train", True, marks=pytest.mark.slow),  # long end to end: run with -m slow
    ],
    ids=[
        "ctrl-c-while-the-probe-trains",
        "sigterm-while-the-probe-trains",
        "ctrl-c-while-runs-train",
    ],
)
def test_an_interrupted_sweep_stops_every_job_and_says_so_without_a_traceback(
    tmp_path, phase, stop_group
):
    out = tmp_path / "sw"
    cmd = long_local_sweep(out)
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
        # as a terminal's foreground command: Ctrl-C is not ignored, even when this test runs in the background
        # (a script's `cmd &` starts it, and so this test's children, with SIGINT ignored)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 180
        started = (
            (lambda: processes_naming(out / "logs"))
            if phase == "probe"
            else (lambda: any((out / "runs").glob("*/metrics.jsonl")))
        )
        while not started() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert started(), f"the {phase} never started"
        if stop_group:
            os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C in a terminal: the whole foreground group
        else:
            os.kill(proc.pid, signal.SIGTERM)  # `kill PID`, `timeout`: the sweep only
        assert proc.wait(timeout=60) == 130
        err = proc.stderr.read().decode()
        assert "the local jobs were stopped" in err and "Traceback" not in err, err
        deadline = time.monotonic() + 30
        while processes_naming(out) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not processes_naming(out)  # no job or its step trains on
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupt_while_jobs_start_is_held_then_raised_and_every_started_job_is_stopped(signum):
    """The window the end-to-end test above can only hit by chance: the interrupt arrives while a job is being
    submitted. It must not be lost (the sweep would wait for its jobs) nor cut the submission short (a job would
    train on unstopped): the started jobs are stopped, then the interrupt is raised."""
    import argparse

    from pipeline.executor import run_probes

    class Process:
        def __init__(self):
            self.signals = []

        def poll(self):
            return None

        def send_signal(self, sig):
            self.signals.append(sig)

    class Job:
        def __init__(self):
            self._process = Process()

    class Executor:
        def __init__(self):
            self.jobs = []

        def submit(self, job):
            if not self.jobs:
                os.kill(os.getpid(), signum)  # arrives while the first job starts
            child = subprocess.run(
                ["grep", "SigBlk", "/proc/self/status"], capture_output=True, text=True
            )
            self.blocked = int(child.stdout.split()[1], 16) & (1 << (signal.SIGINT - 1))
            self.jobs.append(Job())
            return self.jobs[-1]

    # as in a sweep run in a terminal (even when this test runs in the background, with SIGINT ignored): Ctrl-C
    # raises KeyboardInterrupt, and so does SIGTERM (the sweep's own handler)
    previous = {
        sig: signal.signal(sig, signal.default_int_handler)
        for sig in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        ex = Executor()
        with pytest.raises(KeyboardInterrupt):
            run_probes(ex, argparse.Namespace(executor="local"), {"a": object(), "b": object()})
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    assert len(ex.jobs) == 2  # both submitted: the interrupt waited for the submission to end
    assert all(job._process.signals == [signal.SIGTERM] for job in ex.jobs)  # and both were stopped
    assert ex.blocked  # the jobs' processes start with Ctrl-C blocked: it reaches the sweep alone
    assert not signal.pthread_sigmask(signal.SIG_BLOCK, set()) & {
        signal.SIGINT
    }  # the sweep's mask restored
