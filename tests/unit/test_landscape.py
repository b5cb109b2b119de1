"""Landscapes: sympy gradients against finite differences and hand-written ODEs; numba vs numpy; validation."""

import numpy as np
import pytest
import sympy
from hypothesis import given
from hypothesis import strategies as st

from theory.models.landscape import T, sigmoid
import reference
from theory.models.paper import (
    MODELS,
    coupled,
    eq1,
    eq2,
    eq2_split,
    get_model,
    notebook,
)
from theory.models.user_energy import from_expression

unit = st.floats(0, 1)
MODEL_NAMES = list(MODELS)
GRADIENT_MODELS = [
    name for name in MODELS if not get_model(name).held
]  # coupled holds its gates: not one energy's gradient


def random_values(land, rng):
    """A valid random parameter setting for a built-in model."""
    v = {}
    for p in land.params:
        lo = 0.05 if p.low is not None else -5.0
        hi = p.high if p.high is not None else 5.0
        v[p.name] = rng.uniform(lo, hi, p.size)
    if "p" in v:
        v["beta"] = rng.uniform(0, 1, 1)
    return {k: (x if land.param(k).vector else float(x[0])) for k, x in v.items()}


@pytest.mark.parametrize("name", GRADIENT_MODELS)
@given(seed=st.integers(0, 2**32 - 1))
def test_sympy_gradient_matches_finite_differences(name, seed):
    land = get_model(name)
    rng = np.random.default_rng(seed)
    values = random_values(land, rng)
    t, z = rng.uniform(0, 20), rng.uniform(-0.2, 1.2, land.dim)
    rhs = land.gradient_flow(values)(t, z)
    h = 1e-6
    fd = np.array(
        [
            (land.energy_at(t, z + h * e, values) - land.energy_at(t, z - h * e, values)) / (2 * h)
            for e in np.eye(land.dim)
        ]
    )
    np.testing.assert_allclose(rhs, -fd, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_numba_flow_equals_numpy_flow(name):
    land = get_model(name)
    rng = np.random.default_rng(1)
    for _ in range(50):
        arrays = land.resolve(random_values(land, rng))
        p = land.pack(arrays)[0]
        t, z = rng.uniform(-5, 30), rng.uniform(-0.5, 1.5, land.dim)
        a, b = np.empty(land.dim), np.empty(land.dim)
        land.numpy_flow(t, z, p, a)
        land.numba_flow(t, z, p, b)
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)


def test_numpy_flow_broadcasts_over_a_batch():
    land = eq1()
    rng = np.random.default_rng(2)
    arrays = land.resolve(
        {"lam": rng.uniform(0.1, 3, (7, 2)), "t_switch": rng.uniform(0, 9, (7, 2))}
    )
    P = land.pack(arrays)  # (N, P)
    Z = rng.uniform(0, 1, (7, 2))
    batch = np.empty((2, 7))
    land.numpy_flow(3.0, Z.T, P.T, batch)
    for i in range(7):
        one = np.empty(2)
        land.numpy_flow(3.0, Z[i], P[i], one)
        np.testing.assert_allclose(batch[:, i], one, rtol=1e-14)


@given(
    a=st.floats(0.1, 10),
    s=st.floats(0.1, 5),
    k=st.floats(0.01, 3),
    t0=st.floats(-5, 20),
    t=st.floats(0, 40),
    z1=unit,
    z2=unit,
)
def test_notebook_is_the_authors_ode(a, s, k, t0, t, z1, z2):
    """sim.ipynb cell 1, transcribed: dz1 = s[(1-z1)/(2a) + a/2 (α-z1)], dz2 = s[a/2 (1-z2) + (α-z2)/(2a)]."""
    alpha = 1 / (1 + np.exp(-k * (t - t0)))
    expected = [
        s * ((1 - z1) / (2 * a) + a / 2 * (alpha - z1)),
        s * (a / 2 * (1 - z2) + (alpha - z2) / (2 * a)),
    ]
    got = notebook().gradient_flow({"a": a, "s": s, "k": k, "t0": t0})(t, np.array([z1, z2]))
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 4))
def test_eq1_flow_is_relaxation_to_the_moving_target(seed, n):
    """dz_i/dt = λ_i (m_i(t) - z_i), m_i = z̃_i + S_i (ẑ_i - z̃_i): the closed form of -∇E."""
    land = eq1(n)
    rng = np.random.default_rng(seed)
    v = random_values(land, rng)
    t, z = rng.uniform(0, 20), rng.uniform(0, 1, n)
    S = 1 / (1 + np.exp(-v["k"] * (t - v["t_switch"])))
    m = v["z_bias"] + S * (v["z_target"] - v["z_bias"])
    np.testing.assert_allclose(
        land.gradient_flow(v)(t, z), v["lam"] * (m - z), rtol=1e-9, atol=1e-12
    )


