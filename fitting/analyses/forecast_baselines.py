"""The honest baselines a forecast of the behavior step must beat (fitting.forecast's
``baselines``), each on what a user would have at the cut:

  blind          the pool's behavior steps after the cut, ignoring every covariate: the Kaplan-Meier
                 curve of the pool's behavior (runs that never composed censored at their last
                 checkpoint), conditioned on no behavior by the cut; its median, 10% and 90%
                 quantiles and P(by the horizon).
  base-rate      P only: the share of the pool's runs that composed by their end (a constant).
  lc-naive       Bayesian learning-curve extrapolation (fitting.estimators.lc_ensemble: Domhan et
                 al.'s ensemble of curve families) of the held-out class's naive accuracy to where
                 it reaches 0.5.
  lc-capability  the same extrapolation of the capability curve (over-prompting) to its 0.5 crossing
                 (the step itself once seen), plus a lag of behavior behind capability drawn from
                 the pool.

  setting        the pool's runs at the run's separations (or, with fewer than 2 there, at the
                 nearest setting): their behavior steps after the cut.
  logistic       a sigmoid fitted to the held-out class's naive accuracy so far, extended to where
                 it crosses 0.5 (residual bootstrap for the interval).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy import optimize, special

from fitting.analyses.forecast_methods import Forecast, Pool, Reading
from fitting.estimators import censored, lc_ensemble


def km_survival(values: NDArray, censored: NDArray) -> tuple[NDArray, NDArray]:
    """The Kaplan-Meier survival curve: (event times, S just after each)."""
    values, censored = np.asarray(values, float), np.asarray(censored, bool)
    times = np.unique(values[~censored])
    s, out = 1.0, []
    for t in times:
        at_risk = np.sum(values >= t)
        events = np.sum((values == t) & ~censored)
        s *= 1.0 - events / at_risk if at_risk else 1.0
        out.append(s)
    return times, np.asarray(out)


def _s(times: NDArray, surv: NDArray, t: float) -> float:
    i = np.searchsorted(times, t, side="right") - 1
    return 1.0 if i < 0 else float(surv[i])


def km_forecast(
    values: NDArray, censored: NDArray, floor: float, horizon: float
) -> tuple[float | None, tuple | None, float | None, str]:
    """(median, (q10, q90), P(by horizon), note) of the event conditioned on coming after
    ``floor``."""
    times, surv = km_survival(values, censored)
    base = _s(times, surv, floor - 1e-9)
    if base <= 1e-12:
        return None, None, None, "every pool run composed before the cut"
    cond = surv / base
    after = times >= floor

    def q(p):
        hit = np.flatnonzero(after & (cond <= 1 - p + 1e-12))
        return float(times[hit[0]]) if hit.size else None

    p = 1.0 - _s(times, surv, horizon) / base if horizon >= floor else 0.0
    med, lo, hi = q(0.5), q(0.1), q(0.9)
    return med, (lo if lo is not None else floor, hi), float(np.clip(p, 0, 1)), ""


def lc_forecast(
    step: NDArray, acc: NDArray, floor: float, horizon: float, lag: NDArray | None = None
) -> NDArray:
    """Draws of the behavior step from the ensemble's 0.5 crossings of a curve (plus ``lag``
    draws)."""
    c = np.maximum(lc_ensemble.crossings(step, acc, 0.5, horizon), 0.0)
    if lag is not None:
        rng = np.random.default_rng(1)
        c = c + rng.choice(lag, c.size)
    return np.maximum(c, floor)


def summarize(draws: NDArray, horizon: float) -> tuple[float | None, tuple | None, float]:
    """(median or None past the horizon, (q10, q90 or None where unbounded), P(by horizon)) of
    draws."""
    d = np.sort(draws)
    pick = lambda p: d[min(int(np.floor(p * d.size)), d.size - 1)]  # noqa: E731
    med, lo, hi = pick(0.5), pick(0.1), pick(0.9)
    p = float(np.mean(d <= horizon))
    interval = None if not np.isfinite(lo) else (float(lo), float(hi) if np.isfinite(hi) else None)
    return (float(med) if np.isfinite(med) and med <= horizon else None), interval, p


def logistic(r: Reading, horizon: float, n_boot: int = 100, seed: int = 0) -> Forecast:
    if r.step.size < 5:
        return Forecast("logistic", None, None, None, "fewer than 5 checkpoints")
    t0, span = r.step[0], max(r.step[-1] - r.step[0], 1.0)
    u = (r.step - t0) / span
    hz = (horizon - t0) / span

    def model(x, uu):
        h, a, c, w = x
        return h + (a - h) * special.expit((uu - c) / w)

    def fit(y):
        best = None
        for c0 in (0.5, 1.0, 2.0):
            res = optimize.least_squares(
                lambda x: model(x, u) - y,
                [0.05, 0.9, c0, 0.1],
                bounds=([0, 0, 0, 0.005], [0.5, 1, 4 * max(hz, 1), 2]),
            )
            best = res if best is None or res.cost < best.cost else best
        return best.x

    def crossing(x):
        h, a, c, w = x
        if a <= 0.5 + 1e-6:
            return np.inf
        return t0 + span * (c + w * np.log((0.5 - h) / (a - 0.5))) if h < 0.5 else t0

    x = fit(r.accuracy)
    rng = np.random.default_rng(seed)
    res = r.accuracy - model(x, u)
    boots = np.array(
        [
            crossing(fit(np.clip(model(x, u) + rng.choice(res, res.size), 0, 1)))
            for _ in range(n_boot)
        ]
    )
    boots = np.maximum(boots, r.floor)
    p = float(np.mean(boots <= horizon))
    med = float(np.percentile(boots, 50, method="nearest"))
    # inf where fewer than 10% / 90% of the fits ever cross 0.5
    lo, hi = np.percentile(boots, [10, 90], method="nearest")
    interval = (float(lo), float(hi) if np.isfinite(hi) else None) if np.isfinite(lo) else None
    return Forecast("logistic", med if np.isfinite(med) and med <= horizon else None, interval, p)


def setting(r: Reading, pool: Pool, horizon: float) -> Forecast:
    """The pool's runs at the run's separations, or (fewer than 2 there) at the nearest setting in
    log separation that has at least 2: their behavior steps after the cut (censored ones sort
    last)."""
    same, where = pool.same_setting(r.sep), ""
    if len(same) < 2:
        near = pool.nearest_setting(r.sep)
        if near is None:
            return Forecast("setting", None, None, None, f"fewer than 2 pool runs at {r.sep}")
        same, where = (
            pool.same_setting(near),
            " at the nearest setting " + ", ".join(f"Δ{k} {v:g}" for k, v in near.items()),
        )
    y = np.array([e["behavior"].value for e in same], float)
    c = np.array([e["behavior"].step is None for e in same])
    # the run has not composed by the cut: only the runs that had not either (a pending run may
    # compose at its floor)
    later = (y >= r.floor if r.pending else y > r.at) | c
    if not later.any():
        return Forecast(
            "setting", None, None, None, f"all {len(same)} pool runs{where} composed by the cut"
        )
    y, c = y[later], c[later]
    med, bound = censored.median(y, c)
    inside = y[~c]
    p = float(np.mean(~c & (y <= horizon)))
    interval = tuple(np.percentile(inside, [10, 90])) if inside.size >= 2 else None
    return Forecast(
        "setting",
        None if bound or med > horizon else med,
        interval,
        p,
        f"{len(same)} runs{where}",
    )


def blind(r: Reading, pool: Pool, horizon: float) -> Forecast:
    y, c = pool.behaviors()
    med, interval, p, note = km_forecast(y, c, r.floor if r.pending else r.at + 1e-6, horizon)
    if p is None:
        return Forecast("blind", None, None, None, note)
    step = None if med is None or med > horizon else med
    return Forecast("blind", step, interval, p, f"{len(y)} pool runs")


def base_rate(pool: Pool) -> Forecast:
    y, c = pool.behaviors()
    return Forecast(
        "base-rate", None, None, float(np.mean(~c)), f"{int((~c).sum())} of {c.size} composed"
    )


def _from_draws(method: str, draws: NDArray, horizon: float, note: str) -> Forecast:
    med, interval, p = summarize(draws, horizon)
    return Forecast(method, med, interval, p, note)


def lc_naive(r: Reading, horizon: float) -> Forecast:
    if r.step.size < 5:
        return Forecast("lc-naive", None, None, None, "fewer than 5 checkpoints")
    draws = lc_forecast(r.step, r.accuracy, r.floor, horizon)
    return _from_draws("lc-naive", draws, horizon, "")


def lc_capability(r: Reading, pool: Pool, horizon: float) -> Forecast:
    lags = pool.lags()
    if lags.size < 3:
        return Forecast("lc-capability", None, None, None, "the pool has fewer than 3 lags")
    if r.capability is not None:
        draws = np.maximum(r.capability + lags, r.floor)
        return _from_draws("lc-capability", draws, horizon, f"capability {r.capability:,.0f}")
    if r.capability_curve is None or r.capability_curve[0].size < 5:
        return Forecast("lc-capability", None, None, None, "fewer than 5 capability checkpoints")
    draws = lc_forecast(*r.capability_curve, r.floor, horizon, lag=lags)
    return _from_draws("lc-capability", draws, horizon, "capability extrapolated")


def baselines(r: Reading, pool: Pool | None, horizon: float) -> list[Forecast]:
    """Every baseline of BASELINES at this cut (the pooled ones only with a pool)."""
    out = [logistic(r, horizon), lc_naive(r, horizon)]
    if pool is not None:
        out = [blind(r, pool, horizon), setting(r, pool, horizon), base_rate(pool), *out]
        out.append(lc_capability(r, pool, horizon))
    return out
