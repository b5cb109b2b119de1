"""The default theory path is right, or refuses, or falls back and says so (issue #51): never silently wrong.

The exact quadrature once accepted a path that missed a switch narrower than its subintervals, or a decay kernel
narrower than its nodes (eq1 with lam = 1e4: z_color held at 0.5 on every row; t_end = 3e5: class 11 ended at 0.5),
because the r and 2r rules agreed by missing it alike. Here, on random eq1 settings with stiff rates, sharp and late
switches and coarse output grids, ``auto`` must agree with dopri at the tolerance below or say it used dopri, and
``exact`` must agree or fail with a status that names why.
"""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from theory.solvers import exact
from theory.solvers.integrate import integrate, time_grid
from theory.models.paper import eq1

AGREE = (
    1e-6  # |auto - dopri| at every output time, both at their default tolerances (1e-9 relative)
)
log10 = lambda lo, hi: st.floats(lo, hi).map(lambda x: float(10**x))  # noqa: E731


@settings(max_examples=25)
@given(
    lam=st.tuples(log10(-1, 4), log10(-1, 4)),
    k=st.tuples(log10(-0.5, 2), log10(-0.5, 2)),
    when=st.tuples(st.floats(0, 1), st.floats(0, 1)),
    t_end=st.sampled_from([5.0, 25.0, 300.0, 3e4, 3e5]),
    points=st.integers(3, 60),
)
def test_auto_agrees_with_dopri_or_says_it_used_dopri(lam, k, when, t_end, points):
    assume(max(lam) * t_end <= 3e5)  # dopri (explicit) must be able to serve as the reference
    land = eq1()
    values = {"lam": list(lam), "k": list(k), "t_switch": [w * t_end for w in when]}
    t = time_grid(t_end, points)
    ref = integrate(land, t, values, method="dopri")
    assume(ref.success)
    auto = integrate(land, t, values, method="auto")
    assert auto.success
    if auto.method == "exact":
        np.testing.assert_allclose(auto.z, ref.z, atol=AGREE, rtol=0)
    else:
        assert auto.method == "exact+dopri" and "solved with dopri" in auto.message
        np.testing.assert_allclose(auto.z, ref.z, atol=AGREE, rtol=0)
    alone = integrate(land, t, values, method="exact")
    if alone.success:
        np.testing.assert_allclose(alone.z, ref.z, atol=AGREE, rtol=0)
    else:
        assert set(alone.status.tolist()) <= {0, exact.NOT_CONVERGED, exact.UNRESOLVED}
        assert "resolve" in alone.message or "converge" in alone.message


@pytest.mark.parametrize(
    "values, t_end",
    [({"lam": [1e4, 1e4]}, 25.0), ({}, 3e5)],  # the two cases of issue #51
)
def test_the_reported_cases_end_at_the_target(values, t_end):
    land = eq1()
    t = time_grid(t_end, 200)
    auto = integrate(land, t, values, method="auto")
    assert auto.success and auto.method == "exact+dopri"
    np.testing.assert_allclose(auto.z[0, -1], [1.0, 1.0], atol=1e-6)
    alone = integrate(land, t, values, method="exact")
    assert not alone.success and "narrow switch or a stiff rate" in alone.message


def test_an_ordinary_eq1_path_stays_on_the_exact_quadrature():
    sol = integrate(eq1(), time_grid(25.0, 200), {}, method="auto")
    assert sol.method == "exact" and sol.message == "ok"
