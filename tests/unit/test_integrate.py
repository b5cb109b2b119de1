"""Integration paths: known numbers, closed forms, and the three methods against each other."""

import numpy as np
import pytest

import reference
from reference import first_crossing, signed_area
from theory.solvers.integrate import METHODS, integrate, kernel, time_grid
from theory.models.paper import coupled, eq1, eq2, eq2_split, get_model, notebook
from core.trajectory import read_csv, write_csv

T25 = time_grid(25, 200)


@pytest.mark.parametrize(
    "a,z_end,area",
    [
        # equations.md section 2: the authors' notebook re-integrated with DOP853, rtol 1e-10
        (1.0, (0.9062, 0.9062), 0.0),
        (9 / 7, (0.8833, 0.9294), -0.0331),
        (2.0, (0.8508, 0.9627), -0.0809),
        (3.0, (0.8331, 0.9815), -0.1083),
        (5.0, (0.8227, 0.9929), -0.1256),
        (0.5, (0.9627, 0.8508), 0.0809),
    ],
)
def test_notebook_reproduces_the_published_numbers(a, z_end, area):
    sol = integrate(notebook(), T25, {"a": a}, method="loop")
    np.testing.assert_allclose(sol.z[0, -1], z_end, atol=6e-5)
    assert signed_area(sol.z[0]) == pytest.approx(area, abs=6e-4)


def test_notebook_dip_and_long_run_limit():
    sol = integrate(
        notebook(), np.linspace(0, 25, 2001), {"a": np.array([2.0, 3.0, 5.0])}, method="stacked"
    )
    np.testing.assert_allclose(sol.z[:, :, 0].min(axis=1), [0.4281, 0.3557, 0.3079], atol=2e-4)
    sol = integrate(notebook(), time_grid(200, 50), {"a": 3.0}, method="loop")
    np.testing.assert_allclose(sol.z[0, -1], (1.0, 1.0), atol=1e-4)


def test_eq1_default_dips_toward_01_then_learns_color():
    """equations.md section 3: λ = (1, 1), k = 2, t_weak = 6: dips to 0.015 at t ≈ 3.9, reaches 0.8 at t ≈ 7.97."""
    t = np.linspace(0, 25, 25001)
    z = integrate(eq1(), t).z[0]
    assert z[:, 0].min() == pytest.approx(0.015, abs=5e-4)
    assert t[z[:, 0].argmin()] == pytest.approx(3.9, abs=0.05)
    assert first_crossing(t, z[:, 0], 0.8) == pytest.approx(7.97, abs=0.01)
    dist = np.linalg.norm(z - 1, axis=1)
    assert dist[0] == pytest.approx(0.707, abs=1e-3) and dist.max() == pytest.approx(
        0.985, abs=2e-3
    )
    assert signed_area(z) == pytest.approx(-0.249, abs=2e-3)


def test_class_00_is_exponential_decay():
    """Unbiased coordinates relax exactly: z_i(t) = ẑ_i + (z_i(0) - ẑ_i) exp(-λ_i t)."""
    lam = np.array([[0.2, 3.0], [1.0, 1.0], [4.0, 0.25]])
    sol = integrate(eq1(), T25, {"lam": lam, "z_bias": 0.0, "z_target": 0.0})
    expected = 0.5 * np.exp(-lam[:, None, :] * T25[None, :, None])
    np.testing.assert_allclose(sol.z, expected, atol=1e-8)


