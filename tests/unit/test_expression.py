"""The energy parser: a whitelist that builds sympy expressions and never runs the text."""

from __future__ import annotations

import builtins
import math
import time

import pytest
import sympy
from hypothesis import given
from hypothesis import strategies as st

from theory.models import expression
from theory.models.expression import ExpressionError, parse
from theory.models.landscape import T
from theory.simulate import main as simulate

INJECTIONS = [
    "__import__('os').system('touch {canary}')",
    "z1 + __import__('os').system('touch {canary}')",
    "z1 + eval(\"__import__('os').system('touch {canary}')\")",
    "z1 + exec(\"open('{canary}', 'w')\")",
    "z1 + open('{canary}', 'w').write('x')",
    "z1 + (lambda: __import__('os').system('touch {canary}'))()",
    "z1 + [__import__('os').system('touch {canary}') for _ in (1,)][0]",
    "z1 + f\"{{__import__('os').system('touch {canary}')}}\"",
    "z1 + ().__class__.__bases__[0].__subclasses__()[0]",
    "z1 + z1.__class__",
    "z1 + exp.__globals__['os'].system('touch {canary}')",
    "z1 + sympy.sys.modules['os'].system('touch {canary}')",
    "z1 + getattr(z1, '__class__')",
    "z1 + compile('1', 'x', 'eval')",
    "z1 + globals()['__builtins__']",
    "z1 + (a := 1)",
    "z1 + exp(x=1)",
    "z1 + exp(*[1])",
    "z1 + {{1: 2}}[1]",
    "z1 + 'text'",
    "z1 + b'bytes'",
    "z1 + 1j",
    "z1 + True",
    "z1 if z1 else z1",
    "z1 < 1",
    "z1 and z1",
    "z1; __import__('os').system('touch {canary}')",
    "import os",
    "z1\n__import__('os').system('touch {canary}')",
    "_z1 + z1",
    "__builtins__",
    "z1 + Symbol('x')",
    "z1 + Function('f')(z1)",
    "z1 + sympify('1')",
    "z1 + S(1)",
    "z1 + x.y",
    "z1 + " + "(" * 300 + "1" + ")" * 300,
    "z1 + " + "-" * 5000 + "1",
    "z1 + " + "+".join(["z1"] * 1500),
    "z1 + 9**9**9**9",
    "z1 \x00",
]


@pytest.mark.parametrize("attempt", INJECTIONS)
def test_injection_attempts_raise_and_run_nothing(attempt, tmp_path, monkeypatch):
    canary = tmp_path / "ran"
    text = attempt.format(canary=canary)
    called = []
    real_import = builtins.__import__

    def spy(name, *args, **kwargs):  # nothing may be imported while the text is read
        called.append(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", spy)
    start = time.perf_counter()
    with pytest.raises(ExpressionError):
        parse(text)
    monkeypatch.setattr(builtins, "__import__", real_import)
    assert time.perf_counter() - start < 5
    assert not canary.exists()
    assert "os" not in called


@pytest.mark.parametrize("attempt", INJECTIONS[:8])
def test_injection_through_the_cli_exits_2_and_writes_nothing(attempt, tmp_path, capsys):
    canary = tmp_path / "ran"
    out = tmp_path / "out"
    code = simulate(["--energy", attempt.format(canary=canary), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert not canary.exists() and not out.exists()
    assert err.startswith("python -m theory.simulate: error: ") and err.count("\n") == 1


def test_the_cli_error_names_the_token_and_column(capsys):
    assert (
        simulate(
            ["--energy", "a*(z1-1)**2 + (z2-1)**2 + __import__('os').system('x')", "--param", "a=1"]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "'__import__'" in err and "column 27" in err


def test_the_paper_style_energy_parses_to_the_same_expression():
    z1, z2, lam = sympy.symbols("z1 z2 lam")
    got = parse("lam/2*(z1 - sigmoid(t - 5))**2 + (z2 - 1)**2/2", symbols={"t": T})
    want = lam / 2 * (z1 - (1 + sympy.tanh((T - 5) / 2)) / 2) ** 2 + (z2 - 1) ** 2 / 2
    assert sympy.simplify(got - want) == 0


@pytest.mark.parametrize(
    "text, value",
    [
        ("2**3", 8),
        ("-z1 + 1", 0.5),
        ("+z1", 0.5),
        ("abs(-2)", 2),
        ("Max(z1, 0.7, 0.1)", 0.7),
        ("min(z1, 0.2)", 0.2),
        ("exp(0)", 1),
        ("log(exp(2))", 2),
        ("sqrt(4)", 2),
        ("pi", math.pi),
        ("1e-3*z1", 5e-4),
        ("cosh(0) + sinh(0) + tanh(0) + cos(0) + sin(0) + tan(0) + atan(0)", 2),
    ],
)
def test_allowed_forms_evaluate_to_their_value(text, value):
    expr = parse(text).subs(sympy.Symbol("z1"), 0.5)
    assert float(expr) == pytest.approx(value)


@pytest.mark.parametrize(
    "text, words",
    [
        ("", "empty"),
        ("   ", "empty"),
        ("z1 +", "cannot parse"),
        ("exp(1, 2)", "takes 1 argument"),
        ("Min(z1)", "two or more"),
        ("exp", "is a function"),
        ("z1/0", "divides by zero"),
        ("foo(z1)", "not an allowed function"),
        ("z1 + 1e999", "finite"),
    ],
)
def test_bad_forms_name_the_problem(text, words):
    with pytest.raises(ExpressionError, match=words):
        parse(text)


def test_huge_constant_powers_are_floats_not_hangs():
    start = time.perf_counter()
    value = parse("2**0.5**2 + 9**9**2")
    with pytest.raises(ExpressionError, match="not a finite real number"):
        parse("9**9**9**9")
    with pytest.raises(ExpressionError, match="not a finite real number"):
        parse("(-8)**(1/3**(-70))")
    assert time.perf_counter() - start < 1
    assert float(value) == pytest.approx(2**0.25 + 9.0**81)


@given(st.text(max_size=200))
def test_random_text_is_an_expression_or_an_expression_error(text):
    try:
        out = parse(text)
    except ExpressionError:
        return
    assert isinstance(out, sympy.Basic)


@given(st.text(alphabet="z12t+-*/()., eaxplogsqrtinhm_", max_size=80))
def test_formula_like_text_is_an_expression_or_an_expression_error(text):
    try:
        parse(text)
    except ExpressionError:
        pass


def test_limits_are_what_the_docs_say():
    assert expression.MAX_LENGTH == 2000
    text = "z1" + "+1" * 1000
    with pytest.raises(ExpressionError, match=f"{len(text)} characters"):
        parse(text)
