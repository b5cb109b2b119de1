"""The held-out turn (fitting.turn) is marked only when the path then heads for its corner; the training figure draws it."""

import numpy as np

import json

from figures.training import main
from fitting.estimators.trajectory_turn import held_out_turn
from fitting.turn import main as turns
from core.trajectory import Trajectory, write_csv

STEPS = np.arange(0, 3001, 100)


def path(*corners):
    """Piecewise-linear path through the given points, one leg per equal share of STEPS."""
    knots = np.linspace(0, 1, len(corners))
    u = np.linspace(0, 1, STEPS.size)
    return np.stack([np.interp(u, knots, [c[d] for c in corners]) for d in range(2)], axis=1)


def trajectories(held):
    learned = np.clip(
        STEPS / 1000, 0, 1
    )  # training classes drawn from step 500 on (mean accuracy >= 0.5)
    out = [
        Trajectory(STEPS, path((0.5, 0.5), c, c), ("color", "size"), lab, accuracy=learned)
        for lab, c in (("00", (0, 0)), ("01", (0, 1)), ("10", (1, 0)))
    ]
    return out + [Trajectory(STEPS, held, ("color", "size"), "11", accuracy=np.zeros(STEPS.size))]


def test_memorize_then_turn_is_marked_at_the_memorized_class():
    ts = trajectories(path((0.5, 0.5), (0.95, 0.05), (1.0, 1.0)))
    turn = held_out_turn(ts[-1], ts)
    assert turn is not None and np.linalg.norm(np.array(turn.point) - (0.95, 0.05)) < 0.1


def test_memorize_and_stay_has_no_turn():
    ts = trajectories(path((0.5, 0.5), (0.05, 0.95), (0.0, 1.0)))
    assert held_out_turn(ts[-1], ts) is None


def test_cli_draws_and_reports_bad_input(tmp_path, capsys):
    run = tmp_path / "run"
    write_csv(run / "trajectories.csv", trajectories(path((0.5, 0.5), (0.95, 0.05), (1.0, 1.0))))
    assert main([str(run)]) == 0
    assert (
        "python -m fitting.turn" in capsys.readouterr().out
    )  # no turn.json yet: the figure says how to get one
    assert turns([str(run)]) == 0
    doc = json.loads((run / "turn.json").read_text())
    assert [(t["class"], t["protocol"]) for t in doc["turns"]] == [("11", "naive")] and doc[
        "turns"
    ][0]["turn_step"] > 0
    assert main([str(run)]) == 0
    assert "fitting.turn" not in capsys.readouterr().out
    assert (run / "concept_space.png").stat().st_size > 10_000
    assert main([str(tmp_path / "nope")]) == 2
    assert "no trajectory log here" in capsys.readouterr().err
    assert main([str(run), "--protocol", "cfg"]) == 2
    assert "no trajectories with protocol='cfg'" in capsys.readouterr().err
    (run / "turn.json").write_text("[]")
    assert main([str(run)]) == 2
    assert "not the turn.json that python -m fitting.turn writes" in capsys.readouterr().err


def test_a_committed_runs_turn_is_marked_from_where_fitting_turn_wrote_it(
    tmp_path, capsys, monkeypatch
):
    """For a run in the checkout's committed results, fitting.turn and the figure both write under
    runs/results/ (cli.default_out); the figure finds the turn there and does not ask for it again."""
    import core.cli

    monkeypatch.setattr(core.cli, "ROOT", tmp_path)
    monkeypatch.delenv(core.cli.RESULTS_ENV, raising=False)
    run = tmp_path / "results" / "study" / "sep.color=0.3,seed=1"  # a dot, as sweep runs have
    write_csv(run / "trajectories.csv", trajectories(path((0.5, 0.5), (0.95, 0.05), (1.0, 1.0))))
    copy = tmp_path / "runs" / "results" / "study" / "sep.color=0.3,seed=1"
    assert main([str(run)]) == 0  # the copy's folder not made yet: still a folder, not a file name
    assert "python -m fitting.turn" in capsys.readouterr().out
    assert (copy / "concept_space.png").exists()
    assert turns([str(run)]) == 0 and (copy / "turn.json").exists()
    assert not (run / "turn.json").exists()
    capsys.readouterr()
    assert main([str(run)]) == 0
    assert "fitting.turn" not in capsys.readouterr().out
    assert (copy / "concept_space.png").stat().st_size > 10_000


