"""Model-free transition statistics of one curve: threshold steps, logistic fits, a change point.

``threshold_step``   first step a curve reaches a level (optionally staying there m checkpoints,
                     the persistence rule of the official analysis).
``settled_step``     the step from which a curve stays at or above a level to the end of the log.
``fit_logistic``     y = lo + (hi - lo) sigmoid((t - c) / w) by robust least squares; the 50% time
                     is where the fitted curve crosses 0.5, with a profile-likelihood interval.
``changepoint``      the best single mean shift (exact, O(n) with cumulative sums): the fallback
                     when no sigmoid fits, and the initial guess for the fits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import brentq, least_squares
from scipy.special import expit, logit

CHI2_1_95 = 3.841458820694124


LEVELS = (0.5, 0.8)  # the accuracy / coordinate levels every threshold is reported at
MAX_GAP_RATIO = (
    1e3  # largest / median gap between consecutive steps beyond which a time axis is refused
)


def check_spacing(step: NDArray, *, max_ratio: float = MAX_GAP_RATIO) -> None:
    """Refuse a time axis that one outlying step squeezes (e.g. a typo 1e300 among steps 0..5000).

    Fits work in time normalised to the logged range, so a single step far from the others would
    push every other point to the same instant and yield a meaningless, "successful" fit.

    Raises:
        ValueError: naming the step (by its index) whose gap is more than ``max_ratio`` median gaps.
    """
    step = np.asarray(step, dtype=float)
    gaps = np.diff(step)
    if gaps.size < 2:
        return
    median = float(np.median(gaps))
    ratio = gaps / median if median > 0 else np.full(gaps.size, np.inf)
    if not np.all(np.isfinite(gaps)) or np.any(ratio > max_ratio):
        i = int(np.argmax(np.where(np.isfinite(ratio), ratio, np.inf)))
        raise ValueError(
            f"step {step[i + 1]:g} (point {i + 2} of {step.size}) is {gaps[i]:.3g} after the "
            "previous one, "
            f"more than {max_ratio:g} times the median gap between steps ({median:.3g}); a typo? "
            "the time axis cannot be fitted"
        )


def threshold_step(step: NDArray, y: NDArray, level: float, *, persist: int = 1) -> float | None:
    """First logged step at which ``y >= level`` holds for ``persist`` consecutive checkpoints.

    Args:
        step: (T,) logged steps.
        y: (T,) the curve (a coordinate or an accuracy).
        level: the threshold, e.g. 0.5 or 0.8.
        persist: how many consecutive checkpoints must stay at or above the level (>= 1).

    Returns:
        The step, or None if the curve never gets (and stays) there.
    """
    if persist < 1:
        raise ValueError(f"persist must be >= 1, got {persist}")
    above = np.asarray(y) >= level
    run = 0
    for i, ok in enumerate(above):
        run = run + 1 if ok else 0
        if run == persist:
            return float(step[i - persist + 1])
    return None


def settled_step(step: NDArray, y: NDArray, level: float) -> float | None:
    """The logged step from which ``y >= level`` holds at every later checkpoint, or None.

    Unlike ``threshold_step``, a transient excursion (up and back down) does not count: this is the
    step after the last checkpoint below the level, if the log ends at or above it.
    """
    below = np.flatnonzero(~(np.asarray(y) >= level))
    if below.size == 0:
        return float(step[0]) if len(step) else None
    return float(step[below[-1] + 1]) if below[-1] + 1 < len(step) else None


def changepoint(step: NDArray, y: NDArray) -> tuple[float, float]:
    """Best single mean shift of y (least squares, exact): (step where the new level starts, RSS
    gain).

    The break is placed midway between the last point of the first segment and the first of the
    second.
    """
    y = np.asarray(y, dtype=np.float64)
    n = y.size
    if n < 2:
        raise ValueError("a change point needs at least 2 points")
    c1, c2 = np.cumsum(y), np.cumsum(y**2)
    k = np.arange(1, n)  # size of the first segment
    left = c2[k - 1] - c1[k - 1] ** 2 / k
    right = (c2[-1] - c2[k - 1]) - (c1[-1] - c1[k - 1]) ** 2 / (n - k)
    i = int(np.argmin(left + right))
    total = c2[-1] - c1[-1] ** 2 / n
    return float(0.5 * (step[i] + step[i + 1])), float(total - (left + right)[i])


@dataclass(frozen=True)
class LogisticFit:
    """A fitted sigmoid y = lo + (hi - lo) sigmoid((t - center) / width).

    ``t50`` is the step where the fitted curve crosses 0.5 (None if it never does); ``t50_ci`` its
    95% profile-likelihood interval (noise variance from the transition region), with None for an
    open end (the data cannot exclude that the crossing lies beyond the logged range on that side).
    ``method`` is ``logistic`` or ``changepoint`` (the fallback when the sigmoid fit fails).
    """

    t50: float | None
    t50_ci: tuple[float | None, float | None] | None
    center: float
    width: float
    lo: float
    hi: float
    rmse: float
    method: str
    success: bool
    message: str

    def predict(self, t: NDArray) -> NDArray:
        """The fitted sigmoid at ``step``."""
        return self.lo + (self.hi - self.lo) * expit(
            (np.asarray(t, dtype=float) - self.center) / self.width
        )


def _crossing(theta: NDArray, t0: float, span: float, level: float = 0.5) -> float:
    c, logw, lo, hi = theta
    if not (min(lo, hi) < level < max(lo, hi)):
        return np.nan
    return t0 + span * (c + np.exp(logw) * logit((level - lo) / (hi - lo)))


def _solve(u: NDArray, y: NDArray, x0: NDArray, f_scale: float):
    def resid(th):
        c, logw, lo, hi = th
        return lo + (hi - lo) * expit((u - c) / np.exp(logw)) - y

    lb, ub = [-1.0, np.log(1e-4), 0.0, 0.0], [2.0, np.log(2.0), 1.0, 1.0]
    x0 = np.clip(x0, np.array(lb) + 1e-9, np.array(ub) - 1e-9)
    return least_squares(resid, x0, bounds=(lb, ub), loss="soft_l1", f_scale=f_scale, x_scale="jac")


def noise_scale(y: NDArray) -> float:
    """Robust noise sd from first differences (MAD), floored so that clean curves stay
    well-posed."""
    d = np.diff(np.asarray(y, dtype=float), axis=0)
    if d.size == 0:
        return 1e-3
    return max(1.4826 * float(np.median(np.abs(d - np.median(d, axis=0)))) / np.sqrt(2), 1e-3)


def _profile(u: NDArray, y: NDArray, tau: float, x0: NDArray, level: float):
    """Least squares with the crossing time fixed at tau (rising curves): (RSS, (log w, lo, hi))."""

    def resid(x):
        logw, lo, hi = x
        m = tau - np.exp(logw) * logit(np.clip((level - lo) / (hi - lo), 1e-12, 1 - 1e-12))
        return lo + (hi - lo) * expit((u - m) / np.exp(logw)) - y

    lb, ub = [np.log(1e-4), 0.0, level + 1e-6], [np.log(2.0), level - 1e-6, 1.0]
    sol = least_squares(
        resid, np.clip(x0, np.array(lb) + 1e-9, np.array(ub) - 1e-9), bounds=(lb, ub)
    )
    return 2 * sol.cost, sol.x


def _profile_interval(u, y, tau_hat, x_hat, level, lower, upper, sigma2):
    """The set {tau : (RSS(tau) - RSS(tau_hat)) / sigma2 <= 3.84} around tau_hat, walked outward
    then bisected."""
    rss_hat, _ = _profile(u, y, tau_hat, x_hat, level)

    def excess(tau, x0):
        rss, x = _profile(u, y, tau, x0, level)
        return (rss - rss_hat) / sigma2 - CHI2_1_95, x

    ends = []
    for direction, limit in ((-1, lower), (1, upper)):
        inside, x, step = tau_hat, x_hat, 0.002
        found = None
        while abs(inside - tau_hat) < abs(limit - tau_hat):
            trial = float(np.clip(inside + direction * step, min(lower, upper), max(lower, upper)))
            g, x_trial = excess(trial, x)
            if g > 0:
                found = brentq(lambda t: excess(t, x)[0], *sorted((inside, trial)), xtol=1e-5)
                break
            inside, x, step = trial, x_trial, step * 1.6
            if trial == limit:
                break
        ends.append(found)
    return ends


def _transition_variance(
    fitted: NDArray, y: NDArray, lo: float, hi: float, n_params: int = 4
) -> float:
    """Noise variance for the interval: the larger of the pooled estimate and the one from the
    transition.

    Accuracy curves are noisiest mid-transition (binomial variance, clipping at 0 and 1 on the
    plateaus), and the transition alone decides where the curve crosses.
    """
    resid = y - fitted
    pooled = float(np.sum(resid**2)) / max(y.size - n_params, 1)
    frac = (fitted - lo) / (hi - lo) if hi != lo else np.zeros_like(fitted)
    mid = (frac > 0.05) & (frac < 0.95)
    if mid.sum() >= 3:
        return max(pooled, float(np.mean(resid[mid] ** 2)))
    return pooled


def fit_logistic(
    step: NDArray,
    y: NDArray,
    *,
    level: float = 0.5,
    interval: bool = True,
) -> LogisticFit:
    """Fit a sigmoid to an accuracy curve and find when it crosses ``level``, with a 95% interval.

    Args:
        step: (T,) logged steps, increasing.
        y: (T,) values in [0, 1] (NaN entries are dropped).
        level: the crossing level (0.5 for the 50% time).
        interval: compute the profile-likelihood interval (rising curves that cross the level).
    """
    step = np.asarray(step, dtype=float)
    y = np.asarray(y, dtype=float)
    keep = ~np.isnan(y)
    step, y = step[keep], y[keep]
    if step.size < 5:
        raise ValueError(f"a logistic fit needs at least 5 logged points, got {step.size}")
    t0, span = step[0], step[-1] - step[0]
    u = (step - t0) / span
    f_scale = 2 * noise_scale(y)
    cp, _ = changepoint(u, y)
    head, tail = y[: max(2, y.size // 8)].mean(), y[-max(2, y.size // 8) :].mean()
    best = None
    for c in {cp, 0.25, 0.5, 0.75}:
        for w in (0.02, 0.1):
            sol = _solve(u, y, np.array([c, np.log(w), head, tail]), f_scale)
            if best is None or sol.cost < best.cost:
                best = sol
    theta = best.x
    fitted = theta[2] + (theta[3] - theta[2]) * expit((u - theta[0]) / np.exp(theta[1]))
    rmse = float(np.sqrt(np.mean((fitted - y) ** 2)))
    t50 = _crossing(theta, t0, span, level)
    if not best.success:
        cpt, _ = changepoint(step, y)
        return LogisticFit(
            cpt, None, cpt, 0.0, head, tail, rmse, "changepoint", False, best.message
        )
    ci = None
    if interval and not np.isnan(t50) and theta[3] > theta[2]:
        tau_hat = (t50 - t0) / span
        sigma2 = max(_transition_variance(fitted, y, theta[2], theta[3]), 1e-8)
        lo_u, hi_u = _profile_interval(u, y, tau_hat, theta[1:], level, -0.5, 1.5, sigma2)
        ci = tuple(None if e is None else float(t0 + span * e) for e in (lo_u, hi_u))
    return LogisticFit(
        None if np.isnan(t50) else float(t50),
        ci,
        float(t0 + span * theta[0]),
        float(span * np.exp(theta[1])),
        float(theta[2]),
        float(theta[3]),
        rmse,
        "logistic",
        True,
        str(best.message),
    )
