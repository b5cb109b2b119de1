"""Fit the toy models of :mod:`theory.models.paper` to a logged trajectory: least squares on the
simulated path.

Training steps are the model's time unit. Internally time is normalized to u = (step - s0) / span
over the logged range (exact, by the time-rescaling invariance: λ, k and s scale by span, switch
times shift and scale), so one set of bounds serves logs in model time and in training steps.

Free parameters (names as in the theory CLI; each can be fixed with ``fix={name: value}``):

``eq1``      t_switch (per concept), k (one shared gate sharpness), lam (per concept), z_bias,
             z0 (per concept); z_target is fixed to the class label's corner when the label has one
             digit per concept (``11`` -> (1, 1)), else free.
``eq2``      those of eq1 plus p_beta = β p (only the product is identifiable); z_target must be
fixed. ``notebook`` a, s, k, t0, z0.

Robust loss (soft L1, scale from the data's noise), bounds, data-driven multi-start (turn point,
coordinate extremes), Jacobians by central differences on one batched simulation. Intervals:
``bootstrap`` (residual bootstrap over checkpoints, refits from the optimum; percentile) or ``wald``
(s² (JᵀJ)⁻¹ at the optimum; fast). Each concept's switch gets a verdict (``ModelFit.switches``):
learned directly (the fitted bias reaches the target within its interval, or within 0.1), outside
the logged steps, not identified (its interval spans more than half the logged range), or switched;
only a concept that switched has a t_switch and interval, the others None.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from fitting.estimators.curves import noise_scale
from fitting.estimators.engine import (
    H,
    bootstrap,
    central_jacobian,
    multistart,
    on_bounds,
    solve,
    wald,
)
from fitting.estimators.model_params import Block, blocks, report
from fitting.estimators.trajectory_turn import find_turn
from theory.solvers.integrate import integrate
from theory.models.landscape import Landscape
from theory.models.paper import FITTABLE, get_model
from core.trajectory import Trajectory, corner_of

MIN_POINTS = 8  # located points a model fit needs (a sweep's fit step is refused early for fewer)
TOL = (1e-10, 1e-12)  # (rtol, atol): final polish and reported fit
SEARCH_TOL = (1e-8, 1e-10)  # multi-start search
SEARCHED = 3  # starts refined by least squares after screening


@dataclass(frozen=True, eq=False)
class ModelFit:
    """A fitted toy model.

    Attributes:
        params: name -> value (float) or per-concept list, in the log's units (steps); None where a
            switch is not identifiable.
        ci: name -> [lo, hi] or a list of pairs (per concept); None where not identifiable.
        identifiable: per concept, whether its switch time is identified by the data.
        fitted: (T, D) the fitted simulation at the logged steps.
        switches: per concept (eq1, eq2), what the fit says of its switch: ``switched`` (bool),
            ``t_switch`` and ``t_switch_ci`` (None unless it switched), ``z_bias`` and
            ``z_bias_ci``, ``z_target``, and ``reason``: ``switched``, ``learned directly`` (the
            fitted bias reaches the target within its interval, or within 0.1: the coordinate went
            straight to its target, so there was no switch to time), ``outside`` (the switch lies
            outside the logged steps) or ``not identified`` (its interval spans more than half the
            logged range).
    """

    model: str
    params: dict
    ci: dict
    rmse: float
    identifiable: list[bool]
    fitted: NDArray[np.float64]
    success: bool
    message: str
    theta: NDArray[np.float64] = field(repr=False)
    problem: "Problem" = field(repr=False)
    switches: list[dict] = field(default_factory=list)

    @property
    def at_bounds(self) -> list[str]:
        """The free parameters (name[concept]) that ended on a bound of the search; a Wald interval
        is not valid there (a z level at 0 or 1 is a corner, not a failed search)."""
        prob, names = self.problem, []
        for b in prob.free:
            names += [f"{b.name}[{c}]" for c in prob.concepts] if b.per_concept else [b.name]
        return [name for name, hit in zip(names, on_bounds(self.theta, prob.lb, prob.ub)) if hit]

    def predict(self, steps: Sequence[float], covariates: None = None) -> NDArray[np.float64]:
        """The fitted model's path at any steps (e.g. a dense grid for plots), shape (T', D); a fit
        of one run takes no covariates (the contract of fitting.estimators.registry)."""
        no_covariates(covariates)
        prob = self.problem
        return prob.simulate(
            self.theta[None], u=(np.asarray(steps, dtype=float) - prob.s0) / prob.span
        )[0]


def no_covariates(covariates) -> None:
    if covariates is not None:
        raise ValueError(
            "a fit of one run predicts that run and takes no covariates; a law pooled over runs "
            "(fitting.estimators.registry.fit('eq1+onset', runs, covariates=x)) predicts from "
            "covariates"
        )


class Problem:
    """One trajectory and one model: maps the normalized vector θ to simulations and back to
    units."""

    def __init__(self, model: str, traj: Trajectory, fix: Mapping[str, object] | None = None):
        if model not in FITTABLE:
            raise ValueError(f"unknown model {model!r}; valid: {', '.join(FITTABLE)}")
        d = len(traj.concepts)
        if d == 0:
            raise ValueError(
                "the trajectory has no concept coordinates (an accuracy-only log): nothing to fit"
            )
        if model == "notebook" and d != 2:
            raise ValueError(
                f"the notebook model has 2 concepts; this trajectory has {d}: {traj.concepts}"
            )
        if traj.step.size < MIN_POINTS:
            raise ValueError(
                f"a model fit needs at least {MIN_POINTS} logged points, this trajectory has "
                f"{traj.step.size}"
            )
        self.model, self.d, self.concepts = model, d, tuple(traj.concepts)
        self.land: Landscape = get_model(model, d)
        self.s0 = float(traj.step[0])
        self.span = float(traj.step[-1] - traj.step[0])
        self.u = (np.asarray(traj.step, dtype=float) - self.s0) / self.span
        self.y = traj.z
        every = blocks(model)
        fix = dict(fix or {})
        label = traj.label
        if model != "notebook" and "z_target" not in fix and corner_of(label, d) is not None:
            fix["z_target"] = [float(c) for c in corner_of(label, d)]
        if model == "eq2" and "z_target" not in fix:
            raise ValueError(
                f"eq2 needs a fixed z_target (class {label!r} has no corner); "
                "pass fix={'z_target': ...}"
            )
        names = {b.name for b in every}
        unknown = set(fix) - names
        if unknown:
            raise ValueError(
                f"cannot fix {sorted(unknown)} for {model}; its parameters are {sorted(names)}"
            )
        self.fixed = {b.name: self._to_theta(b, fix[b.name]) for b in every if b.name in fix}
        self.free = [b for b in every if b.name not in fix]
        self.lb = np.concatenate([np.full(b.size(d), b.lo) for b in self.free])
        self.ub = np.concatenate([np.full(b.size(d), b.hi) for b in self.free])

    # -- θ <-> model values --------------------------------------------------------------------

    def _to_theta(self, b: Block, value) -> NDArray:
        v = np.atleast_1d(np.asarray(value, dtype=float))
        size = b.size(self.d)
        if v.size == 1 and size > 1:
            v = np.full(size, v[0])
        if v.size != size:
            raise ValueError(f"fixed {b.name} needs {size} value(s), got {v.size}")
        if b.kind == "time":
            return (v - self.s0) / self.span
        if b.kind == "rate":
            if np.any(v <= 0):
                raise ValueError(f"fixed {b.name} must be > 0, got {v}")
            return np.log(v * self.span)
        if b.kind == "log":
            return np.log(v)
        if np.any((v < 0) | (v > 1)):
            raise ValueError(f"fixed {b.name} must lie in [0, 1], got {v}")
        return v

    def split(self, theta: NDArray) -> dict[str, NDArray]:
        """θ of shape (B, P) -> block name -> (B, size) normalized values, fixed blocks included."""
        theta = np.atleast_2d(theta)
        out, j = {}, 0
        for b in self.free:
            out[b.name] = theta[:, j : j + b.size(self.d)]
            j += b.size(self.d)
        for name, v in self.fixed.items():
            out[name] = np.broadcast_to(v, (theta.shape[0], v.size))
        return out

    def values(self, theta: NDArray) -> dict[str, NDArray]:
        """θ of shape (B, P) -> the landscape's parameters in normalized time (theory.models.paper
        names), batched."""
        parts = self.split(theta)
        if self.model == "notebook":
            return {
                "a": np.exp(parts["a"][:, 0]),
                "s": np.exp(parts["s"][:, 0]),
                "k": np.exp(parts["k"][:, 0]),
                "t0": parts["t0"][:, 0],
                "z0": parts["z0"],
            }
        values = {
            "t_switch": parts["t_switch"],
            "k": np.exp(parts["k"]),
            "lam": np.exp(parts["lam"]),
            "z_bias": parts["z_bias"],
            "z_target": parts["z_target"],
            "z0": parts["z0"],
        }
        if self.model == "eq2":  # only the product β p is identifiable: fit it as p with β = 1
            values |= {"p": parts["p_beta"][:, 0], "beta": 1.0}
        return values

    def simulate(
        self, theta: NDArray, *, u: NDArray | None = None, tol: tuple[float, float] = TOL
    ) -> NDArray:
        """(B, T, D) simulated paths for θ of shape (B, P), at the normalized times ``u`` (default:
        the logged steps)."""
        sol = integrate(
            self.land,
            self.u if u is None else u,
            self.values(theta),
            method="dopri",
            rtol=tol[0],
            atol=tol[1],
        )
        if not sol.success:
            raise ValueError(f"{self.model}: the simulation failed during the fit ({sol.message})")
        return sol.z

    def natural(self, theta: NDArray) -> dict[str, NDArray]:
        """Block name -> values in the log's units (steps), for one θ of shape (P,)."""
        out = {}
        for b in [*self.free, *(b for b in blocks(self.model) if b.name in self.fixed)]:
            v = self.split(theta)[b.name][0]
            out[b.name] = {
                "time": lambda x: self.s0 + self.span * x,
                "rate": lambda x: np.exp(x) / self.span,
                "log": np.exp,
                "unit": lambda x: x,
            }[b.kind](v)
        return out

    # -- least squares ---------------------------------------------------------------------------

    def residuals(self, theta: NDArray, y: NDArray, tol: tuple[float, float] = TOL) -> NDArray:
        """(T * D,) simulated minus logged coordinates."""
        return (self.simulate(theta[None], tol=tol)[0] - y).ravel()

    def jacobian(self, theta: NDArray, y: NDArray, tol: tuple[float, float] = TOL) -> NDArray:
        """(T * D, P) central differences, every perturbed θ in one batched simulation."""

        def paths(batch: NDArray) -> NDArray:
            return self.simulate(batch, tol=tol).reshape(len(batch), -1)

        return central_jacobian(paths, theta, self.lb, self.ub, H)

    def solve(
        self, x0: NDArray, y: NDArray, f_scale: float, max_nfev: int, tol: tuple[float, float] = TOL
    ):
        """Robust (soft L1) bounded least squares from ``x0``."""
        bounds = (self.lb, self.ub)
        return solve(
            self.residuals, x0, bounds, f_scale, max_nfev, jac=self.jacobian, args=(y, tol)
        )

    # -- initial guesses ---------------------------------------------------------------------------

    def starts(self) -> list[NDArray]:
        """Data-driven starting points (turn point, coordinate extremes), normalized θ vectors."""
        y = self.y
        first, last = y[0], y[-max(1, y.shape[0] // 10) :].mean(axis=0)
        sigma = noise_scale(y)
        turn = find_turn(self.u, y, n_boot=0)
        tau_turn = turn.step if turn.step is not None else 0.4
        biased = []
        for i in range(self.d):
            extreme = y[:, i].min() if last[i] >= first[i] else y[:, i].max()
            moved_away = abs(extreme - first[i]) > 3 * sigma and np.sign(
                extreme - first[i]
            ) != np.sign(last[i] - first[i])
            biased.append(
                float(np.clip(extreme + (-0.05 if last[i] >= first[i] else 0.05), 0, 1))
                if moved_away
                else float(last[i])
            )
        target = self.fixed.get("z_target", np.clip(last, 0, 1))
        guesses = []
        if self.model == "notebook":
            for a in (0.5, 2.0):
                for t0 in (tau_turn, 0.3, 0.6):
                    guesses.append(
                        {
                            "a": [np.log(a)],
                            "s": [np.log(30.0)],
                            "k": [np.log(10.0)],
                            "t0": [t0],
                            "z0": first,
                        }
                    )
        else:
            for tau in dict.fromkeys([tau_turn, 0.3, 0.6]):
                for lam in (5.0, 30.0):
                    for bias in (biased, list(np.where(np.asarray(target) > 0.5, 0.0, 1.0))):
                        guesses.append(
                            {
                                "t_switch": np.full(self.d, tau),
                                "k": [np.log(30.0)],
                                "lam": np.full(self.d, np.log(lam)),
                                "z_bias": bias,
                                "z_target": target,
                                "z0": first,
                                "p_beta": [0.3],
                            }
                        )
        return [
            np.concatenate([np.atleast_1d(np.asarray(g[b.name], dtype=float)) for b in self.free])
            for g in guesses
        ]


def fit_model(
    traj: Trajectory,
    model: str = "eq1",
    *,
    fix: Mapping[str, object] | None = None,
    ci: str = "wald",
    n_boot: int = 100,
    rng: np.random.Generator | int | None = 0,
) -> ModelFit:
    """Fit a toy model to one trajectory.

    Args:
        traj: the logged trajectory (steps and concept coordinates).
        model: ``eq1``, ``eq2`` or ``notebook``.
        fix: parameters to hold fixed, in the log's units (e.g. ``{"z_target": [1, 1]}``).
        ci: ``wald`` (fast, from the Jacobian) or ``bootstrap`` (residual bootstrap, ``n_boot``
        refits). rng: seed or generator for the bootstrap.
    """
    if ci not in ("wald", "bootstrap"):
        raise ValueError(f"unknown interval method {ci!r}; valid: wald, bootstrap")
    prob = Problem(model, traj, fix)
    y = prob.y
    f_scale = 2 * noise_scale(y)
    best = multistart(
        prob.residuals,
        prob.starts(),
        (prob.lb, prob.ub),
        f_scale,
        search_nfev=30,
        screen=lambda starts: np.sum((prob.simulate(starts, tol=SEARCH_TOL) - y) ** 2, axis=(1, 2)),
        keep=SEARCHED,
        jac=prob.jacobian,
        search_args=(y, SEARCH_TOL),
        args=(y, TOL),
    )
    theta = best.x
    fitted = prob.simulate(theta[None])[0]
    resid = fitted - y
    rmse = float(np.sqrt(np.mean(resid**2)))

    if ci == "wald":
        lo_t, hi_t, _ = wald(theta, best.jac, resid, prob.lb, prob.ub)
    else:
        lo_t, hi_t = _bootstrap(
            prob, theta, fitted, resid, f_scale, n_boot, np.random.default_rng(rng)
        )
    params, intervals, identifiable, switches = report(prob, theta, lo_t, hi_t)
    return ModelFit(
        model,
        params,
        intervals,
        rmse,
        identifiable,
        fitted,
        bool(best.success),
        str(best.message),
        theta,
        prob,
        switches,
    )


def _bootstrap(prob: Problem, theta, fitted, resid, f_scale, n_boot, gen):
    t = resid.shape[0]
    inflate = np.sqrt(resid.size / max(resid.size - theta.size, 1))

    # whole checkpoints resampled: the coordinates stay paired
    def refit(
        gen: np.random.Generator,
    ) -> NDArray:
        yb = fitted + inflate * resid[gen.integers(0, t, t)]
        return prob.solve(theta, yb, f_scale, max_nfev=60).x

    return bootstrap(refit, n_boot, gen)
