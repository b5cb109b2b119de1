"""A landscape's flow as dz_i/dt = -a_i(t) z_i + b_i(t), read off its sympy expression.

Eq. 1, Eq. 2, the authors' notebook model and any energy quadratic in each coordinate without cross
terms have a flow that is linear in z once the gates are evaluated. :func:`linear_form` finds a_i
and b_i (∂f_i/∂z_j must be free of z, and zero for j != i), so any landscape qualifies by its
expression, not by its name; :func:`why_not_linear` says in one line why one does not. b is split
into t-free factors times functions of time, so that a gate shared by every trajectory is evaluated
once per time (:mod:`theory.solvers.exact` integrates the form).
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass
from typing import Callable

import numpy as np
import sympy
from numpy.typing import NDArray
from sympy.printing.numpy import NumPyPrinter

from theory.models.landscape import T, Landscape, _compile

_FORMS: "weakref.WeakKeyDictionary[Landscape, LinearForm | str]" = weakref.WeakKeyDictionary()


@dataclass(frozen=True, eq=False)
class LinearForm:
    """dz_i/dt = -a_i(t) z_i + b_i(t), with b_i = Σ_q C_iq(θ) G_q(t, θ) split into factors free of t
    (C) and functions of time (G), so that a gate shared by every trajectory is integrated once per
        time, not once per
    trajectory. Expressions in sympy, compiled to numpy functions ``f(t, z, p, out)`` that write
    into a list (t and the entries of p broadcast; z is not read).

    Attributes:
        a: (D,) the decay rates; ``constant_a``: every a_i is free of t (the decay is then exact in
        closed form). coefs, times: the C and G expressions (G = 1 for terms free of t);
        ``terms[i]``: (C index, G index) pairs. rates: the time scales the quadrature must resolve,
        as rates (1 / time): every a_i (the decay kernel's
            width is 1/a_i) and, for every function of time inside a or G (a gate's tanh, an exp, a
            sin), the rate of its argument, ∂arg/∂t (a sigmoid k (t - t_s) switches within a few
            1/k).
    """

    a: tuple[sympy.Expr, ...]
    coefs: tuple[sympy.Expr, ...]
    times: tuple[sympy.Expr, ...]
    terms: tuple[tuple[tuple[int, int], ...], ...]
    constant_a: bool
    eval_a: Callable
    eval_coefs: Callable
    eval_times: Callable
    rates: tuple[sympy.Expr, ...] = ()
    eval_rates: Callable | None = None


def _is_zero(expr: sympy.Expr) -> bool:
    return expr == 0 or sympy.simplify(expr) == 0


MAX_EXPANDED_TERMS = (
    2000  # above this many terms (estimated) b is split as written, not expanded first
)


def expanded_terms(expr: sympy.Expr) -> int:
    """An upper estimate of how many terms ``sympy.expand(expr)`` has: sums add, products multiply,
    a power (sum of m terms)**n is a multinomial with C(n + m - 1, m - 1) terms; capped so that it
    never grows without bound itself."""
    cap = 10 * MAX_EXPANDED_TERMS
    if expr.is_Add:
        return min(cap, sum(expanded_terms(a) for a in expr.args))
    if expr.is_Mul:
        out = 1
        for a in expr.args:
            out = min(cap, out * expanded_terms(a))
        return out
    if expr.is_Pow and expr.exp.is_Integer and expr.exp > 1:
        m = expanded_terms(expr.base)
        return cap if m > cap else min(cap, math.comb(int(expr.exp) + m - 1, m - 1))
    return 1


def _separate(b: list[sympy.Expr]):
    """b_i = Σ_q C_iq G_q: every term of the expanded b split by ``as_independent(t)``, grouped by
    its G. A b whose expansion would exceed MAX_EXPANDED_TERMS (``(t + a + b + c + d + e)**30`` has
    324,632 terms) is split as written: fewer, larger G, the same sum."""
    times: list[sympy.Expr] = []
    coefs: list[sympy.Expr] = []
    terms = []
    for expr in b:
        groups: dict[sympy.Expr, sympy.Expr] = {}
        small = expanded_terms(sympy.sympify(expr)) <= MAX_EXPANDED_TERMS
        for term in sympy.Add.make_args(sympy.expand(expr) if small else expr):
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


def _rates(exprs: list[sympy.Expr]) -> list[sympy.Expr]:
    """The rates of :class:`LinearForm`: the expressions themselves (a) and ∂arg/∂t of every
    function of time in them; duplicates dropped."""
    out: list[sympy.Expr] = []
    for expr in exprs:
        for f in sympy.sympify(expr).atoms(sympy.Function):
            for arg in f.args:
                if T in arg.free_symbols:
                    rate = sympy.diff(arg, T)
                    if rate != 0 and rate not in out:
                        out.append(rate)
    return out


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
                return (
                    f"the flow of {land.concepts[i]} depends on z_{land.concepts[j]} (a "
                    "coupled linear system)"
                )
        a.append(-sympy.diff(f, land.state[i]))
        b.append(f.xreplace({z: 0 for z in land.state}))
    coefs, times, terms = _separate(b)
    constant_a = all(T not in e.free_symbols for e in a)
    rates = [e for e in a if e != 0] + _rates(a + times)
    compiled = [_compile(land, exprs, NumPyPrinter, "numpy") for exprs in (a, coefs, times, rates)]
    return LinearForm(
        tuple(a),
        tuple(coefs),
        tuple(times),
        terms,
        constant_a,
        *compiled[:3],
        tuple(rates),
        compiled[3],
    )


def linear_form(land: Landscape) -> LinearForm | None:
    """The landscape's flow as -a(t) z + b(t) with diagonal a, or None where it is not of that
    form."""
    return None if why_not_linear(land) is not None else _FORMS[land]


def why_not_linear(land: Landscape) -> str | None:
    """None where the exact path applies, else why not (one line). Derived once per landscape."""
    if land not in _FORMS:
        _FORMS[land] = _derive(land)
    found = _FORMS[land]
    return found if isinstance(found, str) else None


class _NoState:
    """Stands for z in the compiled coefficients, which never read it (their source names z0, z1,
    ...)."""

    def __getitem__(self, i: int) -> float:
        return 0.0


_NO_STATE = _NoState()


def at(
    fn: Callable, times: NDArray[np.float64], columns: list, count: int
) -> list[NDArray[np.float64]]:
    """Compiled expressions at times (M,): ``count`` arrays of shape (M, 1) (shared by every
    trajectory) or (M, N)."""
    out: list = [None] * count
    fn(times[:, None], _NO_STATE, columns, out)
    out = [np.atleast_2d(np.asarray(v, dtype=np.float64)) for v in out]
    return [np.broadcast_to(v, (times.size, v.shape[1])) for v in out]
