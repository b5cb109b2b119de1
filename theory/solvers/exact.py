"""Exact integration of flows that are linear in z: no adaptive time stepping, nothing to compile.

Eq. 1, Eq. 2, the authors' notebook model and any energy quadratic in each coordinate without cross
terms have a flow that is linear in z once the gates are evaluated:

    dz_i/dt = -a_i(t) z_i + b_i(t),

with a_i, b_i functions of time and the parameters only (:mod:`theory.models.linear_form` finds
them). Such a flow is solved by quadrature (variation of constants, an exponential integrator): with
A_i(t) = ∫ a_i,

    z_i(t1) = exp(-(A_i(t1) - A_i(t0))) z_i(t0) + ∫_{t0}^{t1} exp(-(A_i(t1) - A_i(s))) b_i(s) ds.

The quadrature. Each output interval is cut into r equal subintervals; on each, the integral above
is a GAUSS_NODES-point Gauss-Legendre sum with the decay factor evaluated exactly at the nodes.
Where a is constant in time (every built-in model) the decay is exp(-a (t1 - s)) in closed form,
terms of b free of t are integrated in closed form too, and the rule has order 2m = 8 (local error
O(h^9) times the 8th derivative of b). Where a varies with time, A between a node and the
subinterval's end comes from the Lagrange interpolant of a through the same nodes (order m + 1 = 5
locally).

The error is controlled, not assumed: the solves with r and with 2r subintervals are compared, r
doubles (per trajectory) until they agree, and the 2r solve is returned, whose error is smaller than
their difference by about 2^8 (constant a). Where a is constant and the output times equally spaced
(the fast path) the decay per interval, phi, is exact and the same at every r, so the two paths
differ only through the interval constants c: |z_2r - z_r| <= Σ_j |c_2r - c_r|_j Π max(1, phi) at
every time, and a trajectory is accepted when that bound is <= atol + rtol min_t |z| for each
concept (only the 2r path is propagated; the r constants are formed a block of intervals at a time
and never stored whole). Elsewhere both paths are propagated and |z_2r - z_r| <= atol + rtol |z_2r|
must hold at every output time. :class:`ExactStats` reports the subdivision reached and the largest
accepted difference (or bound).

The result is a (N, T, D) view of time-major storage, so that each step of the propagation writes
one contiguous (D, N) slab; ``np.ascontiguousarray`` gives a copy laid out per trajectory.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from theory.models.landscape import Landscape
from theory.models.linear_form import LinearForm, at as _at, linear_form, why_not_linear

__all__ = ["ExactStats", "LinearForm", "linear_form", "solve", "why_not_linear"]

GAUSS_NODES = 4
MAX_SUBDIVISIONS = 2**12  # subintervals per output interval; unconverged there, a trajectory fails
# the first subdivision puts subintervals no longer than RESOLVE / (the fastest rate of the form)
RESOLVE = 0.5
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

_X, _W = np.polynomial.legendre.leggauss(GAUSS_NODES)


def _tail_matrix(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """R[j, k] = ∫_{x_j}^{1} ℓ_k(x) dx for the Lagrange basis ℓ_k through the nodes x (on [-1,
    1])."""
    m = x.size
    out = np.empty((m, m))
    for k in range(m):
        basis = np.polynomial.Polynomial.fit(x, np.eye(m)[k], m - 1, domain=[-1, 1], window=[-1, 1])
        integral = basis.integ()
        out[:, k] = integral(1.0) - integral(x)
    return out


_TAIL = _tail_matrix(_X)


@dataclass(frozen=True)
class ExactStats:
    """How the exact solve went: the most subintervals any output interval needed, and the largest
    difference between the last two subdivisions (an upper estimate of the returned error)."""

    subdivisions: int
    difference: float


def _nodes(t: NDArray[np.float64], r: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Subinterval lengths h (K,) and Gauss nodes (K, m) for r subintervals per output interval."""
    h = np.repeat(np.diff(t) / r, r)
    edges = np.repeat(t[:-1], r) + h * np.tile(np.arange(r), t.size - 1)
    return h, edges[:, None] + h[:, None] * (1 + _X) / 2


