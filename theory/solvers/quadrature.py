"""The exact path's quadrature (:mod:`theory.solvers.exact` drives it): for a flow linear in z,

    dz_i/dt = -a_i(t) z_i + b_i(t),    z_i(t1) = exp(-(A_i(t1) - A_i(t0))) z_i(t0)
                                                 + ∫_{t0}^{t1} exp(-(A_i(t1) - A_i(s))) b_i(s) ds,

each output interval is cut into r equal subintervals; on each, the integral is a GAUSS_NODES-point
Gauss-Legendre sum with the decay factor evaluated exactly at the nodes. Where a is constant in time
(every built-in model) the decay is exp(-a (t1 - s)) in closed form, terms of b free of t are
integrated in closed form too, and the rule has order 2m = 8. Where a varies with time, A between a
node and the subinterval's end comes from the Lagrange interpolant of a through the same nodes.

Two paths: the fast one (a constant, equal output intervals: :func:`uniform_solve`, whose decay per
interval phi is exact and the same at every r, so that the r and 2r solves differ only through the
interval constants and one bound on that difference replaces a second propagation) and the general
one (:func:`pointwise`: both subdivisions propagated and compared at every output time).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
from numpy.typing import NDArray

from theory.models.linear_form import LinearForm, at

GAUSS_NODES = 4
BLOCK = 2**15  # constants a block of columns holds (measured best: an L2-sized part)
THREADED_FROM = 2**21  # path values from which a compiled walk shares its blocks among threads
COMPILED_FROM = 2**18  # path values from which a process's second and later solves walk compiled
_large_solves = 0  # solves of at least COMPILED_FROM values made in this process (_compiled)

_X, _W = np.polynomial.legendre.leggauss(GAUSS_NODES)


def tail_matrix(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """R[j, k] = ∫_{x_j}^{1} ℓ_k(x) dx for the Lagrange basis ℓ_k through the nodes x (on [-1,
    1])."""
    m = x.size
    out = np.empty((m, m))
    for k in range(m):
        basis = np.polynomial.Polynomial.fit(x, np.eye(m)[k], m - 1, domain=[-1, 1], window=[-1, 1])
        integral = basis.integ()
        out[:, k] = integral(1.0) - integral(x)
    return out


_TAIL = tail_matrix(_X)


def subinterval_nodes(
    t: NDArray[np.float64], r: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Subinterval lengths h (K,) and Gauss nodes (K, m) for r subintervals per output interval."""
    h = np.repeat(np.diff(t) / r, r)
    edges = np.repeat(t[:-1], r) + h * np.tile(np.arange(r), t.size - 1)
    return h, edges[:, None] + h[:, None] * (1 + _X) / 2


def coefficients(form: LinearForm, t, columns: list, n: int, d: int):
    """The t-free factors C (each (N,)) and the decay rates at the start (each (1, N) or (N,))."""
    coefs = [
        np.broadcast_to(v, (1, n))[0] for v in at(form.eval_coefs, t[:1], columns, len(form.coefs))
    ]
    return coefs, [np.broadcast_to(v, (1, n))[0] for v in at(form.eval_a, t[:1], columns, d)]


def uniform_parts(form: LinearForm, g, coefs, rates, span: float, r: int):
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


def constants_into(stacked, weights, own, out, b0: int = 0, b1: int | None = None):
    """out (M, b1 - b0) = the columns b0 to b1 of stacked (M, S) @ weights (S, D N) plus the terms
    of their own (concept i's in columns i N to (i + 1) N); all of them by default. Returns out."""
    b1 = weights.shape[1] if b1 is None else b1
    np.matmul(stacked, weights[:, b0:b1], out=out)
    for i, w, g in own:
        n = w.shape[1]
        lo, hi = max(b0, i * n), min(b1, (i + 1) * n)
        if lo < hi:
            out[:, lo - b0 : hi - b0] += np.einsum(
                "sn,isn->in", w[:, lo - i * n : hi - i * n], g[:, :, lo - i * n : hi - i * n]
            )
    return out


