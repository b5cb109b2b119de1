"""Capability vs behavior on logs with known crossing steps."""

import json

import numpy as np
import pytest

from figures.capability import main as draw
from fitting.analyses.capability_readings import analyse_run, curves, summarize
from fitting.capability import main
from core.trajectory import Trajectory, read_csv, write_csv

STEPS = np.arange(0, 1001, 50)


def ramp(start: float, width: float = 200.0) -> np.ndarray:
    return np.clip((STEPS - start) / width, 0, 1)


def log(path, naive_start, protocols):
    rows = [
        Trajectory(
            STEPS, np.zeros((STEPS.size, 0)), (), "11", protocol="naive", accuracy=ramp(naive_start)
        )
    ]
    rows += [
        Trajectory(STEPS, np.zeros((STEPS.size, 0)), (), "11", protocol=p, accuracy=ramp(s))
        for p, s in protocols.items()
    ]
    path.mkdir(parents=True, exist_ok=True)
    write_csv(path / "trajectories.csv", rows)
    return path


def test_capability_is_the_best_protocol_and_the_lag_is_exact(tmp_path):
    run = log(tmp_path / "r", naive_start=600, protocols={"overprompt": 200, "patch": 300})
    res = analyse_run(run, "11", persist=1)
    first = res["first_step"]
    # ramp(s) reaches 0.5 at s + 100 and 0.8 at s + 160 -> the next logged step (multiples of 50)
    assert first["naive"] == {"50%": 700.0, "80%": 800.0}
    assert first["overprompt"] == {"50%": 300.0, "80%": 400.0}
    assert first["capability"] == first["overprompt"]
    assert res["lag_behavior_minus_capability"] == {"50%": 400.0, "80%": 400.0}
    c = curves(read_csv(run / "trajectories.csv"), "11")
    np.testing.assert_allclose(c["capability"][1], np.maximum(ramp(200), ramp(300)))


def test_settled_steps_ignore_an_early_excursion(tmp_path):
    run = log(tmp_path / "r", naive_start=600, protocols={"intervention": 400})
    rows = read_csv(run / "trajectories.csv")
    spike = rows[1].accuracy.copy()
    spike[2:5] = (
        1.0  # an early success (steps 100-200) that is lost again, as on untrained checkpoints
    )
    rows[1] = type(rows[1])(STEPS, rows[1].z, (), "11", protocol="intervention", accuracy=spike)
    write_csv(run / "trajectories.csv", rows)
    res = analyse_run(run, "11", persist=2)
    assert res["first_step"]["capability"]["80%"] == 100.0
    assert res["settled_step"]["capability"] == {"50%": 500.0, "80%": 600.0}
    assert res["settled_step"]["naive"] == {"50%": 700.0, "80%": 800.0}
    assert res["settled_lag_behavior_minus_capability"] == {"50%": 200.0, "80%": 200.0}
    assert summarize([res], rule="settled")["80%"]["capability_steps"] == [600.0]


def test_behavior_never_reached_gives_no_lag_and_is_counted(tmp_path):
    run = log(tmp_path / "r", naive_start=5000, protocols={"overprompt": 100})
    res = analyse_run(run, "11", persist=2)
    assert res["first_step"]["naive"]["50%"] is None
    assert res["lag_behavior_minus_capability"]["50%"] is None
    s = summarize([res])
    assert s["50%"]["naive_never"] == 1 and s["50%"]["capability_never"] == 0


def test_cli_writes_per_run_json_summary_and_figure(tmp_path, capsys):
    runs = [
        log(tmp_path / f"seed{i}", 600 + 50 * i, {"overprompt": 200, "intervention": 250})
        for i in range(3)
    ]
    assert main([str(r) for r in runs] + ["--out", str(tmp_path / "sum")]) == 0
    for r in runs:
        assert json.loads((r / "elicitation.json").read_text())["class"] == "11"
    summary = json.loads((tmp_path / "sum" / "elicitation_summary.json").read_text())["summary"]
    assert (
        summary["50%"]["lags"] == [400.0, 450.0, 500.0] and summary["50%"]["capability_first"] == 3
    )
    assert not (tmp_path / "sum" / "capability.png").exists()  # analysis writes, figures draw
    assert draw([str(tmp_path / "sum" / "elicitation_summary.json")]) == 0
    assert (tmp_path / "sum" / "capability.png").stat().st_size > 10_000
    assert "Fig. 6: python -m figures.capability" in capsys.readouterr().out


