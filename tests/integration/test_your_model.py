"""The tutorial of docs/your-model.md, run as a user runs it: a stand-in model's checkpoints, a hand-made pixel
reader, the walk, then turn, capability, fit and the figure; the stand-in's known turn is recovered."""

import importlib.util
import json
from pathlib import Path

from core.trajectory import read_csv

ROOT = Path(__file__).resolve().parents[2]


def test_the_tutorial_runs_and_recovers_the_stand_ins_turn(tmp_path):
    spec = importlib.util.spec_from_file_location("your_model", ROOT / "examples" / "your_model.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    out = tmp_path / "mine"
    log = example.main(str(out))
    trajs = read_csv(log)
    assert {(t.protocol, t.label) for t in trajs} == {("naive", c) for c in example.CLASSES} | {
        ("overprompt", "11")
    }
    naive = {t.label: t for t in trajs if t.protocol == "naive"}
    for label in ("00", "01", "10"):  # the reader reads the learned training classes as themselves
        assert naive[label].accuracy[-1] >= 0.9
    summary = json.loads((out / "elicitation_summary.json").read_text())["summary"]["50%"]
    assert (
        summary["capability_first"] == 1 and summary["lags"][0] >= 1000
    )  # the hidden capability, by construction
    fits = json.loads((out / "fit" / "fit.json").read_text())
    fit = next(f for f in fits["fits"] if f["protocol"] == "naive" and f["class"] == "11")
    size = fit["switches"]["size"]
    assert (
        size["switched"] and size["t_switch_ci"][0] <= 3000 <= size["t_switch_ci"][1]
    )  # the stand-in's turn
    assert (out / "concept_space.png").stat().st_size > 10_000 and (out / "turn.json").exists()
    assert (out / "capability.png").stat().st_size > 10_000


def test_help_prints_the_usage_and_writes_nothing(tmp_path, monkeypatch, capsys):
    """Issue #51: '--help' was taken as the folder to write."""
    import pytest

    spec = importlib.util.spec_from_file_location("your_model", ROOT / "examples" / "your_model.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        example.cli(["--help"])
    assert (
        stop.value.code == 0 and "usage: python examples/your_model.py" in capsys.readouterr().out
    )
    assert list(tmp_path.iterdir()) == []
