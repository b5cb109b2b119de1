"""The structured identity mapping: sim1 is its closed form, sim2 keeps its invariants (symmetry, a training loss
that never rises, the fixed point W = I, learning in order of signal), and a real two-layer linear network
trained by gradient descent on sampled SIM data follows sim2."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.integrate import solve_ivp

from theory.models.identity_mapping import (
    Task,
    coordinates,
    flow,
    ood_loss,
    rises,
    sim1,
    train_loss,
)
from theory.solvers.two_layer import sim2

mus = st.lists(st.floats(0.5, 3.0), min_size=2, max_size=4)


@settings(max_examples=25, deadline=None)
@given(mu=mus, seed=st.integers(0, 1000), extra=st.integers(0, 2))
def test_sim1_is_the_closed_form_of_its_gradient_flow(mu, seed, extra):
    task = Task(mu, 0.05, d=len(mu) + extra)
    t = np.linspace(0, 6, 13)
    w0 = np.random.default_rng(seed).normal(0, 0.3, (task.d, task.d))
    a = np.diag(task.signal)
    ref = solve_ivp(
        lambda _, y: (-(y.reshape(task.d, task.d) - np.eye(task.d)) @ a).ravel(),
        (0, 6),
        w0.ravel(),
        t_eval=t,
        rtol=1e-10,
        atol=1e-12,
    ).y.T.reshape(t.size, task.d, task.d)
    np.testing.assert_allclose(sim1(task, t, w0), ref, atol=1e-8)
    z = (
        task.x_hat
    )  # the issue's coordinate formula: (1 - e^{-a_k t}) z_k + sum_i e^{-a_i t} w_ki(0) z_i
    k = 0
    formula = (1 - np.exp(-task.signal[k] * t)) * z[k] + (
        np.exp(-np.outer(t, task.signal)) * w0[k]
    ) @ z
    np.testing.assert_allclose((sim1(task, t, w0) @ z)[:, k], formula, atol=1e-12)


@settings(max_examples=20, deadline=None)
@given(
    a=st.floats(0.1, 3.0),
    scale=st.floats(0.01, 0.5),
    seed=st.integers(0, 1000),
    d=st.integers(2, 4),
)
def test_the_w_flow_with_equal_signals_stays_symmetric_and_matches_the_u_flow(a, scale, seed, d):
    """Integrating dW/dt (flow) from a symmetric start keeps W symmetric, and agrees with sim2, which integrates U."""
    task = Task(np.full(d, np.sqrt(d * max(a - 0.05**2, 1e-3))), 0.05)
    u0 = task.initial(scale, seed)
    t = np.linspace(0, 10, 11)
    w = solve_ivp(
        lambda _, y: flow(y.reshape(d, d), task.signal).ravel(),
        (0, 10),
        (u0 @ u0.T).ravel(),
        t_eval=t,
        rtol=1e-10,
        atol=1e-12,
    ).y.T.reshape(t.size, d, d)
    np.testing.assert_allclose(w, np.swapaxes(w, 1, 2), atol=1e-9)
    np.testing.assert_allclose(sim2(task, t, u0), w, atol=1e-7)


@settings(max_examples=20, deadline=None)
@given(mu=mus, scale=st.floats(0.001, 0.3), seed=st.integers(0, 1000))
def test_the_training_loss_never_rises_along_sim2(mu, scale, seed):
    task = Task(mu, 0.05)
    w = sim2(task, np.linspace(0, 40, 401), task.initial(scale, seed))
    assert np.all(np.diff(train_loss(task, w)) <= 1e-9)


def test_the_identity_on_the_concepts_is_a_fixed_point_and_the_end_of_learning():
    task = Task((1.0, 1.5, 2.2), 0.05)
    assert np.abs(flow(np.eye(3), task.signal)).max() < 1e-15
    w = sim2(task, np.linspace(0, 200, 5), task.initial(0.1, 0))
    np.testing.assert_allclose(w[-1], np.eye(3), atol=1e-6)
    assert ood_loss(task, w)[-1] < 1e-10 and train_loss(task, w)[-1] < 1e-10


@pytest.mark.parametrize("model", ["sim1", "sim2"])
def test_concepts_are_learned_in_order_of_signal(model):
    """Stronger signal, earlier: the time each diagonal entry of W reaches 1/2."""
    task = Task((1.0, 2.2, 1.5), 0.05)  # signals in the order 2, 3, 1 (by concept index 1, 2, 0)
    t = np.linspace(0, 60, 6001)
    w0 = task.initial(0.01, 3)
    w = sim1(task, t, w0) if model == "sim1" else sim2(task, t, w0)
    half = [t[np.argmax(w[:, p, p] >= 0.5)] for p in range(3)]
    assert half[1] < half[2] < half[0], half
    assert np.argsort(half).tolist() == np.argsort(-task.signal).tolist()


def gd_path(task, moments, eta, horizon, seed=2):
    """(U(0), W = U U^T along plain gradient descent on U with step eta, for U-flow time horizon / 2)."""
    u0 = u = np.random.default_rng(seed).normal(0, 0.1 / np.sqrt(task.d), (task.d, task.d))
    path = [u @ u.T]
    for _ in range(int(round(horizon / (2 * eta)))):
        grad_w = (u @ u.T - np.eye(task.d)) @ moments  # dL/dW of 1/(2n) sum ||W x - x||^2
        u = u - eta * (grad_w + grad_w.T) @ u
        path.append(u @ u.T)
    return u0, np.array(path)


def test_a_two_layer_network_trained_by_gradient_descent_follows_sim2():
    """Plain GD on U with step eta, on 200 samples per cluster, against sim2 at t = 2 eta k (the flow on U moves W
    at twice sim2's rate) with the sample's own second moments: the gap is first order in eta (it halves when eta
    does) and below 0.01 at eta = 0.005."""
    task = Task((1.0, 1.5, 2.2), 0.05, d=4)
    x = task.sample(200, seed=1)
    moments = x.T @ x / x.shape[0]
    assert np.abs(moments - np.diag(np.diag(moments))).max() < 0.02  # nearly diagonal, as A
    horizon, gaps = 30.0, []
    for eta in (0.01, 0.005):
        u0, path = gd_path(task, moments, eta, horizon)
        t = 2 * eta * np.arange(path.shape[0])
        every = path.shape[0] // 30
        exact = solve_ivp(
            lambda _, y: flow_full(y.reshape(task.d, task.d), moments).ravel(),
            (0, t[-1]),
            path[0].ravel(),
            t_eval=t[::every],
            rtol=1e-10,
            atol=1e-12,
        ).y.T.reshape(-1, task.d, task.d)
        gaps.append(np.abs(path[::every] - exact).max())
    assert gaps[1] < 0.01 and 0.4 < gaps[1] / gaps[0] < 0.6, gaps
    # with the population signal A (the sample's small off-diagonal moments dropped) the paths agree to 0.02 (0.0076)
    population = sim2(task, t[::every], u0)
    assert np.abs(path[::every] - population).max() < 0.02
    assert coordinates(task, population, task.x_hat)[-1] == pytest.approx(np.ones(3), abs=0.05)


def flow_full(w, m):
    """sim2's flow with a full (not diagonal) second-moment matrix m."""
    return w @ m + m @ w - 0.5 * (m @ w @ w + w @ w @ m + 2 * w @ m @ w)


def test_rises_counts_only_real_rises():
    x = np.linspace(0, 10, 1001)
    assert rises(np.exp(-x)) == 0
    assert rises(np.exp(-x) + 0.3 * np.exp(-((x - 3) ** 2)) + 0.2 * np.exp(-((x - 6) ** 2))) == 2
    assert rises(np.exp(-x) + 1e-9 * np.sin(50 * x)) == 0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"mu": ()}, "one positive"),
        ({"mu": (1, -1)}, "one positive"),
        ({"mu": (1, 2), "sigma": -0.1}, "sigma"),
        ({"mu": (1, 2), "d": 1}, "at least"),
    ],
)
def test_bad_tasks_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Task(**kwargs)
    task = Task((1.0, 2.0))
    with pytest.raises(ValueError, match="strictly increasing"):
        sim2(task, [0, 1, 1], np.zeros((2, 2)))
    with pytest.raises(ValueError, match="finite"):
        sim1(task, [0, 1], np.zeros((3, 3)))


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 1000), d=st.integers(2, 5))
def test_the_vectorized_flow_equals_the_matrix_formula(seed, d):
    rng = np.random.default_rng(seed)
    w, a = rng.normal(size=(d, d)), rng.uniform(0, 2, d)
    np.testing.assert_allclose(flow(w, a), flow_full(w, np.diag(a)), atol=1e-12)


