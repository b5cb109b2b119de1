"""The paper's toy models of learning in concept space, as energy landscapes.

Three families (see ``docs/theory.md``):

``notebook``
    The authors' own simulation (``sim.ipynb``, the model behind their Fig. 5), verbatim:
    dz/dt = -∇E with E = s[(1-z1)²/(4a) + a(1-z2)²/4 + a(α-z1)²/4 + (α-z2)²/(4a)],
    α(t) = sigmoid(k(t - t0)). One shared gate; the biased target slides with a.
``eq1``
    Eq. 1 reconstructed (reconstruction R): per concept i, a well at the biased target z̃_i that
    hands over to a well at the true target ẑ_i through a sigmoid gate S_i(t) timed at t_i:
    E = ½ Σ_i λ_i [(1 - S_i)(z_i - z̃_i)² + S_i (z_i - ẑ_i)²], S_i = sigmoid(k_i (t - t_i)).
``coupled``
    eq1 whose switches are timed by the other concepts, not by the clock (an extension, not in the
    paper): concept i heads to its true target ẑ_i until the others have been learned, then settles
    into its bias z̃_i: E = ½ Σ_i λ_i [(1 - G_i)(z_i - ẑ_i)² + G_i (z_i - z̃_i)²],
    G_i = sigmoid(κ (P_i - θ)), P_i = mean_j≠i [1 - (z_j - ẑ_j)²] the others' progress.
``eq2``
    Eq. 2 (underspecification): eq1 whose first concept's true target moves linearly with the
    masking fraction p: ẑ_1(p) = ẑ_1 (1 - β p) (U1; ẑ_1 = 1 gives 1 - βp). ``eq2-split`` is the
    alternative U2, which splits the final well: S_1 λ_1 [(1-p)(z_1-ẑ_1)² + βp z_1²] / 2.

Any other landscape: :func:`theory.models.user_energy.from_expression` turns an energy written as
a string or sympy expression into a :class:`~theory.models.landscape.Landscape`, gradients included.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable, Mapping, Sequence

import numpy as np
import sympy

from theory.models.landscape import T, Landscape, Param, sigmoid

DEFAULT_CONCEPTS = {2: ("color", "size")}
MAX_CONCEPTS = 32  # a model's or energy's coordinates (32 compile in about 7 s; 1,000 took minutes)


# The one table of the built-in models: name -> builder, in the order --help lists them. Each model
# is named once, where it is defined (@_model); FITTABLE: the ones a single run's path is fitted to
# (fitting.estimators.model_fit; their parameters are the ones a path pins down).
MODELS: dict[str, Callable[..., Landscape]] = {}
FITTABLE: list[str] = []


def _model(name: str, *, fittable: bool = False):
    def add(build: Callable[..., Landscape]) -> Callable[..., Landscape]:
        MODELS[name] = build
        if fittable:
            FITTABLE.append(name)
        return build

    return add


def _shared(factory: Callable[..., Landscape]) -> Callable[..., Landscape]:
    """Landscapes are immutable: build (and compile) each (n, concepts) once per process."""
    cached = lru_cache(maxsize=None)(factory)

    def build(n: int = 2, concepts: Sequence[str] | None = None) -> Landscape:
        return cached(int(n), None if concepts is None else tuple(concepts))

    build.__doc__, build.__name__ = factory.__doc__, factory.__name__
    return build


def _concept_names(n: int, concepts: Sequence[str] | None) -> tuple[str, ...]:
    if concepts is None:
        concepts = DEFAULT_CONCEPTS.get(n, tuple(f"c{i + 1}" for i in range(n)))
    concepts = tuple(concepts)
    if len(concepts) != n or n < 1:
        raise ValueError(f"need one name per concept ({n}), got {concepts}")
    return concepts


def _vector(name: str, n: int, default: Sequence[float], doc: str, **bounds) -> Param:
    syms = tuple(sympy.Symbol(f"{name}_{i + 1}", real=True) for i in range(n))
    return Param(name, syms, tuple(float(v) for v in default), doc, vector=True, **bounds)


def _scalar(name: str, default: float, doc: str, **bounds) -> Param:
    return Param(name, (sympy.Symbol(name, real=True),), (float(default),), doc, **bounds)


@_model("notebook", fittable=True)
@lru_cache(maxsize=None)
def notebook() -> Landscape:
    """The authors' notebook model (sim.ipynb, cell 1): 2 concepts (color, size), one shared
    gate."""
    z1, z2 = sympy.symbols("z_1 z_2", real=True)
    a, s, k, t0 = (
        _scalar("a", 2.0, "concept-signal ratio; a > 1: size stronger", low=0, open_low=True),
        _scalar("s", 3.0, "speed", low=0, open_low=True),
        _scalar("k", 0.1, "gate sharpness", low=0, open_low=True),
        _scalar("t0", 10.0, "gate time"),
    )
    A, S, K, T0 = (p.symbols[0] for p in (a, s, k, t0))
    alpha = sigmoid(K * (T - T0))
    energy = S * (
        (1 - z1) ** 2 / (4 * A)
        + A * (1 - z2) ** 2 / 4
        + A * (alpha - z1) ** 2 / 4
        + (alpha - z2) ** 2 / (4 * A)
    )
    return Landscape(
        "notebook",
        energy,
        (z1, z2),
        ("color", "size"),
        (a, s, k, t0),
        (0.5, 0.5),
        doc="The authors' simulation notebook (verbatim ODE); a in linspace(1, 5, 15) in their "
        "figure.",
    )


def _eq1_parts(n: int, concepts: Sequence[str] | None, z_bias_default: Sequence[float]):
    names = _concept_names(n, concepts)
    z = tuple(sympy.Symbol(f"z_{i + 1}", real=True) for i in range(n))
    rest = [1.0] * (n - 1)
    params = [
        _vector(
            "lam",
            n,
            [1.0] * n,
            "stiffness λ_i (concept signal); larger: learned faster",
            low=0,
            open_low=True,
        ),
        _vector("t_switch", n, [6.0] + [0.0] * (n - 1), "gate time t_i: when concept i is learned"),
        _vector("k", n, [2.0] * n, "gate sharpness k_i", low=0, open_low=True),
        _vector(
            "z_bias", n, z_bias_default, "biased target z̃_i (before the switch)", low=0, high=1
        ),
        _vector("z_target", n, [1.0] + rest, "true target ẑ_i (after the switch)", low=0, high=1),
    ]
    lam, ts, k, zb, zt = (p.symbols for p in params)
    gates = [sigmoid(k[i] * (T - ts[i])) for i in range(n)]
    return names, z, params, lam, zb, zt, gates


@_model("eq1", fittable=True)
@_shared
def eq1(n: int = 2, concepts: Sequence[str] | None = None) -> Landscape:
    """Eq. 1 (reconstruction R): concept i hands over from the biased to the true target at t_i.

    Defaults are class 11 with size the stronger concept (clockwise turn): λ = (1, 1), k = 2,
    t_switch = (6, 0), z̃ = (0, 1), ẑ = (1, 1), z(0) = (0.5, 0.5).
    """
    names, z, params, lam, zb, zt, S = _eq1_parts(n, concepts, [0.0] + [1.0] * (n - 1))
    energy = sum(
        lam[i] / 2 * ((1 - S[i]) * (z[i] - zb[i]) ** 2 + S[i] * (z[i] - zt[i]) ** 2)
        for i in range(n)
    )
    return Landscape(
        "eq1", energy, z, names, tuple(params), (0.5,) * n, doc=eq1.__doc__.split("\n")[0]
    )


@_model("coupled")
@_shared
def coupled(n: int = 2, concepts: Sequence[str] | None = None) -> Landscape:
    """eq1 with state-timed switches: a concept memorizes its bias once the other concepts are
    learned.

    Concept i heads to its true target ẑ_i until the others' mean progress toward their own targets,
    P_i = mean_j≠i [1 - (z_j - ẑ_j)²], passes θ; then its well moves to the bias z̃_i. The gate G_i
    is held in the flow (:attr:`Landscape.held`): each concept descends its own wells, dz_i/dt =
    -λ_i [(1 - G_i)(z_i - ẑ_i) + G_i (z_i - z̃_i)], and the gate pulls on no one. (As a gradient of
    one energy, the gate's pull would let a concept held at its target stall the others for good.)
    Every coordinate stays between its targets. Defaults: class 11, color faster than size, color
    memorizes toward 0 once size's progress passes 0.75 (z_size = 0.5), from z0 = 0.2.
    """
    if n < 2:
        raise ValueError(
            "the coupled model times each concept's switch by the others: it needs at least 2 "
            f"concepts, got {n}"
        )
    names = _concept_names(n, concepts)
    z = tuple(sympy.Symbol(f"z_{i + 1}", real=True) for i in range(n))
    params = _coupled_params(n)
    lam, zt, zb = (p.symbols for p in params[:3])
    kappa, theta = params[3].symbols[0], params[4].symbols[0]
    gates = tuple(sympy.Symbol(f"G_{i + 1}", real=True) for i in range(n))
    progress = [1 - (z[j] - zt[j]) ** 2 for j in range(n)]
    held = tuple(
        (
            gates[i],
            sigmoid(kappa * (sum(progress[j] for j in range(n) if j != i) / (n - 1) - theta)),
        )
        for i in range(n)
    )
    energy = sum(
        lam[i] / 2 * ((1 - gates[i]) * (z[i] - zt[i]) ** 2 + gates[i] * (z[i] - zb[i]) ** 2)
        for i in range(n)
    )
    return Landscape(
        "coupled",
        energy,
        z,
        names,
        params,
        (0.2,) * n,
        held=held,
        doc=coupled.__doc__.split("\n")[0],
    )


def _coupled_params(n: int) -> tuple:
    """The coupled model's parameters: per-concept stiffness, targets and biases, and the gate's κ,
    θ."""
    return (
        _vector(
            "lam",
            n,
            [1.0] + [0.4] * (n - 1),
            "stiffness λ_i (concept signal); larger: learned faster",
            low=0,
            open_low=True,
        ),
        _vector(
            "z_target", n, [1.0] * n, "true target ẑ_i, the well before the switch", low=0, high=1
        ),
        _vector(
            "z_bias",
            n,
            [0.0] + [1.0] * (n - 1),
            "bias z̃_i the concept settles in after the switch",
            low=0,
            high=1,
        ),
        _scalar("kappa", 20.0, "gate sharpness κ (per unit of progress)", low=0, open_low=True),
        _scalar(
            "theta",
            0.75,
            "the others' mean progress 1 - (z_j - ẑ_j)² at which the switch is half done",
        ),
    )


def _masked_parts(n: int, concepts: Sequence[str] | None):
    """Eq. 2's parts: eq1's (concepts default to (color, shape); the first, the masked one, has no
    bias) with the masking fraction p and β among the parameters, and their symbols P and B."""
    concepts = concepts if concepts is not None or n != 2 else ("color", "shape")
    names, z, params, lam, zb, zt, S = _eq1_parts(n, concepts, [0.0] + [1.0] * (n - 1))
    p = _scalar("p", 0.5, "masking fraction of the prompts of the masked class", low=0, high=1)
    beta = _scalar("beta", 1.0, "impact of underspecification β", low=0)
    return names, z, (*params, p, beta), lam, zb, zt, S, p.symbols[0], beta.symbols[0]


def _check_shift(arrays: Mapping[str, np.ndarray]) -> None:
    bp = arrays["beta"][:, 0] * arrays["p"][:, 0]
    if np.any(bp > 1 + 1e-12):
        raise ValueError(
            f"eq2: beta * p = {bp.max():g} > 1 would move the target z_target_1 * (1 - beta p) "
            "below 0; "
            "valid: beta * p in [0, 1]"
        )


@_model("eq2", fittable=True)
@_shared
def eq2(n: int = 2, concepts: Sequence[str] | None = None) -> Landscape:
    """Eq. 2, form U1: eq1 with the first concept's true target ẑ_1(p) = ẑ_1 (1 - β p).

    Concepts default to (color, shape) as in the paper's Sec. 5; the first concept is the masked
    one.
    """
    names, z, params, lam, zb, zt, S, P, B = _masked_parts(n, concepts)
    target = [zt[0] * (1 - B * P), *zt[1:]]
    energy = sum(
        lam[i] / 2 * ((1 - S[i]) * (z[i] - zb[i]) ** 2 + S[i] * (z[i] - target[i]) ** 2)
        for i in range(n)
    )
    return Landscape(
        "eq2",
        energy,
        z,
        names,
        params,
        (0.5,) * n,
        check=_check_shift,
        doc="Eq. 2 (U1): the true target of the first concept shifts linearly with the masking "
        "fraction p.",
    )


@_model("eq2-split")
@_shared
def eq2_split(n: int = 2, concepts: Sequence[str] | None = None) -> Landscape:
    """Eq. 2, form U2: the final well of the first concept is split between ẑ_1 (weight 1-p) and 0
    (weight βp)."""
    names, z, params, lam, zb, zt, S, P, B = _masked_parts(n, concepts)
    final = [(1 - P) * (z[0] - zt[0]) ** 2 + B * P * z[0] ** 2] + [
        (z[i] - zt[i]) ** 2 for i in range(1, n)
    ]
    energy = sum(
        lam[i] / 2 * ((1 - S[i]) * (z[i] - zb[i]) ** 2 + S[i] * final[i]) for i in range(n)
    )
    return Landscape(
        "eq2-split",
        energy,
        z,
        names,
        params,
        (0.5,) * n,
        check=_check_split,
        doc="Eq. 2 (U2): the first concept's final well splits into ẑ_1 (weight 1-p) and 0 "
        "(weight βp).",
    )


def _check_split(arrays: Mapping[str, np.ndarray]) -> None:
    if np.any(arrays["beta"][:, 0] * arrays["p"][:, 0] + (1 - arrays["p"][:, 0]) <= 0):
        raise ValueError(
            "eq2-split: the split well needs (1 - p) + beta * p > 0 (beta > 0 when p = 1)"
        )


def get_model(name: str, n: int | None = None) -> Landscape:
    """A built-in model by name (``n`` concepts for eq1/eq2; the notebook model has 2)."""
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; valid: {', '.join(MODELS)}")
    if name == "notebook":
        if n not in (None, 2):
            raise ValueError("the notebook model has exactly 2 concepts (color, size)")
        return notebook()
    return MODELS[name]() if n is None else MODELS[name](n)
