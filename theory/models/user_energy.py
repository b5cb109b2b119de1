"""Your own landscape: an energy written as text or a sympy expression, its gradient flow from
sympy (no derivatives by hand). ``python -m theory.simulate --energy`` reads its text here.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import sympy

from theory.models import expression
from theory.models.landscape import T, Landscape, Param
from theory.models.paper import MAX_CONCEPTS, _concept_names

__all__ = ["from_expression"]


def from_expression(
    energy: str | sympy.Expr,
    params: Mapping[str, float] | None = None,
    *,
    state: Sequence[str] | None = None,
    concepts: Sequence[str] | None = None,
    z0: Sequence[float] | None = None,
    name: str = "custom",
) -> Landscape:
    """A landscape from a user's energy; the gradient flow comes from sympy, no derivatives by hand.

    Args:
        energy: E as a string (``t`` is time, ``sigmoid(x)`` is available) or a sympy expression.
        params: a default value for every other symbol in the energy.
        state: names of the coordinates; default: the symbols named ``z1, z2, ...`` (or ``z_1,
        ...``). concepts: names of the concepts (log columns ``z_<name>``); default ``c1, c2, ...``.
        z0: default start; default 0.5 per coordinate.
        name: a name for messages and logs.

    Example:
        >>> land = from_expression("lam/2*(z1 - sigmoid(t - 5))**2 + (z2 - 1)**2/2", {"lam": 2.0})
    """
    params = dict(params or {})
    expr = _energy(energy)
    free = {s.name: s for s in expr.free_symbols if s != T}
    if state is None:
        state = expression.coordinates(free, energy)
        concepts = concepts if concepts is not None else expression.named_as_written(state)
    others = _checked_symbols(energy, free, state, params)
    syms = [free[n] for n in state]
    plist = tuple(Param(n, (free[n],), (float(params[n]),), "user parameter") for n in others)
    return Landscape(
        name,
        expr,
        tuple(syms),
        _concept_names(len(syms), concepts),
        plist,
        tuple(z0) if z0 is not None else (0.5,) * len(syms),
        state_bounds=None,
        doc=f"user energy: {expr}",
    )


def _energy(energy: str | sympy.Expr) -> sympy.Expr:
    """The energy as a sympy expression in the package's time symbol (text parsed by a whitelist,
    never run)."""
    if isinstance(energy, str):
        expr = expression.parse(energy, symbols={"t": T})
    elif isinstance(energy, sympy.Expr):
        expr = energy
    else:
        raise TypeError(f"energy must be text or a sympy expression, got {type(energy).__name__}")
    t_like = [s for s in expr.free_symbols if s.name == "t" and s != T]
    expr = expr.xreplace({s: T for s in t_like})
    # real symbols: the energy is a real function of real coordinates (Abs differentiates to a sign,
    # not re/im)
    return expr.xreplace({s: sympy.Symbol(s.name, real=True) for s in expr.free_symbols if s != T})


def _checked_symbols(energy, free: dict, state: Sequence[str], params: Mapping[str, float]) -> list:
    """The energy's parameters (its symbols besides time and the state), or a ValueError saying
    which coordinate or parameter is wrong and what to pass."""
    if len(state) > MAX_CONCEPTS:
        raise ValueError(
            f"the energy has {len(state)} coordinates; at most {MAX_CONCEPTS} (a sympy gradient "
            "per coordinate: compiling more takes minutes)"
        )
    if not state:
        raise ValueError(
            f"the energy {energy!r} has no state variables (name them z1, z2, ... or pass state=)"
        )
    missing = [n for n in state if n not in free]
    if missing:
        raise ValueError(f"state variables {missing} do not appear in the energy {energy!r}")
    others = sorted(set(free) - set(state))
    unknown = [n for n in others if n not in params]
    if unknown:
        raise ValueError(
            f"the energy uses {unknown} but no value was given: --param {unknown[0]}=VALUE on the "
            f"command line (params={{{unknown[0]!r}: ...}} in Python)"
        )
    extra = set(params) - set(others)
    if extra:
        raise ValueError(
            f"params {sorted(extra)} do not appear in the energy; its symbols are {others}"
        )
    return others
