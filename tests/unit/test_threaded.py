"""The threaded engine (empirical.training.threaded): members meet only at records, and each is accounted alone."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

pytest.importorskip("torch")

from empirical.ensemble import to_record  # noqa: E402
from empirical.training.run import Diverged  # noqa: E402
from empirical.training.threaded import Threaded  # noqa: E402
from empirical.training.loop import Meter  # noqa: E402


class FakeRun:
    """What the engine touches of a run: its step, config, model's mode, meter, wall-clock and update."""

    def __init__(self, update):
        self.step, self.wall, self.meter = 0, 0.0, Meter()
        self.cfg = SimpleNamespace(steps=100, lr=1e-3, clip=1.0)
        self.vdm = SimpleNamespace(train=lambda: None)
        self.update = update

    def train_step(self):
        self.update(self)
        self.step += 1
        return {"total": float(self.step)}


def test_members_run_ahead_of_each_other_between_records():
    """Member 0's first update waits until member 1 has made three: with the members meeting after every update
    (a barrier a step) member 1 would wait for member 0 and neither would finish."""
    ahead = threading.Event()

    def slow(run):
        if run.step == 0:
            assert ahead.wait(timeout=20), (
                "member 1 did not run ahead: the members met after an update"
            )

    def fast(run):
        if run.step == 2:
            ahead.set()

    runs = [FakeRun(slow), FakeRun(fast)]
    ens = Threaded(runs, workers=2)
    try:
        assert ens.train_steps(3) == [None, None]
    finally:
        ens.close()
    assert [r.step for r in runs] == [3, 3]
    assert [r.meter.count for r in runs] == [3, 3] and runs[0].meter.sums == {"total": 6.0}
    assert all(r.wall > 0 for r in runs)


def test_a_member_that_diverges_stops_alone():
    def bad(run):
        if run.step == 1:
            raise Diverged(run.cfg, run.step + 1, "loss nan, gradient norm nan", None)

    runs = [FakeRun(bad), FakeRun(lambda run: None)]
    ens = Threaded(runs, workers=2)
    try:
        results = ens.train_steps(4)
    finally:
        ens.close()
    assert isinstance(results[0], Diverged) and results[1] is None
    assert [r.step for r in runs] == [1, 4] and [r.meter.count for r in runs] == [1, 4]


@pytest.mark.parametrize(
    "step, target, n",
    [(0, 30, 3), (3, 30, 2), (5, 30, 5), (10, 30, 2), (12, 30, 3), (28, 30, 2), (28, 29, 1)],
)
def test_the_members_meet_at_the_next_record(step, target, n):
    """Training records every 5 steps, saves every 10, evaluations at 3 and 12; the target ends a span too."""
    cfg = SimpleNamespace(log_every=5, save_every=10)
    assert to_record(cfg, step, {3, 12}, target) == n


def bench(name):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_paired_benchmark_reads_its_ways_and_takes_medians_of_paired_ratios(capsys):
    """benchmarks/ensemble_pair.py: engine specs, the median over rounds of each round's ratio (over the span and
    over the members' own time), and --ways it refuses."""
    speed, pair = bench("ensemble_speed"), bench("ensemble_pair")
    assert speed.way("threaded") == ("threaded", False, None)
    assert speed.way("threaded-lockstep@5e-5") == ("threaded", True, 5e-5)

    def rnd(sep, span, own):
        return {"separate": {"span": sep, "own": sep}, "threaded": {"span": span, "own": own}}

    rounds = [rnd(4.0, 3.6, 4.0), rnd(2.0, 2.0, 2.2), rnd(4.0, 4.4, 4.4)]
    # each round's own ratio (0.9, 1.0, 1.1), not the ratio of medians over rounds (3.6 / 4.0)
    assert pair.summary(rounds) == {
        "threaded_over_separate": 1.0,
        "threaded_own_over_separate": 1.1,
    }
    assert pair.ways_given("separate,threaded@1e-4") == ["separate", "threaded@1e-4"]
    for bad, said in [
        ("separate,foo", "'foo' is not a way"),
        ("separate,threaded@abc", "'threaded@abc' is not a way"),
        ("threaded", "name separate"),
        ("separate,threaded,threaded", "each way once"),
    ]:
        with pytest.raises(SystemExit):
            pair.main(["--ways", bad])
        assert said in capsys.readouterr().err


def test_a_timing_s_workers_start_together(tmp_path):
    """benchmarks/ensemble_speed.py's gate: a worker waits for the others of its timing, and says so when one
    never comes."""
    speed = bench("ensemble_speed")
    speed.gate(str(tmp_path / "0"), 1)  # alone: at once
    with pytest.raises(RuntimeError, match="1 worker\\(s\\) never got ready"):
        speed.gate(str(tmp_path / "1"), 3, wait=0.2)
    (tmp_path / "ready" / "2").touch()
    speed.gate(str(tmp_path / "1"), 3, wait=0.2)


def test_an_error_in_one_member_stops_the_others_at_their_next_update():
    """Not at the end of their stretch: an interrupted ensemble stops within an update, as before."""
    import time

    def fails(run):
        if run.step == 1:
            raise RuntimeError("boom")

    # the failing member second: the first's result is awaited first
    runs = [FakeRun(lambda run: time.sleep(0.002)), FakeRun(fails)]
    ens = Threaded(runs, workers=2)
    try:
        with pytest.raises(RuntimeError, match="boom"):
            ens.train_steps(5000)
    finally:
        ens.close()
    assert runs[1].step == 1 and runs[0].step < 1000


def test_the_neighbour_benchmark_refuses_an_empty_measurement(capsys):
    """benchmarks/ensemble_gil.py: --rounds and --steps at least 1, said before anything is timed."""
    gil = bench("ensemble_gil")
    with pytest.raises(SystemExit):
        gil.main(["--rounds", "0"])
    assert "both must be at least 1" in capsys.readouterr().err
