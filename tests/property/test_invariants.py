"""Invariants of the toy dynamics (equations.md section 5), as hypothesis properties.

Each test names the invariant it checks (numbers refer to the table in equations.md section 5).
Paths come from the stacked solve_ivp path at tight tolerances (no numba compile needed here) and, for
the models whose flow is linear in z, from the exact path too: every invariant holds on both (the
linear models' stacked runs under -m slow).
"""

import numpy as np
import pytest
import sympy
from scipy.integrate import cumulative_simpson, solve_ivp
from hypothesis import assume, given
from hypothesis import strategies as st

from reference import first_crossing, signed_area
from theory.solvers.integrate import integrate, time_grid
from theory.models.landscape import T
from theory.models.paper import coupled, eq1, eq2, notebook

TOL = dict(rtol=1e-10, atol=1e-12)
unit = st.floats(0, 1)
pair = lambda s: st.tuples(s, s).map(np.array)  # noqa: E731


@st.composite
def eq1_params(draw):
    return {
        "lam": draw(pair(st.floats(0.1, 3))),
        "t_switch": draw(pair(st.floats(0, 12))),
        "k": draw(pair(st.floats(0.3, 4))),
        "z_bias": draw(pair(unit)),
        "z_target": draw(pair(unit)),
        "z0": draw(pair(unit)),
    }


# the linear models: both paths. The stacked path's run is under -m slow (70 s in all): by default the
# invariants hold on the exact path, and test_integrate's differential tests hold the stacked one to it
BOTH = pytest.mark.parametrize("method", [pytest.param("stacked", marks=pytest.mark.slow), "exact"])


def path(land, values, t_end=25.0, points=200, method="stacked"):
    t = time_grid(t_end, points)
    return t, integrate(land, t, values, method=method, **TOL).z[0]


def paths(land, *values, t_end=25.0, points=200, method="stacked"):
    """Several parameter sets' paths from one integration (one batch: a stacked solve steps them
    together), as a list in the order given."""
    t = time_grid(t_end, points)
    batch = {k: np.stack([np.asarray(v[k], dtype=float) for v in values]) for k in values[0]}
    return t, list(integrate(land, t, batch, method=method, **TOL).z)


def gate(v, t):
    return 1 / (1 + np.exp(-v["k"] * (t - v["t_switch"])))


# 1. hull / box invariance and the speed limit |dz_i/dt| <= λ_i
@BOTH
@given(eq1_params())
def test_hull_invariance_and_speed_limit(method, v):
    t, z = path(eq1(), v, method=method)
    corners = np.stack([v["z0"], v["z_bias"], v["z_target"]])
    assert np.all(z >= corners.min(axis=0) - 1e-7) and np.all(z <= corners.max(axis=0) + 1e-7)
    rhs = eq1().gradient_flow(v)
    speed = np.abs(np.array([rhs(ti, zi) for ti, zi in zip(t, z)]))
    assert np.all(speed <= v["lam"] + 1e-12)


# 2. frozen-time descent: at fixed t*, the flow of E(., t*) descends to the unique minimum m(t*)
@given(eq1_params(), st.floats(0, 20))
def test_frozen_time_flow_descends_to_the_moving_target(v, t_star):
    land = eq1()
    rhs = land.gradient_flow(v)
    tau = np.linspace(0, 40 / v["lam"].min(), 400)
    sol = solve_ivp(lambda _, z: rhs(t_star, z), (0, tau[-1]), v["z0"], t_eval=tau, **TOL)
    energy = land.energy_at(t_star, sol.y.T, v)
    assert np.all(np.diff(energy) <= 1e-12)
    m = v["z_bias"] + gate(v, t_star) * (v["z_target"] - v["z_bias"])
    np.testing.assert_allclose(sol.y[:, -1], m, atol=1e-6)


# 3. energy balance along the true path: dE/dt = -|∇E|² + ∂E/∂t (E itself is not monotone)
_dEdt = {}


def partial_t(land):
    if land.name not in _dEdt:
        args = (T, *land.state, *land.symbols)
        _dEdt[land.name] = sympy.lambdify(args, sympy.diff(land.energy, T), "numpy")
    return _dEdt[land.name]


@BOTH
@given(eq1_params())
def test_energy_balance_identity(method, v):
    land = eq1()
    t, z = path(land, v, points=2001, method=method)
    E = land.energy_at(t, z, v)
    rhs = land.gradient_flow(v)
    grad2 = np.array([np.sum(rhs(ti, zi) ** 2) for ti, zi in zip(t, z)])
    p = land.pack(land.resolve(v))[0]
    dt_part = partial_t(land)(t, *z.T, *p)
    balance = cumulative_simpson(-grad2 + dt_part, x=t, initial=0.0)  # the identity, integrated
    scale = 1 + np.abs(grad2).max() + np.abs(dt_part).max()
    np.testing.assert_allclose(E - E[0], balance, atol=1e-6 * scale)