def test_the_figure_names_a_summary_it_cannot_draw(tmp_path, capsys):
    assert draw([str(tmp_path / "none.json")]) == 2
    assert "no such file; write it with python -m fitting.capability" in capsys.readouterr().err
    old = {"runs": ["a"], "class": "11", "summary": {}, "settled": {}}  # before per_run was saved
    (tmp_path / "old.json").write_text(json.dumps(old))
    assert draw([str(tmp_path / "old.json")]) == 2
    assert "written by an older fitting.capability" in capsys.readouterr().err
    (tmp_path / "other.json").write_text('{"summary": {}, "mean_curves": {}}')
    assert draw([str(tmp_path / "other.json")]) == 2
    assert "lacks 'runs', 'class', 'settled'" in capsys.readouterr().err


@pytest.mark.parametrize(
    "args, message",
    [
        (["--persist", "0"], "persist 0: must be >= 1"),
        (["--class", "01"], "no naive accuracy for class '01'"),
    ],
)
def test_cli_bad_input(tmp_path, capsys, args, message):
    run = log(tmp_path / "r", 600, {"overprompt": 200})
    assert main([str(run), *args]) == 2
    assert message in capsys.readouterr().err


def test_cli_missing_log(tmp_path, capsys):
    assert main([str(tmp_path / "nope")]) == 2
    assert "no trajectory log" in capsys.readouterr().err


def _fmt(values):
    return tuple(repr(float(v)) for v in values)


def _row(step, protocol, accuracy, selection=None):
    """Class 11's accuracy-only trajectory under a protocol, with a constant selection accuracy if given."""
    extra = {} if selection is None else {"selection_accuracy": _fmt(np.full(len(step), selection))}
    return Trajectory(
        step, np.zeros((len(step), 0)), (), "11", protocol=protocol, accuracy=accuracy, extra=extra
    )


def test_capability_takes_the_score_of_the_protocol_chosen_on_its_selection_draw(tmp_path):
    """A protocol that scores high but chose badly does not win: the protocol is picked on the selection draw, and
    its independent score is the capability (the max of scores would be biased upward)."""
    lucky = ramp(0)  # scores 1 once it is up, but its selection draw said 0.2
    honest = ramp(0) * 0.6  # selection draw 0.7: chosen, and scores 0.6
    rows = [
        _row(STEPS, "naive", ramp(800)),
        _row(STEPS, "cfg", lucky, selection=0.2),
        _row(STEPS, "overprompt", honest, selection=0.7),
    ]
    (tmp_path / "r").mkdir()
    write_csv(tmp_path / "r" / "trajectories.csv", rows)
    res = analyse_run(tmp_path / "r", "11", persist=1)
    assert res["capability_unbiased"] is True and set(res["capability_protocol"]) == {"overprompt"}
    np.testing.assert_allclose(res["curves"]["capability"]["accuracy"], honest)
    assert res["first_step"]["capability"]["80%"] is None  # the lucky 1.0 never counts


def test_the_training_classes_are_the_control(tmp_path):
    """When each training class became readable and correct is in elicitation.json, with what the protocols did."""
    unread = np.clip(1 - STEPS / 300, 0, 1)  # readable from step 300
    rows = [
        Trajectory(STEPS, np.zeros((STEPS.size, 0)), (), "11", protocol="naive", accuracy=ramp(800))
    ]
    for label, start in (("00", 300), ("01", 400), ("10", 350)):
        rows.append(
            Trajectory(
                STEPS,
                np.zeros((STEPS.size, 0)),
                (),
                label,
                protocol="naive",
                accuracy=ramp(start),
                extra={"share_unreadable": _fmt(unread)},
            )
        )
        rows.append(
            Trajectory(
                STEPS,
                np.zeros((STEPS.size, 0)),
                (),
                label,
                protocol="overprompt",
                accuracy=ramp(start - 100),
            )
        )
    rows.append(
        Trajectory(
            STEPS, np.zeros((STEPS.size, 0)), (), "11", protocol="overprompt", accuracy=ramp(200)
        )
    )
    (tmp_path / "r").mkdir()
    write_csv(tmp_path / "r" / "trajectories.csv", rows)
    ctrl = analyse_run(tmp_path / "r", "11", persist=1)["control"]
    assert sorted(ctrl["classes"]) == ["00", "01", "10"]
    assert (
        ctrl["classes"]["01"]["readable_step"] == 300.0
    )  # unreadable share <= 5% from step 300 (1 - 300/300 = 0)
    assert (
        ctrl["classes"]["01"]["first_step"]["naive"]["80%"] == 600.0
        and ctrl["learned_step"] == 600.0
    )
    assert ctrl["classes"]["01"]["first_step"]["capability"]["80%"] == 500.0
    assert "capability" in ctrl["classes"]["00"]["curves"]
    assert main([str(tmp_path / "r"), "--out", str(tmp_path / "o")]) == 0
    assert (
        json.loads((tmp_path / "r" / "elicitation.json").read_text())["control"]["learned_step"]
        == 600.0
    )


