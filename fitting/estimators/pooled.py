"""One toy model for many runs, fitted jointly: each run's parameters are the law of its covariates
(:mod:`fitting.estimators.pooled_law`: the law's equations, its coefficients and options), the
coefficients shared by all runs and fitted by least squares over every run's trajectory
(:mod:`fitting.estimators.engine`).

With a discrepancy (``fit_law(discrepancy="mean" | "local")``,
:mod:`fitting.estimators.discrepancy`), a prediction is the law's path plus the training runs'
residual (observed − law): their mean at each step (the part of every run's path the toy model
cannot draw, a probe's early readings of unformed samples, a sigmoid's shape; as in the calibration
of computer models, Kennedy and O'Hagan 2001), or the residual of the training runs nearest in
covariate space (``local``). The coefficients are the same with or without it.

Intervals: Wald (s² (JᵀJ)⁻¹; residuals within a run are correlated, so these are narrow), or a
bootstrap over runs (resample whole training runs, refit; honest about run-to-run variation).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
from numpy.typing import NDArray

from fitting.estimators.curves import noise_scale
from fitting.estimators import engine
from fitting.estimators.engine import H, bootstrap, central_jacobian, multistart, wald
from fitting.estimators.discrepancy import KINDS, Discrepancy, features, run_residuals
from fitting.estimators.pooled_law import Law
from theory.solvers.integrate import integrate, one_numba_thread
from theory.models.paper import eq1
from core.trajectory import Trajectory, target_of

TOL = (1e-8, 1e-10)
FAILED = 10.0  # the residual of a point the integrator could not reach (coordinates live in [0, 1])


@dataclass
class Data:
    """Runs' trajectories on one time grid: the union of their logged steps, normalized by
    ``scale``."""

    steps: NDArray  # (T,) union of logged steps
    index: list[NDArray]  # per run: its located rows' positions in ``steps``
    y: list[NDArray]  # per run: (T_r, D) located coordinates
    x: NDArray  # (N, D) covariates
    target: NDArray  # (N, D) corners
    scale: float
    p: NDArray | None = None  # (N,) masking fractions (eq2)

    @classmethod
    def of(
        cls,
        trajectories: Sequence[Trajectory],
        x: NDArray,
        target: NDArray,
        scale: float | None = None,
        p: NDArray | None = None,
    ) -> "Data":
        located = [t.with_points() for t in trajectories]
        steps = np.unique(np.concatenate([np.asarray(t.step, dtype=float) for t in trajectories]))
        index = [np.searchsorted(steps, np.asarray(t.step, dtype=float)) for t in located]
        scale = float(scale if scale is not None else steps[-1])
        return cls(
            steps,
            index,
            [t.z for t in located],
            np.asarray(x, float),
            np.asarray(target, float),
            scale,
            None if p is None else np.asarray(p, float),
        )

    @property
    def u(self) -> NDArray:
        """The time grid for the simulation: starts at 0 (the untrained model), normalized."""
        return (
            np.concatenate([[0.0], self.steps / self.scale])
            if self.steps[0] > 0
            else self.steps / self.scale
        )

    def at(self, z: NDArray) -> NDArray:
        """Simulated paths on :attr:`u` (N, T', D) -> the residual layout: every run's located rows,
        flattened."""
        offset = 1 if self.steps[0] > 0 else 0
        return np.concatenate([z[r, idx + offset].ravel() for r, idx in enumerate(self.index)])

    def observed(self) -> NDArray:
        return np.concatenate([y.ravel() for y in self.y])


def simulate(
    law: Law, data: Data, theta: NDArray, *, u: NDArray | None = None, strict: bool = True
) -> NDArray:
    """(B, N, T', D) the law's paths for each θ (B, P) and run of ``data``, at ``u`` (default the
    data's grid); ``strict`` as in :func:`solve`."""
    theta = np.atleast_2d(theta)
    grid = data.u if u is None else u
    x = data.x
    params = law.ordered(law.params(theta, x, data.target, data.p))
    b, n = theta.shape[0], x.shape[0]
    out = np.empty((b, n, grid.size, law.d))
    u_on = np.exp(theta[:, law.slots["t_on"]][:, 0]) if "onset" in law.options else np.zeros(b)
    # one solve per onset (a Jacobian's batch holds three; one without an onset)
    for value in np.unique(u_on):
        rows = np.flatnonzero(u_on == value)
        pick = (rows[:, None] * n + np.arange(n)).ravel()
        out[rows] = solve(
            {k: v[pick] for k, v in params.items()},
            grid,
            value,
            land=law.landscape,
            strict=strict,
        ).reshape(rows.size, n, grid.size, law.d)
    return out


def solve(
    params: dict[str, NDArray],
    grid: NDArray,
    onset: float = 0.0,
    *,
    tol: tuple[float, float] = TOL,
    land=None,
    strict: bool = True,
) -> NDArray:
    """(N, T, D) paths of ``land`` (default eq1) for integrator parameters (batched over N) at times
    ``grid`` (starting at 0); with an ``onset`` (same time unit) the model's clock starts there: z
    stays at z0 until ``onset``, then follows the model in time - onset (t_switch counts from the
    onset). A path the integrator cannot finish (parameters so extreme the flow is too stiff for it)
    raises, or with ``strict`` False is NaN (the search then scores it as a very bad fit)."""
    clock, back = np.unique(
        np.maximum(np.asarray(grid, dtype=float) - onset, 0.0), return_inverse=True
    )
    if clock[0] > 0:
        clock, back = np.concatenate([[0.0], clock]), back + 1
    with one_numba_thread():
        land = eq1(params["z0"].shape[1]) if land is None else land
        sol = integrate(land, clock, params, method="dopri", rtol=tol[0], atol=tol[1])
    if not sol.success:
        if strict:
            raise ValueError(f"the pooled {land.name} simulation failed ({sol.message})")
        sol.z[sol.status != 0] = np.nan
    return sol.z[:, back]


@dataclass(frozen=True)
class PooledFit:
    """A law fitted to training runs.

    Attributes:
        coefficients: name -> value in steps (``z0`` a list per concept).
        ci: name -> [lo, hi] (``z0``: a list of pairs).
        rmse: over every training point (the law's own paths, before any discrepancy).
        per_run_rmse: per training run.
        discrepancy: with ``fit_law(discrepancy=...)``, the training runs' residuals, which
        :meth:`predict` adds to
            the law's paths (:mod:`fitting.estimators.discrepancy`; None: the law alone).
    """

    law: Law
    theta: NDArray = field(repr=False)
    coefficients: dict
    ci: dict
    ci_method: str
    rmse: float
    per_run_rmse: list[float]
    success: bool
    message: str
    discrepancy: Discrepancy | None = field(default=None, repr=False)

    def predict(
        self, x: NDArray, target: NDArray, steps: NDArray, p: NDArray | None = None
    ) -> NDArray:
        """(N, T, D) the law's paths for covariates ``x`` (N, D) (and masking fractions ``p``, eq2)
        at ``steps``, plus the :attr:`discrepancy` where there is one (clipped to [0, 1])."""
        steps = np.asarray(steps, dtype=float)
        u = (
            np.concatenate([[0.0], steps / self.law.scale])
            if steps[0] > 0
            else steps / self.law.scale
        )
        dummy = Data(
            steps,
            [],
            [],
            np.asarray(x, float),
            np.asarray(target, float),
            self.law.scale,
            None if p is None else np.atleast_1d(np.asarray(p, float)),
        )
        z = simulate(self.law, dummy, self.theta, u=u)[0]
        z = z[:, 1:] if steps[0] > 0 else z
        if self.discrepancy is None:
            return z
        delta = np.stack([self.discrepancy.at(f, steps)[0] for f in features(x, p)])
        return np.clip(z + delta, 0.0, 1.0)


def _starts(law: Law, data: Data) -> NDArray:
    """Every combination of the terms' starting values, as θ (S, P)."""
    choices = {name: c for term in law.terms for name, c in term.starts(law, data).items()}
    return np.array(
        [law.pack(dict(zip(choices, combo))) for combo in itertools.product(*choices.values())]
    )


def _residuals(theta: NDArray, law: Law, data: Data, y: NDArray) -> NDArray:
    """Law minus observed; a path the integrator could not finish counts FAILED off at every
    point."""
    r = data.at(simulate(law, data, theta, strict=False)[0]) - y
    r[~np.isfinite(r)] = FAILED
    return r


def _jacobian(theta: NDArray, law: Law, data: Data, y: NDArray) -> NDArray:
    def paths(batch: NDArray) -> NDArray:
        return np.stack([data.at(z) for z in simulate(law, data, batch, strict=False)])

    jac = central_jacobian(paths, theta, *law.bounds(), H)
    jac[~np.isfinite(jac)] = 0.0  # a direction whose step the integrator could not follow: no slope
    return jac


def _solve(law: Law, data: Data, x0: NDArray, y: NDArray, f_scale: float, max_nfev: int):
    return engine.solve(
        _residuals, x0, law.bounds(), f_scale, max_nfev, jac=_jacobian, args=(law, data, y)
    )


def fit_law(
    trajectories: Sequence[Trajectory],
    x: NDArray,
    *,
    ci: str = "wald",
    n_boot: int = 50,
    rng: int | np.random.Generator = 0,
    masked: int | None = None,
    p: NDArray | None = None,
    order: str = "bias-first",
    gate: str = "time",
    discrepancy: str | None = None,
    options: Sequence[str] = (),
) -> PooledFit:
    """Fit the law to training runs: one trajectory per run, ``x`` (N, D) their covariates (> 0).

    Args:
        trajectories: the runs' trajectories of one class (its label gives the corner ẑ).
        x: (N, D) covariates, e.g. each concept's measured signal.
        ci: ``wald`` or ``runs`` (bootstrap over training runs, ``n_boot`` refits); ``rng`` its
        seed. masked, p: eq2: the index of the masked concept, and each run's masking fraction in
        [0, 1]. order: ``bias-first`` (eq1: the bias, then the true target) or ``target-first`` (the
        true target,
            then the bias: a run that generalizes early and memorizes its training classes later).
        options: the law's options by name (:data:`fitting.estimators.laws.PARTS`, module
        docstring), e.g.
            ``onset`` (a shared start of eq1's clock), ``compete`` (speeds that follow the lead
            too).
        gate: ``time`` (eq1's clock-timed switch) or ``state`` (the coupled model's switch, thrown
        by the other
            concepts' progress; order ``target-first``).
        discrepancy: ``mean`` or ``local``: also keep the training runs' residuals, which
        predictions then add
            (:mod:`fitting.estimators.discrepancy`); the coefficients are the same with or without
            it. None: the law alone.
    """
    x = _checked(trajectories, x, ci=ci, masked=masked, p=p, discrepancy=discrepancy)
    data = Data.of(trajectories, x, [target_of(t.label, x.shape[1]) for t in trajectories], p=p)
    law = Law(x.shape[1], data.scale, np.exp(np.mean(np.log(x))), masked, order, gate, options)
    y = data.observed()
    f_scale = 2 * float(np.median([noise_scale(yr) for yr in data.y if len(yr) >= 3]))
    lb, ub = law.bounds()
    best = _search(law, data, y, f_scale)
    theta = best.x
    resid = _residuals(theta, law, data, y)
    if ci == "wald":
        lo, hi, _ = wald(theta, best.jac, resid, lb, ub)
    else:
        lo, hi = _run_bootstrap(law, data, theta, f_scale, n_boot, np.random.default_rng(rng))
    delta = None
    if discrepancy is not None:
        kept, r, located = run_residuals(data, -resid)  # resid: law - observed
        runs = tuple(t.run for t, k in zip(trajectories, kept) if k)
        delta = Discrepancy(discrepancy, data.steps, features(x, p)[kept], r, runs, located)
    rmse, per_run = float(np.sqrt(np.mean(resid**2))), _per_run_rmse(data, resid)
    value, ranges = law.natural(theta), _intervals(law, lo, hi)
    ok, why = bool(best.success), str(best.message)
    return PooledFit(law, theta, value, ranges, ci, rmse, per_run, ok, why, delta)


def _search(law: Law, data: Data, y: NDArray, f_scale: float):
    """The best θ of every combination of the terms' starts (screened in one batched simulation)."""

    def screen(starts: NDArray) -> NDArray:  # every start's sum of squares
        sims = simulate(law, data, starts, strict=False)
        return np.nan_to_num([np.sum((data.at(z) - y) ** 2) for z in sims], nan=np.inf)

    problem = (law, data, y)
    return multistart(
        _residuals,
        _starts(law, data),
        law.bounds(),
        f_scale,
        search_nfev=25,
        screen=screen,
        jac=_jacobian,
        search_args=problem,
        args=problem,
    )


def _checked(trajectories, x, *, ci, masked, p, discrepancy) -> NDArray:
    """The covariates as (runs, concepts) positive floats, every option checked."""
    if (masked is None) != (p is None):
        raise ValueError("eq2 needs both the masked concept and every run's masking fraction")
    if p is not None and (
        np.shape(p) != (len(trajectories),)
        or not np.all((np.asarray(p) >= 0) & (np.asarray(p) <= 1))
    ):
        raise ValueError(f"masking fractions must be one number in [0, 1] per run; got {p}")
    if discrepancy is not None and discrepancy not in KINDS:
        raise ValueError(
            f"unknown discrepancy {discrepancy!r}; valid: {', '.join(KINDS)} (or None, the law "
            "alone)"
        )
    if ci not in ("wald", "runs"):
        raise ValueError(f"unknown interval method {ci!r}; valid: wald, runs")
    x = np.asarray(x, dtype=float)
    d = trajectories[0].z.shape[1]
    if x.shape != (len(trajectories), d) or not np.all(np.isfinite(x)) or np.any(x <= 0):
        raise ValueError(
            f"covariates must be (runs, concepts) = ({len(trajectories)}, {d}) positive numbers; "
            f"got shape {x.shape}"
        )
    if len(trajectories) < 3:
        raise ValueError(f"a pooled fit needs at least 3 training runs, got {len(trajectories)}")
    return x


def _intervals(law: Law, lo: NDArray, hi: NDArray) -> dict:
    """θ's intervals in the coefficients' units (ordered: a decreasing map swaps the ends)."""
    low, high = law.natural(lo), law.natural(hi)
    out = {}
    for name in low:
        a, b = np.minimum(low[name], high[name]), np.maximum(low[name], high[name])
        out[name] = (
            [[float(u), float(v)] for u, v in zip(a, b)] if name == "z0" else [float(a), float(b)]
        )
    return out


def _per_run_rmse(data: Data, resid: NDArray) -> list[float]:
    """Each run's RMSE over its located points (nan for a run with none)."""
    out, start = [], 0
    for yr in data.y:
        chunk = resid[start : start + yr.size]
        out.append(float(np.sqrt(np.mean(chunk**2))) if yr.size else float("nan"))
        start += yr.size
    return out


def _run_bootstrap(law: Law, data: Data, theta, f_scale, n_boot, gen):
    n = len(data.y)

    # the law refitted to runs drawn with replacement
    def refit(
        gen: np.random.Generator,
    ) -> NDArray:
        rows = gen.integers(0, n, n)
        sub = Data(
            data.steps,
            [data.index[r] for r in rows],
            [data.y[r] for r in rows],
            data.x[rows],
            data.target[rows],
            data.scale,
            None if data.p is None else data.p[rows],
        )
        return _solve(law, sub, theta, sub.observed(), f_scale, max_nfev=60).x

    return bootstrap(refit, n_boot, gen)
