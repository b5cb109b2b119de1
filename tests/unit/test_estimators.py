"""fitting.estimators.registry: every estimator is fitted by name, returns a frozen result, and predicts at any steps."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from fitting.estimators import registry as estimators
from fitting.estimators.registry import ESTIMATORS, LawFit, fit
from fitting.analyses.synthetic import eq1_case, quadratic_steps, sim2_case, sweep_case
from theory.models.paper import MODELS
from theory.cli.swingby import SIM_MODELS
from core.trajectory import Trajectory


def test_per_run_estimators_share_theory_s_model_names():
    assert set(ESTIMATORS) <= set(MODELS) | set(SIM_MODELS)


def test_the_fittable_models_are_named_in_theory_s_one_table():
    """The models fitting fits are the ones theory's table marks (no second list in fitting)."""
    from fitting.estimators import model_fit
    from theory.models.paper import FITTABLE

    assert FITTABLE and set(FITTABLE) <= set(MODELS)
    assert set(FITTABLE) <= set(ESTIMATORS)
    with pytest.raises(ValueError, match="valid: notebook, eq1, eq2"):
        model_fit.fit_model(one_run("eq1"), "coupled")


def one_run(name: str) -> Trajectory:
    """A run the estimator ``name`` can fit: eq1's synthetic case, or a sim2 path (tests/unit/test_sim_fit)."""
    if name == "sim2":
        return sim2_case()
    return eq1_case(np.random.default_rng(0), n=40).trajectory


@pytest.mark.parametrize("name", ["eq1", "notebook", "sim2"])
def test_every_per_run_estimator_fits_a_run_and_predicts_it(name):
    traj = one_run(name)
    result = fit(name, traj)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.rmse = 0.0
    dense = np.linspace(traj.step[0], traj.step[-1], 7)
    assert result.predict(dense).shape == (7, traj.z.shape[1])
    assert np.sqrt(np.mean((result.predict(traj.step) - traj.z) ** 2)) == pytest.approx(
        result.rmse, rel=0.05, abs=0.01
    )
    with pytest.raises(ValueError, match="takes no covariates"):
        result.predict(dense, covariates=np.ones((1, 2)))


def test_a_law_is_fitted_to_runs_with_covariates_and_predicts_new_ones():
    case = sweep_case(
        np.geomspace(0.005, 0.08, 7), seed=0, noise=0.02, steps=quadratic_steps(40, 50, 5000)
    )
    train = [0, 1, 2, 4, 5, 6]
    result = fit("eq1", [case.trajectories[r] for r in train], covariates=case.x[train])
    assert isinstance(result, LawFit) and result.law.name == "eq1"
    held = case.trajectories[3]
    path = result.predict(held.step, covariates=case.x[3])
    assert path.shape == (1, held.step.size, 2)
    assert np.sqrt(np.mean((path[0] - held.z) ** 2)) < 0.05  # the law's truth generated the sweep
    with pytest.raises(ValueError, match="predicts a run from its covariates"):
        result.predict(held.step)


@pytest.mark.parametrize(
    "name, data, covariates, message",
    [
        ("nope", None, None, "unknown estimator 'nope'; valid: notebook, eq1, eq2, sim2"),
        ("nope", [], np.ones((1, 2)), "unknown estimator 'nope'"),
        ("sim2", [], np.ones((1, 2)), "sim2 is fitted to one run and takes no covariates"),
        ("eq1", [], None, "fitted to one trajectory"),
        ("eq1+onset", [], None, "the eq1+onset law is fitted to runs with covariates=(N, D)"),
    ],
)
def test_bad_requests_name_what_is_valid(name, data, covariates, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        fit(name, data, covariates)


def test_the_module_docstring_example_names_real_things():
    assert "fitting.estimators.laws.PARTS" in estimators.__doc__
    assert {"memorize", "onset"} <= set(estimators.laws.PARTS)