def _coefficients(form: LinearForm, t, columns: list, n: int, d: int):
    """The t-free factors C (each (N,)) and the decay rates at the start (each (1, N) or (N,))."""
    coefs = [
        np.broadcast_to(v, (1, n))[0] for v in _at(form.eval_coefs, t[:1], columns, len(form.coefs))
    ]
    return coefs, [np.broadcast_to(v, (1, n))[0] for v in _at(form.eval_a, t[:1], columns, d)]


def _uniform_parts(form: LinearForm, g, coefs, rates, span: float, r: int):
    """The interval constants of every concept on equal output intervals with a constant a, as
    ``stacked (T-1, S) @ weights (S, D N)`` (concept i in columns i N to (i + 1) N) plus terms of
    their own.

    Terms free of t are integrated in closed form, coef (1 - e^{-a H}) / a over an interval H (the
    column of ones in ``stacked``); shared gates go through one weight matrix over (subinterval,
    node); gates with a time of their own per trajectory are (concept, weights (r m, N), node values
    (T-1, r m, N)) triples.
    """
    h, m, d, n = span / r, GAUSS_NODES, len(rates), rates[0].size
    # (r, m): time to the interval's end
    left = span - (np.arange(r)[:, None] * h + h * (1 + _X) / 2)
    shared = sorted(
        {gi for ts in form.terms for _, gi in ts if form.times[gi] != 1 and g[gi].shape[1] == 1}
    )
    weights = np.zeros((len(shared) * r * m + 1, d * n))
    own = []
    for i, a in enumerate(rates):
        quad = ((h / 2) * _W[None, :, None] * np.exp(-a * left[:, :, None])).reshape(r * m, n)
        block = weights[:, i * n : (i + 1) * n]
        for ci, gi in form.terms[i]:
            if form.times[gi] == 1:
                with np.errstate(invalid="ignore", divide="ignore"):
                    block[-1] += coefs[ci] * np.where(a == 0, span, -np.expm1(-a * span) / a)
            elif gi in shared:
                q = shared.index(gi) * r * m
                block[q : q + r * m] += quad * coefs[ci]
            else:
                own.append((i, quad * coefs[ci], g[gi].reshape(-1, r * m, n)))
    intervals = g[0].shape[0] // (r * m)
    stacked = np.concatenate(
        [g[gi].reshape(intervals, r * m) for gi in shared] + [np.ones((intervals, 1))], axis=1
    )
    return stacked, weights, own


def _constants_into(stacked, weights, own, out) -> None:
    """out (M, D N) = stacked (M, S) @ weights (S, D N) + the terms of their own."""
    np.matmul(stacked, weights, out=out)
    for i, w, nodes in own:
        width = w.shape[1]
        out[:, i * width : (i + 1) * width] += np.einsum("sn,isn->in", w, nodes)


