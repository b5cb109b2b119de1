"""The structured identity mapping's two-layer model integrated: W(t) = U(t) U(t)^T from U(0), the
term :func:`theory.models.identity_mapping.u_flow` solved by DOP853 with capped steps (the model is
in :mod:`theory.models.identity_mapping`; the one-layer model ``sim1`` is closed form and stays
there)."""

from __future__ import annotations

from typing import Sequence

import numpy as np
from numpy.typing import NDArray

from theory.models.identity_mapping import Task, check_start, u_flow
from theory.solvers import dopri
from theory.solvers.integrate import capped_ivp


def sim2(
    task: Task,
    t: Sequence[float],
    u0: NDArray,
    *,
    signal: str = "a",
    rtol: float = 1e-9,
    atol: float = 1e-12,
) -> NDArray[np.float64]:
    """(T, d, d) W(t) = U(t) U(t)^T of the symmetric two-layer model from U(0) = ``u0`` at time 0
    (DOP853, capped steps); ``signal="a2"`` runs it at the rates A^2 of the authors' scripts.

    U is integrated, dU/dt = -1/2 G U with G = (W - I) A + A (W - I), which moves W = U U^T exactly
    by :func:`~theory.models.identity_mapping.flow` (see
    :func:`~theory.models.identity_mapping.u_flow`).
    """
    t, u0 = check_start(task, t, u0)
    return two_layer(task.rates(signal), t, u0, rtol=rtol, atol=atol)


def two_layer(
    a: NDArray, t: NDArray, u0: NDArray, *, rtol: float = 1e-9, atol: float = 1e-12
) -> NDArray[np.float64]:
    """(T, d, d) W(t) of the two-layer flow for signals ``a`` (d,) at times ``t`` (>= 0) from U(0) =
    ``u0`` at time 0, as sim1 counts time: a grid that starts later is reached by integrating from 0
    (:func:`sim2` without a Task; the fits of fitting.estimators.sim_fit give the signals directly,
    per step)."""
    a = np.asarray(a, dtype=float)
    t = np.asarray(t, dtype=float)
    if t[0] > 0:  # the start is the state at time 0, not at the grid's first time
        return two_layer(a, np.r_[0.0, t], u0, rtol=rtol, atol=atol)[1:]
    d = a.size
    if t.size == 1:
        return (u0 @ u0.T)[None]
    y, status = capped_ivp(u_flow(a), t, u0.ravel(), rtol, atol, "DOP853", 12)
    if status != dopri.OK:
        raise ValueError(
            f"sim2: integration failed ({dopri.MESSAGES[status]}); try a shorter time or a "
            "looser rtol"
        )
    u = y.T.reshape(t.size, d, d)
    return u @ np.swapaxes(u, 1, 2)
