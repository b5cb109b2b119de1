"""What every least-squares fit of the package shares: the robust bounded solve, the multistart
search (screen every start, refine the best few briefly, polish the best of those),
central-difference Jacobians from one batched evaluation, bootstrap percentile intervals, Wald
intervals from the Jacobian at the optimum, and which parameters ended on a bound of the search.

Used by the per-run fits (:mod:`fitting.estimators.model_fit`), the pooled laws
(:mod:`fitting.estimators.pooled`) and the SIM fits (:mod:`fitting.estimators.sim_fit`): each is a
problem (its residuals, bounds, starts and parameterization θ) handed to these functions.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import OptimizeResult, least_squares

Z95 = 1.96
EDGE = 1e-9  # a start is moved this far inside its bounds (least squares starts strictly inside)
H = 1e-5  # the central-difference step, in θ's own units


def solve(
    residuals: Callable[..., NDArray],
    x0: NDArray,
    bounds: tuple[NDArray, NDArray],
    f_scale: float,
    max_nfev: int,
    *,
    jac: Callable[..., NDArray] | str = "2-point",
    args: tuple = (),
) -> OptimizeResult:
    """Robust (soft L1, scale ``f_scale``) bounded least squares from ``x0`` (moved inside the
    bounds)."""
    lb, ub = bounds
    return least_squares(
        residuals,
        np.clip(x0, lb + EDGE, ub - EDGE),
        jac=jac,
        bounds=(lb, ub),
        args=args,
        loss="soft_l1",
        f_scale=f_scale,
        max_nfev=max_nfev,
        x_scale="jac",
    )


def multistart(
    residuals: Callable[..., NDArray],
    starts: Sequence[NDArray] | NDArray,
    bounds: tuple[NDArray, NDArray],
    f_scale: float,
    *,
    search_nfev: int,
    screen: Callable[[NDArray], NDArray] | None = None,
    keep: int = 3,
    polish_nfev: int = 200,
    jac: Callable[..., NDArray] | str = "2-point",
    search_args: tuple = (),
    args: tuple = (),
) -> OptimizeResult:
    """The best of many starts: each start's sum of squares (``screen``: all starts (S, P) at once
    -> (S,); default: ``residuals`` one by one), the ``keep`` best refined for ``search_nfev``
    evaluations (with ``search_args``), the best of those polished for ``polish_nfev`` (with
    ``args``)."""
    lb, ub = bounds
    starts = np.clip(np.asarray(starts, dtype=float), lb + EDGE, ub - EDGE)
    if screen is None:
        sse = np.array([float(np.sum(residuals(s, *search_args) ** 2)) for s in starts])
    else:
        sse = screen(starts)
    trials = [
        solve(residuals, x0, bounds, f_scale, search_nfev, jac=jac, args=search_args)
        for x0 in starts[np.argsort(sse)[:keep]]
    ]
    best = min(trials, key=lambda r: r.cost).x
    return solve(residuals, best, bounds, f_scale, polish_nfev, jac=jac, args=args)


def central_jacobian(
    predict: Callable[[NDArray], NDArray], theta: NDArray, lb: NDArray, ub: NDArray, h: float = H
) -> NDArray:
    """(n, P) central differences of ``predict`` (a batch of θ (B, P) -> (B, n), called once with
    every perturbed θ), each step clipped to the bounds."""
    p = theta.size
    up, down = np.minimum(theta + h, ub), np.maximum(theta - h, lb)
    batch = np.repeat(theta[None], 2 * p, axis=0)
    batch[np.arange(p), np.arange(p)] = up
    batch[p + np.arange(p), np.arange(p)] = down
    z = predict(batch)
    return ((z[:p] - z[p:]) / (up - down)[:, None]).T


def bootstrap(
    refit: Callable[[np.random.Generator], NDArray], n_boot: int, gen: np.random.Generator
) -> tuple[NDArray, NDArray]:
    """95% percentile intervals of θ from ``n_boot`` refits (``refit(gen)``: one resample's θ)."""
    draws = np.stack([refit(gen) for _ in range(n_boot)])
    return np.quantile(draws, 0.025, axis=0), np.quantile(draws, 0.975, axis=0)


def wald(
    theta: NDArray,
    jac: NDArray,
    resid: NDArray,
    lb: NDArray | None = None,
    ub: NDArray | None = None,
) -> tuple[NDArray, NDArray, NDArray]:
    """95% Wald intervals of θ, (lo, hi, se): s² (JᵀJ)⁻¹ with s² = RSS / (n - p), a ridge of 1e-10
    of JᵀJ's mean diagonal keeping a direction the data do not constrain finite (and wide); clipped
    to the bounds."""
    n, p = resid.size, theta.size
    s2 = float(np.sum(resid**2)) / max(n - p, 1)
    jtj = jac.T @ jac
    ridge = 1e-10 * max(float(np.trace(jtj)), 1e-300) / p
    se = np.sqrt(np.maximum(np.diag(s2 * np.linalg.inv(jtj + ridge * np.eye(p))), 0))
    lo, hi = theta - Z95 * se, theta + Z95 * se
    if lb is not None:
        lo = np.maximum(lo, lb)
    if ub is not None:
        hi = np.minimum(hi, ub)
    return lo, hi, se


def on_bounds(theta: NDArray, lb: NDArray, ub: NDArray, rel: float = 1e-6) -> NDArray[np.bool_]:
    """Where θ sits on a bound of the search (within ``rel`` of the bound's range): a Wald interval
    is not valid there."""
    tol = rel * (np.asarray(ub) - np.asarray(lb))
    return np.isclose(theta, lb, rtol=0, atol=tol) | np.isclose(theta, ub, rtol=0, atol=tol)