def _gap(stacked, weights, own, fine) -> NDArray[np.float64]:
    """Σ_j |fine_j - c_j| (D N,) for the constants c = stacked @ weights (+ own) of a coarser
    subdivision, computed a block of intervals at a time (a small buffer, reused: no full coarse
    array)."""
    width = weights.shape[1]
    block = max(1, 2**18 // width)
    buf = np.empty((block, width))
    total = np.zeros(width)
    for b0 in range(0, stacked.shape[0], block):
        rows = slice(b0, b0 + block)
        part = buf[: stacked[rows].shape[0]]
        _constants_into(stacked[rows], weights, [(i, w, g[rows]) for i, w, g in own], part)
        np.subtract(fine[rows], part, out=part)
        total += np.abs(part, out=part).sum(axis=0)
    return total


def _uniform_solve(form: LinearForm, t, r: int, z0, p, out):
    """The 2r path into ``out`` (T, D, N) where a is constant and the output intervals equal, with
    the bound Σ_j |c_2r - c_r|_j Π max(1, phi) (D, N) on its difference from the r path (phi is
    exact, the same at every r, so the paths differ only through the interval constants). The
    constants are written into out and propagated in place."""
    n, d = z0.shape
    columns, span = _columns(p), t[1] - t[0]
    coefs, rates = _coefficients(form, t, columns, n, d)
    gates = {
        q: _at(form.eval_times, _nodes(t, q)[1].ravel(), columns, len(form.times))
        for q in (r, 2 * r)
    }
    flat = out[1:].reshape(t.size - 1, d * n)  # a view: out is contiguous
    _constants_into(*_uniform_parts(form, gates[2 * r], coefs, rates, span, 2 * r), flat)
    diff = _gap(*_uniform_parts(form, gates[r], coefs, rates, span, r), flat).reshape(d, n)
    phi = np.exp(-np.array(rates) * span)[:, None, :]
    _propagate(phi, out[1:].transpose(1, 0, 2), z0, out)
    return diff * _growth(phi, t.size - 1)


def _interval_maps(form: LinearForm, t: NDArray[np.float64], r: int, columns: list, n: int, d: int):
    """Per concept and output interval, the affine map z(t_{i+1}) = phi z(t_i) + c over its r
    subintervals, in general (a changing with time, or unequal output intervals). Returns phi and c,
    (D, T-1, N) each."""
    h, nodes = _nodes(t, r)
    g = _at(form.eval_times, nodes.ravel(), columns, len(form.times))
    coefs, _ = _coefficients(form, t, columns, n, d)
    a_nodes = _at(form.eval_a, t[:1] if form.constant_a else nodes.ravel(), columns, d)
    phi, c = np.empty((d, t.size - 1, n)), np.empty((d, t.size - 1, n))
    for i in range(d):
        b = sum(coefs[ci] * g[gi] for ci, gi in form.terms[i])
        phi[i], c[i] = _composed(form.constant_a, a_nodes[i], b, h, r, n)
    return phi, c


def _composed(constant_a: bool, a_nodes, b, h, r: int, n: int):
    """phi and c (T-1, N) of one concept: each subinterval's map, then the r of every output
    interval composed."""
    k, m = h.size, GAUSS_NODES
    b = np.broadcast_to(b, (k * m, n)).reshape(k, m, n)
    half = (h / 2)[:, None, None]
    if constant_a:
        a = np.broadcast_to(a_nodes, (1, n))[0]
        step_decay = np.exp(-a[None] * h[:, None])  # (K, N)
        node_decay = np.exp(-a[None, None] * half * (1 - _X)[None, :, None])
    else:
        a = np.broadcast_to(a_nodes, (k * m, n)).reshape(k, m, n)
        step_decay = np.exp(-half[:, :, 0] * np.einsum("l,kln->kn", _W, a))
        node_decay = np.exp(-half * np.einsum("jl,kln->kjn", _TAIL, a))
    sub_c = half[:, 0] * np.einsum("j,kjn->kn", _W, node_decay * b)  # (K, N)
    step_decay, sub_c = step_decay.reshape(-1, r, n), sub_c.reshape(-1, r, n)
    p_acc, c_acc = step_decay[:, 0], sub_c[:, 0]
    for j in range(1, r):  # compose the r subinterval maps of every output interval at once
        p_acc, c_acc = step_decay[:, j] * p_acc, step_decay[:, j] * c_acc + sub_c[:, j]
    return p_acc, c_acc


def _propagate(
    phi: NDArray[np.float64], c: NDArray[np.float64], z0: NDArray[np.float64], out
) -> None:
    """Fill ``out`` (T, D, N), time-major, from z0 (N, D) through the interval maps phi (D, T-1 or
    1, N) and c (D, T-1, N), which may be out[1:] itself: each step writes one (D, N) slab."""
    shared = phi.shape[1] == 1
    out[0] = z0.T
    scratch = np.empty(out.shape[1:])
    for j in range(c.shape[1]):
        np.multiply(phi[:, 0 if shared else j], out[j], out=scratch)
        np.add(scratch, c[:, j], out=out[j + 1])


def _columns(p: NDArray[np.float64]) -> list:
    """The parameter matrix (N, P) as P entries: a float where a parameter is the same for every
    trajectory (so shared gates are evaluated once per time, not once per trajectory), else a (1, N)
    row."""
    return [float(col[0]) if np.all(col == col[0]) else col[None, :] for col in p.T]


def _growth(phi: NDArray[np.float64], intervals: int) -> NDArray[np.float64]:
    """(D, N): the most an error made in one interval can grow by the end, Π max(1, phi)."""
    if phi.shape[1] == 1:
        return np.maximum(phi[:, 0], 1.0) ** intervals
    return np.prod(np.maximum(phi, 1.0), axis=1)


def _pointwise(form: LinearForm, t, r: int, z0, p, out):
    """The 2r path into ``out`` and its largest difference from the r path at each point (T, D, N):
    both propagated (in general phi, too, changes with r)."""
    n, d = z0.shape
    coarse = np.empty_like(out)
    _propagate(*_interval_maps(form, t, r, _columns(p), n, d), z0, coarse)
    _propagate(*_interval_maps(form, t, 2 * r, _columns(p), n, d), z0, out)
    return np.abs(np.subtract(out, coarse, out=coarse), out=coarse)


def _fastest(form: LinearForm, t: NDArray[np.float64], p: NDArray[np.float64]) -> NDArray:
    """Per trajectory (N,), the fastest rate of the form (decay rates, switches' rates) over the
    output times and their midpoints (inf where a rate is not finite)."""
    n = p.shape[0]
    if not form.rates:
        return np.zeros(n)
    mid = (t[:-1] + t[1:]) / 2
    values = _at(form.eval_rates, np.concatenate([t, mid]), _columns(p), len(form.rates))
    fastest = np.zeros(n)
    for v in values:  # (M, 1) for a rate shared by every trajectory, (M, N) for one of each's own
        fastest = np.maximum(fastest, np.nan_to_num(np.abs(v), nan=np.inf).max(axis=0))
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
    span = np.diff(t)
    uniform = form.constant_a and np.ptp(span) <= 1e-12 * span[0]
    rows = np.arange(n)
    status = np.zeros(n, dtype=np.int64)
    worst_r, worst_diff = r, 0.0
    while rows.size:
        whole = rows.size == n
        direct = whole and out.flags.c_contiguous  # else solved apart and copied in
        fine = out if direct else np.empty((t.size, out.shape[1], rows.size))
        z0r, pr = (z0, p) if whole else (z0[rows], p[rows])
        if uniform:
            diff = _uniform_solve(form, t, r, z0r, pr, fine)  # (D, rows)
            allowed = atol + (rtol * np.abs(fine).min(axis=0) if (diff > atol).any() else 0.0)
            ok = (diff <= allowed).all(axis=0)  # nan where the solve overflowed
        else:
            gap = _pointwise(form, t, r, z0r, pr, fine)
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


def _elements_per_trajectory(form: LinearForm, t, p, d: int) -> int:
    """Floats held per trajectory at the first refinement besides the output: the gate values at the
    r and 2r Gauss nodes of every gate with a time of its own per trajectory, and in general (a
    changing with time) the interval maps and the coarse path."""
    own = sum(v.shape[1] > 1 for v in _at(form.eval_times, t[:1], _columns(p), len(form.times)))
    general = 0 if form.constant_a else 3 * d
    return (t.size - 1) * (own * 3 * GAUSS_NODES * (1 if form.constant_a else 2) + general) + 1


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
    unresolved = first > MAX_SUBDIVISIONS // 2
    status[unresolved], path[:, :, unresolved] = UNRESOLVED, np.nan
    for r in np.unique(first[~unresolved]):
        group = np.flatnonzero(first == r)
        for start in range(0, group.size, max(1, per_chunk // int(r))):
            rows = group[start : start + max(1, per_chunk // int(r))]
            whole = rows.size == n
            out = path if whole else np.empty((t.size, d, rows.size))
            status[rows], chunk_r, chunk_diff = _refine(
                form, t, z0[rows], p[rows], rtol, atol, out, int(r)
            )
            if not whole:
                path[:, :, rows] = out
            worst_r, worst_diff = max(worst_r, chunk_r), max(worst_diff, chunk_diff)
    return path.transpose(2, 0, 1), status, ExactStats(worst_r, worst_diff)
