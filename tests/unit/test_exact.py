"""The exact path for flows linear in z: detection from the expression, and DOP853 as the independent check."""

import numpy as np
import sympy
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reference
from theory.models import linear_form
from theory.solvers import exact, quadrature
from theory.solvers.integrate import integrate, time_grid
from theory.models.paper import coupled, eq1, eq2, eq2_split, get_model, notebook
from theory.models.user_energy import from_expression

T25 = time_grid(25, 200)
TIGHT = dict(
    method="loop", rtol=1e-13, atol=1e-15
)  # DOP853, the reference of the error bound
DOPRI_TIGHT = dict(method="dopri", rtol=1e-12, atol=1e-14)
unit = st.floats(0, 1)


def worst_error(land, t, values):
    """The exact path's largest difference from the closer of two tight references: DOP853 at rtol 1e-13 can
    itself be off by 1e-9 (eq1 lam=(3, 0.0625), z_target=(1, 0), z0=(0, 1): it overshoots z_color = 1 by 5e-10,
    which no true path of that flow does), so the numba Dormand-Prince at rtol 1e-12 is asked too."""
    got = integrate(land, t, values, method="exact")
    assert got.success and got.method == "exact", got.message
    errors = []
    for ref in (integrate(land, t, values, **TIGHT), integrate(land, t, values, **DOPRI_TIGHT)):
        errors.append(float(np.abs(got.z - ref.z).max()) if ref.success else np.inf)
    return min(errors), got


@pytest.mark.parametrize("name", ["notebook", "eq1", "eq2", "eq2-split"])
def test_the_paper_models_are_linear_in_z_and_the_coupled_one_is_not(name):
    assert exact.why_not_linear(get_model(name)) is None
    assert exact.linear_form(get_model(name)).constant_a == (
        name != "eq2-split"
    )  # its split well stiffens with S_1
    assert "not linear" in exact.why_not_linear(coupled())
    assert integrate(get_model(name), T25, method="auto").method == "exact"
    assert integrate(coupled(), T25, method="auto").method == "stacked"


@pytest.mark.parametrize(
    "energy,why",
    [
        (
            "(z1 - z2)**2/2 + (z2 - 1)**2/2",
            "the flow of color depends on z_size (a coupled linear system)",
        ),
        ("(z1 - 1)**4/4 + (z2 - t)**2/2", "the flow of color is not linear in z_color"),
        (
            "sigmoid(z2 - 3)*(z1 - 1)**2/2 + z2**2/2",
            "the flow of color is not linear in z_color (∂f/∂z depends on the state)",
        ),
    ],
)
def test_other_flows_are_refused_by_name_with_the_reason(energy, why):
    land = from_expression(energy)
    assert why in exact.why_not_linear(land)
    with pytest.raises(ValueError, match="method='exact' needs a flow linear in z"):
        integrate(land, T25, method="exact")
    assert integrate(land, T25, method="auto").method != "exact"


@settings(max_examples=25)
@given(
    lam=st.tuples(st.floats(0.05, 6), st.floats(0.05, 6)),
    t_switch=st.tuples(st.floats(0, 22), st.floats(0, 22)),
    k=st.tuples(st.floats(0.2, 8), st.floats(0.2, 8)),
    z_bias=st.tuples(unit, unit),
    z_target=st.tuples(unit, unit),
    z0=st.tuples(unit, unit),
)
def test_eq1_matches_dop853_to_1e_9(lam, t_switch, k, z_bias, z_target, z0):
    err, _ = worst_error(
        eq1(), T25, dict(lam=lam, t_switch=t_switch, k=k, z_bias=z_bias, z_target=z_target, z0=z0)
    )
    assert err < 1e-9


@settings(max_examples=15)  # DOP853 at rtol 1e-13 is the slow part
@given(a=st.floats(0.2, 5), s=st.floats(0.5, 6), k=st.floats(0.05, 3), t0=st.floats(0, 20))
def test_notebook_matches_dop853_to_1e_9(a, s, k, t0):
    assert worst_error(notebook(), T25, dict(a=a, s=s, k=k, t0=t0))[0] < 1e-9


@settings(max_examples=15)
@given(p=unit, beta=st.floats(0.05, 1), k=st.floats(0.2, 6), t_switch=st.floats(0, 20))
def test_eq2_both_forms_match_dop853_to_1e_9(p, beta, k, t_switch):
    values = dict(p=p, beta=beta, k=(k, 2.0), t_switch=(t_switch, 1.0))
    assert worst_error(eq2(), T25, values)[0] < 1e-9
    assert worst_error(eq2_split(), T25, values)[0] < 1e-9  # a that changes with time


