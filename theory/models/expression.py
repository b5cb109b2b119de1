"""A user's energy, parsed from text without ever running it.

``sympy.parse_expr`` and ``sympify`` evaluate their input as Python:
``__import__('os').system(...)`` inside an energy would run. :func:`parse` instead reads the text
with :mod:`ast` (which only parses) and builds the sympy expression node by node from a whitelist:

- numbers (``2``, ``0.5``, ``1e-3``), and the constant ``pi``;
- names: letters, digits and ``_``, starting with a letter (``z1``, ``lam``, ``t_switch``); ``t`` is
  model time, every other name a symbol (state ``z1, z2, ...`` or a parameter);
- ``+ - * / **``, unary ``-`` and ``+``, parentheses;
- the functions in :data:`FUNCTIONS`, called with positional arguments only.

Anything else (attribute access, subscripts, strings, lambdas, comprehensions, keywords, ``eval``,
``open``, dunder names, ...) raises :class:`ExpressionError` naming the offending token and its
column. Length and nesting are bounded, and powers of two constants are computed in floating point,
so no input can make the parser hang.
"""

from __future__ import annotations

import ast
import math
import re
from typing import Callable, Mapping

import sympy

from theory.models.landscape import sigmoid

MAX_LENGTH = 2000  # characters
MAX_DEPTH = 60  # nested operations
# a**b of two constants beyond this is a float, or an error if it overflows (9**9**9 would not
# finish)
MAX_EXACT_POWER = 64
NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")


# name -> (sympy builder, number of arguments; None = two or more)
FUNCTIONS: Mapping[str, tuple[Callable[..., sympy.Expr], int | None]] = {
    "exp": (sympy.exp, 1),
    "log": (sympy.log, 1),
    "sqrt": (sympy.sqrt, 1),
    "sin": (sympy.sin, 1),
    "cos": (sympy.cos, 1),
    "tan": (sympy.tan, 1),
    "atan": (sympy.atan, 1),
    "sinh": (sympy.sinh, 1),
    "cosh": (sympy.cosh, 1),
    "tanh": (sympy.tanh, 1),
    "sigmoid": (sigmoid, 1),
    "Abs": (sympy.Abs, 1),
    "abs": (sympy.Abs, 1),
    "Min": (sympy.Min, None),
    "Max": (sympy.Max, None),
    "min": (sympy.Min, None),
    "max": (sympy.Max, None),
}
CONSTANTS: Mapping[str, sympy.Expr] = {"pi": sympy.pi}
_BINARY = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}


class ExpressionError(ValueError):
    """The text is not an allowed expression; the message names the token and its column."""


def parse(
    text: str, *, symbols: Mapping[str, sympy.Symbol] | None = None, what: str = "energy"
) -> sympy.Expr:
    """The sympy expression written in ``text``, built from a whitelist (nothing is evaluated).

    Args:
        text: e.g. ``"lam/2*(z1 - sigmoid(t - 5))**2 + (z2 - 1)**2/2"``.
        symbols: name -> symbol to use for that name (e.g. ``{"t": T}``); other names become
            ``sympy.Symbol(name)``.
        what: what the text is, for messages (``energy``).

    Raises:
        ExpressionError: naming the offending token, its column and what is allowed.
    """
    if not isinstance(text, str):
        raise ExpressionError(f"the {what} must be text, got {type(text).__name__}")
    if not text.strip():
        raise ExpressionError(f"the {what} is empty")
    if len(text) > MAX_LENGTH:
        raise ExpressionError(
            f"the {what} is {len(text)} characters long; at most {MAX_LENGTH} are allowed"
        )
    if "\x00" in text:
        raise ExpressionError(f"the {what} contains a NUL character")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as err:
        col = f" at column {err.offset}" if err.offset else ""
        shown = text if len(text) <= 60 else text[:57] + "..."
        raise ExpressionError(f"cannot parse the {what} {shown!r}{col}: {err.msg}") from None
    except (RecursionError, MemoryError, ValueError):
        raise ExpressionError(f"the {what} is nested too deeply to read") from None
    return _Builder(text.strip(), dict(symbols or {}), what).build(tree.body, 0)


