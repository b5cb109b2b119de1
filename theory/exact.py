"""Exact integration of flows that are linear in z: no adaptive solver, no error control, no compilation.

Eq. 1, Eq. 2, the authors' notebook model and any energy quadratic in each coordinate without cross terms
have a flow that is linear in z once the gates are evaluated:

    dz_i/dt = -a_i(t) z_i + b_i(t),

with a_i, b_i functions of time and the parameters only. Such a flow is solved by quadrature (variation of
constants, an exponential integrator): with A_i(t) = ∫ a_i,

    z_i(t1) = exp(-(A_i(t1) - A_i(t0))) z_i(t0) + ∫_{t0}^{t1} exp(-(A_i(t1) - A_i(s))) b_i(s) ds.

:func:`linear_form` reads a_i and b_i off the sympy flow (∂f_i/∂z_j must be free of z, and zero for
j != i), so any landscape qualifies by its expression, not by its name; :func:`solve` integrates.

The quadrature. Each output interval is cut into r equal subintervals; on each, the integral above is a
GAUSS_NODES-point Gauss-Legendre sum with the decay factor evaluated exactly at the nodes. Where a is
constant in time (every built-in model) the decay is exp(-a (t1 - s)) in closed form and the rule has
order 2m = 8 (local error O(h^9) times the 8th derivative of b). Where a varies with time, A between a
node and the subinterval's end comes from the Lagrange interpolant of a through the same nodes
(order m + 1 = 5 locally). The error is controlled, not assumed: the solve with r and with 2r
subintervals are compared at every output point, r doubles (per trajectory) until
|z_2r - z_r| <= atol + rtol |z_2r|, and z_2r is returned, whose error is smaller than that difference by
about 2^8 (constant a). :class:`ExactStats` reports the subdivision reached and the last difference.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Callable

import numpy as np
import sympy
from numpy.typing import NDArray
from sympy.printing.numpy import NumPyPrinter

from theory.landscape import T, Landscape, _compile

GAUSS_NODES = 4
MAX_SUBDIVISIONS = (
    2**12
)  # subintervals per output interval; a trajectory still unconverged there fails
CHUNK_ELEMENTS = (
    2**22
)  # node values (times x trajectories x 2D) held at once: about 32 MiB of float64
_FORMS: "weakref.WeakKeyDictionary[Landscape, LinearForm | str]" = weakref.WeakKeyDictionary()

_X, _W = np.polynomial.legendre.leggauss(GAUSS_NODES)


def _tail_matrix(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """R[j, k] = ∫_{x_j}^{1} ℓ_k(x) dx for the Lagrange basis ℓ_k through the nodes x (on [-1, 1])."""
    m = x.size
    out = np.empty((m, m))
    for k in range(m):
        basis = np.polynomial.Polynomial.fit(x, np.eye(m)[k], m - 1, domain=[-1, 1], window=[-1, 1])
        integral = basis.integ()
        out[:, k] = integral(1.0) - integral(x)
    return out


_TAIL = _tail_matrix(_X)


@dataclass(frozen=True, eq=False)
class LinearForm:
    """dz_i/dt = -a_i(t) z_i + b_i(t), with b_i = Σ_q C_iq(θ) G_q(t, θ) split into factors free of t (C) and
    functions of time (G), so that a gate shared by every trajectory is integrated once per time, not once per
    trajectory. Expressions in sympy, compiled to numpy functions ``f(t, z, p, out)`` that write into a list
    (t and the entries of p broadcast; z is not read).

    Attributes:
        a: (D,) the decay rates; ``constant_a``: every a_i is free of t (the decay is then exact in closed form).
        coefs, times: the C and G expressions (G = 1 for terms free of t); ``terms[i]``: (C index, G index) pairs.
    """

    a: tuple[sympy.Expr, ...]
    coefs: tuple[sympy.Expr, ...]
    times: tuple[sympy.Expr, ...]
    terms: tuple[tuple[tuple[int, int], ...], ...]
    constant_a: bool
    eval_a: Callable
    eval_coefs: Callable
    eval_times: Callable


def _is_zero(expr: sympy.Expr) -> bool:
    return expr == 0 or sympy.simplify(expr) == 0


def _separate(b: list[sympy.Expr]):
    """b_i = Σ_q C_iq G_q: every term of the expanded b split by ``as_independent(t)``, grouped by its G."""
    times: list[sympy.Expr] = []
    coefs: list[sympy.Expr] = []
    terms = []
    for expr in b:
        groups: dict[sympy.Expr, sympy.Expr] = {}
        for term in sympy.Add.make_args(sympy.expand(expr)):
            coef, g = term.as_independent(T, as_Add=False)
            groups[g] = groups.get(g, 0) + coef
        pairs = []
        for g, coef in groups.items():
            if g not in times:
                times.append(g)
            coefs.append(coef)
            pairs.append((len(coefs) - 1, times.index(g)))
        terms.append(tuple(pairs))
    return coefs, times, tuple(terms)


def _derive(land: Landscape) -> LinearForm | str:
    state = set(land.state)
    a, b = [], []
    for i, f in enumerate(land.flow):
        for j, zj in enumerate(land.state):
            d = sympy.diff(f, zj)
            if d.free_symbols & state:
                return (
                    f"the flow of {land.concepts[i]} is not linear in z_{land.concepts[j]} "
                    f"(∂f/∂z depends on the state)"
                )
            if j != i and not _is_zero(d):
                return f"the flow of {land.concepts[i]} depends on z_{land.concepts[j]} (a coupled linear system)"
        a.append(-sympy.diff(f, land.state[i]))
        b.append(f.xreplace({z: 0 for z in land.state}))
    coefs, times, terms = _separate(b)
    constant_a = all(T not in e.free_symbols for e in a)
    compiled = [_compile(land, exprs, NumPyPrinter, "numpy") for exprs in (a, coefs, times)]
    return LinearForm(tuple(a), tuple(coefs), tuple(times), terms, constant_a, *compiled)


def linear_form(land: Landscape) -> LinearForm | None:
    """The landscape's flow as -a(t) z + b(t) with diagonal a, or None where it is not of that form."""
    return None if why_not_linear(land) is not None else _FORMS[land]