def test_a_batch_mixes_shared_and_per_trajectory_gates():
    """Shared gate times are integrated once per time; batched ones per trajectory: both paths, one batch."""
    rng = np.random.default_rng(3)
    n = 40
    values = {
        "lam": rng.uniform(0.1, 4, (n, 2)),
        "t_switch": np.c_[rng.uniform(0, 20, n), np.full(n, 3.0)],
        "k": (1.5, 0.7),
        "z_bias": rng.uniform(0, 1, (n, 2)),
        "z0": rng.uniform(0, 1, (n, 2)),
    }
    err, sol = worst_error(eq1(), T25, values)
    assert err < 1e-9 and sol.z.shape == (n, 200, 2)


def test_decay_rates_that_change_with_time_and_irregular_output_times():
    land = from_expression(
        "(1 + sigmoid(2*(t - 4)))*lam*(z1 - 1)**2/2 + (1 + t/10)*(z2 - sigmoid(t - 6))**2/2",
        {"lam": 1.0},
    )
    assert not exact.linear_form(land).constant_a
    t = np.concatenate([[0.5], 0.5 + np.cumsum(np.random.default_rng(1).exponential(0.4, 50))])
    err, sol = worst_error(land, t, {"lam": np.array([0.2, 1.0, 3.0])})
    assert err < 1e-9 and sol.z[0, 0].tolist() == [0.5, 0.5]


def test_class_00_is_the_closed_form():
    lam = np.array([[0.2, 3.0], [1.0, 1.0], [40.0, 0.25]])
    sol = integrate(eq1(), T25, {"lam": lam, "z_bias": 0.0, "z_target": 0.0}, method="exact")
    np.testing.assert_allclose(
        sol.z, 0.5 * np.exp(-lam[:, None, :] * T25[None, :, None]), rtol=1e-12, atol=1e-15
    )


def test_the_hand_written_ode_agrees():
    t = np.linspace(0, 30, 301)
    args = (0.3, 2.0), (9.0, 1.0), (1.5, 0.7), (0.0, 1.0), (1.0, 0.8)
    got = integrate(
        eq1(), t, dict(zip(("lam", "t_switch", "k", "z_bias", "z_target"), args)), method="exact"
    )
    ref = reference.solve(reference.eq1_rhs(*args), (0.5, 0.5), t)
    np.testing.assert_allclose(got.z[0], ref, atol=1e-9)


def test_the_refinement_is_reported_and_follows_the_tolerance():
    values = {
        "lam": (1.0, 1.0),
        "k": (6.0, 6.0),
    }  # steep gates: more than one subinterval per output interval
    loose = integrate(eq1(), T25, values, method="exact", rtol=1e-5, atol=1e-7)
    tight = integrate(eq1(), T25, values, method="exact", rtol=1e-12, atol=1e-14)
    ref = integrate(eq1(), T25, values, **TIGHT)
    assert loose.exact.subdivisions < tight.exact.subdivisions
    assert np.abs(tight.z - ref.z).max() < 1e-11
    assert (
        np.abs(loose.z - ref.z).max() <= loose.exact.difference
    )  # the returned error is below the estimate


def test_trajectories_refine_on_their_own():
    """A steep gate refines further than its gentle neighbours; each is accepted where it converged."""
    k = np.array([[0.5, 0.5], [12.0, 12.0], [0.5, 0.5], [30.0, 1.0], [1.0, 1.0]])
    values = {
        "k": k,
        "t_switch": np.array([[6.0, 0.0], [6.03, 3.01], [6.0, 0.0], [9.07, 0.0], [2.0, 1.0]]),
    }
    err, sol = worst_error(eq1(), T25, values)
    assert err < 1e-9 and sol.exact.subdivisions >= 8


def test_a_gate_too_steep_for_the_cap_fails_visibly(monkeypatch):
    monkeypatch.setattr(exact, "MAX_SUBDIVISIONS", 2)
    values = {
        "k": np.array([[200.0, 2.0], [1.0, 1.0]]),
        "t_switch": np.array([[6.01, 0.0], [6.0, 0.0]]),
    }
    sol = integrate(eq1(), T25, values, method="exact", rtol=1e-12, atol=1e-14)
    assert (
        not sol.success
        and sol.status.tolist() == [exact.UNRESOLVED, 0]  # refused before refining (issue #51)
        and "1 of 2 trajectories failed" in sol.message
    )
    assert np.isnan(sol.z[0]).all() and np.isfinite(sol.z[1]).all()


def test_chunks_give_the_same_paths(monkeypatch):
    values = {"lam": np.random.default_rng(2).uniform(0.1, 3, (30, 2))}
    whole = integrate(eq1(), T25, values, method="exact").z
    monkeypatch.setattr(exact, "CHUNK_ELEMENTS", 1)  # one trajectory at a time
    np.testing.assert_allclose(
        integrate(eq1(), T25, values, method="exact").z, whole, rtol=0, atol=1e-14
    )


