"""Energy landscapes in concept space, written once in sympy, differentiated by sympy, compiled
twice.

A :class:`Landscape` is an energy E(z, t; θ) over a D-dimensional concept space. Its gradient flow

    dz/dt = -∇_z E(z, t; θ)

is derived with ``sympy.diff`` (never by hand) and compiled to

* a numpy function ``f(t, z, p, out)`` that broadcasts: z of shape (D,) or (D, N), p of shape (P,)
  or (P, N) — used by the reference ``solve_ivp`` path and the stacked batch path;
* a numba function with the same signature on 1-d arrays — used by the batched Dormand-Prince
  kernel in :mod:`theory.solvers.dopri`.

Parameters are named groups (``lam`` is one entry per concept, ``a`` is a scalar); each carries a
default, a documented meaning and the range that is valid for it. The built-in models live in
:mod:`theory.models.paper`; a user's own energy comes from
:func:`theory.models.user_energy.from_expression`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable, Mapping, Sequence

import numpy as np
import sympy
from numpy.typing import NDArray
from sympy.printing.numpy import NumPyPrinter
from sympy.printing.pycode import PythonCodePrinter

T = sympy.Symbol("t", real=True)


def sigmoid(x: sympy.Expr) -> sympy.Expr:
    """Logistic gate 1/(1+exp(-x)), written as (1+tanh(x/2))/2: identical, and it never
    overflows."""
    return (1 + sympy.tanh(x / 2)) / 2


@dataclass(frozen=True)
class Param:
    """A named parameter group of a landscape.

    Args:
        name: user-facing name, as in the CLI (``lam``, ``t_switch``, ``a``).
        symbols: the sympy symbols, one for a scalar, one per concept for a vector.
        default: default value per symbol.
        doc: one-line meaning.
        low, high: valid range (inclusive unless ``open_low``/``open_high``); None for unbounded.
        vector: True if the group has one entry per concept (a single CLI value is broadcast).
    """

    name: str
    symbols: tuple[sympy.Symbol, ...]
    default: tuple[float, ...]
    doc: str
    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False
    vector: bool = False

    @property
    def size(self) -> int:
        """Number of symbols: 1 for a scalar, one per concept for a vector."""
        return len(self.symbols)

    def valid_range(self) -> str:
        """The valid range as text, e.g. ``(0, inf)``."""
        lo = "-inf" if self.low is None else f"{self.low:g}"
        hi = "inf" if self.high is None else f"{self.high:g}"
        left = "(" if self.open_low or self.low is None else "["
        right = ")" if self.open_high or self.high is None else "]"
        return f"{left}{lo}, {hi}{right}"

    def check(self, value: NDArray[np.float64], model: str) -> None:
        """Raise ValueError naming the first value outside the valid range (or not finite)."""
        bad = ~np.isfinite(value)
        if self.low is not None:
            bad |= value <= self.low if self.open_low else value < self.low
        if self.high is not None:
            bad |= value >= self.high if self.open_high else value > self.high
        if np.any(bad):
            offender = value[bad].flat[0]
            raise ValueError(
                f"{model}: parameter {self.name}={offender:g} is invalid; valid range is "
                f"{self.valid_range()} "
                f"({self.doc})"
            )


Check = Callable[[Mapping[str, NDArray[np.float64]]], None]


@dataclass(frozen=True, eq=False)
class Landscape:
    """An energy over concept space and its compiled gradient flow.

    Args:
        name: model name (``notebook``, ``eq1``, ``eq2``, ...).
        energy: E(z, t; θ) as a sympy expression in ``state``, :data:`T` and the parameter symbols.
        state: (D,) sympy symbols of the concept coordinates.
        concepts: (D,) concept names (the log columns are ``z_<name>``).
        params: the parameter groups.
        z0: (D,) default start.
        state_bounds: the box the start must lie in (None: anywhere).
        check: extra validation across parameters (raises ValueError).
        doc: one paragraph on what the model is and where it comes from.
        held: gates the flow holds fixed, as (symbol, expression) pairs: the energy uses the symbol,
        the
            expression gives its value from the state, time and parameters. The flow is -∂E/∂z_i
            with every gate held, then evaluated: each concept descends its own wells while the
            others' state throws its switch, and the switch exerts no force of its own. With a gate
            that reads the state this is no longer the gradient of one energy; :attr:`energy` and
            :meth:`energy_at` give E with the gates at their current values.
    """

    name: str
    energy: sympy.Expr
    state: tuple[sympy.Symbol, ...]
    concepts: tuple[str, ...]
    params: tuple[Param, ...]
    z0: tuple[float, ...]
    state_bounds: tuple[float, float] | None = (0.0, 1.0)
    check: Check | None = None
    doc: str = ""
    t_end: float = 25.0
    held: tuple[tuple[sympy.Symbol, sympy.Expr], ...] = ()
    _index: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if len(self.state) != len(self.concepts) or len(self.z0) != len(self.state):
            raise ValueError(f"{self.name}: state, concepts and z0 must have one entry per concept")
        names = [p.name for p in self.params]
        if len(set(names)) != len(names) or "z0" in names:
            raise ValueError(f"{self.name}: parameter names must be distinct and not 'z0': {names}")
        known = set(self.state) | {T} | {s for p in self.params for s in p.symbols}
        for gate, expr in self.held:
            if expr.free_symbols - known:
                raise ValueError(
                    f"{self.name}: gate {gate} uses symbols with no value: "
                    f"{sorted(map(str, expr.free_symbols - known))}"
                )
        known |= {gate for gate, _ in self.held}
        unknown = self.energy.free_symbols - known
        if unknown:
            raise ValueError(
                f"{self.name}: the energy uses symbols with no value: {sorted(map(str, unknown))}"
            )
        self._index.update({p.name: p for p in self.params})

    # -- parameters ---------------------------------------------------------------------------

    @property
    def dim(self) -> int:
        """D, the number of concepts."""
        return len(self.state)

    @property
    def param_names(self) -> tuple[str, ...]:
        """The parameter groups' names, in packing order."""
        return tuple(p.name for p in self.params)

    @property
    def symbols(self) -> tuple[sympy.Symbol, ...]:
        """(P,) every parameter symbol in packing order."""
        return tuple(s for p in self.params for s in p.symbols)

    def param(self, name: str) -> Param:
        """The parameter group called ``name``; ValueError listing the valid names otherwise."""
        try:
            return self._index[name]
        except KeyError:
            raise ValueError(
                f"{self.name} has no parameter {name!r}; valid: "
                f"{', '.join(self.param_names + ('z0',))}"
            ) from None

    def defaults(self) -> dict[str, float | tuple[float, ...]]:
        """Every parameter's default (vectors as tuples), plus ``z0``."""
        out: dict[str, float | tuple[float, ...]] = {
            p.name: (p.default if p.vector else p.default[0]) for p in self.params
        }
        out["z0"] = tuple(self.z0)
        return out

    def resolve(self, values: Mapping[str, object] | None = None) -> dict[str, NDArray[np.float64]]:
        """Defaults overridden by ``values``, broadcast and validated.

        Each value may be batched: a scalar parameter takes shape () or (N,), a vector parameter
        (and ``z0``) shape (D,) or (N, D); a single number, or shape (N, 1), is broadcast over the
        concepts.

        Returns:
            name -> array of shape (N, size) where N is the common batch size (1 if unbatched).
        """
        values = dict(values or {})
        for name in values:
            if name != "z0":
                self.param(name)  # raises on unknown names
        groups = [(p.name, p.size) for p in self.params] + [("z0", self.dim)]
        arrays, defaults = {}, self.defaults()
        for name, size in groups:
            arr = np.asarray(values.get(name, defaults[name]), dtype=np.float64)
            if size == 1:  # a scalar, or a vector over a single concept: (), (N,) or (N, 1)
                if arr.ndim > 2 or (arr.ndim == 2 and arr.shape[1] != 1):
                    raise ValueError(
                        f"{self.name}: {name} takes one value per trajectory, got shape {arr.shape}"
                    )
                arrays[name] = arr.reshape(-1, 1)
            elif arr.ndim == 0:
                arrays[name] = np.full((1, size), float(arr))
            elif arr.ndim == 2 and arr.shape[1] == 1:  # one value per trajectory, for every concept
                arrays[name] = np.repeat(arr, size, axis=1)
            elif arr.shape[-1] == size and arr.ndim <= 2:
                arrays[name] = arr.reshape(-1, size)
            else:
                raise ValueError(
                    f"{self.name}: {name} needs {size} values (one per concept: "
                    f"{', '.join(self.concepts)}), "
                    f"got shape {arr.shape}"
                )
        n = {a.shape[0] for a in arrays.values()} - {1}
        if len(n) > 1:
            raise ValueError(
                f"{self.name}: batched parameters disagree on the batch size: {sorted(n)}"
            )
        n_batch = n.pop() if n else 1
        arrays = {k: np.broadcast_to(v, (n_batch, v.shape[1])).copy() for k, v in arrays.items()}
        for p in self.params:
            p.check(arrays[p.name], self.name)
        z0 = arrays["z0"]
        if not np.all(np.isfinite(z0)):
            raise ValueError(f"{self.name}: z0 must be finite")
        if self.state_bounds is not None:
            lo, hi = self.state_bounds
            if np.any((z0 < lo) | (z0 > hi)):
                raise ValueError(
                    f"{self.name}: z0 must lie in [{lo:g}, {hi:g}] per concept, got "
                    f"{z0[0].tolist()}"
                )
        if self.check is not None:
            self.check(arrays)
        return arrays

    def pack(self, arrays: Mapping[str, NDArray[np.float64]]) -> NDArray[np.float64]:
        """(N, P) parameter matrix in symbol order, from :meth:`resolve`'s output."""
        n = arrays["z0"].shape[0]
        return np.concatenate([np.empty((n, 0))] + [arrays[p.name] for p in self.params], axis=1)

    # -- symbolic ----------------------------------------------------------------------------

    @cached_property
    def flow(self) -> tuple[sympy.Expr, ...]:
        """(D,) the flow -∂E/∂z_i, from sympy.diff (with the :attr:`held` gates fixed, then
        evaluated)."""
        gates = dict(self.held)
        return tuple(-sympy.diff(self.energy, z).xreplace(gates) for z in self.state)

    @cached_property
    def evaluated_energy(self) -> sympy.Expr:
        """E with the :attr:`held` gates at their values (the energy itself when none is held)."""
        return self.energy.xreplace(dict(self.held))

    # -- compiled ------------------------------------------------------------------------------

    @cached_property
    def numpy_flow(self) -> Callable:
        """``f(t, z, p, out)`` writing -∇E into out; broadcasts over a trailing batch axis."""
        return _compile(self, self.flow, NumPyPrinter, "numpy")

    @cached_property
    def numpy_energy(self) -> Callable:
        """``f(t, z, p, out)`` writing E into out[0]; broadcasts like :attr:`numpy_flow`."""
        return _compile(self, (self.evaluated_energy,), NumPyPrinter, "numpy")

    @cached_property
    def flow_source(self) -> str:
        """The source of ``def f(t, z, p, out)``, the scalar flow (1-d z, p, out) that numba
        compiles."""
        return _compile(self, self.flow, PythonCodePrinter, "math").source

    @cached_property
    def numba_flow(self) -> Callable:
        """The numba-compiled scalar version of :attr:`numpy_flow` (1-d z, p, out)."""
        import numba

        return numba.njit(
            _compile(self, self.flow, PythonCodePrinter, "math"), cache=False, fastmath=False
        )

    def gradient_flow(self, values: Mapping[str, object] | None = None) -> Callable:
        """``rhs(t, z)`` = -∇E for one parameter setting, in scipy's convention."""
        p = self.pack(self.resolve(values))[0]
        f = self.numpy_flow

        def rhs(t: float, z: NDArray[np.float64]) -> NDArray[np.float64]:
            out = np.empty(self.dim)
            f(t, z, p, out)
            return out

        return rhs

    def energy_at(self, t, z, values: Mapping[str, object] | None = None):
        """E(z, t) for one parameter setting.

        Args:
            t: a time, or (N,) times.
            z: (D,) a point, or (N, D) points (e.g. a path with its times).
            values: parameter overrides.

        Returns:
            A float, or (N,) energies.
        """
        p = self.pack(self.resolve(values))[0]
        z = np.asarray(z, dtype=np.float64)
        t = np.asarray(t, dtype=np.float64)
        if z.ndim == 1:
            out = np.empty(1)
            self.numpy_energy(float(t), z, p, out)
            return float(out[0])
        out = np.empty((1, z.shape[0]))
        self.numpy_energy(t, z.T, p, out)  # z.T: (D, N), broadcasting over the points
        return out[0]


