"""The honest baselines a forecast of the behavior step must beat (fitting.forecast's ``baselines``), each on what a
user would have at the cut:

  blind          the pool's behavior steps after the cut, ignoring every covariate: the Kaplan-Meier curve of the
                 pool's behavior (runs that never composed censored at their last checkpoint), conditioned on no
                 behavior by the cut; its median, 10% and 90% quantiles and P(by the horizon).
  base-rate      P only: the share of the pool's runs that composed by their end (a constant).
  lc-naive       Bayesian learning-curve extrapolation (fitting.estimators.lc_ensemble: Domhan et al.'s ensemble of
                 curve families) of the held-out class's naive accuracy to where it reaches 0.5.
  lc-capability  the same extrapolation of the capability curve (over-prompting) to its 0.5 crossing (the step
                 itself once seen), plus a lag of behavior behind capability drawn from the pool.

(The same-setting median and the logistic extrapolation are fitting.analyses.forecast_methods' ``setting`` and
``logistic``.)
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from fitting.estimators import lc_ensemble


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
    """(median, (q10, q90), P(by horizon), note) of the event conditioned on coming after ``floor``."""
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
) -> tuple[NDArray, str]:
    """Draws of the behavior step from the ensemble's 0.5 crossings of a curve (plus ``lag`` draws)."""
    c = np.maximum(lc_ensemble.crossings(step, acc, 0.5, horizon), 0.0)
    if lag is not None:
        rng = np.random.default_rng(1)
        c = c + rng.choice(lag, c.size)
    return np.maximum(c, floor), ""


def summarize(draws: NDArray, horizon: float) -> tuple[float | None, tuple | None, float]:
    """(median or None past the horizon, (q10, q90 or None where unbounded), P(by horizon)) of draws."""
    d = np.sort(draws)
    pick = lambda p: d[min(int(np.floor(p * d.size)), d.size - 1)]  # noqa: E731
    med, lo, hi = pick(0.5), pick(0.1), pick(0.9)
    p = float(np.mean(d <= horizon))
    interval = None if not np.isfinite(lo) else (float(lo), float(hi) if np.isfinite(hi) else None)
    return (float(med) if np.isfinite(med) and med <= horizon else None), interval, p
