"""What every least-squares fit of the package shares (issue #30's engine, first part): Wald intervals from
the Jacobian at the optimum, and which parameters ended on a bound of the search.

Used by the per-run fits (:mod:`fitting.model_fit`), the pooled laws (:mod:`fitting.pooled`) and the SIM
fits (:mod:`fitting.sim_fit`), each in its own parameterization (θ).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

Z95 = 1.96


def wald(
    theta: NDArray,
    jac: NDArray,
    resid: NDArray,
    lb: NDArray | None = None,
    ub: NDArray | None = None,
) -> tuple[NDArray, NDArray, NDArray]:
    """95% Wald intervals of θ, (lo, hi, se): s² (JᵀJ)⁻¹ with s² = RSS / (n - p), a ridge of 1e-10 of JᵀJ's
    mean diagonal keeping a direction the data do not constrain finite (and wide); clipped to the bounds."""
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
    """Where θ sits on a bound of the search (within ``rel`` of the bound's range): a Wald interval is not
    valid there."""
    tol = rel * (np.asarray(ub) - np.asarray(lb))
    return np.isclose(theta, lb, rtol=0, atol=tol) | np.isclose(theta, ub, rtol=0, atol=tol)