@pytest.mark.parametrize("name", ["notebook", "eq1", "coupled", "eq2", "eq2-split"])
@pytest.mark.parametrize("method", ["dopri", "stacked", "exact"])
def test_batched_paths_match_solve_ivp_loop(name, method):
    land = get_model(name)
    rng = np.random.default_rng(0)
    n = 12
    if name == "notebook":
        values = {
            "a": rng.uniform(0.2, 5, n),
            "k": rng.uniform(0.05, 2, n),
            "t0": rng.uniform(0, 15, n),
        }
    elif name == "coupled":
        values = {
            "lam": rng.uniform(0.1, 3, (n, 2)),
            "kappa": rng.uniform(1, 40, n),
            "theta": rng.uniform(0.3, 1, n),
            "z_bias": rng.uniform(0, 1, (n, 2)),
            "z0": rng.uniform(0, 1, (n, 2)),
        }
    else:
        values = {
            "lam": rng.uniform(0.1, 3, (n, 2)),
            "t_switch": rng.uniform(0, 15, (n, 2)),
            "k": rng.uniform(0.3, 4, (n, 2)),
            "z_bias": rng.uniform(0, 1, (n, 2)),
            "z0": rng.uniform(0, 1, (n, 2)),
        }
        if name != "eq1":
            values |= {"p": rng.uniform(0, 1, n), "beta": rng.uniform(0, 1, n)}
    if method == "exact" and name == "coupled":  # its gates read the state: no exact path
        with pytest.raises(ValueError, match="needs a flow linear in z"):
            integrate(land, T25, values, method=method)
        return
    ref = integrate(land, T25, values, method="loop", rtol=1e-12, atol=1e-14)
    got = integrate(land, T25, values, method=method)
    assert got.success and got.z.shape == (n, 200, 2)
    np.testing.assert_allclose(got.z, ref.z, atol=1e-7)


def test_dopri_matches_an_independent_hand_written_ode():
    lam, ts, k, zb, zt = (0.3, 2.0), (9.0, 1.0), (1.5, 0.7), (0.0, 1.0), (1.0, 0.8)
    z0 = (0.4, 0.6)
    ref = reference.solve(reference.eq1_rhs(lam, ts, k, zb, zt), z0, T25)
    got = integrate(
        eq1(), T25, {"lam": lam, "t_switch": ts, "k": k, "z_bias": zb, "z_target": zt, "z0": z0}
    )
    np.testing.assert_allclose(got.z[0], ref, atol=1e-8)


def test_more_concepts():
    land = eq1(3)
    sol = integrate(land, T25, {"t_switch": (4.0, 0.0, 8.0), "z_bias": (0.0, 1.0, 0.2)})
    ref = reference.solve(
        reference.eq1_rhs((1, 1, 1), (4, 0, 8), (2, 2, 2), (0, 1, 0.2), (1, 1, 1)), (0.5,) * 3, T25
    )
    np.testing.assert_allclose(sol.z[0], ref, atol=1e-8)


def test_solution_converts_to_a_valid_log(tmp_path):
    sol = integrate(eq2(), T25, {"p": np.array([0.0, 0.5])})
    trajs = sol.trajectories("11", runs=["p=0", "p=0.5"])
    write_csv(tmp_path / "t.csv", trajs)
    back = read_csv(tmp_path / "t.csv")
    assert [t.run for t in back] == ["p=0", "p=0.5"] and back[0].protocol == "sim"
    assert back[0].concepts == ("color", "shape")
    np.testing.assert_array_equal(back[1].z, sol.z[1])
    with pytest.raises(ValueError, match="need 2 run ids"):
        sol.trajectories(runs=["x"])


def test_failed_solves_are_reported_not_hidden():
    from theory.solvers import dopri

    land = eq1()
    out, status = dopri.solve(
        kernel(land),
        T25,
        np.full((2, 2), 0.5),
        land.pack(land.resolve({"lam": np.ones((2, 2))})),
        rtol=1e-9,
        atol=1e-11,
        max_steps=5,
    )
    assert (status == dopri.TOO_MANY_STEPS).all()


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"method": "euler"}, "unknown method 'euler'; valid: dopri, stacked, loop, exact, auto"),
        ({"rtol": 0.0}, "rtol and atol must be > 0"),
    ],
)
def test_bad_integrator_options(kwargs, message):
    with pytest.raises(ValueError, match=message):
        integrate(eq1(), T25, **kwargs)


@pytest.mark.parametrize("t_eval", [[0.0], [0.0, 1.0, 1.0], [0.0, np.nan], [[0.0, 1.0]]])
def test_bad_output_times(t_eval):
    with pytest.raises(ValueError, match="t_eval must be"):
        integrate(eq1(), t_eval)


def test_time_grid_validation():
    assert time_grid(25, 200)[1] == 25 / 199
    for t_end, points in [(0.0, 10), (np.inf, 10), (10.0, 1), (10.0, 2.5)]:
        with pytest.raises(ValueError):
            time_grid(t_end, points)


