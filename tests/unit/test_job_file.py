"""python -m pipeline.job_file: every line of a job file checked before a batch trains anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.job_file import lines, main

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = sorted((ROOT / "results").glob("*/*jobs*.txt"))


def test_every_committed_job_file_is_good(tmp_path, capsys):
    """The job files a GPU or CPU session is asked to run: a bad line would stop the batch (the Δsize sweep
    first asked for sep.size=0.6, outside size's valid range, and was found only when its run started)."""
    assert COMMITTED, "no job files under results"
    assert main([*map(str, COMMITTED), "--runs", str(tmp_path)]) == 0
    assert "all good" in capsys.readouterr().out


def test_bad_lines_are_named_with_file_line_folder_and_reason(tmp_path, capsys):
    jobs = tmp_path / "jobs.txt"
    jobs.write_text(
        "# a comment line\n\n"
        "good --preset smoke --set steps=2  # a comment after a run\n"
        "wide --preset small --set sep.size=0.6\n"
        "good --preset smoke\n"
        "typo --preset nope\n"
        "out --preset smoke --out elsewhere\n"
        "flag --preset smoke --bogus 1\n"
    )
    assert main([str(jobs), "--runs", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert f"{jobs}:4 (wide): separation size=0.6 is outside the valid range (0, 0.4]" in err
    assert f"{jobs}:5 (good): the folder is also line 3's" in err
    assert f"{jobs}:6 (typo): unknown preset 'nope'; valid:" in err
    assert f"{jobs}:7 (out): names --out" in err
    assert f"{jobs}:8 (flag): unrecognized arguments: --bogus 1" in err
    assert ":3 (good)" not in err and "5 bad line(s); nothing was started" in err


def test_comments_and_quotes_are_read_as_the_shell_would(tmp_path):
    jobs = tmp_path / "jobs.txt"
    jobs.write_text("# all comment\nrun/a --set 'probe=runs/probe/{concepts}' # note\n  \n")
    assert lines(jobs) == [(2, "run/a", ["--set", "probe=runs/probe/{concepts}"])]


@pytest.mark.parametrize(
    "text, said", [("run 'open\n", "jobs.txt:1: No closing quotation"), (None, "no such file")]
)
def test_an_unreadable_file_is_one_line(tmp_path, capsys, text, said):
    jobs = tmp_path / "jobs.txt"
    if text is not None:
        jobs.write_text(text)
    assert main([str(jobs)]) == 2
    assert said in capsys.readouterr().err


def test_a_line_whose_probe_cannot_read_its_run_is_refused_before_training(tmp_path, capsys):
    """A probe of other concepts or resolution (or a shipped one that does not exist) failed only once
    the line's run started."""
    shipped = ROOT / "empirical" / "probes"
    jobs = tmp_path / "jobs.txt"
    jobs.write_text(
        "ok --preset small\n"
        "res --preset small --set resolution=32 --set probe="
        + str(shipped / "color-size-24px")
        + "\n"
        "three --preset small --set probe=" + str(shipped / "color-size-bg-24px") + "\n"
        "none --preset small-3d --set resolution=32\n"
    )
    assert main([str(jobs), "--runs", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert f"{jobs}:2 (res):" in err and "the run needs ('color', 'size') at 32 px" in err
    assert f"{jobs}:3 (three):" in err and "the probe reads ('color', 'size', 'bg') at 24 px" in err
    assert f"{jobs}:4 (none):" in err and "ships no probe for color-size-bg at 32 px" in err
    assert f"{jobs}:1 (ok)" not in err
