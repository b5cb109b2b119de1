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


def notebook_rhs(a, s=3.0, k=0.1, t0=10.0):
    """sim.ipynb cell 1 (equations.md section 2, variant S2)."""

    def rhs(t, z):
        alpha = logistic(k * (t - t0))
        return s * np.array([(1 - z[0]) / (2 * a) + a / 2 * (alpha - z[0]), a / 2 * (1 - z[1]) + (alpha - z[1]) / (2 * a)])

    return rhs


def solve(rhs, z0, t, rtol=1e-12, atol=1e-14):
    """(T, D) tight DOP853 solution at the times t."""
    sol = solve_ivp(rhs, (t[0], t[-1]), np.asarray(z0, dtype=float), t_eval=t, rtol=rtol, atol=atol, method="DOP853")
    assert sol.success, sol.message
    return sol.y.T