def test_terms_free_of_t_in_closed_form_also_without_decay_and_with_growth():
    """a = 0 (a constant push: z = z0 + b t) and a < 0 (a repelling well: the error bound grows with phi > 1)."""
    land = from_expression("-3*z1 - lam*(z2 - 1)**2/2", {"lam": 0.1})
    sol = integrate(land, T25, method="exact")
    assert sol.success and sol.method == "exact"
    np.testing.assert_allclose(sol.z[0, :, 0], 0.5 + 3 * T25, rtol=1e-13)
    np.testing.assert_allclose(sol.z[0, :, 1], 1 - 0.5 * np.exp(0.1 * T25), rtol=1e-12)


def test_constant_decay_on_irregular_output_times():
    """Unequal output intervals take the general path (both subdivisions propagated), still exact."""
    t = np.concatenate([[0.0], np.cumsum(np.random.default_rng(4).exponential(0.3, 80))])
    values = {"lam": np.array([[0.3, 2.0], [4.0, 0.7]]), "k": (3.0, 1.0), "t_switch": (5.0, 9.0)}
    err, sol = worst_error(eq1(), t, values)
    assert err < 1e-9 and sol.z.shape == (2, t.size, 2)


def test_the_paths_are_a_time_major_view_that_reads_as_n_t_d():
    values = {"lam": np.random.default_rng(5).uniform(0.1, 3, (7, 2))}
    sol = integrate(eq1(), T25, values, method="exact")
    loop = integrate(eq1(), T25, values, method="stacked", rtol=1e-12, atol=1e-14)
    assert sol.z.shape == (7, 200, 2) and sol.z.base is not None
    np.testing.assert_allclose(np.ascontiguousarray(sol.z), loop.z, atol=1e-9)
    first = sol.trajectories()[0]
    np.testing.assert_array_equal(first.z, sol.z[0])


def test_a_power_too_large_to_expand_is_split_as_written():
    """(t/50 + a + b + c + d + e)**30 has 324,632 terms expanded: sympy.expand hung the default path (issue #51);
    the form is split as written and the exact path still agrees with dopri."""
    from theory.models.linear_form import MAX_EXPANDED_TERMS, expanded_terms, linear_form

    land = from_expression(
        "(z1 - (t/50 + a + b + c + d + e)**30)**2/2 + (z2 - 1)**2/2", {n: 0.01 for n in "abcde"}
    )
    power = (sympy.Symbol("t") / 50 + sum(sympy.symbols("a b c d e"))) ** 30
    assert expanded_terms(power) > MAX_EXPANDED_TERMS
    assert linear_form(land) is not None
    t = np.linspace(0.0, 25.0, 26)
    fast = integrate(land, t, method="exact")
    ref = integrate(land, t, method="dopri")
    assert fast.success and ref.success
    np.testing.assert_allclose(fast.z, ref.z, atol=1e-7)


def test_cheap_subdivisions_share_one_solve_on_the_fast_path_only():
    """A sweep whose rates straddle a power of 2 is solved at once (not split and scattered back); the
    stiff ones and the general path keep a group each."""
    first = np.array([1, 2, 16, 2, 1, exact.MAX_SUBDIVISIONS])
    fast = [(r, rows.tolist()) for r, rows in exact._groups(first, uniform=True)]
    assert fast == [(2, [0, 1, 3, 4]), (16, [2])]
    general = [(r, rows.tolist()) for r, rows in exact._groups(first, uniform=False)]
    assert general == [(1, [0, 4]), (2, [1, 3]), (16, [2])]


