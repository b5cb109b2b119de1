"""Integrating a landscape's gradient flow: one verb, three methods.

``integrate(landscape, t_eval, values, method=...)`` returns a :class:`Solution` with time-major
paths ``z`` of shape (N, T, D), one per parameter setting (N = 1 unless ``values`` is batched).

Which path when:

``dopri`` (default)
    Numba Dormand-Prince 5(4), one adaptive solve per trajectory, parallel over trajectories
    (:mod:`theory.solvers.dopri`). The fast path for sweeps: thousands of trajectories at once.
    First use of a landscape compiles it (about 1-3 s, reported separately by the benchmark).
``stacked``
    All N systems stacked into one ``solve_ivp`` call with the numpy (broadcasting) flow. No
    compilation; one step size is shared by all trajectories, so a stiff member slows everyone.
``loop``
    One ``solve_ivp`` call per trajectory (DOP853 by default): the reference, and the authors'
    approach. Slow for sweeps; used by the tests as the independent check.
``exact``
    For flows linear in z (dz_i/dt = -a_i(t) z_i + b_i(t): Eq. 1, Eq. 2, the notebook model, any
    energy quadratic in each coordinate without cross terms, detected from the sympy expression):
    variation of constants with a Gauss-Legendre quadrature whose subdivision is refined until two
    successive ones agree to rtol/atol (:mod:`theory.solvers.exact`). No adaptive solver, nothing to
    compile. ``auto`` takes it wherever it applies.
"""

from __future__ import annotations

import math
import weakref
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np
from numpy.typing import NDArray
from scipy.integrate import solve_ivp

from theory.solvers import dopri
from theory.solvers import exact
from theory.solvers import kernels
from theory.models.landscape import Landscape
from core.trajectory import Trajectory

RTOL, ATOL = 1e-9, 1e-11
AUTO_DOPRI_FROM = (
    64  # trajectories; below this the stacked solve_ivp beats the numba kernel's compile time
)
_KERNELS: "weakref.WeakKeyDictionary[Landscape, Callable]" = weakref.WeakKeyDictionary()
MAX_IVP_STEPS = (
    50_000  # per solve_ivp call (stacked, loop); the numba kernel caps each trajectory at 1e6 steps
)


@dataclass(frozen=True, eq=False)
class Solution:
    """Result of :func:`integrate`.

    Attributes:
        t: (T,) output times.
        z: (N, T, D) paths, time-major per trajectory.
        params: name -> (N, size) the parameters of each trajectory (``z0`` included).
        landscape: the model integrated.
        method, rtol, atol: how.
        status: (N,) 0 where the solve succeeded.
        success: all trajectories succeeded.
        message: what went wrong, if anything.
        exact: for method ``exact``, the subdivision reached and the last difference between
        subdivisions.
    """

    t: NDArray[np.float64]
    z: NDArray[np.float64]
    params: Mapping[str, NDArray[np.float64]]
    landscape: Landscape
    method: str
    rtol: float
    atol: float
    status: NDArray[np.int64]
    success: bool
    message: str
    exact: exact.ExactStats | None = None

    def trajectories(
        self,
        label: str = "11",
        *,
        protocol: str = "sim",
        runs: Sequence[str] | None = None,
    ) -> list[Trajectory]:
        """The paths as log trajectories (``step`` = model time), one run id per parameter
        setting."""
        n = self.z.shape[0]
        runs = list(runs) if runs is not None else [f"{self.landscape.name}-{i}" for i in range(n)]
        if len(runs) != n:
            raise ValueError(f"need {n} run ids, got {len(runs)}")
        return [
            Trajectory(self.t, self.z[i], self.landscape.concepts, label, protocol, None, runs[i])
            for i in range(n)
        ]


def time_grid(t_end: float, points: int, t_start: float = 0.0) -> NDArray[np.float64]:
    """linspace(t_start, t_end, points), validated."""
    if not np.isfinite(t_end) or t_end <= t_start:
        raise ValueError(f"t_end must be a finite number > {t_start:g}, got {t_end}")
    if int(points) != points or points < 2:
        raise ValueError(f"points must be an integer >= 2, got {points}")
    return np.linspace(t_start, t_end, int(points))


def _check_t_eval(t_eval: Sequence[float]) -> NDArray[np.float64]:
    t = np.asarray(t_eval, dtype=np.float64)
    if t.ndim != 1 or t.size < 2 or not np.all(np.isfinite(t)) or np.any(np.diff(t) <= 0):
        raise ValueError(
            "t_eval must be a finite, strictly increasing 1-d array with at least 2 times"
        )
    return t


