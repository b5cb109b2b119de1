"""Shape of a path in concept space: turn direction and threshold times."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray


def signed_area(z: NDArray[np.float64]) -> NDArray[np.float64]:
    """Signed area enclosed by a 2-d path closed by its chord (shoelace formula).

    Negative: the path turns clockwise (e.g. class 11 bending through 01 when size is stronger);
    positive: counter-clockwise; zero for a straight path.

    Args:
        z: (..., T, 2) paths.

    Returns:
        (...,) areas.
    """
    z = np.asarray(z, dtype=np.float64)
    if z.shape[-1] != 2 or z.shape[-2] < 2:
        raise ValueError(f"signed_area needs paths of shape (..., T >= 2, 2), got {z.shape}")
    x, y = z[..., 0], z[..., 1]
    x2, y2 = np.roll(x, -1, axis=-1), np.roll(y, -1, axis=-1)  # the last edge closes the path
    return 0.5 * np.sum(x * y2 - x2 * y, axis=-1)


def first_crossing(t: NDArray[np.float64], x: NDArray[np.float64], level: float) -> float:
    """First time x reaches ``level`` from below (linear interpolation), NaN if it never does.

    If x starts at or above the level, the start time is returned.
    """
    t = np.asarray(t, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    above = np.flatnonzero(x >= level)
    if above.size == 0:
        return float("nan")
    i = int(above[0])
    if i == 0:
        return float(t[0])
    frac = (level - x[i - 1]) / (x[i] - x[i - 1])
    return float(t[i - 1] + frac * (t[i] - t[i - 1]))