class _Builder:
    def __init__(self, text: str, symbols: dict[str, sympy.Symbol], what: str) -> None:
        self.text, self.symbols, self.what = text, symbols, what

    def fail(self, node: ast.AST, why: str) -> ExpressionError:
        token = ast.get_source_segment(self.text, node) or type(node).__name__
        if len(token) > 40:
            token = token[:37] + "..."
        col = getattr(node, "col_offset", None)
        where = f" at column {col + 1}" if col is not None else ""
        return ExpressionError(f"the {self.what}: {token!r}{where} {why}")

    def build(self, node: ast.AST, depth: int) -> sympy.Expr:
        if depth > MAX_DEPTH:
            raise self.fail(node, f"is nested more than {MAX_DEPTH} levels deep")
        if isinstance(node, ast.Constant):
            return self.number(node)
        if isinstance(node, ast.Name):
            return self.name(node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            arg = self.build(node.operand, depth + 1)
            return -arg if isinstance(node.op, ast.USub) else arg
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            left, right = self.build(node.left, depth + 1), self.build(node.right, depth + 1)
            return self.binary(node, left, right)
        if isinstance(node, ast.Call):
            return self.call(node, depth)
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            # name the innermost offence first: __import__ in __import__('os').system
            self.build(node.value, depth + 1)
        kinds = {
            ast.Attribute: "attribute access",
            ast.Subscript: "indexing",
            ast.Lambda: "a lambda",
            ast.ListComp: "a comprehension",
            ast.GeneratorExp: "a comprehension",
            ast.SetComp: "a comprehension",
            ast.DictComp: "a comprehension",
            ast.JoinedStr: "an f-string",
            ast.Compare: "a comparison",
            ast.BoolOp: "a logical operator",
            ast.IfExp: "a conditional",
            ast.NamedExpr: "an assignment",
        }
        kind = next((v for k, v in kinds.items() if isinstance(node, k)), None)
        if isinstance(node, (ast.BinOp, ast.UnaryOp)):
            kind = "this operator"
        raise self.fail(
            node,
            f"is not allowed ({kind or type(node).__name__}); "
            "allowed: numbers, names, + - * / **, parentheses and the functions "
            + ", ".join(FUNCTIONS),
        )

    def number(self, node: ast.Constant) -> sympy.Expr:
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(
                node, "is not a number; only numbers, names and the listed functions are allowed"
            )
        if isinstance(value, float):
            if value != value or value in (float("inf"), float("-inf")):
                raise self.fail(node, "is not a finite number")
            written = ast.get_source_segment(self.text, node) or ""
            if value == 0.0 and any(
                ch in "123456789" for ch in written.split("e")[0].split("E")[0]
            ):
                # 1e-400 would be read as 0 and drop its term (and a coordinate with it) without a
                # word
                raise self.fail(node, "is below the smallest float (it would be read as 0)")
            return sympy.Float(value)
        return sympy.Integer(value) if abs(value) <= 10**15 else sympy.Float(value)

    def name(self, node: ast.Name) -> sympy.Expr:
        name = node.id
        if not NAME.match(name):
            raise self.fail(
                node, "is not an allowed name (letters, digits and _, starting with a letter)"
            )
        if name in FUNCTIONS:
            raise self.fail(node, f"is a function: call it, e.g. {name}(x)")
        if name in self.symbols:
            return self.symbols[name]
        if name in CONSTANTS:
            return CONSTANTS[name]
        return sympy.Symbol(name)

    def binary(self, node: ast.BinOp, left: sympy.Expr, right: sympy.Expr) -> sympy.Expr:
        op = type(node.op)
        if op is ast.Pow:
            if (
                left.is_Number
                and right.is_Number
                and (abs(right) > MAX_EXACT_POWER or abs(left) > 10**15)
            ):
                try:
                    value = float(left) ** float(right)
                except (OverflowError, ZeroDivisionError):
                    value = float("inf")
                if not isinstance(value, float) or not math.isfinite(value):
                    raise self.fail(node, "is not a finite real number")
                return sympy.Float(value)
            return left**right
        if op is ast.Div and right.is_zero:
            raise self.fail(node, "divides by zero")
        return {
            ast.Add: lambda: left + right,
            ast.Sub: lambda: left - right,
            ast.Mult: lambda: left * right,
            ast.Div: lambda: left / right,
        }[op]()

    def call(self, node: ast.Call, depth: int) -> sympy.Expr:
        if not isinstance(node.func, ast.Name):
            self.build(node.func, depth + 1)
            raise self.fail(
                node.func, "is not a function name; allowed functions: " + ", ".join(FUNCTIONS)
            )
        name = node.func.id
        if name not in FUNCTIONS:
            raise self.fail(
                node.func, "is not an allowed function; allowed: " + ", ".join(FUNCTIONS)
            )
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise self.fail(
                node, "passes keyword or starred arguments; give positional arguments only"
            )
        fn, arity = FUNCTIONS[name]
        n = len(node.args)
        if (arity is not None and n != arity) or (arity is None and n < 2):
            want = (
                f"{arity} argument" + ("s" if arity != 1 else "")
                if arity
                else "two or more arguments"
            )
            raise self.fail(node, f"takes {want}, got {n}")
        return fn(*(self.build(a, depth + 1) for a in node.args))


def coordinates(free, energy) -> list[str]:
    """The energy's coordinates, z1, z2, ... (or z_1, ...), in order; a name like z01 is refused (it
    would be read as z1's twin)."""
    out, seen = [], {}
    for n in free:
        if n[:1] != "z" or not n.lstrip("z_").isdigit():
            continue
        digits = n.lstrip("z_")
        if digits.startswith("0"):
            raise ValueError(
                f"{n!r} in the energy {energy!r}: name coordinates z1, z2, ... (no leading zero, "
                "no z0)"
            )
        if int(digits) in seen:
            raise ValueError(
                f"{seen[int(digits)]!r} and {n!r} in the energy name one coordinate twice"
            )
        seen[int(digits)] = n
        out.append(n)
    return sorted(out, key=lambda n: int(n.lstrip("z_")))


def named_as_written(state: list[str]) -> tuple[str, ...] | None:
    """Concept names for coordinates that are not z1..zn in a row (z2 alone is c2, never c1); None
    otherwise."""
    index = [int(n.lstrip("z_")) for n in state]
    return None if index == list(range(1, len(index) + 1)) else tuple(f"c{k}" for k in index)