def test_eq2_and_split_coincide_at_beta_one_and_reduce_to_eq1():
    rng = np.random.default_rng(3)
    for _ in range(20):
        v = random_values(eq1(), rng)
        t, z = rng.uniform(0, 20), rng.uniform(0, 1, 2)
        p = rng.uniform(0, 1)
        u1 = eq2().gradient_flow({**v, "p": p, "beta": 1.0})(t, z)
        u2 = eq2_split().gradient_flow({**v, "p": p, "beta": 1.0})(t, z)
        np.testing.assert_allclose(u1, u2, rtol=1e-10, atol=1e-12)
        base = eq1().gradient_flow(v)(t, z)
        for form in (eq2(), eq2_split()):
            np.testing.assert_allclose(
                form.gradient_flow({**v, "p": 0.0})(t, z), base, rtol=1e-12, atol=1e-14
            )
        np.testing.assert_allclose(
            eq2().gradient_flow({**v, "p": p, "beta": 0.0})(t, z), base, rtol=1e-12, atol=1e-14
        )


def test_sigmoid_is_the_logistic_and_does_not_overflow():
    x = sympy.Symbol("x")
    f = sympy.lambdify(x, sigmoid(x), "numpy")
    xs = np.array([-1000.0, -5.0, 0.0, 3.0, 1000.0])
    with np.errstate(over="raise"):
        np.testing.assert_allclose(
            f(xs), [0.0, 1 / (1 + np.exp(5)), 0.5, 1 / (1 + np.exp(-3)), 1.0], atol=1e-15
        )


# ---------------------------------------------------------------------------------------------
# custom energies


def test_from_expression_string_gives_the_gradient_flow():
    land = from_expression(
        "lam/2*(z1 - sigmoid(k*(t - 5)))**2 + (z2 - c)**2/2", {"lam": 2.0, "k": 1.5, "c": 0.3}
    )
    assert land.param_names == ("c", "k", "lam") and land.dim == 2
    t, z = 4.0, np.array([0.2, 0.9])
    S = 1 / (1 + np.exp(-1.5 * (t - 5)))
    np.testing.assert_allclose(
        land.gradient_flow()(t, z), [-2.0 * (0.2 - S), -(0.9 - 0.3)], rtol=1e-12
    )
    np.testing.assert_allclose(
        land.gradient_flow({"lam": 4.0})(t, z)[0], -4.0 * (0.2 - S), rtol=1e-12
    )


def test_from_expression_sympy_and_explicit_state():
    u, v, w = sympy.symbols("u v w")
    land = from_expression(
        w * (u - 1) ** 2 + v**4 * T, {"w": 3.0}, state=["u", "v"], concepts=["color", "size"]
    )
    np.testing.assert_allclose(land.gradient_flow()(2.0, np.array([0.0, 1.0])), [6.0, -8.0])
    assert land.concepts == ("color", "size")


@pytest.mark.parametrize(
    "expr,params,message",
    [
        ("(z1 - a)**2", {}, r"uses \['a'\] but no value"),
        ("(z1 - 1)**2", {"b": 1.0}, "do not appear"),
        ("(x - 1)**2", {"x": 1.0}, "no state variables"),
        ("(z1 - ", {}, "cannot parse"),
    ],
)
def test_from_expression_errors(expr, params, message):
    with pytest.raises(ValueError, match=message):
        from_expression(expr, params)


# ---------------------------------------------------------------------------------------------
# validation


