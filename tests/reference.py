"""Independent reference solutions: the models' ODEs written out by hand, integrated tightly.

Nothing here goes through sympy or the package's integrators, so agreement is a real check.
"""

import numpy as np
from scipy.integrate import solve_ivp


def logistic(x):
    return 0.5 * (1 + np.tanh(x / 2))


def eq1_rhs(lam, t_switch, k, z_bias, z_target):
    """dz_i/dt = λ_i (m_i(t) - z_i), m_i = z̃_i + S_i(t) (ẑ_i - z̃_i) (equations.md section 3)."""
    lam, t_switch, k, z_bias, z_target = map(np.asarray, (lam, t_switch, k, z_bias, z_target))

    def rhs(t, z):
        m = z_bias + logistic(k * (t - t_switch)) * (z_target - z_bias)
        return lam * (m - z)

    return rhs


def coupled_rhs(lam, z_target, z_bias, kappa, theta):
    """The coupled model: dz_i/dt = -λ_i [(1 - G_i)(z_i - ẑ_i) + G_i (z_i - z̃_i)], G_i from the others' progress."""
    lam, zt, zb = (np.asarray(v, dtype=float) for v in (lam, z_target, z_bias))

    def rhs(t, z):
        progress = 1 - (z - zt) ** 2
        others = (progress.sum() - progress) / (z.size - 1)
        g = logistic(kappa * (others - theta))
        return -lam * ((1 - g) * (z - zt) + g * (z - zb))

    return rhs


def notebook_rhs(a, s=3.0, k=0.1, t0=10.0):
    """sim.ipynb cell 1 (equations.md section 2, variant S2)."""

    def rhs(t, z):
        alpha = logistic(k * (t - t0))
        return s * np.array(
            [
                (1 - z[0]) / (2 * a) + a / 2 * (alpha - z[0]),
                a / 2 * (1 - z[1]) + (alpha - z[1]) / (2 * a),
            ]
        )

    return rhs


def solve(rhs, z0, t, rtol=1e-12, atol=1e-14):
    """(T, D) tight DOP853 solution at the times t."""
    sol = solve_ivp(
        rhs,
        (t[0], t[-1]),
        np.asarray(z0, dtype=float),
        t_eval=t,
        rtol=rtol,
        atol=atol,
        method="DOP853",
    )
    assert sol.success, sol.message
    return sol.y.T


# -- shape of a path: turn direction and threshold times (continuous model time, interpolated) --


def signed_area(z: np.ndarray) -> np.ndarray:
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


def first_crossing(t: np.ndarray, x: np.ndarray, level: float) -> float:
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
