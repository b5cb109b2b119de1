"""The turn of a trajectory in concept space: where it stops heading for the memorized class and turns.

Model-free. The path is smoothed lightly (Savitzky-Golay, window 7, in checkpoint order). The
turn is the checkpoint where the smoothed path lies farthest from the chord joining its start
and end. That point is the *memorization point*: a class-11 path that first heads for 01 and then
turns to 11 is farthest from the chord at its corner. The 95% interval comes from a residual
bootstrap: resample the residuals around the smoothed path, smooth again and find the farthest
point again.

A turn is reported only where the path bends: the farthest point must lie more than ``min_dev``
(and 3 noise sd) from the chord, and the direction must change by at least ``min_angle`` degrees
from (start -> turn) to (turn -> end). A path heading straight for its target has no turn.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.signal import savgol_filter

from fitting.curves import noise_scale


@dataclass(frozen=True)
class Turn:
    """Result of :func:`find_turn`; ``step`` and ``ci`` are None when the path does not turn (``ci`` also
    when no bootstrap was asked for)."""

    step: float | None
    ci: tuple[float, float] | None
    angle: float  # degrees between start -> farthest point and farthest point -> end
    deviation: float  # distance of the farthest point from the chord
    point: tuple[float, ...]  # the smoothed position there (the memorization point)


def _smooth(z: NDArray) -> NDArray:
    window = min(7, z.shape[0] - (1 - z.shape[0] % 2))  # odd, at most the number of points
    if window < 5:
        return z
    return savgol_filter(z, window, 2, axis=0, mode="interp")


def _farthest(s: NDArray) -> tuple[int, float]:
    chord = s[-1] - s[0]
    length = np.linalg.norm(chord)
    rel = s - s[0]
    if length < 1e-12:
        dist = np.linalg.norm(rel, axis=1)
    else:
        along = rel @ chord / length
        dist = np.sqrt(np.maximum(np.sum(rel**2, axis=1) - along**2, 0))
    i = int(np.argmax(dist))
    return i, float(dist[i])


def _angle(a: NDArray, b: NDArray) -> float:
    denom = np.linalg.norm(a) * np.linalg.norm(b)
    return float(np.degrees(np.arccos(np.clip(a @ b / denom, -1, 1)))) if denom > 0 else 0.0


def find_turn(
    step: NDArray,
    z: NDArray,
    *,
    min_angle: float = 30.0,
    min_dev: float = 0.05,
    n_boot: int = 200,
    rng: np.random.Generator | int | None = 0,
) -> Turn:
    """Locate the turn of a (T, D) path logged at (T,) steps."""
    t = np.asarray(step, dtype=float)
    z = np.asarray(z, dtype=float).reshape(t.size, -1)
    if t.size < 5:
        raise ValueError(f"finding a turn needs at least 5 logged points, got {t.size}")
    s = _smooth(z)
    i, dev = _farthest(s)
    angle = _angle(s[i] - s[0], s[-1] - s[i])
    point = tuple(float(v) for v in s[i])
    sigma = noise_scale(z)
    if dev < max(min_dev, 3 * sigma) or angle < min_angle or i in (0, t.size - 1):
        return Turn(None, None, angle, dev, point)
    if n_boot == 0:
        return Turn(float(t[i]), None, angle, dev, point)
    gen = np.random.default_rng(rng)
    resid = z - s
    draws = np.empty(n_boot)
    for b in range(n_boot):
        zb = s + resid[gen.integers(0, t.size, t.size)]
        draws[b] = t[_farthest(_smooth(zb))[0]]
    lo, hi = np.quantile(draws, [0.025, 0.975])
    return Turn(float(t[i]), (float(min(lo, t[i])), float(max(hi, t[i]))), angle, dev, point)
