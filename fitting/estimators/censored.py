"""Regression with right-censored responses (a Tobit model): y = f(θ, x) + ε, ε ~ N(0, σ²), where
some y are known only to exceed a bound (an event that had not happened when the run ended).

The log-likelihood of an observed y is log φ((y - μ) / σ) - log σ, and of a censored one (y > c)
log Φ((μ - c) / σ); :func:`fit` maximizes it over θ and log σ. :func:`predict` gives the mean and
the σ a new draw has at new x.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from numpy.typing import NDArray
from scipy import optimize, special

Mean = Callable[[NDArray, dict], NDArray]  # (θ, covariates name -> (N,)) -> μ (N,)


@dataclass(frozen=True)
class Fit:
    theta: NDArray
    sigma: float
    loglik: float
    n: int
    n_censored: int


def loglik(mu: NDArray, sigma: float, y: NDArray, censored: NDArray) -> float:
    z = (y - mu) / sigma
    obs = -0.5 * z[~censored] ** 2 - np.log(sigma) - 0.5 * np.log(2 * np.pi)
    cen = special.log_ndtr(-z[censored])
    return float(obs.sum() + cen.sum())


def fit(
    mean: Mean,
    start: NDArray,
    y: NDArray,
    censored: NDArray,
    cov: dict,
    *,
    sigma_floor: float = 1e-3,
) -> Fit:
    """Maximum likelihood θ and σ; ``start``: θ's starting value (σ starts at the spread of the
    observed y)."""
    y = np.asarray(y, float)
    censored = np.asarray(censored, bool)
    if y.size == 0:
        raise ValueError("no runs to fit")
    if (~censored).sum() == 0:
        raise ValueError(
            "every run is censored: the event was never observed, there is nothing to fit"
        )
    spread = np.std(y[~censored]) if (~censored).sum() > 1 else 1.0
    x0 = np.append(np.asarray(start, float), np.log(max(spread, 10 * sigma_floor)))

    def nll(x):
        sigma = sigma_floor + np.exp(x[-1])
        mu = mean(x[:-1], cov)
        value = -loglik(mu, sigma, y, censored)
        return value if np.isfinite(value) else 1e300

    best = None
    for method in ("BFGS", "Nelder-Mead"):
        res = optimize.minimize(nll, x0, method=method, options={"maxiter": 4000})
        if best is None or res.fun < best.fun:
            best = res
        x0 = best.x
    theta, log_sigma = best.x[:-1], best.x[-1]
    return Fit(
        theta,
        float(sigma_floor + np.exp(log_sigma)),
        float(-best.fun),
        int(y.size),
        int(censored.sum()),
    )


def median(values: NDArray, censored: NDArray) -> tuple[float, bool]:
    """The sample median of right-censored values that share one bound: (value, is_lower_bound).

    Censored values sort last. When the upper middle value is censored the median is known only to
    exceed the middle of the two middle values (the lower one observed, or censored too: then the
    bound itself)."""
    values = np.asarray(values, float)
    censored = np.asarray(censored, bool)
    n = values.size
    if n == 0:
        raise ValueError("no values")
    order = np.lexsort((values, censored))
    v, c = values[order], censored[order]
    lo, hi = (n - 1) // 2, n // 2
    if not c[hi]:
        return float((v[lo] + v[hi]) / 2), False
    if not c[lo]:
        return float((v[lo] + v[hi]) / 2), True
    return float(v[hi]), True