def kernel(land: Landscape) -> Callable:
    """The parallel Dormand-Prince batch integrator of a landscape's flow: loaded from the on-disk
    cache of theory.solvers.kernels (compiled there on the first use on this machine), then kept for
    the process."""
    if land not in _KERNELS:
        _KERNELS[land] = kernels.load(land.flow_source)
    return _KERNELS[land]


def compiled(land: Landscape) -> bool:
    """Whether the landscape's numba kernel is compiled already (the first dopri solve of a
    landscape compiles it)."""
    return land in _KERNELS


def choose_method(method: str, n: int, land: Landscape | None = None) -> str:
    """``auto`` -> ``exact`` where the landscape's flow is linear in z, else ``stacked`` for fewer
    than AUTO_DOPRI_FROM trajectories and ``dopri`` from there; other names pass through."""
    if method == "auto":
        if land is not None and exact.why_not_linear(land) is None:
            return "exact"
        return "dopri" if n >= AUTO_DOPRI_FROM else "stacked"
    return method


def _dopri(land, t, z0, p, rtol, atol, max_step=math.inf):
    return dopri.solve(kernel(land), t, z0, p, rtol=rtol, atol=atol, max_step=max_step)


class _TooManySteps(Exception):
    pass


def capped_ivp(rhs, t, y0, rtol, atol, method, stages, max_step=math.inf):
    """solve_ivp with at most MAX_IVP_STEPS steps (counted as ``stages`` evaluations each); returns
    (y (D', T), status)."""
    calls = [0]

    def counted(tt, y):
        calls[0] += 1
        if calls[0] > MAX_IVP_STEPS * stages:
            raise _TooManySteps
        return rhs(tt, y)

    try:
        sol = solve_ivp(
            counted,
            (t[0], t[-1]),
            y0,
            t_eval=t,
            rtol=rtol,
            atol=atol,
            method=method,
            max_step=max_step,
        )
    except _TooManySteps:
        return None, dopri.TOO_MANY_STEPS
    return (sol.y, dopri.OK) if sol.success else (None, dopri.STEP_TOO_SMALL)


def _stacked(land, t, z0, p, rtol, atol, max_step=math.inf):
    n, d = z0.shape
    f = land.numpy_flow
    pT = np.ascontiguousarray(p.T)  # (P, N): each parameter a row that broadcasts over trajectories

    def rhs(tt, y):
        out = np.empty((d, n))
        f(tt, y.reshape(d, n), pT, out)
        return out.ravel()

    y, code = capped_ivp(rhs, t, z0.T.ravel(), rtol, atol, "RK45", 6, max_step)
    if code != dopri.OK:
        return np.full((n, t.size, d), np.nan), np.full(n, code, dtype=np.int64)
    return y.reshape(d, n, t.size).transpose(1, 2, 0), np.zeros(n, dtype=np.int64)


def _loop(land, t, z0, p, rtol, atol, max_step=math.inf, ivp_method="DOP853"):
    n, d = z0.shape
    f = land.numpy_flow
    out = np.empty((n, t.size, d))
    status = np.zeros(n, dtype=np.int64)
    for i in range(n):
        pi = p[i]

        def rhs(tt, y):
            dz = np.empty(d)
            f(tt, y, pi, dz)
            return dz

        y, status[i] = capped_ivp(rhs, t, z0[i], rtol, atol, ivp_method, 12, max_step)
        out[i] = np.nan if y is None else y.T
    return out, status


METHODS: dict[str, Callable] = {
    "dopri": _dopri,
    "stacked": _stacked,
    "loop": _loop,
    "exact": exact.solve,
}


BOUNDED_STEPS = 200_000  # auto's dopri fallback: its step bound is never below span / this


def _exact_or_dopri(land, t, z0, p, rtol, atol, max_step, z, status) -> tuple[str, str, NDArray]:
    """auto: the trajectories the exact quadrature cannot resolve are solved with dopri, in place in
    z and status, its steps no longer than the fastest time scale the quadrature found (an adaptive
    step would step over a narrow switch); returns the method, the note for the message and the
    rows dopri solved."""
    unresolved = np.flatnonzero(status == exact.UNRESOLVED)
    if not unresolved.size:
        return "exact", "", unresolved
    scale = float(np.min(exact.time_scale(land, t, p[unresolved])))
    affordable = (t[-1] - t[0]) / BOUNDED_STEPS  # a step bound that keeps the solve to seconds
    h = min(max_step, max(scale, affordable))
    z[unresolved], status[unresolved] = _dopri(
        land, t, z0[unresolved], p[unresolved], rtol, atol, h
    )
    why = exact.MESSAGES[exact.UNRESOLVED].split(":")[0]
    short = (
        f" (its fastest change lasts {scale:.3g}: give --max-step to bound the steps to it)"
        if h > scale
        else ""
    )
    return (
        "exact+dopri",
        f"; {unresolved.size} of {status.size} trajectories solved with dopri (auto), steps of at "
        f"most {h:.3g}{short}: {why}",
        unresolved,
    )


