"""Fitting: model-free statistics, model fits with known answers, invariances, honest intervals."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fitting.estimators.curves import changepoint, fit_logistic, settled_step, threshold_step
from fitting.estimators.model_fit import fit_model
from fitting.analyses.synthetic import quadratic_steps, switch_recovery, t50_recovery
from fitting.estimators.trajectory_turn import find_turn
from theory.solvers.integrate import integrate
from theory.models.paper import eq1, eq2, notebook
from core.trajectory import Trajectory

STEPS = quadratic_steps(60, 500, 20_000)
SPAN = 19_500


def simulated(land, values, steps=STEPS, label="11", noise=0.0, seed=0, concepts=None):
    z = integrate(land, np.asarray(steps, dtype=float), values, rtol=1e-11, atol=1e-13).z[0]
    z = np.clip(z + np.random.default_rng(seed).normal(0, noise, z.shape), 0, 1) if noise else z
    return Trajectory(steps, z, concepts or land.concepts, label, "naive", seed, "test")


EQ1_TRUTH = {
    "lam": np.array([20, 12]) / SPAN,
    "k": 60 / SPAN,
    "t_switch": np.array([9_000.0, 0.0]),
    "z_bias": np.array([0.1, 1.0]),
    "z_target": np.ones(2),
    "z0": np.array([0.45, 0.55]),
}


# ---------------------------------------------------------------------------------------------
# model-free statistics


def test_threshold_step_with_persistence():
    step = np.arange(10) * 100
    y = np.array([0, 0.6, 0.4, 0.6, 0.7, 0.3, 0.8, 0.9, 0.95, 0.99])
    assert threshold_step(step, y, 0.5) == 100
    assert threshold_step(step, y, 0.5, persist=2) == 300
    assert threshold_step(step, y, 0.5, persist=3) == 600
    assert threshold_step(step, y, 0.999) is None
    with pytest.raises(ValueError, match="persist"):
        threshold_step(step, y, 0.5, persist=0)


def test_settled_step_ignores_transient_excursions():
    step = np.arange(10) * 100
    y = np.array([0, 0.9, 0.9, 0.1, 0.6, 0.3, 0.8, 0.9, 0.95, 0.99])
    assert settled_step(step, y, 0.5) == 600  # the early excursion (100-200) and 400 do not count
    assert settled_step(step, y, 0.0) == 0
    assert settled_step(step, y, 0.999) is None  # never
    assert settled_step(step, np.r_[y[:-1], 0.2], 0.5) is None  # ends below the level
    assert (
        settled_step(step, np.r_[y[:-1], np.nan], 0.5) is None
    )  # a missing last point is not "above"


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=30), st.floats(0.05, 0.95))
def test_settled_is_never_before_the_first_crossing(ys, level):
    step = np.arange(len(ys)) * 10.0
    y = np.array(ys)
    settled, first = settled_step(step, y, level), threshold_step(step, y, level)
    if settled is not None:
        assert first is not None and settled >= first
        assert np.all(y[step >= settled] >= level)


def test_changepoint_finds_a_mean_shift():
    step = np.arange(20.0)
    y = np.r_[np.zeros(13), np.ones(7)]
    where, gain = changepoint(step, y)
    assert where == 12.5 and gain == pytest.approx(13 * 7 / 20)


def test_logistic_recovers_a_clean_curve():
    step = quadratic_steps()
    y = 0.05 + 0.9 / (1 + np.exp(-(step - 8000) / 600))
    fit = fit_logistic(step, y)
    assert fit.success and fit.method == "logistic"
    assert fit.t50 == pytest.approx(8000, abs=1) and fit.width == pytest.approx(600, rel=1e-3)
    assert fit.lo == pytest.approx(0.05, abs=1e-4) and fit.hi == pytest.approx(0.95, abs=1e-4)


def test_logistic_never_crossing_has_no_t50():
    step = quadratic_steps()
    y = 0.1 + 0.25 / (1 + np.exp(-(step - 8000) / 600))  # tops out at 0.35
    fit = fit_logistic(step, y + np.random.default_rng(0).normal(0, 0.01, step.size))
    assert fit.t50 is None and fit.t50_ci is None


def test_logistic_needs_points():
    with pytest.raises(ValueError, match="at least 5"):
        fit_logistic([1, 2, 3], [0.1, 0.5, 0.9])


def test_turn_of_a_corner_path_and_no_turn_for_a_straight_one():
    t = np.linspace(0, 10, 41)
    leg = np.clip(t / 5, 0, 1)[:, None]
    corner = np.where(
        t[:, None] <= 5,
        [0.5, 0.5] + leg * [-0.4, 0.4],
        [0.1, 0.9] + (t[:, None] - 5) / 5 * [0.9, 0.1],
    )
    turn = find_turn(t, corner)
    assert turn.step == pytest.approx(5.0, abs=0.3) and turn.angle > 90
    assert turn.ci[0] <= turn.step <= turn.ci[1]
    np.testing.assert_allclose(turn.point, [0.1, 0.9], atol=0.03)
    straight = np.c_[np.linspace(0.5, 1, 41), np.linspace(0.5, 1, 41)]
    assert find_turn(t, straight).step is None


# ---------------------------------------------------------------------------------------------
# model fits: exact recovery on clean data


def test_eq1_clean_recovery():
    fit = fit_model(simulated(eq1(), EQ1_TRUTH), "eq1")
    assert fit.success and fit.rmse < 1e-6
    assert fit.params["t_switch"][0] == pytest.approx(9000, abs=1)
    assert fit.params["t_switch"][1] is None and fit.identifiable == [
        True,
        False,
    ]  # size never switches
    np.testing.assert_allclose(fit.params["lam"], EQ1_TRUTH["lam"], rtol=1e-3)
    assert fit.params["k"] == pytest.approx(EQ1_TRUTH["k"], rel=1e-3)
    np.testing.assert_allclose(fit.params["z_bias"][0], 0.1, atol=1e-4)
    assert fit.params["z_target"] == [1.0, 1.0] and "p_beta" not in fit.params


def test_eq2_recovers_the_underspecification_product():
    truth = {**EQ1_TRUTH, "p": 0.6, "beta": 0.5}
    fit = fit_model(simulated(eq2(), truth), "eq2")
    assert fit.params["p_beta"] == pytest.approx(0.3, abs=1e-3)
    assert fit.params["t_switch"][0] == pytest.approx(9000, abs=5)
    with pytest.raises(ValueError, match="eq2 needs a fixed z_target"):
        fit_model(simulated(eq2(), truth, label="x"), "eq2")


def test_notebook_clean_recovery():
    steps = np.linspace(0, 25, 60)
    fit = fit_model(simulated(notebook(), {"a": 3.0}, steps=steps), "notebook")
    assert fit.params["a"] == pytest.approx(3.0, rel=1e-3)
    assert fit.params["s"] == pytest.approx(3.0, rel=1e-3)
    assert fit.params["t0"] == pytest.approx(10.0, abs=1e-2)


def test_fixing_parameters():
    fit = fit_model(
        simulated(eq1(), EQ1_TRUTH), "eq1", fix={"k": EQ1_TRUTH["k"], "z0": [0.45, 0.55]}
    )
    assert fit.params["k"] == pytest.approx(EQ1_TRUTH["k"]) and fit.ci["k"] == [fit.params["k"]] * 2
    with pytest.raises(ValueError, match=r"cannot fix \['alpha'\]"):
        fit_model(simulated(eq1(), EQ1_TRUTH), "eq1", fix={"alpha": 1.0})
    with pytest.raises(ValueError, match="must lie in"):
        fit_model(simulated(eq1(), EQ1_TRUTH), "eq1", fix={"z0": 2.0})


def test_model_fit_input_errors():
    tr = simulated(eq1(), EQ1_TRUTH)
    with pytest.raises(ValueError, match="unknown model"):
        fit_model(tr, "eq7")
    with pytest.raises(ValueError, match="unknown interval method"):
        fit_model(tr, ci="jackknife")
    three = Trajectory(STEPS, np.full((60, 3), 0.5), ("a", "b", "c"), "111")
    with pytest.raises(ValueError, match="notebook model has 2 concepts"):
        fit_model(three, "notebook")
    with pytest.raises(ValueError, match="at least 8"):
        fit_model(Trajectory(STEPS[:5], tr.z[:5], tr.concepts, "11"), "eq1")


# ---------------------------------------------------------------------------------------------
# invariances and honesty


def test_a_switch_beyond_the_logged_range_is_not_identified():
    """Biased toward 01 but the switch comes after the last checkpoint: the data never show the turn."""
    late = {**EQ1_TRUTH, "t_switch": np.array([35_000.0, 0.0])}
    fit = fit_model(simulated(eq1(), late))
    assert fit.params["t_switch"] == [None, None] and fit.identifiable == [False, False]


def test_shifting_steps_shifts_switch_times():
    tr = simulated(eq1(), EQ1_TRUTH, noise=0.02, seed=3)
    shifted = Trajectory(tr.step + 7_000, tr.z, tr.concepts, tr.label)
    a, b = fit_model(tr), fit_model(shifted)
    assert b.params["t_switch"][0] - a.params["t_switch"][0] == pytest.approx(7_000, abs=1.0)
    np.testing.assert_allclose(np.array(b.ci["t_switch"][0]) - a.ci["t_switch"][0], 7_000, atol=1.0)
    np.testing.assert_allclose(b.params["lam"], a.params["lam"], rtol=1e-4)
    ta, tb = find_turn(tr.step, tr.z), find_turn(shifted.step, shifted.z)
    assert tb.step - ta.step == 7_000


def test_permuting_concepts_permutes_parameters():
    tr = simulated(eq1(), EQ1_TRUTH, noise=0.02, seed=4)
    swapped = Trajectory(tr.step, tr.z[:, ::-1], tr.concepts[::-1], tr.label)
    a, b = fit_model(tr), fit_model(swapped)
    for name in ("lam", "z_bias", "z0"):
        np.testing.assert_allclose(b.params[name], a.params[name][::-1], rtol=1e-3, atol=1e-4)
    assert a.params["t_switch"][1] is None and b.params["t_switch"][0] is None
    assert b.params["t_switch"][1] == pytest.approx(a.params["t_switch"][0], abs=1.0)
    assert b.identifiable == a.identifiable[::-1]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_trajectory_that_never_turns_gets_no_confident_switch(seed):
    no_switch = {**EQ1_TRUTH, "z_bias": np.ones(2)}  # both concepts head straight for 1
    fit = fit_model(simulated(eq1(), no_switch, noise=0.02, seed=seed))
    for t_switch, ci in zip(fit.params["t_switch"], fit.ci["t_switch"]):
        assert t_switch is None or ci is None or ci[1] - ci[0] >= 0.5 * SPAN
    assert find_turn(STEPS, simulated(eq1(), no_switch, noise=0.02, seed=seed).z).step is None


def test_recovery_fast_subset():
    """20 cases each of the slow tests' 200: the same targets, with room for the small sample."""
    score = switch_recovery(20, seed=2024)
    assert score.within_5pct >= 0.95 and score.coverage >= 0.75 and score.bias_within_0_1 >= 0.95
    score = t50_recovery(20, seed=2025)
    assert score.within_5pct >= 0.95 and score.coverage >= 0.75


def test_synthetic_steps_are_quadratic_and_increasing():
    s = quadratic_steps(60, 500, 20_000)
    assert s[0] == 500 and s[-1] == 20_000 and np.all(np.diff(s) > 0)
    assert np.diff(s)[0] < np.diff(s)[-1] / 10
    with pytest.raises(ValueError):
        quadratic_steps(1)