def test_sim2_stays_positive_semidefinite_from_a_rank_one_start():
    """Integrating W directly from W(0) = eps 1 1^T blows up in finite time (round-off makes an eigenvalue negative,
    and the flow drives it to -inf); integrating U keeps W = U U^T finite and positive semi-definite."""
    task = Task((1.0, 1.5, 2.2), 0.05)
    w = sim2(task, np.linspace(0, 120, 61), np.full((3, 3), 0.01))
    assert np.all(np.isfinite(w)) and np.linalg.eigvalsh(w).min() > -1e-9


# -- the swing-by figures as their authors made them (signal squared, a positive start) ------------------------


def logged(folder, name):
    """(t, OOD loss, {concept index: w_pp}) from a preset's log: the one-hot classes' raw coordinate p is w_pp."""
    from core.trajectory import read_csv

    trajs = read_csv(folder / name / "trajectories.csv")
    ood = np.array([float(v) for v in trajs[0].extra["ood_loss"]])
    diag = {
        t.label.index("1"): np.array([float(v) for v in t.extra[f"raw_c{t.label.index('1') + 1}"]])
        for t in trajs
        if t.label.count("1") == 1
    }
    return trajs[0].step, ood, diag


def test_the_figure_presets_show_their_figures_shapes_on_the_logged_curves(tmp_path):
    from theory.models.identity_mapping import plateau, rises
    from theory.simulate import main
    from theory.cli.swingby_presets import FIGURES

    names = [f"swingby-fig{f}" for f in FIGURES]
    assert main(["--out", str(tmp_path), *[a for n in names for a in ("--preset", n)]]) == 0
    for fig, want in (("5", 1), ("8", 2), ("9", 3)):  # rises of the OOD loss: descents - 1
        t, ood, diag = logged(tmp_path, f"swingby-fig{fig}")
        assert rises(ood) == want, fig
        mu = FIGURES[fig][0]
        crossing = {p: t[np.argmax(w >= 0.5)] for p, w in diag.items()}
        assert sorted(crossing, key=crossing.get) == sorted(range(len(mu)), key=lambda p: -mu[p]), (
            fig
        )  # by mu
    t, ood, diag = logged(tmp_path, "swingby-fig10")  # the failure mode: stuck above zero
    assert (
        plateau(t, ood) > 0.5 * t[-1] and ood[-1] > 0.2 and diag[0].max() < 0.1
    )  # mu = 0.7 never learned