def test_turn_thresholds_and_classes_are_flags(tmp_path, capsys):
    run = tmp_path / "run"
    write_csv(run / "trajectories.csv", trajectories(path((0.5, 0.5), (0.95, 0.05), (1.0, 1.0))))
    assert turns([str(run), "--class", "11,01"]) == 0
    doc = json.loads((run / "turn.json").read_text())
    assert [t["class"] for t in doc["turns"]] == ["01", "11"] and (
        doc["min_dev"],
        doc["min_angle"],
    ) == (0.05, 30.0)
    assert doc["turns"][1]["turn_step"] > 0
    assert (
        turns([str(run), "--min-angle", "150"]) == 0
    )  # the path bends by about 130 degrees: not a turn at 150
    doc = json.loads((run / "turn.json").read_text())
    assert doc["min_angle"] == 150 and doc["turns"][0]["turn_step"] is None
    assert turns([str(run), "--min-dev", "0.9"]) == 0  # nor when it must lie 0.9 from the chord
    assert json.loads((run / "turn.json").read_text())["turns"][0]["turn_step"] is None
    for argv, message in (
        (["--class", "22"], "no class 22; the log has 00, 01, 10, 11"),
        (["--class", ","], "give one or more class labels"),
        (["--min-dev", "-1"], "--min-dev -1.0: give a distance >= 0"),
        (["--min-angle", "nan"], "--min-angle nan: give degrees in [0, 180]"),
    ):
        assert turns([str(run), *argv]) == 2
        assert message in capsys.readouterr().err


def test_figures_take_pdf_and_svg_too(tmp_path, capsys):
    run = tmp_path / "run"
    write_csv(run / "trajectories.csv", trajectories(path((0.5, 0.5), (0.95, 0.05), (1.0, 1.0))))
    assert main([str(run), "--out", str(tmp_path / "fig.pdf")]) == 0
    assert (tmp_path / "fig.pdf").read_bytes()[:5] == b"%PDF-"
    assert main([str(run), "--out", str(tmp_path / "fig.svg")]) == 0
    assert b"<svg" in (tmp_path / "fig.svg").read_bytes()[:1000]
    assert main([str(run), "--out", str(tmp_path / "fig.jpg")]) == 2
    assert "must end in .png or .pdf or .svg" in capsys.readouterr().err


def test_missing_points_and_shares_are_drawn_and_skipped_by_the_analyses(tmp_path, capsys):
    """A held-out class with nothing readable for its first checkpoints: the turn, the fit and the figure use the
    located rows (NaN would poison them), the accuracy keeps every row, and the figure draws the shares strip."""
    from fitting.analyses.report import analyse

    ts = trajectories(path((0.5, 0.5), (0.95, 0.05), (1.0, 1.0)))
    held = ts[-1]
    z = held.z.copy()
    gone = (np.arange(STEPS.size) < 4) | np.isin(
        np.arange(STEPS.size), [7, 8]
    )  # steps 0-300, 700, 800: nothing readable
    z[gone] = np.nan
    unread = gone.astype(float)
    shares = {
        "share_10": tuple(repr(0.0 if u else 0.7) for u in unread),
        "share_11": tuple(repr(0.0 if u else 0.3) for u in unread),
        "share_unreadable": tuple(repr(float(u)) for u in unread),
    }
    ts[-1] = Trajectory(STEPS, z, held.concepts, "11", accuracy=held.accuracy, extra=shares)
    turn = held_out_turn(ts[-1], ts)
    assert turn is not None and np.linalg.norm(np.array(turn.point) - (0.95, 0.05)) < 0.1
    record = analyse(ts[-1], "eq1", n_boot=0)[0]
    assert (
        record["turn_step"] is not None
        and np.isfinite(record["rmse"])
        and record["n_points"] == STEPS.size
    )
    assert record["threshold_steps"]["50%"]["z_color"] is not None
    run = tmp_path / "run"
    write_csv(run / "trajectories.csv", ts)
    assert main([str(run)]) == 0 and turns([str(run)]) == 0
    assert (run / "concept_space.png").stat().st_size > 10_000


def test_an_accuracy_panel_with_nothing_drawn_has_no_empty_legend():
    """The file fuzzer's long run met matplotlib's "No artists with labels" warning on a mutated log:
    a user saw it on stderr."""
    import warnings

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from figures.class_paths import accuracy_axes

    fig, ax = plt.subplots()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        accuracy_axes(ax, "naive")
    assert ax.get_legend() is None
    ax.plot([1, 2], [0.1, 0.2], label="11")
    accuracy_axes(ax, "naive")
    assert ax.get_legend() is not None
    plt.close(fig)