def constants_gap_path(fine, coarse, phi, flat, compiled: bool) -> tuple[NDArray, NDArray]:
    """The fast path's pass: ``flat`` (T, D N) holds z0 in row 0; rows 1 to T-1 get the 2r path,
    z_{k+1} = phi z_k + c_2r,k. Returns Σ_k |c_2r - c_r|_k and min_k |z_k| (each (D N,), NaN
    where the path is).

    Both subdivisions' constants are formed a block of columns at a time (``uniform_parts``'s
    products, into cache-sized buffers). ``compiled``: one compiled walk over each block sums their
    difference and turns the 2r constants into the path in place, then the block is copied out; a
    solve of THREADED_FROM path values or more shares its blocks among numba's threads
    (``NUMBA_NUM_THREADS``, as dopri), each a contiguous band of columns (the walk and the products
    release the GIL; each column is computed as it would be alone). Else (numpy) the constants are
    copied into the output and propagated there, a row at a time, in a second pass."""
    rows, width = flat.shape[0] - 1, flat.shape[1]
    gap, low = np.zeros(width), np.abs(flat[0])
    step = max(1, BLOCK // rows)
    starts = range(0, width, step)

    def blocks_into_output(part: range) -> None:
        buf = np.empty((2, rows, min(step, width)))
        for b0 in part:
            b1 = min(width, b0 + step)
            f = constants_into(*fine, buf[0, :, : b1 - b0], b0, b1)
            c = constants_into(*coarse, buf[1, :, : b1 - b0], b0, b1)
            if compiled:
                _walk(f, c, phi, flat[0], b0, gap, low)
            else:
                gap[b0:b1] = np.abs(np.subtract(f, c, out=c), out=c).sum(axis=0)
            flat[1:, b0:b1] = f

    # numba's thread count asked only here: asking starts its threading layer
    large = compiled and flat[1:].size >= THREADED_FROM
    threads = min(numba.get_num_threads(), len(starts)) if large else 1
    if threads > 1:
        cut = np.linspace(0, len(starts), threads + 1).astype(int)
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(blocks_into_output, [starts[i:j] for i, j in zip(cut[:-1], cut[1:])]))
    else:
        blocks_into_output(starts)
    if not compiled:  # the columns as one concept of D N trajectories, the constants in place
        propagate(phi[None, None], flat[None, 1:], flat[0][:, None], flat[:, None])
        low = np.abs(flat).min(axis=0)
    return gap, low


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _walk(f, c, phi, z0, b0, gap, low):  # pragma: no cover - compiled (tested through its caller)
    """The block's 2r constants f (rows, width) become its path in place, z_{k+1} = phi z_k + f_k
    from z0[b0:], while gap and low gather Σ_k |f_k - c_k| and min_k |z_k| of its columns."""
    rows, width = f.shape
    cols = slice(b0, b0 + width)
    # the state in arrays of its own and no writes outside f: the compiler vectorizes the loop
    z, g, lo, decay = z0[cols].copy(), np.zeros(width), low[cols].copy(), phi[cols].copy()
    for k in range(rows):
        fk, ck = f[k], c[k]
        for j in range(width):
            v = fk[j]
            g[j] += abs(v - ck[j])
            z[j] = decay[j] * z[j] + v  # as propagate: phi z first, then + c
            fk[j] = z[j]
            lo[j] = abs(z[j]) if (abs(z[j]) < lo[j] or z[j] != z[j]) else lo[j]  # NaN stays
    gap[cols] += g
    low[cols] = lo