@BOTH
def test_energy_rises_when_a_gate_switches(method):
    """The counterexample to 'E decreases along the path': the default class-11 setting."""
    land = eq1()
    t, z = path(land, {}, points=2001, method=method)
    E = land.energy_at(t, z)
    assert np.diff(E).max() > 1e-3


# 4. convergence to the true target (eq2: the shifted target)
@BOTH
@given(eq1_params(), st.floats(0, 1), st.floats(0, 1))
def test_convergence_to_the_true_target(method, v, p, beta):
    t_end = v["t_switch"].max() + 40 / v["lam"].min() + 40 / v["k"].min()
    _, z = path(eq2(), {**v, "p": p, "beta": beta}, t_end=t_end, method=method)
    target = v["z_target"] * np.array([1 - beta * p, 1.0])
    np.testing.assert_allclose(z[-1], target, atol=1e-5)


# 5. closed form of an unbiased coordinate (z̃_i = ẑ_i): exponential relaxation, gates irrelevant
@BOTH
@given(eq1_params())
def test_unbiased_coordinates_relax_exponentially(method, v):
    v = {**v, "z_bias": v["z_target"]}
    t, z = path(eq1(), v, method=method)
    expected = v["z_target"] + (v["z0"] - v["z_target"]) * np.exp(-np.outer(t, v["lam"]))
    np.testing.assert_allclose(z, expected, atol=1e-8)


# 6. swap symmetry: exchanging the concepts (with all their parameters) mirrors the path and the turn
@BOTH
@given(eq1_params())
def test_swap_symmetry_reverses_the_turn(method, v):
    _, (z, zs) = paths(eq1(), v, {k: x[::-1] for k, x in v.items()}, method=method)
    np.testing.assert_allclose(zs, z[:, ::-1], atol=1e-8)
    assert abs(signed_area(zs) + signed_area(z)) < 1e-8


@BOTH
@given(st.floats(0.2, 5))
def test_notebook_a_to_one_over_a_mirrors(method, a):
    _, (z, zm) = paths(notebook(), {"a": a}, {"a": 1 / a}, method=method)
    np.testing.assert_allclose(zm, z[:, ::-1], atol=1e-8)


# 7. turn direction: notebook z2 >= z1 iff a >= 1; class 11 biased toward 01 turns clockwise
@BOTH
@given(st.floats(0.2, 5).filter(lambda a: abs(a - 1) > 1e-3))
def test_notebook_turn_direction(method, a):
    _, z = path(notebook(), {"a": a}, method=method)
    if a > 1:
        assert np.all(z[:, 1] >= z[:, 0] - 1e-9) and signed_area(z) < 0
    else:
        assert np.all(z[:, 1] <= z[:, 0] + 1e-9) and signed_area(z) > 0


@BOTH
@given(lam=pair(st.floats(0.3, 3)), t_weak=st.floats(4, 12), k=st.floats(1, 4))
def test_class_11_memorizes_then_turns_clockwise(method, lam, t_weak, k):
    """z̃ = (0, 1) (size stronger): color first heads to 0 (toward class 01), then to 1; a right turn."""
    assume(
        t_weak * lam[0] >= 2
    )  # the weak gate is late relative to 1/λ (the regime of the invariant)
    v = {
        "lam": lam,
        "t_switch": np.array([t_weak, 0.0]),
        "k": np.array([k, k]),
        "z_bias": np.array([0.0, 1.0]),
        "z_target": np.ones(2),
    }
    mirrored = {key: x[::-1] for key, x in v.items()}
    _, (z, zm) = paths(eq1(), v, mirrored, t_end=t_weak + 40 / lam.min(), method=method)
    assert z[:, 0].min() < 0.5 - 1e-3 and z[-1, 0] > 0.99
    assert signed_area(z) < 0
    assert signed_area(zm) > 0


# 8. time rescaling: z(t; cλ, t_i/c, ck) = z(ct; λ, t_i, k)
@BOTH
@given(eq1_params(), st.floats(0.25, 4))
def test_time_rescaling(method, v, c):
    t = time_grid(25 / c, 150)
    fast = integrate(
        eq1(),
        t,
        {**v, "lam": c * v["lam"], "t_switch": v["t_switch"] / c, "k": c * v["k"]},
        method=method,
        **TOL,
    ).z[0]
    slow = integrate(eq1(), c * t, v, method=method, **TOL).z[0]
    np.testing.assert_allclose(fast, slow, atol=1e-7)


# 9. eq2 is affine in p; p = 0 is eq1; the masked coordinate falls with p, the other ignores it
@BOTH
@given(eq1_params(), st.floats(0, 1), st.floats(0, 0.5))
def test_eq2_affine_in_p(method, v, beta, p0):
    t = time_grid(25, 100)
    ps = np.array([p0, p0 + 0.25, p0 + 0.5, 0.0])  # the last: p = 0, to compare with eq1
    z, z_p0 = np.split(
        integrate(eq2(), t, {**v, "p": ps, "beta": beta}, method=method, **TOL).z, [3]
    )
    np.testing.assert_allclose(z[0] - 2 * z[1] + z[2], 0, atol=1e-8)
    assert np.all(np.diff(z[:, :, 0], axis=0) <= 1e-9)
    np.testing.assert_allclose(z[:, :, 1], np.broadcast_to(z[0, :, 1], z[:, :, 1].shape), atol=1e-9)
    z_eq1 = integrate(eq1(), t, v, method=method, **TOL).z[0]
    np.testing.assert_allclose(z_p0[0], z_eq1, atol=1e-9)


