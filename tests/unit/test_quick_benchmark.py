"""benchmarks/quick_preset.py: the goal is judged on every seed measured, and a results file holds one setting."""

import json

import pytest

pytest.importorskip("torch")  # the script reads seed lists as empirical.ensemble does

from benchmark_script import load  # noqa: E402

quick = load("quick_preset")


def line(minutes, composed, turn=2500.0):
    return {
        "run": "r",
        "minutes": minutes,
        "timed_from_start": True,
        "train_minutes": minutes - 0.5,
        "steps_per_s": 6.2,
        "device": "cpu (2 threads)",
        "precision": "bf16",
        "memorized": {"corner": "10", "share": 0.9, "step": 1800.0},
        "turn_step": turn,
        "composed_step": composed,
        "best": {"accuracy": 0.9, "step": 4000.0},
        "final_step": 4000.0,
        "final": {"11": 0.8, "01": 0.2},
    }


def test_the_goal_needs_five_seeds_four_composing_and_none_over_fifteen_minutes():
    good = [line(14.0, 3200.0)] * 4 + [line(14.5, None)]
    assert quick.summary(good)["meets_goal"]
    assert not quick.summary(good[:4])["meets_goal"]  # four seeds are not five
    assert not quick.summary([*good[:3], line(14.0, None), line(14.5, None)])["meets_goal"]
    assert not quick.summary([*good[:4], line(15.2, None)])["meets_goal"]  # one run too long
    doc = {"seeds": {str(i): x for i, x in enumerate(good)}, "summary": quick.summary(good)}
    table = quick.report(doc)
    assert "| 4 | 14.5 | 6.20 | 10 (0.90 at 1,800) | 2,500 | - | 11 0.80, 01 0.20 |" in table
    assert "composed in 4 of 5 seeds; longest run 14.5 min" in table


def test_a_results_file_of_another_setting_is_refused(tmp_path, capsys):
    out = tmp_path / "q.json"
    out.write_text(json.dumps({"settings": ["precision=fp32"], "seeds": {}}))
    with pytest.raises(SystemExit):
        quick.main(["--json", str(out), "--seeds", "0"])
    assert "holds runs with --set ['precision=fp32']" in capsys.readouterr().err


class Process:
    """A started run that ends after ``polls`` polls, with ``code``."""

    def __init__(self, polls, code=0):
        self.polls, self.returncode = polls, None
        self.code = code

    def poll(self):
        self.polls -= 1
        if self.polls <= 0:
            self.returncode = self.code
        return self.returncode


def test_at_once_starts_every_seed_then_times_each_to_its_own_end(tmp_path, monkeypatch):
    clock = iter(range(0, 1_000_000, 60))  # each reading a minute after the last
    monkeypatch.setattr(quick.time, "perf_counter", lambda: next(clock))
    monkeypatch.setattr(quick.time, "sleep", lambda s: None)
    ends = {0: 9, 1: 3, 2: 6, 3: 1, 4: 2}  # polls until each seed ends: seed 3 first, seed 0 last
    starts = []

    def start(run, seed, settings, threads=None):
        starts.append((seed, threads))
        return Process(ends[seed]), 0, True  # all started at 0

    monkeypatch.setattr(quick, "start", start)
    monkeypatch.setattr(quick, "measure", lambda run, minutes, fresh, load: line(minutes, 3000.0))
    monkeypatch.setattr(quick.os, "cpu_count", lambda: 16)
    out = tmp_path / "q.json"
    assert (
        quick.main(["--json", str(out), "--seeds", "0-4", "--at-once", "--runs", str(tmp_path)])
        == 0
    )
    assert starts == [(seed, 3) for seed in range(5)]  # all started first, 16 cores over 5 seeds
    doc = json.loads(out.read_text())
    assert list(doc["seeds"]) == ["3", "4", "1", "2", "0"]  # recorded as they ended
    minutes = {seed: x["minutes"] for seed, x in doc["seeds"].items()}
    assert minutes["3"] < minutes["4"] < minutes["1"] < minutes["2"] < minutes["0"]
    assert {(x["at_once"], x["threads"]) for x in doc["seeds"].values()} == {(5, 3)}
    starts.clear()  # rerun: every seed is held, nothing starts
    quick.main(["--json", str(out), "--seeds", "0-4", "--at-once", "--threads", "2"])
    assert starts == []


def test_at_once_names_a_failed_seed_after_recording_the_others(tmp_path, monkeypatch):
    monkeypatch.setattr(quick.time, "sleep", lambda s: None)
    codes = {0: 0, 1: 1}
    monkeypatch.setattr(
        quick,
        "start",
        lambda run, seed, settings, threads=None: (Process(1, codes[seed]), 0.0, True),
    )
    monkeypatch.setattr(quick, "measure", lambda run, minutes, fresh, load: line(minutes, 3000.0))
    out = tmp_path / "q.json"
    with pytest.raises(SystemExit, match=r"seeds \[1\] failed"):
        quick.main(["--json", str(out), "--seeds", "0-1", "--at-once", "--runs", str(tmp_path)])
    assert list(json.loads(out.read_text())["seeds"]) == ["0"]


def test_threads_go_with_at_once(tmp_path, capsys):
    with pytest.raises(SystemExit):
        quick.main(["--json", str(tmp_path / "q.json"), "--threads", "2"])
    assert "--threads 2: give a whole number >= 1, with --at-once" in capsys.readouterr().err