def test_protocols_without_a_common_step_are_read_where_each_logged(tmp_path):
    """Found by the fuzz suite: two elicited protocols that share no step, not a crash. Each step is read from the
    protocol that logged it (as issue #57's test registered the reader, on common steps only: no capability)."""
    from fitting.analyses.capability_readings import capability

    rows = [
        Trajectory(
            STEPS, np.zeros((STEPS.size, 0)), (), "11", protocol="naive", accuracy=ramp(300)
        ),
        Trajectory(STEPS[:1], np.zeros((1, 0)), (), "11", protocol="cfg", accuracy=[0.25]),
        Trajectory(STEPS[3:4], np.zeros((1, 0)), (), "11", protocol="overprompt", accuracy=[0.5]),
    ]
    (tmp_path / "r").mkdir()
    write_csv(tmp_path / "r" / "trajectories.csv", rows)
    res = analyse_run(tmp_path / "r", "11", persist=1)
    assert res["curves"]["capability"] == {
        "step": [float(STEPS[0]), float(STEPS[3])],
        "accuracy": [0.25, 0.5],
    }
    assert res["capability_protocol"] == ["cfg", "overprompt"]
    assert capability(rows, "11", as_registered=True) is None


def test_a_log_of_several_runs_is_refused_not_mixed(tmp_path):
    """Curves are keyed by protocol: a second seed's would overwrite the first's (audit of 2026-11-29)."""
    rows = [
        Trajectory(
            STEPS,
            np.zeros((STEPS.size, 0)),
            (),
            "11",
            protocol=p,
            seed=s,
            accuracy=ramp(a + 100 * s),
        )
        for s in (0, 1)
        for p, a in (("naive", 600), ("overprompt", 200))
    ]
    (tmp_path / "r").mkdir()
    write_csv(tmp_path / "r" / "trajectories.csv", rows)
    with pytest.raises(
        ValueError, match="holds 2 runs .*run  seed 0, run  seed 1.*give each run's own"
    ):
        analyse_run(tmp_path / "r", "11", persist=1)


def test_a_class_without_naive_accuracy_is_named_with_the_classes_there(tmp_path):
    run = log(tmp_path / "r", naive_start=600, protocols={"overprompt": 200})
    with pytest.raises(
        ValueError, match="no naive accuracy for class '99' \\(naive classes in the log: 11;"
    ):
        analyse_run(run, "99", persist=1)


def test_the_capability_is_read_on_every_step_a_protocol_logged():
    """Errata item 11 (b), the mend fixed before issue #57's test runs were read and made the default after it was
    scored: a protocol missing at a checkpoint no longer hides the others there, and where one protocol logged
    alone it is the one read (``as_registered``: the test's reader, on the steps every protocol logged)."""
    from fitting.analyses.capability_readings import capability

    rows = [
        _row(STEPS, "naive", ramp(800)),
        _row(STEPS, "overprompt", ramp(0) * 0.6, selection=0.7),
        _row(STEPS[::2], "cfg", ramp(0)[::2], selection=0.9),
    ]
    step, acc, chose, unbiased = capability(rows, "11", as_registered=True)
    assert step.tolist() == STEPS[::2].tolist() and set(chose) == {"cfg"} and unbiased
    step, acc, chose, unbiased = capability(rows, "11")
    assert step.tolist() == STEPS.tolist() and unbiased
    assert chose == ["cfg" if i % 2 == 0 else "overprompt" for i in range(STEPS.size)]
    np.testing.assert_allclose(
        acc, np.where(np.arange(STEPS.size) % 2 == 0, ramp(0), ramp(0) * 0.6)
    )
    one = [rows[0], rows[1]]
    for a, b in zip(capability(one, "11"), capability(one, "11", as_registered=True)):
        assert np.array_equal(a, b)  # one protocol: the same reading


def test_a_protocol_that_logged_nothing_at_a_step_is_never_chosen_there():
    """Found by review: a selection accuracy of -inf where the other protocol logged nothing named the absent one."""
    from fitting.analyses.capability_readings import capability

    rows = [_row(STEPS, "naive", ramp(800)), _row(STEPS[:3], "cfg", ramp(0)[:3], selection=0.9)]
    rows.append(_row(STEPS, "overprompt", ramp(0) * 0.5, selection=-np.inf))
    step, acc, chose, _ = capability(rows, "11")
    assert chose == ["cfg"] * 3 + ["overprompt"] * (STEPS.size - 3) and not np.isnan(acc).any()
