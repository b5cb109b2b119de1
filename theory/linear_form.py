"""A landscape's flow as dz_i/dt = -a_i(t) z_i + b_i(t), read off its sympy expression.

Eq. 1, Eq. 2, the authors' notebook model and any energy quadratic in each coordinate without cross terms
have a flow that is linear in z once the gates are evaluated. :func:`linear_form` finds a_i and b_i
(∂f_i/∂z_j must be free of z, and zero for j != i), so any landscape qualifies by its expression, not by
its name; :func:`why_not_linear` says in one line why one does not. b is split into t-free factors times
functions of time, so that a gate shared by every trajectory is evaluated once per time
(:mod:`theory.exact` integrates the form).
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

_FORMS: "weakref.WeakKeyDictionary[Landscape, LinearForm | str]" = weakref.WeakKeyDictionary()


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


class _NoState:
    """Stands for z in the compiled coefficients, which never read it (their source names z0, z1, ...)."""

    def __getitem__(self, i: int) -> float:
        return 0.0


_NO_STATE = _NoState()


def at(
    fn: Callable, times: NDArray[np.float64], columns: list, count: int
) -> list[NDArray[np.float64]]:
    """Compiled expressions at times (M,): ``count`` arrays of shape (M, 1) (shared by every trajectory) or (M, N)."""
    out: list = [None] * count
    fn(times[:, None], _NO_STATE, columns, out)
    out = [np.atleast_2d(np.asarray(v, dtype=np.float64)) for v in out]
    return [np.broadcast_to(v, (times.size, v.shape[1])) for v in out]
