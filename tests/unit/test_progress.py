"""core.progress: a bar on a terminal, plain lines in a log (issue #52: empirical.elicit was silent for 5
minutes when its output went to a file), nothing when disabled."""

from __future__ import annotations

import io
import sys

from core import progress


class _Log(io.StringIO):
    def isatty(self) -> bool:
        return False


def test_a_log_gets_plain_lines_with_the_count_and_time_left(monkeypatch):
    log = _Log()
    monkeypatch.setattr(sys, "stderr", log)
    shown = progress.bar(total=4, desc="elicit", unit="ckpt", every=0)
    for _ in range(2):
        shown.update(1)
    shown.set_postfix(loss="0.12")
    shown.close()
    lines = log.getvalue().splitlines()
    assert lines[0].startswith("elicit: 1/4 ckpt (25%),") and "s left" in lines[0]
    assert lines[-1].startswith("elicit: 2/4 ckpt (50%)") and lines[-1].endswith("; loss 0.12")


def test_iterating_counts_each_item_and_says_the_end_once(monkeypatch):
    log = _Log()
    monkeypatch.setattr(sys, "stderr", log)
    shown = progress.bar(range(3), desc="probe", unit="step")  # every 30 s: only the closing line
    assert list(shown) == [0, 1, 2]
    shown.close()
    assert log.getvalue().splitlines() == [log.getvalue().splitlines()[0]]
    assert log.getvalue().startswith("probe: 3/3 step (100%)")


def test_disabled_says_nothing(monkeypatch):
    log = _Log()
    monkeypatch.setattr(sys, "stderr", log)
    assert list(progress.bar(range(3), desc="x", enabled=False, every=0)) == [0, 1, 2]
    assert log.getvalue() == ""


def test_none_never_reaches_a_user():
    """Issue #52: 'seed=None', '--protocol None --run None', 'naive 50%/80% at None/None'."""
    from core import cli

    assert [cli.shown(v) for v in (None, float("nan"), 0.5, 3, "a")] == ["-", "-", "0.5", "3", "a"]
    assert cli.selection(protocol="naive", run=None, seed=None) == "--protocol naive"
    assert cli.selection(run=None) == "no selection"


def test_fit_names_only_the_selection_that_was_given(tmp_path, capsys):
    import numpy as np

    from fitting.fit import main
    from core.trajectory import Trajectory, write_csv

    log = write_csv(
        tmp_path / "t.csv", [Trajectory(np.arange(5), np.full((5, 1), 0.5), ("color",), "00")]
    )
    assert main([str(log), "--run", "nope", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "no trajectory matches --run nope;" in err and "None" not in err


def test_the_plain_lines_take_every_call_a_tqdm_bar_takes(monkeypatch):
    """pipeline.sweep's follow loop calls write, set_postfix and refresh (a sweep crashed on refresh)."""
    log = _Log()
    monkeypatch.setattr(sys, "stderr", log)
    shown = progress.bar(total=2, desc="sweep", unit="run", every=0)
    shown.write("sweep: a: finished", file=sys.stderr)
    shown.update(True)
    shown.set_postfix(running=1, failed=0, refresh=False)
    shown.refresh()
    shown.close()
    said = log.getvalue().splitlines()
    assert said[0] == "sweep: a: finished" and said[-1].startswith("sweep: 1/2 run (50%)")
