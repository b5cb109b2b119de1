"""fitting.ladder on real runs (the evidence logs under results/ladder/evidence), with their known readings."""

import json
import shutil
from pathlib import Path

import pytest

from fitting.analyses.ladder_rows import row, varying
from fitting.ladder import main
from core.files import plain_or_gz

EVIDENCE = Path(__file__).resolve().parents[2] / "results" / "ladder" / "evidence"
COMPOSED = (
    EVIDENCE / "l3-24px" / "ema0999-c08-seed1"
)  # 24 px: eight small blue objects at step 6,000
ELICITED = (
    EVIDENCE.parent / "base" / "seed=0,sep.color=0.8"
)  # small at 6,000 steps, over-prompted at every checkpoint
STUCK = (
    EVIDENCE / "tiny-20k-steps" / "sep.color-0.8"
)  # tiny at 20,000 steps: drawn as 01 to the end


def test_a_composing_run_reads_memorize_turn_compose():
    r = row(COMPOSED, "11")
    assert r["memorized"]["corner"] == "10"  # blue, large: the stronger concept's training class
    assert r["turn"]["step"] is not None and r["turn"]["step"] < r["composed_step"]
    assert (
        r["composed_step"] == 3453 and r["censored_at"] is None
    )  # naive accuracy 0.62 from step 3,453
    assert r["best"] == {"accuracy": pytest.approx(0.984, abs=0.01), "step": 6000.0}
    assert (
        r["final"]["11"] > 0.9
        and r["cost"]["steps"] == 6000
        and r["cost"]["device"] == "cpu (2 threads)"
    )
    assert 20 < r["cost"]["minutes"] < 25 and 5 < r["cost"]["steps_per_s"] < 6


def test_a_run_that_never_composes_is_censored_not_zero():
    r = row(STUCK, "11")
    assert r["memorized"]["corner"] == "01" and r["turn"]["step"] is None
    assert r["composed_step"] is None and r["censored_at"] == 20000
    assert r["best"]["accuracy"] < 0.25


def test_the_table_shows_what_varies(tmp_path, capsys):
    out = tmp_path / "ladder.json"
    assert main([str(COMPOSED), str(STUCK), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    rows = json.loads(out.read_text())["rows"]
    assert [Path(r["run"]).name for r in rows] == [COMPOSED.name, STUCK.name]
    keys = varying(rows)
    assert keys[:2] == ["seed", "sep"] and {
        "resolution",
        "channels",
        "ema",
        "p_cfg",
        "clip",
        "steps",
    } <= set(keys)
    assert "batch" not in keys and "lr" not in keys  # the same in both
    assert "| ema0999-c08-seed1 | 1 | color 0.8, size 0.4 |" in text and "no (to 20,000)" in text
    assert "10 (0.47 at 3,146)" in text and "3,453" in text


def test_the_capability_column_comes_with_an_elicited_run(tmp_path, capsys):
    r = row(ELICITED, "11")
    assert (
        r["capability_step"] == 4000 and r["composed_step"] == 4400
    )  # over-prompting shows 11 before naive prompting
    assert main([str(COMPOSED), "--out", str(tmp_path / "a.json")]) == 0
    assert "capability" not in capsys.readouterr().out.splitlines()[0]
    assert main([str(ELICITED), str(COMPOSED), "--out", str(tmp_path / "b.json")]) == 0
    head, _, elicited, plain = capsys.readouterr().out.splitlines()[:4]
    assert head.split(" | ")[-2] == "capability"
    assert elicited.split(" | ")[-3:-1] == ["4,400", "4,000"] and plain.split(" | ")[-2] == "-"


def test_a_key_older_runs_lack_is_no_difference():
    new = {"config": {"seed": 0, "ema": 0.999, "ema_warmup": False}}
    old = {"config": {"seed": 1, "ema": 0.999}}  # saved before ema_warmup existed
    assert varying([new, old]) == ["seed", "sep"]
    warm = {"config": {"seed": 2, "ema": 0.999, "ema_warmup": True}}
    assert varying([new, old, warm]) == ["seed", "sep", "ema_warmup"]


def test_bad_input_exits_2_naming_it(tmp_path, capsys):
    assert main([str(tmp_path), "--out", str(tmp_path / "l.json")]) == 2
    assert "not a training run (no config.json)" in capsys.readouterr().err
    assert main([str(COMPOSED), "--out", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err
    assert main([str(COMPOSED), "--class", "22", "--out", str(tmp_path / "l.json")]) == 2
    assert (
        "no naive trajectory of class '22'; the log has 00, 01, 10, 11" in capsys.readouterr().err
    )
    run = tmp_path / "run"
    shutil.copytree(COMPOSED, run)
    before = (run / "config.json").read_text()
    assert main([str(run), "--out", str(run / "config.json")]) == 2  # an input is never overwritten
    assert (run / "config.json").read_text() == before
    metrics = plain_or_gz(run / "metrics.jsonl")
    metrics.write_bytes(metrics.read_bytes()[:-40])  # a copy cut short
    assert main([str(run), "--out", str(tmp_path / "l.json")]) == 2
    err = capsys.readouterr().err
    assert "metrics.jsonl" in err and ("not a whole gzip file" in err or "not JSON" in err)
    metrics.unlink()
    assert main([str(run), "--out", str(tmp_path / "l.json")]) == 2
    assert "no metrics.jsonl" in capsys.readouterr().err
