"""Fit the structured identity mapping's two-layer model (``sim2``,
theory/models/identity_mapping.py) to a logged path.

The logged class is read as the out-of-distribution probe x_hat of the SIM: coordinate p of the path
is (W(t) m)_p / m_p, with W(t) the two-layer flow for signals a_p and m the probe's norms relative
to the first concept's (only ratios matter after the division). Free parameters, in the log's units:

``a``         each concept's signal, per step (its speed: the diagonal entry grows logistically at
2a) ``mu_ratio``  m_p / m_1 for p >= 2 (how much concept p's cluster weighs in the other
coordinates) ``w0``        the start W(0) = U(0) U(0)^T (U(0) lower triangular, so W(0) is any PSD
matrix)

A class is read by its label's bits: its input is sum_q bits_q m_q e_q (class 11: the probe x_hat; a
training class 10: m_1 e_1), and coordinate p of the output there, divided by m_p, is the concept
coordinate. Given several classes of one run, one W(t) is fitted to all of them: the joint fit, a
test of the model that a per-class fit cannot be (fitting.sim_joint compares it with per-class
fits).

Training step 0 is model time 0 (the untrained network is the start). Least squares (soft L1) from
screened starts, scipy's finite-difference Jacobian, Wald intervals on ``a`` (left out for a
parameter that ended on a bound, and the bound named in ``at_bounds``). Unlike eq1, the switch times
are not parameters: they come out of the dynamics.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
from numpy.typing import NDArray

from fitting.estimators.curves import noise_scale
from fitting.estimators.engine import Z95, multistart, on_bounds, wald
from fitting.estimators.model_fit import no_covariates
from theory.solvers.two_layer import two_layer
from core.trajectory import Trajectory, target_of


@dataclass(frozen=True, eq=False)
class SimFit:
    """A fitted sim2 path (the attributes fitting.analyses.report reads from a ModelFit).
    ``at_bounds`` names the parameters that ended on a bound of the search (their Wald interval is
    left out: it is not valid there); ``bits`` is the class read (1 where its concept is
    present)."""

    model: str
    params: dict
    ci: dict
    rmse: float
    fitted: NDArray[np.float64]
    success: bool
    message: str
    theta: NDArray[np.float64] = field(repr=False)
    span: float = field(repr=False)
    switches: list = field(default_factory=list)
    at_bounds: list = field(default_factory=list)
    bits: tuple = ()

    @property
    def identifiable(self) -> list[bool]:
        return []

    def predict(
        self, steps, covariates: None = None, *, bits: Sequence[int] | None = None
    ) -> NDArray[np.float64]:
        """The fitted path of the class read (or of ``bits``) at any steps, (T', D); no covariates
        (the contract of fitting.estimators.registry)."""
        no_covariates(covariates)
        d = len(self.params["a"])
        u = np.asarray(steps, dtype=float) / self.span
        return _read(_simulate(self.theta, u, d), self.theta, bits or self.bits or (1,) * d)


def _unpack(theta: NDArray, d: int) -> tuple[NDArray, NDArray, NDArray]:
    a = np.exp(theta[:d])
    m = np.concatenate([[1.0], np.exp(theta[d : 2 * d - 1])])
    u0 = np.zeros((d, d))
    u0[np.tril_indices(d)] = theta[2 * d - 1 :]
    return a, m, u0


def _simulate(theta: NDArray, u: NDArray, d: int) -> NDArray:
    """W(u) (T, d, d); U(0) is the state at time 0, whatever the grid's first time."""
    a, _, u0 = _unpack(theta, d)
    return two_layer(a, u, u0, rtol=1e-7, atol=1e-9)


def _read(w: NDArray, theta: NDArray, bits: Sequence[int]) -> NDArray:
    """A class's concept coordinates (T, d): the output at its input sum_q bits_q m_q e_q,
    coordinate p divided by m_p (1 where the concept is trained on, 0 where it is absent)."""
    m = _unpack(theta, w.shape[1])[1]
    return (w @ (np.asarray(bits, dtype=float) * m)) / m


def _bounds(d: int) -> tuple[NDArray, NDArray]:
    k = d * (d + 1) // 2
    lo = np.r_[np.full(d, np.log(0.1)), np.full(d - 1, np.log(0.1)), np.full(k, -1.5)]
    hi = np.r_[np.full(d, np.log(5e3)), np.full(d - 1, np.log(10.0)), np.full(k, 1.5)]
    return lo, hi


def parameter_names(concepts: Sequence[str]) -> list[str]:
    """theta's entries by name: a[concept], mu_ratio[concept], U0[row,column] (lower triangle)."""
    rows, cols = np.tril_indices(len(concepts))
    return (
        [f"a[{c}]" for c in concepts]
        + [f"mu_ratio[{c}]" for c in concepts[1:]]
        + [f"U0[{i},{j}]" for i, j in zip(rows, cols)]
    )


def _observed(trajs: Sequence[Trajectory]) -> tuple[NDArray, list, float]:
    """The union of the located steps (in units of the last), and per class (bits, indices, y)."""
    located = [t.with_points() for t in trajs]
    d = located[0].z.shape[1]
    if any(t.z.shape[1] != d for t in located):
        raise ValueError("a joint sim2 fit needs classes with the same concepts")
    if d > 4:
        raise ValueError(f"sim2 fits up to 4 concepts; this trajectory has {d}")
    if sum(t.step.size for t in located) < 8:
        raise ValueError(
            "a sim2 fit needs at least 8 located points, these have "
            f"{sum(t.step.size for t in located)}"
        )
    span = float(max(t.step[-1] for t in located))
    if span <= 0:
        raise ValueError("a sim2 fit needs logged steps after step 0")
    u = np.unique(np.concatenate([t.step for t in located])) / span
    parts = [
        (target_of(t.label, d), np.searchsorted(u, t.step / span), np.asarray(t.z, dtype=float))
        for t in located
    ]
    if all(not any(b) for b, _, _ in parts):
        raise ValueError("class 00 carries no information for sim2 (its input is 0)")
    return u, parts, span


def _search(residuals, d: int, f_scale: float):
    diag = np.zeros(d * (d + 1) // 2)
    diag[[i * (i + 1) // 2 + i for i in range(d)]] = 1.0
    starts = [
        np.r_[np.log(rates), np.zeros(d - 1), w_start * diag]
        for rates in itertools.product((3.0, 15.0, 60.0), repeat=d)
        for w_start in (0.05, 0.3)
    ]
    return multistart(residuals, starts, _bounds(d), f_scale, search_nfev=40)


def fit_sim(traj: Trajectory | Sequence[Trajectory]) -> SimFit:
    """Fit sim2 to a trajectory's located points (at least 8), each class read by its label's bits;
    given several classes of one run, one W(t) is fitted to all of them (the fitted path is their
    rows stacked in the order given)."""
    trajs = [traj] if isinstance(traj, Trajectory) else list(traj)
    u, parts, span = _observed(trajs)
    d = parts[0][2].shape[1]
    y = np.concatenate([z for _, _, z in parts])

    def predicted(theta):
        w = _simulate(theta, u, d)
        return np.concatenate([_read(w, theta, bits)[idx] for bits, idx, _ in parts])

    def residuals(theta):
        try:
            return (predicted(theta) - y).ravel()
        except ValueError:  # an integration that fails is a very bad fit, not an error
            return np.full(y.size, 10.0)

    best = _search(residuals, d, 2 * max(noise_scale(z) for _, _, z in parts))
    return _result(best, residuals(best.x), predicted(best.x), y, trajs, parts, span)


def _result(best, resid, fitted, y, trajs, parts, span) -> SimFit:
    theta, d = best.x, y.shape[1]
    se = wald(theta, best.jac, resid)[2]
    edge = on_bounds(theta, *_bounds(d))
    a, m, u0 = _unpack(theta, d)
    a_ci = [
        None
        if edge[i]
        else [float(np.exp(theta[i] + sign * Z95 * se[i]) / span) for sign in (-1, 1)]
        for i in range(d)
    ]
    params = {
        "a": [float(v) / span for v in a],
        "mu_ratio": [float(v) for v in m[1:]],
        "w0": (u0 @ u0.T).tolist(),
    }
    names = parameter_names(trajs[0].concepts)
    return SimFit(
        "sim2",
        params,
        {"a": a_ci, "mu_ratio": None, "w0": None},
        float(np.sqrt(np.mean((fitted - y) ** 2))),
        fitted,
        bool(best.success),
        str(best.message),
        theta,
        span,
        at_bounds=[name for name, hit in zip(names, edge) if hit],
        bits=parts[0][0] if len(parts) == 1 else (),
    )
