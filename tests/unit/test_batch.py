"""python -m pipeline.batch: the runs of a job file, N at a time, stopped at a deadline, packed; and the job
lines it reads (issue #51: the shell runner joined lines, cut quoted '#', passed CR into paths, trained nothing
on PARALLEL=two and accepted folders outside the runs)."""

from __future__ import annotations

import contextlib
import tarfile
import textwrap
import time

import pytest

from pipeline import batch, job_file, keep
from pipeline import processes

FAKE_TRAIN = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    args = sys.argv[1:]
    out = Path(args[args.index("--out") + 1])
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text("{}")
    (out / "metrics.jsonl").write_text('{"step": 1}\\n')
    (out / "checkpoints").mkdir(exist_ok=True)
    (out / "checkpoints" / "last.pt").write_text("weights")
    print("training", args[0])
    if args[0] == "fail":
        sys.exit(3)
    if args[0] == "slow":
        time.sleep(60)
    """
)


@pytest.fixture
def fake_train(tmp_path, monkeypatch):
    script = tmp_path / "fake_train.py"
    script.write_text(FAKE_TRAIN)
    monkeypatch.setattr(batch, "TRAIN", (str(script),))
    monkeypatch.setattr(batch, "MIN_LEFT", 0)
    monkeypatch.setattr(processes, "GRACE", 2)
    return script


def test_crlf_blank_lines_comments_and_quoted_hashes_are_read_line_by_line(tmp_path):
    jobs = tmp_path / "jobs.txt"
    jobs.write_bytes(
        b"a --set 'note=#1'  # a comment\r\n \r\n# only a comment\r\nb --preset smoke\r\n"
    )
    assert job_file.lines(jobs) == [(1, "a", ["--set", "note=#1"]), (4, "b", ["--preset", "smoke"])]


def test_one_folder_in_three_spellings_is_one_folder(tmp_path):
    jobs = tmp_path / "jobs.txt"
    jobs.write_text("a --preset smoke\n./a --preset smoke\na/ --preset smoke\n")
    assert [folder for _, folder, _ in job_file.lines(jobs)] == ["a", "a", "a"]
    found = job_file.problems(jobs, tmp_path / "runs")
    assert len(found) == 2 and all("the folder is also line 1's" in line for line in found)


@pytest.mark.parametrize("folder", ["../../outside", "/abs/run", "a/../../b", "~/run"])
def test_a_folder_outside_the_runs_is_refused(tmp_path, capsys, folder):
    jobs = tmp_path / "jobs.txt"
    jobs.write_text(f"ok --preset smoke\n{folder} --preset smoke\n")
    assert batch.main([str(jobs), "--runs", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert f"{jobs}:2 ({folder}): the folder must" in err and err.count("\n") == 1
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    "flags, said",
    [
        (["--parallel", "two"], "argument --parallel: invalid int value: 'two'"),
        (["--parallel", "0"], "--parallel 0: must be a whole number >= 1"),
        (["--threads", "-1"], "--threads -1: must be a whole number >= 1"),
        (["--seconds", "0"], "--seconds 0.0: must be > 0"),
        (["--pack", "runs.zip"], "--pack runs.zip: must end in .tgz or .gz"),
    ],
)
def test_bad_flags_stop_before_anything_trains(tmp_path, capsys, flags, said):
    jobs = tmp_path / "jobs.txt"
    jobs.write_text("a --preset smoke\n")
    with pytest.raises(SystemExit) if "invalid" in said else contextlib.nullcontext():
        assert batch.main([str(jobs), "--runs", str(tmp_path / "runs"), *flags]) == 2
    assert said in capsys.readouterr().err


def test_a_failed_run_is_named_and_the_next_still_trains(tmp_path, fake_train):
    runs = tmp_path / "runs"
    said = [batch.train_one(f, [f], runs, time.monotonic() + 60, 1) for f in ("fail", "good")]
    assert said[0].startswith("fail: FAILED (exit 3") and said[1] == "good: finished"
    assert (runs / "good" / ".finished").exists() and not (runs / "fail" / ".finished").exists()
    assert "training fail" in (runs / "fail.log").read_text()
    assert batch.train_one("good", ["good"], runs, time.monotonic() + 60, 1).endswith(
        "already finished"
    )


def test_the_deadline_stops_a_run_which_is_not_marked_finished(tmp_path, fake_train):
    runs, start = tmp_path / "runs", time.monotonic()
    said = batch.train_one("slow", ["slow"], runs, start + 3, 1)
    assert said == "slow: stopped at the deadline; rerun to resume"
    assert time.monotonic() - start < 30 and not (runs / "slow" / ".finished").exists()


def test_pack_holds_the_kept_files_and_the_logs_never_a_checkpoint(tmp_path, fake_train):
    runs = tmp_path / "my runs"  # a space in the folder: the logs are packed too
    for folder in ("a", "b/c"):
        batch.train_one(folder, ["good"], runs, time.monotonic() + 60, 1)
    packed = tmp_path / "out" / "runs.tgz"
    assert batch.pack(runs, ["a", "b/c"], packed) == 6
    with tarfile.open(packed) as tar:
        names = sorted(tar.getnames())
    assert names == sorted(
        f"my runs/{f}"
        for f in ("a/config.json", "a/metrics.jsonl", "a.log", "b/c/config.json")
        + ("b/c/metrics.jsonl", "b/c.log")
    )


def test_keep_copies_into_a_folder_with_the_metrics_compressed(tmp_path, fake_train):
    runs = tmp_path / "runs"
    batch.train_one("a", ["good"], runs, time.monotonic() + 60, 1)
    assert keep.main([str(runs / "a"), str(tmp_path / "kept")]) == 0
    assert sorted(p.name for p in (tmp_path / "kept").iterdir()) == [
        "config.json",
        "metrics.jsonl.gz",
        "train.log",
    ]
    assert keep.main([str(tmp_path), str(tmp_path / "kept2")]) == 2


def test_a_finished_mark_holds_its_line_and_an_edited_line_trains_again(tmp_path, fake_train):
    # issue #74: a finished line edited (steps, seed) was "already finished"
    runs = tmp_path / "runs"
    assert batch.train_one("good", ["good"], runs, time.monotonic() + 60, 1) == "good: finished"
    assert (runs / "good" / ".finished").read_text().strip() == "good"
    again = batch.train_one("good", ["good", "--set", "seed=1"], runs, time.monotonic() + 60, 1)
    assert again == "good: finished"  # trained (resumed) again, not skipped
    assert (runs / "good" / ".finished").read_text().strip() == "good --set seed=1"


@pytest.mark.parametrize("ask", ["--help", "-h", "--version", "--check-args"])
def test_a_line_that_trains_nothing_is_refused(tmp_path, capsys, ask):
    jobs = tmp_path / "jobs.txt"
    jobs.write_text(f"h --preset smoke {ask}\n")
    assert batch.main([str(jobs), "--runs", str(tmp_path / "runs")]) == 2
    assert f"{ask} prints and exits: nothing would train" in capsys.readouterr().err


def test_kill_9_of_the_batch_ends_the_run_it_started(tmp_path):
    """Issue #74: after kill -9 of pipeline.batch its run trained on past --seconds, beside a rerun's."""
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    fake = tmp_path / "fake_train.py"
    fake.write_text(
        "import os, sys, time\nfrom pathlib import Path\n"
        "out = Path(sys.argv[sys.argv.index('--out') + 1])\nout.mkdir(parents=True, exist_ok=True)\n"
        "(out / 'pid').write_text(str(os.getpid()))\ntime.sleep(120)\n"
    )
    (tmp_path / "jobs.txt").write_text("a --preset smoke\n")
    runner = (
        "import sys\nfrom pipeline import batch\n"
        "batch.TRAIN = (sys.argv[1],)\nbatch.MIN_LEFT = 0\nsys.exit(batch.main(sys.argv[2:]))\n"
    )
    runs = tmp_path / "runs"
    argv = [
        sys.executable,
        "-c",
        runner,
        str(fake),
        str(tmp_path / "jobs.txt"),
        "--runs",
        str(runs),
    ]
    parent = subprocess.Popen(argv, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(2400):  # the batch checks its line (a few seconds), then starts the run
            if (runs / "a" / "pid").is_file() and (runs / "a" / "pid").read_text():
                break
            time.sleep(0.05)
        child = int((runs / "a" / "pid").read_text())
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    for _ in range(100):
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        os.kill(child, signal.SIGKILL)
        pytest.fail("the run went on training after its batch was killed")
