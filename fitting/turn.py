"""The turn of a trajectory in concept space: where it stops heading for the memorized class and turns.

A continuous two-segment ("hinge") path is fitted to all coordinates at once:

    z(t) = a + b (t - τ) + c max(t - τ, 0)        a, b, c in R^D

For a fixed τ this is linear least squares; τ is found by a scan over the logged steps refined by a
bounded 1-d search. The 95% interval is the profile-likelihood set {τ : n ln(RSS(τ)/RSS(τ̂)) <= 3.84}.
The turn is reported only if the direction of motion changes by at least ``min_angle`` degrees
(a trajectory that slows down along a straight line has no turn). ``a`` is the memorization point:
where the trajectory is when it turns.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import minimize_scalar

CHI2_1_95 = 3.841458820694124


@dataclass(frozen=True)
class Turn:
    """Result of :func:`find_turn`; ``step`` and ``ci`` are None when there is no turn."""

    step: float | None
    ci: tuple[float, float] | None
    angle: float  # degrees between the direction before and after the best hinge
    point: tuple[float, ...]  # the fitted position at the hinge (the memorization point)
    hinge_step: float  # the best hinge, turn or not


def _rss(t: NDArray, z: NDArray, tau: float) -> tuple[float, NDArray]:
    X = np.column_stack([np.ones_like(t), t - tau, np.maximum(t - tau, 0.0)])
    coef, *_ = np.linalg.lstsq(X, z, rcond=None)
    r = z - X @ coef
    return float(np.sum(r**2)), coef


def find_turn(step: NDArray, z: NDArray, *, min_angle: float = 30.0) -> Turn:
    """Locate the turn of a (T, D) path logged at (T,) steps."""
    t = np.asarray(step, dtype=float)
    z = np.asarray(z, dtype=float).reshape(t.size, -1)
    if t.size < 5:
        raise ValueError(f"finding a turn needs at least 5 logged points, got {t.size}")
    t0, span = t[0], t[-1] - t[0]
    u = (t - t0) / span
    inner = u[1:-1]  # at least one point on each side of the hinge
    scan = np.array([_rss(u, z, tau)[0] for tau in inner])
    i = int(np.argmin(scan))
    lo, hi = u[max(i, 0)], u[min(i + 2, u.size - 1)]
    best = minimize_scalar(lambda tau: _rss(u, z, tau)[0], bounds=(lo, hi), method="bounded", options={"xatol": 1e-6})
    tau = float(best.x) if best.fun <= scan[i] else float(inner[i])
    rss_min, coef = _rss(u, z, tau)
    before, after = coef[1], coef[1] + coef[2]
    denom = np.linalg.norm(before) * np.linalg.norm(after)
    angle = float(np.degrees(np.arccos(np.clip(before @ after / denom, -1, 1)))) if denom > 0 else 0.0
    point = tuple(float(v) for v in coef[0])
    hinge = t0 + span * tau
    if angle < min_angle:
        return Turn(None, None, angle, point, hinge)
    # profile likelihood: every hinge whose RSS is within the chi-square cutoff of the best
    grid = np.linspace(inner[0], inner[-1], 400)
    prof = np.array([_rss(u, z, g)[0] for g in grid])
    n = u.size * z.shape[1]
    ok = n * np.log(np.maximum(prof, 1e-300) / max(rss_min, 1e-300)) <= CHI2_1_95
    ok_idx = np.flatnonzero(ok)
    if ok_idx.size == 0:
        ci = (hinge, hinge)
    else:
        # the connected set around the best hinge
        j = int(np.argmin(np.abs(grid - tau)))
        left, right = j, j
        while left - 1 >= 0 and ok[left - 1]:
            left -= 1
        while right + 1 < grid.size and ok[right + 1]:
            right += 1
        ci = (float(t0 + span * min(grid[left], tau)), float(t0 + span * max(grid[right], tau)))
    return Turn(hinge, ci, angle, point, hinge)