# 10. comparison principle: a later switch never helps, so time-to-threshold is non-decreasing in t_i
@BOTH
@given(eq1_params(), st.floats(0, 8), st.floats(0.05, 0.95))
def test_time_to_threshold_non_decreasing_in_switch_time(method, v, delay, level):
    v = {**v, "z_bias": np.minimum(v["z_bias"], v["z_target"])}  # ẑ_i >= z̃_i
    later = {**v, "t_switch": v["t_switch"] + np.array([delay, 0.0])}
    t, (z, z_late) = paths(eq1(), v, later, points=1001, method=method)
    assert np.all(z_late[:, 0] <= z[:, 0] + 1e-8)  # pointwise ordering
    early_time, late_time = (
        first_crossing(t, z[:, 0], level),
        first_crossing(t, z_late[:, 0], level),
    )
    if not np.isnan(late_time):
        assert late_time >= early_time - 1e-6
    else:
        assert np.isnan(late_time)


# 11. stronger signal => learned earlier (unbiased coordinate: T = ln(|z0 - ẑ| / |θ - ẑ|) / λ)
@BOTH
@given(st.floats(0.1, 3), st.floats(1.01, 3), st.floats(0.6, 0.95))
def test_stronger_signal_is_learned_earlier(method, lam, ratio, level):
    v = {
        "lam": np.array([lam, lam * ratio]),
        "z_bias": np.ones(2),
        "z_target": np.ones(2),
        "z0": np.full(2, 0.5),
    }
    t, z = path(eq1(), v, t_end=40 / lam, points=4001, method=method)
    t_weak, t_strong = first_crossing(t, z[:, 0], level), first_crossing(t, z[:, 1], level)
    assert t_strong < t_weak
    np.testing.assert_allclose(t_weak, np.log(0.5 / (1 - level)) / lam, rtol=1e-3)


# 12. superposition: z(t) is affine in (z(0), z̃, ẑ) jointly
@BOTH
@given(eq1_params(), eq1_params(), st.floats(0, 1))
def test_affine_in_start_and_targets(method, v, w, s):
    shared = {"lam": v["lam"], "t_switch": v["t_switch"], "k": v["k"]}
    keys = ("z0", "z_bias", "z_target")
    mix = {k: s * v[k] + (1 - s) * w[k] for k in keys}
    _, (za, zb, zm) = paths(
        eq1(),
        {**shared, **{k: v[k] for k in keys}},
        {**shared, **{k: w[k] for k in keys}},
        {**shared, **mix},
        method=method,
    )
    np.testing.assert_allclose(zm, s * za + (1 - s) * zb, atol=1e-8)


# the coupled model (an extension): each concept relaxes toward a mix of its own two targets, so it stays in
# their hull with its start; its speed is at most λ_i times its distance to the farther target
@given(
    pair(st.floats(0.1, 3)),
    pair(unit),
    pair(unit),
    pair(unit),
    st.floats(1, 60),
    st.floats(0.2, 1.2),
)
def test_coupled_hull_invariance_and_speed_limit(lam, z_target, z_bias, z0, kappa, theta):
    v = {
        "lam": lam,
        "z_target": z_target,
        "z_bias": z_bias,
        "z0": z0,
        "kappa": kappa,
        "theta": theta,
    }
    t, z = path(coupled(), v)
    corners = np.stack([z0, z_bias, z_target])
    assert np.all(z >= corners.min(axis=0) - 1e-7) and np.all(z <= corners.max(axis=0) + 1e-7)
    rhs = coupled().gradient_flow(v)
    speed = np.abs(np.array([rhs(ti, zi) for ti, zi in zip(t, z)]))
    assert np.all(speed <= lam + 1e-12)


# the coupled model's switch is set by the others' state, not by the clock: a slower size delays color's fall
@given(st.floats(0.5, 3), st.floats(0.1, 0.5), st.floats(1.5, 4))
@pytest.mark.slow  # long end to end: run with -m slow
def test_coupled_slower_partner_delays_the_memorizing_fall(lam_color, lam_size, slow):
    def fall(size_speed):
        v = {"lam": np.array([lam_color, size_speed]), "z0": np.array([0.2, 0.2])}
        t, z = path(coupled(), v, t_end=200.0, points=1500)
        return t[np.argmax(z[:, 0])], z[:, 0].max(), z[-1]

    t_fast, peak_fast, end_fast = fall(lam_size)
    t_slow, peak_slow, end_slow = fall(lam_size / slow)
    assert t_slow > t_fast and peak_slow >= peak_fast - 1e-9  # color keeps rising while size lags
    np.testing.assert_allclose(
        [end_fast, end_slow], [[0, 1], [0, 1]], atol=0.02
    )  # both memorize class 01
