"""Exact integration of flows that are linear in z: no adaptive time stepping, nothing to compile.

Eq. 1, Eq. 2, the authors' notebook model and any energy quadratic in each coordinate without cross
terms have a flow that is linear in z once the gates are evaluated, dz_i/dt = -a_i(t) z_i + b_i(t),
with a_i, b_i functions of time and the parameters only (:mod:`theory.models.linear_form` finds
them). Such a flow is solved by variation of constants with Gauss-Legendre quadrature on r
subintervals of each output interval (:mod:`theory.solvers.quadrature`); this module chooses r.

The error is controlled, not assumed: the solves with r and with 2r subintervals are compared, r
doubles (per trajectory) until they agree, and the 2r solve is returned, whose error is smaller than
their difference by about 2^8 (constant a). Where a is constant and the output times equally spaced
(the fast path) the two paths differ only through the interval constants c: |z_2r - z_r| <=
Σ_j |c_2r - c_r|_j Π max(1, phi) at every time, and a trajectory is accepted when that bound is <=
atol + rtol min_t |z| for each concept (only the 2r path is propagated). Elsewhere both paths are
propagated and |z_2r - z_r| <= atol + rtol |z_2r| must hold at every output time.

The first r resolves the form's fastest rate (a switch narrower than both subdivisions, or a decay
kernel narrower than the nodes, would let the r and 2r rules agree on a wrong path); a trajectory
that needs more than MAX_SUBDIVISIONS / 2 is refused (UNRESOLVED), never solved silently wrong. On
the fast path, starting subdivisions up to SHARED_UP_TO share one solve (:func:`_groups`).
:class:`ExactStats` reports the subdivision reached and the largest accepted difference (or bound).

The result is a (N, T, D) view of time-major storage, so that each step of the propagation writes
one contiguous (D, N) slab; ``np.ascontiguousarray`` gives a copy laid out per trajectory.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from theory.models.landscape import Landscape
from theory.models.linear_form import LinearForm, at as _at, linear_form, why_not_linear
from theory.solvers import quadrature

__all__ = ["ExactStats", "LinearForm", "finite_paths", "linear_form", "solve", "why_not_linear"]

MAX_SUBDIVISIONS = 2**12  # subintervals per output interval; unconverged there, a trajectory fails
# the first subdivision puts subintervals no longer than RESOLVE / (the fastest rate of the form)
RESOLVE = 0.5
SHARED_UP_TO = 8  # on the fast path, starting subdivisions up to this share one solve (_groups)
NOT_CONVERGED, UNRESOLVED = 1, 3  # status codes (dopri's are 1 and 2; 3 is exact's own)
MESSAGES = {
    NOT_CONVERGED: f"the quadrature did not converge within {MAX_SUBDIVISIONS} subintervals an "
    "output interval",
    UNRESOLVED: (
        f"the flow changes faster (a narrow switch or a stiff rate) than {MAX_SUBDIVISIONS // 2} "
        "subintervals of "
        "an output interval resolve: more output points, or a --max-step below the switch's "
        "width (method auto then solves it with dopri in steps that short)"
    ),
}
CHUNK_ELEMENTS = 2**22  # floats held at once besides the output (about 32 MiB)


@dataclass(frozen=True)
class ExactStats:
    """How the exact solve went: the most subintervals any output interval needed, and the largest
    difference between the last two subdivisions (an upper estimate of the returned error)."""

    subdivisions: int
    difference: float


def _fastest(form: LinearForm, t: NDArray[np.float64], p: NDArray[np.float64]) -> NDArray:
    """Per trajectory (N,), the fastest rate of the form (decay rates, switches' rates) over the
    output times and their midpoints (inf where a rate is not finite)."""
    n = p.shape[0]
    if not form.rates:
        return np.zeros(n)
    mid = (t[:-1] + t[1:]) / 2
    values = _at(
        form.eval_rates, np.concatenate([t, mid]), quadrature.param_columns(p), len(form.rates)
    )
    fastest = np.zeros(n)
    for v in values:  # (M, 1) for a rate shared by every trajectory, (M, N) for one of each's own
        v = v[:1] if v.strides[0] == 0 else v  # a rate free of t: one row, broadcast
        peak = np.abs(v).max(axis=0)  # NaN wherever one value is NaN
        fastest = np.maximum(fastest, np.where(np.isnan(peak), np.inf, peak))
    return fastest


def time_scale(land: Landscape, t: NDArray[np.float64], p: NDArray[np.float64]) -> NDArray:
    """Per trajectory (N,), the longest step that resolves the flow's fastest change, RESOLVE /
    (its fastest rate) (inf for a flow without rates); what another solver must not step over."""
    with np.errstate(divide="ignore"):
        return RESOLVE / _fastest(linear_form(land), np.asarray(t, dtype=float), p)


def first_subdivision(
    form: LinearForm, t: NDArray[np.float64], p: NDArray[np.float64], max_step: float = np.inf
) -> NDArray[np.int64]:
    """Per trajectory (N,), the subdivision the refinement starts from: a power of 2 that makes
    every subinterval at most RESOLVE / rate long, the rate the fastest of the form's
    (:class:`LinearForm`: its decay rates and its switches' rates) over the output times. Without it
    the r and 2r rules can agree by missing a switch narrower than both (and a stiff decay kernel
    narrower than the nodes) and a wrong path is accepted."""
    fastest = _fastest(form, t, p)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        need = np.maximum(np.max(np.diff(t)) * fastest / RESOLVE, np.max(np.diff(t)) / max_step)
        r = 2.0 ** np.ceil(np.log2(np.maximum(need, 1.0)))
    return np.where(
        np.isfinite(r), np.minimum(r, 2 * MAX_SUBDIVISIONS), 2 * MAX_SUBDIVISIONS
    ).astype(np.int64)


def _refine(
    form: LinearForm, t, z0, p, rtol: float, atol: float, out, r: int = 1
) -> tuple[NDArray, int, float]:
    """Solve one chunk into ``out`` (T, D, N): r doubled per trajectory until the r and 2r paths
    agree.

    Where a is constant and the output intervals equal, the bound of :func:`_uniform_solve` on their
    difference must be <= atol + rtol min_t |z| for every concept; elsewhere the difference itself
    must be <= atol + rtol |z| at every output time. The 2r path is kept.

    Returns status (N,) (NOT_CONVERGED where MAX_SUBDIVISIONS did not converge: those columns are
    NaN), the largest subdivision reached and the largest accepted difference.
    """
    n = z0.shape[0]
    uniform = _uniform(form, t)
    rows = np.arange(n)
    status = np.zeros(n, dtype=np.int64)
    worst_r, worst_diff = r, 0.0
    while rows.size:
        whole = rows.size == n
        direct = whole and out.flags.c_contiguous  # else solved apart and copied in
        fine = out if direct else np.empty((t.size, out.shape[1], rows.size))
        z0r, pr = (z0, p) if whole else (z0[rows], p[rows])
        if uniform:
            diff, low = quadrature.uniform_solve(form, t, r, z0r, pr, fine)  # (D, rows) each
            allowed = atol + rtol * low
            ok = (diff <= allowed).all(axis=0)  # nan where the solve overflowed
        else:
            gap = quadrature.pointwise(form, t, r, z0r, pr, fine)
            ok = (gap - rtol * np.abs(fine)).max(axis=(0, 1)) <= atol
            diff = gap.max(axis=0)
        if not direct:
            out[:, :, rows[ok]] = fine[:, :, ok]
        if ok.any():
            worst_r, worst_diff = max(worst_r, 2 * r), max(worst_diff, float(diff[:, ok].max()))
        rows, r = rows[~ok], 2 * r
        if rows.size and 2 * r > MAX_SUBDIVISIONS:
            status[rows], out[:, :, rows] = NOT_CONVERGED, np.nan
            break
    return status, worst_r, worst_diff


def _uniform(form: LinearForm, t: NDArray[np.float64]) -> bool:
    """Whether the fast path applies: a constant in time and equal output intervals."""
    span = np.diff(t)
    return bool(form.constant_a and np.ptp(span) <= 1e-12 * span[0])


def _groups(first: NDArray[np.int64], uniform: bool) -> list[tuple[int, NDArray[np.int64]]]:
    """The trajectories solved together, each group with its starting subdivision: one group per
    first subdivision, except that on the fast path (whose cost hardly grows with r up to
    SHARED_UP_TO: the propagation and the output dominate) those at or below SHARED_UP_TO share one
    solve at the largest of their subdivisions (a finer start is only more accurate), so that a
    sweep whose rates straddle a power of 2 is not split and scattered back."""
    resolved = first <= MAX_SUBDIVISIONS // 2
    shared = resolved & (first <= SHARED_UP_TO) if uniform else np.zeros_like(resolved)
    groups = [(int(first[shared].max()), np.flatnonzero(shared))] if shared.any() else []
    rest = resolved & ~shared
    return groups + [(int(r), np.flatnonzero(rest & (first == r))) for r in np.unique(first[rest])]


def _elements_per_trajectory(form: LinearForm, t, p, d: int) -> int:
    """Floats held per trajectory at the first refinement besides the output: the gate values at the
    r and 2r Gauss nodes of every gate with a time of its own per trajectory, and in general (a
    changing with time) the interval maps and the coarse path."""
    own = sum(
        v.shape[1] > 1
        for v in _at(form.eval_times, t[:1], quadrature.param_columns(p), len(form.times))
    )
    general = 0 if form.constant_a else 3 * d
    return (t.size - 1) * (
        own * 3 * quadrature.GAUSS_NODES * (1 if form.constant_a else 2) + general
    ) + 1


def finite_paths(z: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Per trajectory (N,), whether the path z (N, T, D) of :func:`solve` is finite at every time,
    read from its last point alone: each step is z' = phi z + c with phi = e^{-A} >= 0, and a
    non-finite z stays non-finite (phi z is +-inf or NaN, NaN where phi is 0, and adding c keeps it
    so), so a path that is finite at its end was finite all along."""
    return np.isfinite(z[:, -1]).all(axis=1)


def solve(
    land: Landscape,
    t: NDArray[np.float64],
    z0: NDArray[np.float64],
    p: NDArray[np.float64],
    rtol: float,
    atol: float,
    max_step: float = np.inf,
) -> tuple[NDArray[np.float64], NDArray[np.int64], ExactStats]:
    """Integrate a linear landscape exactly (to the quadrature's controlled error).

    Args:
        land: a landscape with :func:`linear_form`.
        t: (T,) output times, the first the start.
        z0: (N, D) starts; p: (N, P) packed parameters.
        rtol, atol: the accepted difference between two successive subdivisions (see
        :func:`_refine`).
        max_step: no subinterval longer than this (default: as the form's rates need).

    Returns:
        z (N, T, D), a view of time-major storage (``np.ascontiguousarray`` where a copy per
        trajectory is wanted); status (N,) (0; NOT_CONVERGED where MAX_SUBDIVISIONS did not
        converge; UNRESOLVED where the form changes faster than MAX_SUBDIVISIONS / 2 subintervals
        resolve: those rows are NaN); stats.
    """
    form = linear_form(land)
    if form is None:
        raise ValueError(
            f"method='exact' needs a flow linear in z; {land.name}: {why_not_linear(land)}; "
            "use dopri, stacked, loop or auto"
        )
    n, d = z0.shape
    path = np.empty((t.size, d, n))
    status = np.zeros(n, dtype=np.int64)
    per_chunk = max(1, CHUNK_ELEMENTS // _elements_per_trajectory(form, t, p, d))
    worst_r, worst_diff = 1, 0.0
    first = first_subdivision(form, t, p, max_step)
    unresolved = np.flatnonzero(first > MAX_SUBDIVISIONS // 2)
    if unresolved.size:
        status[unresolved], path[:, :, unresolved] = UNRESOLVED, np.nan
    for r, group in _groups(first, _uniform(form, t)):
        for start in range(0, group.size, max(1, per_chunk // r)):
            rows = group[start : start + max(1, per_chunk // r)]
            whole = rows.size == n
            out = path if whole else np.empty((t.size, d, rows.size))
            status[rows], chunk_r, chunk_diff = _refine(
                form, t, z0[rows], p[rows], rtol, atol, out, r
            )
            if not whole:
                path[:, :, rows] = out
            worst_r, worst_diff = max(worst_r, chunk_r), max(worst_diff, chunk_diff)
    return path.transpose(2, 0, 1), status, ExactStats(worst_r, worst_diff)