@pytest.mark.parametrize(
    "name,values,message",
    [
        ("eq1", {"lam": (1.0, 0.0)}, r"lam=0 is invalid; valid range is \(0, inf\)"),
        ("eq1", {"lam": (1.0, -2.0)}, "lam=-2"),
        ("eq1", {"k": 0.0}, r"k=0 is invalid"),
        ("eq1", {"z_target": (1.0, 1.5)}, r"z_target=1.5 is invalid; valid range is \[0, 1\]"),
        ("eq1", {"z_bias": (-0.1, 1.0)}, "z_bias=-0.1"),
        ("eq1", {"t_switch": (np.nan, 0.0)}, "t_switch=nan"),
        ("eq1", {"lam": (1.0, 2.0, 3.0)}, "lam needs 2 values"),
        ("eq1", {"z0": (0.5, 1.2)}, r"z0 must lie in \[0, 1\]"),
        (
            "eq1",
            {"alpha": 1.0},
            "no parameter 'alpha'; valid: lam, t_switch, k, z_bias, z_target, z0",
        ),
        ("eq2", {"p": 1.2}, r"p=1.2 is invalid; valid range is \[0, 1\]"),
        ("eq2", {"beta": -1.0}, "beta=-1"),
        ("eq2", {"beta": 3.0, "p": 0.5}, r"beta \* p = 1.5 > 1"),
        ("eq2-split", {"beta": 0.0, "p": 1.0}, "split well needs"),
        ("notebook", {"a": 0.0}, "a=0 is invalid"),
        ("notebook", {"s": -1.0}, "s=-1"),
    ],
)
def test_invalid_parameters_are_named_with_their_valid_range(name, values, message):
    with pytest.raises(ValueError, match=message):
        get_model(name).resolve(values)


def test_batched_resolution_and_mismatched_batches():
    land = eq1()
    arrays = land.resolve(
        {"lam": np.ones((5, 2)), "k": np.linspace(1, 2, 5)[:, None], "z0": (0.1, 0.2)}
    )
    assert (
        arrays["lam"].shape == (5, 2)
        and arrays["k"].shape == (5, 2)
        and arrays["z0"].shape == (5, 2)
    )
    assert land.pack(arrays).shape == (5, 10)
    assert arrays["k"][:, 1].tolist() == np.linspace(1, 2, 5).tolist()
    with pytest.raises(
        ValueError, match="k needs 2 values"
    ):  # (N,) is ambiguous for a vector parameter
        land.resolve({"k": np.linspace(1, 2, 5)})
    with pytest.raises(ValueError, match="disagree on the batch size"):
        land.resolve({"lam": np.ones((5, 2)), "t_switch": np.ones((3, 2))})


def test_notebook_has_two_concepts():
    with pytest.raises(ValueError, match="exactly 2"):
        get_model("notebook", 3)
    with pytest.raises(ValueError, match="unknown model 'eq3'"):
        get_model("eq3")
    assert eq1(3).concepts == ("c1", "c2", "c3") and eq2().concepts == ("color", "shape")


@pytest.mark.parametrize("n", [2, pytest.param(3, marks=pytest.mark.slow)])  # three concepts: 8 s
@given(seed=st.integers(0, 2**32 - 1))
def test_coupled_flow_is_each_concepts_own_descent_with_the_gate_held(n, seed):
    """The coupled flow equals the hand-written ODE, and -∂E/∂z_i with every gate fixed at its current value."""
    land = coupled(n)
    rng = np.random.default_rng(seed)
    values = random_values(land, rng)
    z = rng.uniform(-0.2, 1.2, n)
    rhs = land.gradient_flow(values)(0.0, z)
    np.testing.assert_allclose(rhs, reference.coupled_rhs(**values)(0.0, z), rtol=1e-10, atol=1e-12)
    gates = {
        g: float(
            expr.subs(
                {
                    **dict(zip(land.state, z)),
                    **{
                        s: v
                        for p in land.params
                        for s, v in zip(p.symbols, np.atleast_1d(values[p.name]))
                    },
                }
            )
        )
        for g, expr in land.held
    }
    fixed = sympy.lambdify(
        land.state,
        land.energy.subs(gates).subs(
            {s: v for p in land.params for s, v in zip(p.symbols, np.atleast_1d(values[p.name]))}
        ),
    )
    h = 1e-6
    fd = np.array([(fixed(*(z + h * e)) - fixed(*(z - h * e))) / (2 * h) for e in np.eye(n)])
    np.testing.assert_allclose(rhs, -fd, rtol=1e-6, atol=1e-7)


def test_coupled_needs_two_concepts_and_known_gate_symbols():
    with pytest.raises(ValueError, match="at least 2 concepts"):
        coupled(1)
    z, g, a = sympy.symbols("z_1 G a", real=True)
    with pytest.raises(ValueError, match="gate G uses symbols with no value: \\['a'\\]"):
        type(eq1())("bad", g * z**2, (z,), ("c1",), (), (0.5,), held=((g, a * z),))