@pytest.mark.parametrize("mode", ["compiled", "threaded", "numpy"])
def test_the_pass_is_the_constants_differences_and_the_propagated_path(mode, monkeypatch):
    """constants_gap_path (both subdivisions' constants formed a block of columns at a time; then one
    compiled walk, on one thread or bands of blocks on two, or numpy's copy and propagation: their
    difference summed, the path propagated and written, its smallest |z|) against the constants of
    each subdivision formed whole, subtracted, and propagated by numpy: shared gates and gates of a
    trajectory's own at once, blocks that cut a concept's columns included."""
    compiled = mode != "numpy"
    threads = []
    if mode == "threaded":
        monkeypatch.setattr(quadrature, "THREADED_FROM", 1)
        monkeypatch.setattr(quadrature.numba, "get_num_threads", lambda: 2)
        real = quadrature.ThreadPoolExecutor
        monkeypatch.setattr(
            quadrature, "ThreadPoolExecutor", lambda k: threads.append(k) or real(k)
        )
    rng = np.random.default_rng(5)
    n, land = 700, eq1()
    values = {
        "lam": rng.uniform(0.1, 4, (n, 2)),
        "t_switch": np.c_[rng.uniform(0, 20, n), np.full(n, 3.0)],
        "k": (30.0, 20.0),
    }
    arrays = land.resolve(values)
    p, form, t = land.pack(arrays), exact.linear_form(land), T25
    columns, span = quadrature.param_columns(p), t[1] - t[0]
    coefs, rates = quadrature.coefficients(form, t, columns, n, 2)
    parts = {
        r: quadrature.uniform_parts(
            form,
            linear_form.at(
                form.eval_times,
                quadrature.subinterval_nodes(t, r)[1].ravel(),
                columns,
                len(form.times),
            ),
            coefs,
            rates,
            span,
            r,
        )
        for r in (1, 2)
    }
    whole = {}
    for r, part in parts.items():
        whole[r] = np.empty((t.size - 1, 2 * n))
        quadrature.constants_into(*part, whole[r])
    expected = np.abs(whole[2] - whole[1]).sum(axis=0)
    assert expected.max() > 1e-8  # the steep switches differ (the rest cancel to rounding)
    z0 = rng.uniform(-1, 1, (n, 2))
    phi = np.exp(-np.array(rates) * span)  # (D, N)
    path = np.empty((t.size, 2, n))
    quadrature.propagate(
        phi[:, None, :], whole[2].reshape(t.size - 1, 2, n).transpose(1, 0, 2), z0, path
    )
    walked = np.empty((t.size, 2 * n))
    walked[0] = z0.T.ravel()
    gap, low = quadrature.constants_gap_path(parts[2], parts[1], phi.ravel(), walked, compiled)
    np.testing.assert_allclose(gap, expected, rtol=1e-9, atol=1e-13)
    np.testing.assert_array_equal(walked, path.reshape(t.size, 2 * n))  # phi z + c, in that order
    np.testing.assert_array_equal(low, np.abs(path).min(axis=0).ravel())
    assert threads == ([2] if mode == "threaded" else [])


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "numpy"])
def test_the_pass_keeps_nan(compiled):
    """A path that turns NaN has NaN as its smallest |z| (so the solve is not accepted), and an infinite
    constant makes an infinite gap."""
    stacked, weights = np.ones((3, 1)), np.array([[1.0, np.nan, np.inf]])
    flat = np.zeros((4, 3))
    gap, low = quadrature.constants_gap_path(
        (stacked, weights, []), (stacked, np.zeros((1, 3)), []), np.full(3, 0.5), flat, compiled
    )
    assert np.isnan(low[1]) and np.isnan(flat[1:, 1]).all() and low[0] == 0.0
    assert gap[0] == 3.0 and np.isnan(gap[1]) and np.isinf(gap[2])


def test_a_process_walks_compiled_from_its_second_large_solve(monkeypatch):
    """A one-off sweep and every small solve stay in numpy (no compiled code to load); the second
    solve of at least COMPILED_FROM path values in a process, and every one after, walk compiled; and
    both paths give the same sweep."""
    monkeypatch.setattr(quadrature, "_large_solves", 0)
    monkeypatch.setattr(quadrature, "COMPILED_FROM", 2 * (T25.size - 1) * 50)  # 50 on T25
    walks = []
    real = quadrature.constants_gap_path
    monkeypatch.setattr(
        quadrature,
        "constants_gap_path",
        lambda *a: walks.append(a[-1]) or real(*a),
    )
    a = np.linspace(0.2, 5, 50)
    runs = [integrate(notebook(), T25, {"a": v}, method="exact").z for v in (a[:10], a, a, a)]
    assert walks == [False, False, True, True]
    np.testing.assert_array_equal(runs[2], runs[1])


special = st.sampled_from([0.0, 1.0, 0.5, 2.0, 1e300, np.inf, -np.inf, np.nan])


@given(
    st.lists(st.tuples(special, special, special, special), min_size=2, max_size=12),
    st.tuples(special, special),
)
def test_a_path_finite_at_its_end_was_finite_all_along(steps, z0):
    """finite_paths reads the last point alone; on the quadrature's recursion z' = phi z + c (phi >= 0, as
    e^{-A} is, 0 and inf included; c anything) it agrees with checking every point."""
    phi = np.abs(np.array([s[:2] for s in steps]).T[:, :, None])  # (D, T-1, 1)
    c = np.array([s[2:] for s in steps]).T[:, :, None]
    out = np.empty((len(steps) + 1, 2, 1))
    with np.errstate(all="ignore"):
        quadrature.propagate(phi, c, np.array([z0]), out)
    z = out.transpose(2, 0, 1)
    assert exact.finite_paths(z).tolist() == np.isfinite(z).all(axis=(1, 2)).tolist()