def integrate(
    landscape: Landscape,
    t_eval: Sequence[float],
    values: Mapping[str, object] | None = None,
    *,
    method: str = "dopri",
    rtol: float = RTOL,
    atol: float = ATOL,
    max_step: float = math.inf,
) -> Solution:
    """Integrate dz/dt = -∇E(z, t) for one or many parameter settings.

    Args:
        landscape: the model.
        t_eval: (T,) output times; the first is the start time.
        values: parameter overrides (defaults fill the rest), each optionally batched:
            a scalar parameter (N,), a vector parameter or ``z0`` (N, D).
        method: ``dopri`` (numba, batched), ``stacked`` (one solve_ivp), ``loop`` (solve_ivp each),
        ``exact``
            (flows linear in z; ValueError naming why for any other; a trajectory whose switches or
            decay are too fast for the output spacing fails, never silently wrong) or ``auto``
            (exact where it applies, with dopri for the trajectories exact cannot resolve, method
            ``exact+dopri`` and a note in the message; else stacked below AUTO_DOPRI_FROM
            trajectories, where compiling the kernel would cost more, else dopri).
        rtol, atol: error tolerances of the adaptive solver (for ``exact``: of the quadrature's
        refinement).
        max_step: no step (for ``exact``: no subinterval) longer than this (default: unbounded):
        what an adaptive step must not jump over, a pulse narrower than the output spacing.

    Returns:
        A :class:`Solution` with z of shape (N, T, D).
    """
    _check_options(method, rtol, atol, max_step)
    t = _check_t_eval(t_eval)
    arrays = landscape.resolve(values)
    z0, p = arrays["z0"], landscape.pack(arrays)
    requested, method = method, choose_method(method, z0.shape[0], landscape)
    stats, note = None, ""
    if method == "exact":
        z, status, stats = exact.solve(landscape, t, z0, p, rtol, atol, max_step)
        finite = exact.finite_paths(z)
        if requested == "auto":  # what the quadrature cannot resolve, dopri solves
            method, note, redone = _exact_or_dopri(
                landscape, t, z0, p, rtol, atol, max_step, z, status
            )
            finite[redone] = np.isfinite(z[redone]).all(axis=(1, 2))
    else:
        z, status = METHODS[method](landscape, t, z0, p, rtol, atol, max_step)
        finite = np.isfinite(z).all(axis=(1, 2))
    # finite or failed: a solver that reports success on a non-finite path (overflow) is overruled
    status = np.where((status == 0) & ~finite, dopri.NOT_FINITE, status)
    message = _message(status, method, note)
    return Solution(
        t, z, arrays, landscape, method, rtol, atol, status, not status.any(), message, stats
    )


def _check_options(method: str, rtol: float, atol: float, max_step: float) -> None:
    if method not in (*METHODS, "auto"):
        raise ValueError(f"unknown method {method!r}; valid: {', '.join(METHODS)}, auto")
    if not (rtol > 0 and atol > 0):
        raise ValueError(f"rtol and atol must be > 0, got {rtol}, {atol}")
    if not max_step > 0:
        raise ValueError(f"max_step must be > 0, got {max_step}")


def _message(status: NDArray[np.int64], method: str, note: str) -> str:
    """The message: ok (with auto's note), or how many trajectories failed, why, and the first."""
    bad = np.flatnonzero(status)
    if not bad.size:
        return "ok" + note
    code = int(status[bad[0]])
    messages = exact.MESSAGES if method == "exact" and code != dopri.NOT_FINITE else dopri.MESSAGES
    why = messages.get(code, "solver failed")
    return f"{bad.size} of {status.size} trajectories failed ({why}); first: index {bad[0]}"


@contextmanager
def one_numba_thread():
    """numba's thread count (dopri's trajectories and the exact path's blocks are shared among
    them) set to 1 for the block's duration: for batches too small to gain from threads (a pooled
    fit's few dozen runs: 0.53 s on 1 thread against 1.36 s on 2 for a memorize + onset fit of 20
    runs, 1.2 against 62.8 s beside a training job that holds the cores), or to time one thread."""
    import numba

    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(before)
