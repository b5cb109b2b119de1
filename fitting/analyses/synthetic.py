"""Trajectories with known truth, for parameter recovery (the ruptures idea: data sets that carry
their answer).

``eq1_case`` draws a class-11 trajectory of Eq. 1 whose weaker concept is first memorized toward a
biased target and then switches inside the logged range; it is sampled at quadratically spaced
checkpoints (dense early, as in the official runs) with Gaussian noise on the coordinates.
``logistic_case`` draws an accuracy curve with a known 50% time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from theory.solvers.integrate import integrate
from theory.models.paper import eq1
from core.trajectory import Trajectory


def quadratic_steps(n: int = 60, first: int = 500, last: int = 20_000) -> NDArray[np.int64]:
    """n checkpoints from ``first`` to ``last``, quadratically spaced (dense early), strictly
    increasing."""
    if n < 2 or last <= first:
        raise ValueError(f"need n >= 2 and last > first, got n={n}, first={first}, last={last}")
    steps = np.round(first + (last - first) * np.linspace(0, 1, n) ** 2).astype(np.int64)
    return np.maximum.accumulate(steps + np.arange(n) * (np.diff(steps, prepend=steps[0] - 1) <= 0))


@dataclass(frozen=True)
class Case:
    """A synthetic trajectory and the parameters that made it (in steps)."""

    trajectory: Trajectory
    truth: dict
    weak: int  # index of the concept that switches


def eq1_case(
    rng: np.random.Generator,
    *,
    n: int = 60,
    noise: float = 0.02,
    first: int = 500,
    last: int = 20_000,
) -> Case:
    """A noisy eq1 class-11 trajectory with a switch of the weak concept inside the logged range."""
    steps = quadratic_steps(n, first, last)
    span = float(last - first)
    weak = int(rng.integers(0, 2))
    z_bias = np.ones(2)
    z_bias[weak] = rng.uniform(0.0, 0.3)
    t_switch = np.zeros(2)
    t_switch[weak] = first + span * rng.uniform(0.2, 0.8)
    truth = {
        "lam": rng.uniform(5, 40, 2) / span,
        "k": rng.uniform(20, 100) / span,
        "t_switch": t_switch,
        "z_bias": z_bias,
        "z_target": np.ones(2),
        "z0": rng.uniform(0.3, 0.7, 2),
    }
    z = integrate(eq1(), steps.astype(float), truth, rtol=1e-10, atol=1e-12).z[0]
    z = np.clip(z + rng.normal(0, noise, z.shape), 0, 1)
    traj = Trajectory(steps, z, ("color", "size"), "11", "naive", None, "synthetic")
    return Case(
        traj,
        {
            k: (float(v) if np.ndim(v) == 0 else np.asarray(v, dtype=float))
            for k, v in truth.items()
        },
        weak,
    )


def logistic_case(
    rng: np.random.Generator,
    *,
    n: int = 60,
    noise: float = 0.02,
    first: int = 500,
    last: int = 20_000,
):
    """(steps, accuracy, true 50% time): a sigmoid from ~0 to ~1 crossing 0.5 inside the logged
    range."""
    steps = quadratic_steps(n, first, last)
    span = float(last - first)
    t50 = first + span * rng.uniform(0.2, 0.8)
    width = span * rng.uniform(0.01, 0.08)
    y = 1 / (1 + np.exp(-(steps - t50) / width))
    return steps, np.clip(y + rng.normal(0, noise, n), 0, 1), t50


@dataclass(frozen=True)
class Recovery:
    """How well an estimator recovered known truths over ``n`` cases (fractions in [0, 1])."""

    n: int
    within_5pct: float  # |error| <= 5% of the logged span
    coverage: float  # the 95% interval contains the truth
    bias_within_0_1: float | None = None  # |z̃ error| <= 0.1 (switch recovery only)


def switch_recovery(n: int, seed: int, *, ci: str = "wald") -> Recovery:
    """Fit eq1 to ``n`` :func:`eq1_case` trajectories; score the weak concept's t_switch and z̃."""
    from fitting.estimators.model_fit import fit_model

    rng = np.random.default_rng(seed)
    err, cover, bias = [], [], []
    for _ in range(n):
        case = eq1_case(rng)
        span = float(case.trajectory.step[-1] - case.trajectory.step[0])
        fit = fit_model(case.trajectory, ci=ci)
        w = case.weak
        truth = case.truth["t_switch"][w]
        got, interval = fit.params["t_switch"][w], fit.ci["t_switch"][w]
        err.append(np.inf if got is None else abs(got - truth) / span)
        cover.append(interval is not None and interval[0] <= truth <= interval[1])
        bias.append(abs(fit.params["z_bias"][w] - case.truth["z_bias"][w]))
    return Recovery(
        n,
        float(np.mean(np.array(err) <= 0.05)),
        float(np.mean(cover)),
        float(np.mean(np.array(bias) <= 0.1)),
    )


def t50_recovery(n: int, seed: int) -> Recovery:
    """Fit sigmoids to ``n`` :func:`logistic_case` accuracy curves; score the 50% time and its
    interval."""
    from fitting.estimators.curves import fit_logistic

    rng = np.random.default_rng(seed)
    err, cover = [], []
    for _ in range(n):
        steps, y, t50 = logistic_case(rng)
        fit = fit_logistic(steps, y)
        err.append(np.inf if fit.t50 is None else abs(fit.t50 - t50) / float(steps[-1] - steps[0]))
        lo, hi = fit.t50_ci if fit.t50_ci else (None, None)
        cover.append(
            fit.t50_ci is not None and (lo is None or lo <= t50) and (hi is None or t50 <= hi)
        )
    return Recovery(n, float(np.mean(np.array(err) <= 0.05)), float(np.mean(cover)))


