"""sim2 with one W(t) for every class of a run (fitting.sim_joint): recovery, the comparison each way,
bounds named, and the command's errors."""

import json

import numpy as np
import pytest

from figures.sim_joint import main as draw_main
from core.trajectory import target_of
from fitting.estimators.sim_fit import fit_sim
from fitting.sim_joint import compare_run, main
from fitting.analyses.synthetic import quadratic_steps
from theory.solvers.integrate import integrate
from theory.models.paper import eq1
from theory.solvers.two_layer import two_layer
from core.trajectory import Trajectory, write_csv

A, M, U0 = np.array([0.0008, 0.002]), np.array([1.0, 1.3]), np.array([[0.2, 0.0], [0.1, 0.15]])
STEPS = quadratic_steps(30, 50, 5000)


def noisy(z, label, seed, noise=0.02) -> Trajectory:
    rng = np.random.default_rng(seed)
    z = np.clip(z + rng.normal(0, noise, z.shape), 0, 1)
    return Trajectory(STEPS, z, ("color", "size"), label, "naive", 0, "synthetic")


def sim2_classes(a=A) -> list[Trajectory]:
    """Classes 01, 10 and 11 read off one W(t)."""
    w = two_layer(a, np.r_[0.0, STEPS], U0)[1:]
    return [
        noisy((w @ (np.array(target_of(label, 2)) * M)) / M, label, seed)
        for seed, label in enumerate(("01", "10", "11"))
    ]


def eq1_classes() -> list[Trajectory]:
    """Each class its own Eq. 1 path: the training classes learn size by step 800, while the held-out
    class keeps its size wrong until step 3,500 (memorization, then a late turn): no single W(t) does that."""
    out = []
    for seed, (label, t_size) in enumerate((("01", 600.0), ("10", 800.0), ("11", 3500.0))):
        corner = [float(c) for c in label]
        values = dict(
            lam=(0.004, 0.004),
            t_switch=(300.0, t_size),
            k=0.02,
            z_bias=(corner[0], 1 - corner[1]),
            z_target=corner,
            z0=(0.5, 0.5),
        )
        out.append(noisy(integrate(eq1(), STEPS, values, method="exact").z[0], label, seed))
    return out


def test_one_w_recovers_the_signals_from_every_class_and_wins_on_its_own_data():
    classes = sim2_classes()
    joint = fit_sim(classes)
    np.testing.assert_allclose(joint.params["a"], A, rtol=0.1)
    assert joint.fitted.shape == (3 * STEPS.size, 2) and joint.at_bounds == []
    record = compare_run(classes)
    assert record["preferred"] == "sim2 joint", record["aic_gaps"]
    assert record["models"]["sim2 joint"]["n_params"] == 6
    assert record["models"]["eq1 per class"]["n_params"] == 27
    np.testing.assert_allclose(  # the path drawn for class 10 is its rows of the joint fit (order 01, 10, 11)
        joint.predict(STEPS, bits=(1, 0)), joint.fitted[STEPS.size : 2 * STEPS.size], atol=1e-6
    )


@pytest.mark.slow  # long end to end: run with -m slow
def test_classes_no_single_map_draws_prefer_eq1_per_class():
    record = compare_run(eq1_classes())
    assert record["preferred"] == "eq1 per class", record["aic_gaps"]
    assert record["aic_gaps"]["sim2 joint"] > 10


def test_a_signal_on_its_bound_is_named_and_its_interval_left_out():
    fit = fit_sim(
        sim2_classes(a=np.array([1e-7, 0.002]))[2]
    )  # color never learned within 5,000 steps
    assert "a[color]" in fit.at_bounds
    assert fit.ci["a"][0] is None and fit.ci["a"][1] is not None


def test_the_class_is_read_by_its_bits():
    assert (
        target_of("10", 2) == (1, 0)
        and target_of("11", 2) == (1, 1)
        and target_of("x", 2) == (1, 1)
    )
    with pytest.raises(ValueError, match="class 00 carries no information"):
        fit_sim(noisy(np.zeros((STEPS.size, 2)), "00", 0))


@pytest.mark.slow  # the command end to end, 13 s
def test_the_command_writes_the_comparison_and_the_figure_and_names_bad_input(tmp_path, capsys):
    log = tmp_path / "log.csv"
    write_csv(log, sim2_classes())
    assert main([str(log), "--out", str(tmp_path / "out")]) == 0
    doc = json.loads((tmp_path / "out" / "sim_joint.json").read_text())
    (run,) = doc["runs"]
    assert run["classes"] == ["01", "10", "11"] and run["preferred"] == "sim2 joint"
    assert len(run["curves"]["sim2 joint"]["11"]) == len(run["curves"]["step"])
    assert draw_main([str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "sim_joint-synthetic-seed0.png").stat().st_size > 10_000
    capsys.readouterr()
    assert main([str(log), "--protocol", "overprompt", "--out", str(tmp_path / "none")]) == 2
    assert "matches --protocol overprompt" in capsys.readouterr().err
    assert main([str(tmp_path / "nope.csv")]) == 2
    assert "nope.csv: no such file" in capsys.readouterr().err
    assert draw_main([str(tmp_path / "missing.json")]) == 2
    assert "no such file; write it with python -m fitting.sim_joint" in capsys.readouterr().err