def test_geometry_helpers():
    t = np.array([0.0, 1.0, 2.0])
    assert first_crossing(t, np.array([0.0, 0.4, 1.0]), 0.7) == pytest.approx(1.5)
    assert np.isnan(first_crossing(t, np.array([0.0, 0.1, 0.2]), 0.7))
    assert first_crossing(t, np.array([0.9, 0.1, 0.2]), 0.7) == 0.0
    square_cw = np.array([[0, 0], [0, 1], [1, 1], [1, 0]], dtype=float)
    assert signed_area(square_cw) == -1.0 and signed_area(square_cw[::-1]) == 1.0
    with pytest.raises(ValueError):
        signed_area(np.zeros((5, 3)))


def test_all_methods_are_registered():
    assert set(METHODS) == {"dopri", "stacked", "loop", "exact"}
    assert eq2_split().name == "eq2-split"


def test_dense_output_coefficients():
    """The continuous extension equals the 5th-order step at x = 1 and matches scipy's RK45 table."""
    from theory.solvers import dopri

    P = np.array([dopri.P1, [0.0] * 4, dopri.P3, dopri.P4, dopri.P5, dopri.P6, dopri.P7])
    b = np.array([dopri.B1, 0.0, dopri.B3, dopri.B4, dopri.B5, dopri.B6, 0.0])
    np.testing.assert_allclose(P.sum(axis=1), b, atol=1e-15)
    scipy_rk = pytest.importorskip("scipy.integrate._ivp.rk")
    np.testing.assert_allclose(P, scipy_rk.RK45.P, rtol=1e-14, atol=1e-15)


def test_dopri_on_irregular_output_times():
    t = np.concatenate([[1.5], 1.5 + np.cumsum(np.random.default_rng(4).exponential(0.3, 60))])
    values = {"lam": (0.7, 1.3), "t_switch": (5.0, 2.0), "z_bias": (0.0, 1.0), "z0": (0.3, 0.9)}
    got = integrate(eq1(), t, values)
    ref = reference.solve(
        reference.eq1_rhs((0.7, 1.3), (5, 2), (2, 2), (0, 1), (1, 1)), (0.3, 0.9), t
    )
    np.testing.assert_allclose(got.z[0], ref, atol=1e-8)
    assert got.z[0, 0].tolist() == [0.3, 0.9]


@pytest.mark.parametrize("rtol", [1e-4, 1e-6, 1e-8])
def test_dopri_error_follows_the_tolerance(rtol):
    ref = integrate(
        notebook(), T25, {"a": np.array([0.3, 1.0, 4.0])}, method="loop", rtol=1e-13, atol=1e-15
    )
    got = integrate(notebook(), T25, {"a": np.array([0.3, 1.0, 4.0])}, rtol=rtol, atol=rtol * 1e-2)
    err = np.abs(got.z - ref.z).max()
    assert rtol * 1e-3 < err < rtol * 10


def test_auto_method_picks_exact_where_linear_else_stacked_for_few_and_dopri_for_many():
    linear = integrate(eq1(), T25, {"lam": np.ones((3, 2))}, method="auto")
    few = integrate(coupled(), T25, {"lam": np.ones((3, 2))}, method="auto")
    many = integrate(coupled(), T25, {"lam": np.ones((64, 2))}, method="auto")
    assert (linear.method, few.method, many.method) == ("exact", "stacked", "dopri")
    np.testing.assert_allclose(few.z[0], many.z[0], atol=1e-7)
    np.testing.assert_allclose(linear.z[0], integrate(eq1(), T25, method="stacked").z[0], atol=1e-7)


@pytest.mark.parametrize("z0", [1e-13, 1e-9, 0.0])
def test_a_start_just_above_zero_does_not_underflow_the_first_step(z0):
    # |z0| a thousandth of atol: the initial-step heuristic asked for a 1e-15 step and failed at once
    params = {
        "lam": np.array([[50.0, 6.0]]),
        "t_switch": np.array([[0.01, 0.4]]),
        "z_bias": np.array([[1.0, 1.0]]),
        "z_target": np.array([[0.06, 1.0]]),
        "k": np.array([[7.5]]),
        "z0": np.array([[z0, z0]]),
    }
    t = np.linspace(0, 1, 50)
    fast = integrate(eq1(2), t, params, method="dopri", rtol=1e-8, atol=1e-10)
    slow = integrate(eq1(2), t, params, method="stacked", rtol=1e-10, atol=1e-12)
    assert fast.success, fast.message
    np.testing.assert_allclose(fast.z, slow.z, atol=1e-6)
