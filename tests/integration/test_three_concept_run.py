"""A three-concept run end to end at smoke size (issue #55's small-3d, shrunk): training with over-prompting,
the capability readout of the class with every concept present, the turn and the cube figure."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")

from empirical.train import main as train  # noqa: E402
from figures.training import main as figure  # noqa: E402
from fitting.capability import main as capability  # noqa: E402
from fitting.turn import main as turns  # noqa: E402


@pytest.mark.slow  # long end to end: run with -m slow
def test_a_three_concept_run_trains_and_reads_as_one(tmp_path, capsys):
    run = tmp_path / "run"
    args = ["--preset", "smoke", "--set", "concepts=color,size,bg", "--set", "sep.bg=0.4"]
    args += ["--set", "steps=20", "--set", "evals=2", "--set", "protocols=overprompt"]
    assert train([*args, "--out", str(run)]) == 0
    assert "class 111 at (" in capsys.readouterr().err  # the progress line follows 111, not 011
    meta = json.loads((run / "trajectories.meta.json").read_text())
    assert meta["held_out"] == ["011", "101", "110", "111"]
    assert capability([str(run)]) == 0
    assert json.loads((run / "elicitation.json").read_text())["class"] == "111"
    assert turns([str(run)]) == 0
    assert figure([str(run)]) == 0 and (run / "concept_space.png").stat().st_size > 10_000
