"""Bayesian learning-curve extrapolation: an ensemble of parametric curve families (Domhan,
Springenberg and Hutter, IJCAI 2015), the prior the LC-PFN of Adriaensen et al. (NeurIPS 2023) was
trained on, in numpy/scipy.

A curve y(step) in [0, 1] observed up to a cut is fitted by each family (least squares, bounds that
keep every member increasing and inside [0, 1]); the families are weighted by their BIC (exp(-BIC /
2), the Laplace approximation of each family's marginal likelihood, where Domhan et al. sample the
weights by MCMC), and each family's posterior is approximated by a Gaussian around its fit
(covariance σ² (JᵀJ)⁻¹), drawn from and clipped to the bounds. :func:`crossings` gives, per
posterior draw, the step where the extrapolated curve first reaches a level (inf where it never does
within ``reach`` times the horizon); the forecast is their distribution.

Steps are measured in units of ``SCALE`` so that the rates stay of order one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from numpy.typing import NDArray
from scipy import optimize

SCALE = 1000.0
MIN_POINTS = 5


@dataclass(frozen=True)
class Family:
    name: str
    f: Callable[[NDArray, NDArray], NDArray]  # (θ, x) -> y
    lower: tuple
    upper: tuple
    starts: tuple  # starting θs, each inside the bounds


def _weibull(th, x):
    a, b, k, d = th
    return a - (a - b) * np.exp(-((k * x) ** d))


def _mmf(th, x):
    a, b, k, d = th
    return a - (a - b) / (1 + (k * x) ** d)


def _janoschek(th, x):
    a, b, k, d = th
    return a - (a - b) * np.exp(-k * x**d)


def _log_power(th, x):
    a, tau, c = th
    return a / (1 + (tau / np.maximum(x, 1e-12)) ** c)


def _exp4(th, x):
    c, a, al, b = th
    return np.clip(c - np.exp(-a * x**al + b), 0.0, 1.0)


def _pow3(th, x):
    c, a, al = th
    return np.clip(c - a * np.maximum(x, 1e-12) ** (-al), 0.0, 1.0)


FAMILIES = (
    Family(
        "weibull",
        _weibull,
        (0, 0, 1e-3, 0.5),
        (1, 0.5, 10, 20),
        ((0.9, 0.02, 0.3, 3), (0.9, 0.02, 0.1, 6), (0.6, 0.0, 0.5, 2)),
    ),
    Family(
        "mmf",
        _mmf,
        (0, 0, 1e-3, 0.5),
        (1, 0.5, 10, 20),
        ((0.9, 0.02, 0.3, 4), (0.9, 0.02, 0.1, 8), (0.6, 0.0, 0.5, 2)),
    ),
    Family(
        "janoschek",
        _janoschek,
        (0, 0, 1e-6, 0.5),
        (1, 0.5, 10, 20),
        ((0.9, 0.02, 0.01, 3), (0.9, 0.02, 1e-4, 6), (0.6, 0.0, 0.1, 2)),
    ),
    Family(
        "log_power",
        _log_power,
        (0, 0.01, 0.5),
        (1, 100, 20),
        ((0.9, 3, 4), (0.9, 8, 8), (0.6, 1, 2)),
    ),
    Family(
        "exp4",
        _exp4,
        (0, 1e-3, 0.1, -5),
        (1, 10, 5, 5),
        ((0.9, 0.5, 1, 0), (0.9, 0.1, 2, 0), (0.6, 1, 1, 1)),
    ),
    Family("pow3", _pow3, (0, 0, 0.1), (1, 10, 5), ((0.9, 0.5, 1), (0.6, 1, 2), (1, 3, 0.5))),
)


@dataclass(frozen=True)
class Member:
    family: Family
    theta: NDArray
    cov: NDArray
    weight: float


def fit(step: NDArray, y: NDArray) -> list[Member]:
    """Each family's fit to the curve, with its BIC weight (they sum to 1)."""
    x, y = np.asarray(step, float) / SCALE, np.asarray(y, float)
    ok = np.isfinite(x) & np.isfinite(y) & (x > 0)
    x, y = x[ok], y[ok]
    if x.size < MIN_POINTS:
        raise ValueError(f"fewer than {MIN_POINTS} points on the curve")
    n, fits = x.size, []
    for fam in FAMILIES:
        best = None
        for s in fam.starts:
            res = optimize.least_squares(
                lambda th: fam.f(th, x) - y,
                s,
                bounds=(fam.lower, fam.upper),
                method="trf",
                max_nfev=100,
            )
            best = res if best is None or res.cost < best.cost else best
        rss = max(2 * best.cost, 1e-10 * n)
        sigma2 = max(rss / n, 1e-6)
        loglik = -0.5 * n * (np.log(2 * np.pi * sigma2) + 1)
        bic = len(fam.lower) * np.log(n) - 2 * loglik
        jtj = best.jac.T @ best.jac
        cov = sigma2 * np.linalg.pinv(jtj, rcond=1e-10)
        fits.append((fam, best.x, cov, bic))
    bics = np.array([f[3] for f in fits])
    w = np.exp(-0.5 * (bics - bics.min()))
    w /= w.sum()
    return [Member(fam, th, cov, float(wi)) for (fam, th, cov, _), wi in zip(fits, w)]


def draws(members: list[Member], n: int, rng: np.random.Generator) -> list[tuple[Family, NDArray]]:
    """``n`` posterior draws of (family, θ), the families in proportion to their weights."""
    counts = rng.multinomial(n, [m.weight for m in members])
    out = []
    for m, k in zip(members, counts):
        if k == 0:
            continue
        lo, hi = np.asarray(m.family.lower, float), np.asarray(m.family.upper, float)
        cov = np.nan_to_num(m.cov, nan=0.0, posinf=0.0, neginf=0.0)
        # a direction the data do not constrain gets at most the width of its bounds
        span = (hi - lo) ** 2
        cov = np.where(np.isfinite(cov), cov, 0.0)
        d = np.sqrt(np.clip(np.diag(cov), 0, None))
        scale = np.minimum(1.0, np.sqrt(span) / np.maximum(d, 1e-300))
        cov = cov * np.outer(scale, scale)
        th = rng.multivariate_normal(m.theta, cov, size=int(k), check_valid="ignore")
        out.extend((m.family, np.clip(t, lo, hi)) for t in th)
    return out


def crossings(
    step: NDArray,
    y: NDArray,
    level: float,
    horizon: float,
    *,
    n: int = 400,
    reach: float = 2.0,
    seed: int = 0,
) -> NDArray:
    """Per posterior draw, the first step past the last observed one where the curve reaches
    ``level`` (the last observed step where the curve already does), inf where it does not by
    ``reach`` x ``horizon``."""
    step = np.asarray(step, float)
    rng = np.random.default_rng(seed)
    members = fit(step, y)
    last = float(np.nanmax(step))
    grid = np.linspace(last, max(reach * horizon, last + 1.0), 600) / SCALE
    out = np.full(n, np.inf)
    for i, (fam, th) in enumerate(draws(members, n, rng)):
        with np.errstate(all="ignore"):
            v = fam.f(th, grid)
        hit = np.flatnonzero(np.nan_to_num(v, nan=-1.0) >= level)
        if hit.size:
            out[i] = grid[hit[0]] * SCALE
    return out
