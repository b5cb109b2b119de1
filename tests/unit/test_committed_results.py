"""An analysis run on the committed results (results) leaves them as committed unless an output is named
there (issue #52: fitting.capability, fitting.turn and figures.capability rewrote a committed run's files)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from core import cli

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "results/study-small/capability/runs/seed=0,sep.color=0.5"  # over-prompted


def committed(tmp_path, monkeypatch, folder: str, source: Path, names: tuple[str, ...]) -> Path:
    """A stand-in checkout at tmp_path whose results/FOLDER holds copies of ``source``'s ``names``."""
    monkeypatch.setattr(cli, "ROOT", tmp_path)
    monkeypatch.delenv(cli.RESULTS_ENV, raising=False)
    dest = tmp_path / "results" / folder
    dest.mkdir(parents=True)
    for name in names:
        shutil.copy(source / name, dest / name)
    return dest


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    """A stand-in checkout: tmp/results/sweep/run holding a committed run's log."""
    names = ("trajectories.csv", "trajectories.meta.json", "config.json")
    return committed(tmp_path, monkeypatch, "sweep/run", RUN, names)


def snapshot(folder: Path) -> dict:
    return {p: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_default_output_inside_the_results_moves_under_runs(checkout, capsys, monkeypatch):
    moved = cli.default_out(checkout / "fit")
    assert moved == cli.ROOT / "runs/results/sweep/run/fit"
    assert "holds committed results, left as they are" in capsys.readouterr().err
    assert cli.default_out(cli.ROOT / "elsewhere") == cli.ROOT / "elsewhere"
    monkeypatch.setenv(
        cli.RESULTS_ENV, "write"
    )  # the regenerate scripts remake the committed files
    assert cli.default_out(checkout / "fit") == checkout / "fit"


def test_turn_capability_and_their_figures_leave_a_committed_run_as_it_was(checkout):
    from figures.capability import main as capability_figure
    from figures.training import main as training_figure
    from fitting.capability import main as capability
    from fitting.turn import main as turn

    before = snapshot(checkout)
    assert turn([str(checkout)]) == 0
    assert capability([str(checkout)]) == 0
    moved = cli.ROOT / "runs/results/sweep/run"
    assert capability_figure([str(moved)]) == 0  # the summary it just wrote
    assert capability_figure([str(checkout / "nothing")]) == 2
    assert training_figure([str(checkout)]) == 0
    assert snapshot(checkout) == before
    assert {p.name for p in moved.iterdir()} >= {
        "turn.json",
        "elicitation.json",
        "elicitation_summary.json",
        "capability.png",
        "concept_space.png",
    }


def test_turn_writes_where_out_says_one_folder_per_run(checkout, tmp_path):
    from fitting.turn import main as turn

    second = checkout.with_name("second")
    shutil.copytree(checkout, second)
    assert turn([str(checkout), "--out", str(tmp_path / "one")]) == 0
    assert (tmp_path / "one/turn.json").exists()
    assert turn([str(checkout), str(second), "--out", str(tmp_path / "two")]) == 0
    assert (tmp_path / "two/run/turn.json").exists() and (
        tmp_path / "two/second/turn.json"
    ).exists()


@pytest.mark.slow  # studies 20 committed runs, 14 s
def test_a_study_of_a_committed_sweep_leaves_it_as_committed(tmp_path, monkeypatch):
    from fitting.study import main as study

    # dsize tracks all three (validation's sweep.csv is remade by regenerate.sh, absent from a clean clone)
    source, names = ROOT / "results/study-small/dsize", ("sweep.csv", "covariates.csv")
    sweep = committed(tmp_path, monkeypatch, "sweep", source, (*names, "study.json"))
    before = snapshot(sweep)
    assert study([str(sweep)]) == 0
    assert snapshot(sweep) == before
    assert (tmp_path / "runs/results/sweep/study.json").exists()