def test_the_conventions_change_the_shape_as_the_issue_measured():
    """Same start, the printed equations' signal a: Fig. 5's rise and Fig. 8's second rise go, Fig. 10's plateau ends."""
    from theory.models.identity_mapping import plateau
    from theory.cli.swingby import simulate
    from theory.cli.swingby_presets import FIGURE_SEEDS, FIGURES

    def summary(fig, signal):
        mu, sigma, d, scale, t_end, _ = FIGURES[fig]
        t = np.linspace(0, t_end, 2001)
        run = simulate(
            "sim2",
            Task(mu, sigma, d),
            scale,
            FIGURE_SEEDS[fig],
            t,
            signal=signal,
            start="uniform-positive",
        )
        return run.summary() | {"plateau": plateau(t, run.ood), "t_end": t_end}

    assert (summary("5", "a2")["ood_rises"], summary("5", "a")["ood_rises"]) == (1, 0)
    assert (summary("8", "a2")["ood_rises"], summary("8", "a")["ood_rises"]) == (2, 1)
    stuck, learned = summary("10", "a2"), summary("10", "a")
    assert stuck["plateau"] > 0.8 * stuck["t_end"] and learned["plateau"] < 0.3 * learned["t_end"]
    assert stuck["ood_final"] > 0.2 > 1e-6 > learned["ood_final"]


def test_the_start_laws_and_signal_conventions():
    task = Task((1.0, 1.7, 2.25), (0.5, 0.25, 0.25))
    u = task.initial(0.1, 3, "uniform-positive")
    assert u.shape == (3, 3) and u.min() >= 0 and u.max() < 0.1
    g = task.initial(0.1, 3)
    assert g.min() < 0 < g.max()  # Gaussian: off-diagonals of either sign
    np.testing.assert_allclose(task.rates("a2"), task.signal**2)
    with pytest.raises(ValueError, match="start='uniform': valid: gaussian, uniform-positive"):
        task.initial(0.1, 0, "uniform")
    with pytest.raises(ValueError, match="signal='a3': valid: a, a2"):
        task.rates("a3")


def test_sim2_counts_time_from_zero_whatever_the_grid_starts_at():
    task = Task((1.0, 1.5, 2.2))
    u0 = task.initial(0.1, 0, "uniform-positive")
    whole = sim2(task, np.linspace(0, 10, 101), u0)
    late = sim2(
        task, np.linspace(5, 10, 51), u0
    )  # the same start at time 0: W(5..10) of the same path
    np.testing.assert_allclose(late, whole[50:], atol=1e-8)
    np.testing.assert_allclose(
        sim1(task, [5.0], u0 @ u0.T), sim1(task, np.linspace(0, 5, 6), u0 @ u0.T)[-1:]
    )


def test_the_u_flow_stays_finite_where_euler_on_w_diverges():
    """The scripts' integrator (Euler on W, step 0.01, t = 100) blows up from many positive starts of the
    triple-descent setting; integrating U keeps W = U U^T positive semi-definite and finite."""
    from theory.models.identity_mapping import flow

    task = Task((1.0, 1.7, 2.25), (0.5, 0.25, 0.25))
    a, blew_up = task.rates("a2"), []
    for seed in range(20):
        u0 = task.initial(0.1, seed, "uniform-positive")
        w = u0 @ u0.T
        with np.errstate(all="ignore"):
            for _ in range(10_000):
                w = w + 0.01 * flow(w, a)
        if not np.all(np.isfinite(w)):
            blew_up.append(seed)
    assert len(blew_up) >= 5
    for seed in blew_up:
        path = sim2(
            task, np.linspace(0, 100, 201), task.initial(0.1, seed, "uniform-positive"), signal="a2"
        )
        assert np.all(np.isfinite(path)) and np.abs(path[-1] - np.eye(3)).max() < 1e-6
