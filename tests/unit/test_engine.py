"""The shared least-squares pieces (fitting/estimators/engine.py): Wald intervals against ordinary least squares' own
formula, bounds named where the search ended on them, the multistart search against a single start on a
problem with a worse local minimum, central differences against a known Jacobian, bootstrap percentiles."""

import numpy as np
import pytest

from fitting.estimators.engine import (
    bootstrap,
    central_jacobian,
    multistart,
    on_bounds,
    solve,
    wald,
)


def test_wald_is_ordinary_least_squares_standard_error_on_a_line():
    rng = np.random.default_rng(0)
    x = np.linspace(0, 1, 50)
    jac = np.c_[np.ones_like(x), x]
    y = 0.3 + 2.0 * x + rng.normal(0, 0.1, x.size)
    theta = np.linalg.lstsq(jac, y, rcond=None)[0]
    resid = jac @ theta - y
    lo, hi, se = wald(theta, jac, resid)
    expected = np.sqrt(np.diag(resid @ resid / (x.size - 2) * np.linalg.inv(jac.T @ jac)))
    np.testing.assert_allclose(se, expected, rtol=1e-8)
    np.testing.assert_allclose(hi - lo, 2 * 1.96 * expected, rtol=1e-8)
    assert (lo < theta).all() and (theta < hi).all()


def test_intervals_are_clipped_to_the_bounds_and_an_unconstrained_direction_stays_finite():
    jac = np.c_[np.ones(10), np.zeros(10)]  # the second parameter does not move the residuals
    lo, hi, se = wald(
        np.array([0.5, 0.0]), jac, np.full(10, 0.1), np.array([0.45, -1.0]), np.array([2, 1.0])
    )
    assert lo[0] == 0.45 and np.isfinite(se).all() and se[1] > 1e3 and (lo[1], hi[1]) == (-1.0, 1.0)


def test_on_bounds_names_what_sits_on_an_edge():
    lb, ub = np.array([0.0, -1.0, 5.0]), np.array([1.0, 1.0, 10.0])
    hit = on_bounds(np.array([1.0 - 1e-9, 0.2, 5.0]), lb, ub)
    assert hit.tolist() == [True, False, True]


def two_wells(
    theta,
):  # zero at θ = 1; a local minimum near θ = -1, where the second residual is -0.4
    return np.array([theta[0] ** 2 - 1.0, 0.2 * (theta[0] - 1.0)])


def test_multistart_leaves_the_local_minimum_a_single_start_stays_in():
    bounds = (np.array([-3.0]), np.array([3.0]))
    alone = solve(two_wells, np.array([-1.5]), bounds, 1.0, 200)
    assert alone.x[0] == pytest.approx(-1.0, abs=0.1) and alone.cost > 0.01
    best = multistart(two_wells, [[-1.5], [-1.2], [1.4]], bounds, 1.0, search_nfev=5, keep=2)
    assert best.x[0] == pytest.approx(1.0, abs=1e-6) and best.cost < 1e-12


def test_multistart_screens_with_the_batch_it_is_given():
    bounds = (np.array([-3.0]), np.array([3.0]))
    seen = []

    def screen(starts):
        seen.append(starts.copy())
        return -starts[:, 0]  # prefers the start farthest right: the one near the global minimum

    best = multistart(two_wells, [[-1.5], [2.5]], bounds, 1.0, search_nfev=5, screen=screen, keep=1)
    assert len(seen) == 1 and seen[0].shape == (2, 1) and best.x[0] == pytest.approx(1.0, abs=1e-6)


def test_central_jacobian_is_exact_on_a_linear_map_even_at_a_bound():
    a = np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 0.0]])
    calls = []

    def predict(batch):
        calls.append(len(batch))
        return batch @ a.T

    lb, ub = np.zeros(2), np.ones(2)
    np.testing.assert_allclose(
        central_jacobian(predict, np.array([0.0, 0.5]), lb, ub), a, rtol=1e-9
    )
    assert calls == [4]  # every perturbed θ in one batch


def test_bootstrap_percentiles():
    lo, hi = bootstrap(lambda gen: gen.normal(size=2), 4000, np.random.default_rng(0))
    np.testing.assert_allclose(lo, -1.96, atol=0.1)
    np.testing.assert_allclose(hi, 1.96, atol=0.1)