def why_not_linear(land: Landscape) -> str | None:
    """None where the exact path applies, else why not (one line). Derived once per landscape."""
    if land not in _FORMS:
        _FORMS[land] = _derive(land)
    found = _FORMS[land]
    return found if isinstance(found, str) else None


@dataclass(frozen=True)
class ExactStats:
    """How the exact solve went: the most subintervals any output interval needed, and the largest
    difference between the last two subdivisions (an upper estimate of the returned error)."""

    subdivisions: int
    difference: float


class _NoState:
    """Stands for z in the compiled coefficients, which never read it (their source names z0, z1, ...)."""

    def __getitem__(self, i: int) -> float:
        return 0.0


_NO_STATE = _NoState()


def _at(
    fn: Callable, times: NDArray[np.float64], columns: list, count: int
) -> list[NDArray[np.float64]]:
    """Compiled expressions at times (M,): ``count`` arrays of shape (M, 1) (shared by every trajectory) or (M, N)."""
    out: list = [None] * count
    fn(times[:, None], _NO_STATE, columns, out)
    out = [np.atleast_2d(np.asarray(v, dtype=np.float64)) for v in out]
    return [np.broadcast_to(v, (times.size, v.shape[1])) for v in out]


def _nodes(t: NDArray[np.float64], r: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Subinterval lengths h (K,) and Gauss nodes (K, m) for r subintervals per output interval."""
    h = np.repeat(np.diff(t) / r, r)
    edges = np.repeat(t[:-1], r) + h * np.tile(np.arange(r), t.size - 1)
    return h, edges[:, None] + h[:, None] * (1 + _X) / 2


def _interval_maps(form: LinearForm, t: NDArray[np.float64], r: int, columns: list, n: int, d: int):
    """Per concept and output interval, the affine map z(t_{i+1}) = phi z(t_i) + c over its r subintervals.

    Returns phi (D, T-1 or 1, N) and c (D, T-1, N).
    """
    h, nodes = _nodes(t, r)
    k, m, intervals = h.size, GAUSS_NODES, t.size - 1
    g = _at(form.eval_times, nodes.ravel(), columns, len(form.times))
    coefs = [
        np.broadcast_to(v, (1, n))[0] for v in _at(form.eval_coefs, t[:1], columns, len(form.coefs))
    ]
    span = np.diff(t)
    uniform = np.ptp(span) <= 1e-12 * span[0]
    a_nodes = _at(form.eval_a, t[:1] if form.constant_a else nodes.ravel(), columns, d)
    phi = np.empty((d, 1 if form.constant_a and uniform else intervals, n))
    c = np.zeros((d, intervals, n))
    for i in range(d):
        if (
            form.constant_a and uniform
        ):  # one weight matrix over (subinterval, node) maps G straight to intervals
            a = np.broadcast_to(a_nodes[i], (1, n))[0]
            left = span[0] - (
                np.arange(r)[:, None] * h[0] + h[0] * (1 + _X) / 2
            )  # (r, m): time to the interval's end
            weights = ((h[0] / 2) * _W[None, :, None] * np.exp(-a * left[:, :, None])).reshape(
                r * m, n
            )
            phi[i, 0] = np.exp(-a * span[0])
            shared = [(ci, gi) for ci, gi in form.terms[i] if g[gi].shape[1] == 1]
            if shared:  # every shared G at once: (T-1, Q r m) @ (Q r m, N), the coefficients folded into the weights
                stacked = np.concatenate(
                    [g[gi].reshape(intervals, r * m) for _, gi in shared], axis=1
                )
                c[i] = stacked @ np.concatenate([weights * coefs[ci] for ci, _ in shared], axis=0)
            for ci, gi in form.terms[i]:
                if g[gi].shape[1] > 1:  # a G of its own per trajectory (a batched gate time, say)
                    c[i] += coefs[ci] * np.einsum(
                        "sn,isn->in", weights, g[gi].reshape(intervals, r * m, n)
                    )
            continue
        b = sum(coefs[ci] * g[gi] for ci, gi in form.terms[i])
        b = np.broadcast_to(b, (k * m, n)).reshape(k, m, n)
        half = (h / 2)[:, None, None]
        if form.constant_a:
            a = np.broadcast_to(a_nodes[i], (1, n))[0]
            step_decay = np.exp(-a[None] * h[:, None])  # (K, N)
            node_decay = np.exp(-a[None, None] * half * (1 - _X)[None, :, None])
        else:
            a = np.broadcast_to(a_nodes[i], (k * m, n)).reshape(k, m, n)
            step_decay = np.exp(-half[:, :, 0] * np.einsum("l,kln->kn", _W, a))
            node_decay = np.exp(-half * np.einsum("jl,kln->kjn", _TAIL, a))
        sub_c = half[:, 0] * np.einsum("j,kjn->kn", _W, node_decay * b)  # (K, N)
        step_decay, sub_c = step_decay.reshape(intervals, r, n), sub_c.reshape(intervals, r, n)
        p_acc, c_acc = step_decay[:, 0], sub_c[:, 0]
        for j in range(1, r):  # compose the r subinterval maps of every output interval at once
            p_acc, c_acc = step_decay[:, j] * p_acc, step_decay[:, j] * c_acc + sub_c[:, j]
        phi[i], c[i] = p_acc, c_acc
    return phi, c


def _propagate(
    phi: NDArray[np.float64], c: NDArray[np.float64], z0: NDArray[np.float64]
) -> NDArray[np.float64]:
    """z (N, T, D) from z0 (N, D) through the interval maps (D, T-1 or 1, N)."""
    d, intervals, n = c.shape
    path = np.empty((intervals + 1, d, n))  # time-major while stepping: each write is contiguous
    path[0] = z0.T
    shared = phi.shape[1] == 1
    for j in range(intervals):
        np.multiply(phi[:, 0 if shared else j], path[j], out=path[j + 1])
        path[j + 1] += c[:, j]
    return np.ascontiguousarray(path.transpose(2, 0, 1))


def _columns(p: NDArray[np.float64]) -> list:
    """The parameter matrix (N, P) as P entries: a float where a parameter is the same for every trajectory
    (so shared gates are evaluated once per time, not once per trajectory), else a (1, N) row."""
    return [float(col[0]) if np.all(col == col[0]) else col[None, :] for col in p.T]


def _solve_at(form, t, r, z0, p):
    n, d = z0.shape
    phi, c = _interval_maps(form, t, r, _columns(p), n, d)
    return _propagate(phi, c, z0)


def solve(
    land: Landscape,
    t: NDArray[np.float64],
    z0: NDArray[np.float64],
    p: NDArray[np.float64],
    rtol: float,
    atol: float,
) -> tuple[NDArray[np.float64], NDArray[np.int64], ExactStats]:
    """Integrate a linear landscape exactly (to the quadrature's controlled error).

    Args:
        land: a landscape with :func:`linear_form`.
        t: (T,) output times, the first the start.
        z0: (N, D) starts; p: (N, P) packed parameters.
        rtol, atol: the accepted difference between two successive subdivisions, per point.

    Returns:
        z (N, T, D), status (N,) (0, or 1 where MAX_SUBDIVISIONS did not converge: those rows are NaN), stats.
    """
    form = linear_form(land)
    if form is None:
        raise ValueError(
            f"method='exact' needs a flow linear in z; {land.name}: {why_not_linear(land)}; "
            "use dopri, stacked, loop or auto"
        )
    n, d = z0.shape
    z = np.empty((n, t.size, d))
    status = np.zeros(n, dtype=np.int64)
    per_chunk = max(1, CHUNK_ELEMENTS // (2 * d * GAUSS_NODES * 2 * (t.size - 1)))
    worst_r, worst_diff = 1, 0.0
    for start in range(0, n, per_chunk):
        rows = np.arange(start, min(n, start + per_chunk))
        r, coarse = 1, _solve_at(form, t, 1, z0[rows], p[rows])
        while rows.size:
            fine = _solve_at(form, t, 2 * r, z0[rows], p[rows])
            diff = np.abs(np.subtract(fine, coarse, out=coarse), out=coarse)
            excess = (diff - rtol * np.abs(fine)).max(axis=(1, 2))  # nan where the solve overflowed
            ok = excess <= atol
            if (
                ok.all() and rows[-1] - rows[0] == rows.size - 1
            ):  # the usual case: a whole chunk, no fancy indexing
                z[rows[0] : rows[-1] + 1] = fine
            else:
                z[rows[ok]] = fine[ok]
            if ok.any():
                worst_r, worst_diff = max(worst_r, 2 * r), max(worst_diff, float(diff[ok].max()))
            rows, coarse, r = rows[~ok], fine[~ok], 2 * r
            if rows.size and 2 * r > MAX_SUBDIVISIONS:
                status[rows], z[rows] = 1, np.nan
                break
    return z, status, ExactStats(worst_r, worst_diff)