def _compile(land: Landscape, exprs: Sequence[sympy.Expr], printer_cls, module: str) -> Callable:
    """Generate ``def f(t, z, p, out)`` from expressions (with common subexpressions shared)."""
    t = sympy.Symbol("t")
    rename = {T: t}
    rename.update({s: sympy.Symbol(f"z{i}") for i, s in enumerate(land.state)})
    rename.update({s: sympy.Symbol(f"p{j}") for j, s in enumerate(land.symbols)})
    exprs = [sympy.sympify(e).xreplace(rename) for e in exprs]
    reps, reduced = sympy.cse(exprs, symbols=sympy.numbered_symbols("c"))
    printer = printer_cls({"fully_qualified_modules": True})
    lines = ["def f(t, z, p, out):"]
    lines += [f"    z{i} = z[{i}]" for i in range(land.dim)]
    lines += [f"    p{j} = p[{j}]" for j in range(len(land.symbols))]
    lines += [f"    {s} = {printer.doprint(e)}" for s, e in reps]
    lines += [f"    out[{i}] = {printer.doprint(e)}" for i, e in enumerate(reduced)]
    source = "\n".join(lines) + "\n"
    # functools: the numpy printer writes Min and Max as functools.reduce(numpy.minimum, ...)
    namespace: dict = {"numpy": np, "math": math, "functools": functools}
    exec(compile(source, f"<{land.name} {module} flow>", "exec"), namespace)
    fn = namespace["f"]
    fn.source = source
    return fn
