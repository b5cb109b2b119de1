"""Fit the structured identity mapping's two-layer model (``sim2``, theory/sim.py) to a logged path.

The logged class is read as the out-of-distribution probe x_hat of the SIM: coordinate p of the path
is (W(t) m)_p / m_p, with W(t) the two-layer flow for signals a_p and m the probe's norms relative to
the first concept's (only ratios matter after the division). Free parameters, in the log's units:

``a``         each concept's signal, per step (its speed: the diagonal entry grows logistically at 2a)
``mu_ratio``  m_p / m_1 for p >= 2 (how much concept p's cluster weighs in the other coordinates)
``w0``        the start W(0) = U(0) U(0)^T (U(0) lower triangular, so W(0) is any PSD matrix)

Training step 0 is model time 0 (the untrained network is the start). Least squares (soft L1) from
screened starts, scipy's finite-difference Jacobian, Wald intervals on ``a``. Unlike eq1, the switch
times are not parameters: they come out of the dynamics.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import least_squares

from fitting.curves import noise_scale
from theory.sim import two_layer
from theory.trajectory import Trajectory


@dataclass(frozen=True, eq=False)
class SimFit:
    """A fitted sim2 path (the attributes fitting.report reads from a ModelFit)."""

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

    @property
    def identifiable(self) -> list[bool]:
        return []

    def predict(self, steps) -> NDArray[np.float64]:
        """The fitted path at any steps, (T', D)."""
        return _simulate(
            self.theta, np.asarray(steps, dtype=float) / self.span, len(self.params["a"])
        )


def _unpack(theta: NDArray, d: int) -> tuple[NDArray, NDArray, NDArray]:
    a = np.exp(theta[:d])
    m = np.concatenate([[1.0], np.exp(theta[d : 2 * d - 1])])
    u0 = np.zeros((d, d))
    u0[np.tril_indices(d)] = theta[2 * d - 1 :]
    return a, m, u0


def _simulate(theta: NDArray, u: NDArray, d: int) -> NDArray:
    a, m, u0 = _unpack(theta, d)
    w = two_layer(
        a, u, u0, rtol=1e-7, atol=1e-9
    )  # U(0) is the state at time 0, whatever the grid's first time
    return (w @ m) / m


def _bounds(d: int) -> tuple[NDArray, NDArray]:
    k = d * (d + 1) // 2
    lo = np.r_[np.full(d, np.log(0.1)), np.full(d - 1, np.log(0.1)), np.full(k, -1.5)]
    hi = np.r_[np.full(d, np.log(5e3)), np.full(d - 1, np.log(10.0)), np.full(k, 1.5)]
    return lo, hi


def fit_sim(traj: Trajectory) -> SimFit:
    """Fit sim2 to a trajectory's located points (at least 8)."""
    located = traj.with_points()
    d = located.z.shape[1]
    if located.step.size < 8:
        raise ValueError(
            f"a sim2 fit needs at least 8 located points, this trajectory has {located.step.size}"
        )
    if d > 4:
        raise ValueError(f"sim2 fits up to 4 concepts; this trajectory has {d}")
    span = float(located.step[-1])
    if span <= 0:
        raise ValueError("a sim2 fit needs logged steps after step 0")
    u, y = np.asarray(located.step, dtype=float) / span, located.z
    lo, hi = _bounds(d)
    diag = np.zeros(d * (d + 1) // 2)
    diag[[i * (i + 1) // 2 + i for i in range(d)]] = 1.0
    starts = []
    for rates in itertools.product((3.0, 15.0, 60.0), repeat=d):
        for w_start in (0.05, 0.3):
            starts.append(np.r_[np.log(rates), np.zeros(d - 1), w_start * diag])
    starts = [np.clip(s, lo + 1e-9, hi - 1e-9) for s in starts]
    f_scale = 2 * noise_scale(y)

    def residuals(theta):
        try:
            return (_simulate(theta, u, d) - y).ravel()
        except ValueError:  # an integration that fails is a very bad fit, not an error
            return np.full(y.size, 10.0)

    screen = [float(np.sum(residuals(s) ** 2)) for s in starts]
    trials = [
        least_squares(
            residuals,
            starts[i],
            bounds=(lo, hi),
            loss="soft_l1",
            f_scale=f_scale,
            max_nfev=40,
            x_scale="jac",
        )
        for i in np.argsort(screen)[:3]
    ]
    best = least_squares(
        residuals,
        min(trials, key=lambda r: r.cost).x,
        bounds=(lo, hi),
        loss="soft_l1",
        f_scale=f_scale,
        max_nfev=200,
        x_scale="jac",
    )
    theta = best.x
    resid = residuals(theta)
    n, p = resid.size, theta.size
    s2 = float(np.sum(resid**2)) / max(n - p, 1)
    jtj = best.jac.T @ best.jac
    se = np.sqrt(np.maximum(np.diag(s2 * np.linalg.pinv(jtj)), 0))
    a, m, u0 = _unpack(theta, d)
    a_ci = [
        [
            float(np.exp(theta[i] - 1.96 * se[i]) / span),
            float(np.exp(theta[i] + 1.96 * se[i]) / span),
        ]
        for i in range(d)
    ]
    params = {
        "a": [float(v) / span for v in a],
        "mu_ratio": [float(v) for v in m[1:]],
        "w0": (u0 @ u0.T).tolist(),
    }
    ci = {"a": a_ci, "mu_ratio": None, "w0": None}
    fitted = _simulate(theta, u, d)
    return SimFit(
        "sim2",
        params,
        ci,
        float(np.sqrt(np.mean((fitted - y) ** 2))),
        fitted,
        bool(best.success),
        str(best.message),
        theta,
        span,
    )
