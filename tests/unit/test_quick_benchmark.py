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


def test_at_once_starts_every_seed_before_waiting_and_shares_the_cores(tmp_path, monkeypatch):
    events = []

    def start(run, seed, settings, threads=None):
        events.append(("start", seed, threads))
        return seed, 0.0, True

    def wait(process, started):
        events.append(("wait", process))
        return 4.0 + process / 10

    monkeypatch.setattr(quick, "start", start)
    monkeypatch.setattr(quick, "wait", wait)
    monkeypatch.setattr(quick, "measure", lambda run, minutes, fresh, load: line(minutes, 3000.0))
    monkeypatch.setattr(quick.os, "cpu_count", lambda: 16)
    out = tmp_path / "q.json"
    assert (
        quick.main(["--json", str(out), "--seeds", "0-4", "--at-once", "--runs", str(tmp_path)])
        == 0
    )
    assert events[:5] == [("start", seed, 3) for seed in range(5)]  # 16 cores over 5 seeds
    assert [e[0] for e in events[5:]] == ["wait"] * 5
    doc = json.loads(out.read_text())
    assert doc["at_once"] == 5 and [x["minutes"] for x in doc["seeds"].values()] == [
        4.0,
        4.1,
        4.2,
        4.3,
        4.4,
    ]
    events.clear()  # rerun: every seed is held, nothing starts
    quick.main(["--json", str(out), "--seeds", "0-4", "--at-once", "--threads", "2"])
    assert events == []