@dataclass(frozen=True)
class SweepCase:
    """Simulated runs of a sweep whose eq1 parameters follow a known law of their covariates."""

    trajectories: list[Trajectory]  # one class-11 trajectory per run
    x: NDArray  # (N, 2) covariates (concept signals)
    truth: dict  # the law's coefficients, in steps
    noise: float
    masking: NDArray | None = None  # (N,) masking fractions (eq2 cases)


TRUE_LAW = {
    "lam_ref": 4e-3,
    "b_lam": 1.0,
    "t_ref": 1500.0,
    "b_t": -0.8,
    "m": 0.9,
    "gamma": 8.0,
    "k": 8e-3,
    "z0": [0.5, 0.5],
}
COUPLED_LAW = {
    "lam_ref": 2e-3,
    "b_lam": 0.8,
    "m": 0.9,
    "gamma": 8.0,
    "kappa": 20.0,
    "theta": 0.75,
    "z0": [0.2, 0.2],
}


def sweep_case(
    color_signals: NDArray,
    *,
    seed: int = 0,
    noise: float = 0.03,
    size_signal: float = 0.05,
    coupling: float = 0.3,
    steps: NDArray | None = None,
    law: dict | None = None,
    run_effect: float = 0.0,
    masking: NDArray | None = None,
    beta: float = 0.6,
    order: str = "bias-first",
    onset: float | None = None,
    compete: float | None = None,
    gate: str = "time",
) -> SweepCase:
    """Runs of a Δcolor-like sweep: color's signal as given, size's a weak function of it (as
    measured on the renders: a larger color separation makes size more visible too), class 11 under
    eq1 with the law's parameters, sampled at the tiny preset's kind of schedule with Gaussian noise
    (real logs: ~0.03). ``run_effect``: each run's speeds and switch times also scaled by exp(N(0,
    run_effect²)), as seeds differ in real training (the law then holds on average only).
    ``masking``: each run's masking fraction p (eq2: color's target becomes 1 - beta p; color is
    concept 0 here). ``order``: the law's (``target-first``: the true target before the switch, the
    bias after it). ``onset``: the step at which eq1's clock starts (the law's ``t_on``; none by
    default). ``compete``: the law's lead exponent ``c_lam`` (none by default). ``gate``: ``state``
    draws the coupled model's runs (order ``target-first``; default law :data:`COUPLED_LAW`)."""
    from fitting.estimators.pooled import Law, solve

    law = dict((TRUE_LAW if gate == "time" else COUPLED_LAW) if law is None else law)
    xc = np.asarray(color_signals, dtype=float)
    x = np.stack([xc, size_signal * (xc / _geomean(xc)) ** coupling], axis=1)
    steps = quadratic_steps(40, 50, 5000) if steps is None else np.asarray(steps)
    masked = None if masking is None else 0
    extra = {"beta": None if masked is None else beta, "t_on": onset, "c_lam": compete}
    law |= {name: value for name, value in extra.items() if value is not None}
    options = ("onset",) * (onset is not None) + ("compete",) * (compete is not None)
    rule = Law(2, float(steps[-1]), _geomean(x), masked, order, gate, options)
    values = rule.params(rule.theta(law)[None], x, np.ones_like(x), masking)
    rng = np.random.default_rng(seed)
    if run_effect:  # each run's speeds (and switch times) scaled by exp(N(0, run_effect²))
        for name in ("lam", "t_switch") if gate == "time" else ("lam",):
            values[name] = values[name] * np.exp(rng.normal(0, run_effect, (x.shape[0], 1)))
    grid = np.concatenate([[0.0], steps / rule.scale])
    z = solve(
        rule.ordered(values),
        grid,
        (onset or 0.0) / rule.scale,
        tol=(1e-10, 1e-12),
        land=rule.landscape,
    )[:, 1:]
    noisy = np.clip(z + rng.normal(0, noise, z.shape), 0, 1)  # per run in turn, as drawn before
    concepts, p = ("color", "size"), None if masking is None else np.asarray(masking, float)
    trajs = [
        Trajectory(steps, zr, concepts, "11", "naive", r, f"run{r}") for r, zr in enumerate(noisy)
    ]
    return SweepCase(trajs, x, {**law, "x_ref": rule.x_ref}, noise, p)


def _geomean(x: NDArray) -> float:
    return float(np.exp(np.mean(np.log(x))))


SIM2_A, SIM2_M = np.array([0.0008, 0.002]), np.array([1.0, 1.3])  # sim2_case's signals and read-out
SIM2_U0 = np.array([[0.2, 0.0], [0.1, 0.15]])  # and its start


def sim2_case(noise: float = 0.02, seed: int = 0) -> Trajectory:
    """A class-11 path of the two-layer model (theory.solvers.two_layer.two_layer) at 40
    quadratically spaced steps to 5,000, with Gaussian noise on the coordinates (clipped to [0,
    1])."""
    from theory.solvers.two_layer import two_layer

    steps = quadratic_steps(40, 50, 5000)
    w = two_layer(SIM2_A, np.r_[0.0, steps], SIM2_U0)
    z = (w @ SIM2_M / SIM2_M)[1:]
    rng = np.random.default_rng(seed)
    noisy = np.clip(z + rng.normal(0, noise, z.shape), 0, 1)
    return Trajectory(steps, noisy, ("color", "size"), "11", "naive", seed, "sim2")
