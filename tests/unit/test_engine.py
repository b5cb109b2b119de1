"""The shared least-squares pieces (fitting/engine.py): Wald intervals against ordinary least squares' own
formula, and bounds named where the search ended on them."""

import numpy as np

from fitting.engine import on_bounds, wald


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