def uniform_solve(form: LinearForm, t, r: int, z0, p, out):
    """The 2r path into ``out`` (T, D, N) where a is constant and the output intervals equal, with
    the bound Σ_j |c_2r - c_r|_j Π max(1, phi) (D, N) on its difference from the r path (phi is
    exact, the same at every r, so the paths differ only through the interval constants) and
    min_t |z| (D, N) of the 2r path."""
    n, d = z0.shape
    columns, span = param_columns(p), t[1] - t[0]
    coefs, rates = coefficients(form, t, columns, n, d)
    gates = {
        q: at(form.eval_times, subinterval_nodes(t, q)[1].ravel(), columns, len(form.times))
        for q in (r, 2 * r)
    }
    fine, coarse = (uniform_parts(form, gates[q], coefs, rates, span, q) for q in (2 * r, r))
    phi = np.exp(-np.array(rates) * span)  # (D, N)
    out[0] = z0.T
    flat = out.reshape(t.size, d * n)  # a view: out is contiguous
    diff, low = constants_gap_path(fine, coarse, phi.ravel(), flat, _compiled(flat[1:].size))
    return diff.reshape(d, n) * growth(phi[:, None, :], t.size - 1), low.reshape(d, n)


def _compiled(elements: int) -> bool:
    """Whether a fast-path solve of ``elements`` path values walks compiled: from the second solve
    of at least COMPILED_FROM values in a process on. numba's walk costs about 0.3 s to load in
    each new process (and about 5 s to compile, once per install), more than it saves in one sweep
    (about 12 ms at 10,000 trajectories x 200 points), so one-off sweeps and small solves (a fit's)
    stay in numpy, and a process that sweeps again (a notebook, a benchmark) gains."""
    global _large_solves
    if elements < COMPILED_FROM:
        return False
    _large_solves += 1
    return _large_solves > 1


def interval_maps(form: LinearForm, t: NDArray[np.float64], r: int, columns: list, n: int, d: int):
    """Per concept and output interval, the affine map z(t_{i+1}) = phi z(t_i) + c over its r
    subintervals, in general (a changing with time, or unequal output intervals). Returns phi and c,
    (D, T-1, N) each."""
    h, nodes = subinterval_nodes(t, r)
    g = at(form.eval_times, nodes.ravel(), columns, len(form.times))
    coefs, _ = coefficients(form, t, columns, n, d)
    a_nodes = at(form.eval_a, t[:1] if form.constant_a else nodes.ravel(), columns, d)
    phi, c = np.empty((d, t.size - 1, n)), np.empty((d, t.size - 1, n))
    for i in range(d):
        b = sum(coefs[ci] * g[gi] for ci, gi in form.terms[i])
        phi[i], c[i] = composed(form.constant_a, a_nodes[i], b, h, r, n)
    return phi, c


def composed(constant_a: bool, a_nodes, b, h, r: int, n: int):
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


def propagate(
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


def param_columns(p: NDArray[np.float64]) -> list:
    """The parameter matrix (N, P) as P entries: a float where a parameter is the same for every
    trajectory (so shared gates are evaluated once per time, not once per trajectory), else a (1, N)
    row."""
    return [float(col[0]) if np.all(col == col[0]) else col[None, :] for col in p.T]


def growth(phi: NDArray[np.float64], intervals: int) -> NDArray[np.float64]:
    """(D, N): the most an error made in one interval can grow by the end, Π max(1, phi)."""
    if phi.shape[1] == 1:
        return np.maximum(phi[:, 0], 1.0) ** intervals
    return np.prod(np.maximum(phi, 1.0), axis=1)


def pointwise(form: LinearForm, t, r: int, z0, p, out):
    """The 2r path into ``out`` and its largest difference from the r path at each point (T, D, N):
    both propagated (in general phi, too, changes with r)."""
    n, d = z0.shape
    coarse = np.empty_like(out)
    propagate(*interval_maps(form, t, r, param_columns(p), n, d), z0, coarse)
    propagate(*interval_maps(form, t, 2 * r, param_columns(p), n, d), z0, out)
    return np.abs(np.subtract(out, coarse, out=coarse), out=coarse)
