"""The pooled laws of ``python -m fitting.predict`` by name, and the terms they are built of.

  --law memorize+onset+compete+mean
  --list-laws                            every part, one line each

A law is one base (how each run's switch goes), then any options, then at most one discrepancy (what
is added to every predicted path). :data:`PARTS` lists them; :func:`parse` reads a name and refuses,
in one place, what does not combine. Each base is a set of :class:`Term` s (the speed, the clock or
the state switch, the bias, the start, eq2's target shift) and each option one more: a term owns its
coefficients (their ranges and units), their starting values, and what it does to every run's
toy-model parameters. :class:`fitting.estimators.pooled_law.Law` puts a law's terms together. Adding
an option is one :class:`Term` here and its line in :data:`PARTS`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, ClassVar, Sequence

import numpy as np
from numpy.typing import NDArray

BASE, OPTION, DISCREPANCY = "base", "option", "discrepancy"
ORDERS = ("bias-first", "target-first")
GATES = ("time", "state")


@dataclass(frozen=True)
class Runs:
    """What a term reads of the runs: ℓ = log(x / x_ref) and each concept's lead over the strongest
    other (both (1, N, D)), the corners ẑ (N, D) and the masking fractions p (N,) (eq2)."""

    ell: NDArray
    lead: NDArray
    target: NDArray
    p: NDArray | None


class Term:
    """A piece of a pooled law. ``coefficients``: the entries of θ it owns, in order: name -> (low,
    high, unit), unit ``rate`` (θ = log of a rate in normalized time: exp(θ) / scale per step),
    ``time`` (θ = log of a normalized time: exp(θ) · scale steps), ``log`` (exp(θ)) or ``""`` (θ
    itself); ``z0`` has one entry per concept. :meth:`starts` gives a few starting values per
    coefficient (the search tries every combination); :meth:`apply` writes the term's part of the
    run parameters (batched B x N x D) into ``out``, reading θ's columns with ``col(name)`` (B, 1,
    1)."""

    coefficients: ClassVar[dict[str, tuple[float, float, str]]] = {}

    def starts(self, law, data) -> dict[str, Sequence]:
        return {}

    def apply(self, law, col: Callable[[str], NDArray], runs: Runs, out: dict) -> None:
        pass


class Speed(Term):
    """λ = λ_ref · exp(b_lam · ℓ): a power of the signal (the theory: ∝ signal). Kept as log λ until
    every term has added to it."""

    coefficients = {"lam_ref": (np.log(0.05), np.log(5e3), "rate"), "b_lam": (-4.0, 4.0, "")}

    def starts(self, law, data):
        return {"lam_ref": np.log([3.0, 15.0, 60.0]), "b_lam": (0.5, 1.0)}

    def apply(self, law, col, runs, out):
        out["log_lam"] = col("lam_ref") + col("b_lam") * runs.ell


class Clock(Term):
    """eq1's clock-timed switch: t_switch = t_ref · exp(b_t · ℓ) (earlier for a stronger signal: b_t
    < 0), rate k."""

    coefficients = {
        "t_ref": (np.log(1e-3), np.log(20.0), "time"),
        "b_t": (-4.0, 4.0, ""),
        "k": (np.log(0.5), np.log(5e3), "rate"),
    }

    def starts(self, law, data):
        b_t = (-1.0, -0.3) if law.order == "bias-first" else (-0.5, 0.5)
        return {"t_ref": np.log([0.15, 0.4]), "b_t": b_t, "k": (np.log(30.0),)}

    def apply(self, law, col, runs, out):
        out["t_switch"] = np.exp(col("t_ref") + col("b_t") * runs.ell)
        out["k"] = np.exp(col("k"))


class Bias(Term):
    """z_bias = ẑ + (1 − 2ẑ) · m · (1 − σ(γ · lead)): toward the training class of the stronger
    concept (the weaker concept at its opposite value, m = 1 fully), none for the stronger one."""

    coefficients = {"m": (0.0, 1.0, ""), "gamma": (np.log(0.05), np.log(100.0), "log")}

    def starts(self, law, data):
        return {"m": (0.5, 1.0), "gamma": (np.log(5.0),)}

    def apply(self, law, col, runs, out):
        s = 1 / (1 + np.exp(-np.exp(col("gamma")) * runs.lead))
        t = runs.target[None]
        out["z_bias"] = t + (1 - 2 * t) * col("m") * (1 - s)


class StateSwitch(Term):
    """The coupled model's switch (no clock): thrown when the other concepts' mean progress passes
    theta, sharpness kappa."""

    coefficients = {"kappa": (np.log(0.5), np.log(500.0), "log"), "theta": (-0.5, 1.5, "")}

    def starts(self, law, data):
        return {"kappa": np.log([10.0, 40.0]), "theta": (0.6, 0.9)}

    def apply(self, law, col, runs, out):
        out["kappa"], out["theta"] = np.exp(col("kappa")), col("theta")


class Start(Term):
    """z0: where every run starts, per concept (shared)."""

    coefficients = {"z0": (0.0, 1.0, "")}

    def starts(self, law, data):
        return {"z0": (np.clip(np.nanmean([y[0] for y in data.y if len(y)], axis=0), 0.05, 0.95),)}

    def apply(self, law, col, runs, out):
        out["z0"] = col("z0")


class TargetShift(Term):
    """eq2 (Sec. 5): the masked concept's target shifts with the run's masking fraction p, ẑ(p) = ẑ
    (1 − β p)."""

    coefficients = {"beta": (0.0, 1.0, "")}

    def starts(self, law, data):
        return {"beta": (0.3, 0.8)}

    def apply(self, law, col, runs, out):
        out["z_target"][:, :, law.masked] *= (
            1 - col("beta")[:, :, 0] * np.asarray(runs.p, float)[None]
        )


class Onset(Term):
    """t_on: eq1's clock starts at t_on, every run waiting at z0 until then (the integrator reads
    it)."""

    coefficients = {"t_on": (np.log(1e-4), np.log(0.5), "time")}

    def starts(self, law, data):
        # half the median first located step (before it the probe reads nothing to follow)
        first = np.median([data.steps[idx[0]] for idx in data.index if len(idx)])
        return {"t_on": (np.log(max(0.5 * float(first) / data.scale, 1e-3)),)}


class Compete(Term):
    """c_lam: a concept's speed also grows with its signal's lead over the strongest other
    concept."""

    coefficients = {"c_lam": (-4.0, 4.0, "")}

    def starts(self, law, data):
        return {"c_lam": (0.0, 1.0)}

    def apply(self, law, col, runs, out):
        out["log_lam"] = out["log_lam"] + col("c_lam") * runs.lead


# θ's layout: the order the package's fits have always used (a fit is reproducible across versions
# only if
# its θ is laid out the same); a coefficient not listed (a new term's) follows, in its term's order
THETA_ORDER = (
    "lam_ref",
    "b_lam",
    "t_ref",
    "b_t",
    "m",
    "gamma",
    "k",
    "kappa",
    "theta",
    "z0",
    "beta",
    "t_on",
    "c_lam",
)


def base_terms(gate: str, masked: bool) -> tuple[Term, ...]:
    """A base's terms, in θ's order: the clock-timed bases, or the coupled model's."""
    if gate == "time":
        return (Speed(), Clock(), Bias(), Start()) + ((TargetShift(),) if masked else ())
    return (Speed(), Bias(), StateSwitch(), Start())


@dataclass(frozen=True)
class Part:
    """One named piece of a law: its kind, one line for ``--list-laws``, what a base sets, an
    option's term."""

    kind: str
    summary: str
    sets: dict = field(default_factory=dict)
    term: type[Term] | None = None


PARTS: dict[str, Part] = {
    "eq1": Part(
        BASE,
        "the bias first, then the true target at a clock-timed switch (the paper's Eq. 1)",
        {"order": "bias-first", "gate": "time"},
    ),
    "memorize": Part(
        BASE,
        "eq1 reversed: the true target first, then the bias (runs that generalize, then memorize)",
        {"order": "target-first", "gate": "time"},
    ),
    "coupled": Part(
        BASE,
        "as memorize, but a concept memorizes once the others are learned (no clock: theta, kappa)",
        {"order": "target-first", "gate": "state"},
    ),
    "eq2": Part(
        BASE,
        "eq1 whose masked concept's target shifts with the run's masking fraction p (needs "
        "--masked)",
        {"order": "bias-first", "gate": "time", "masked": True},
    ),
    "onset": Part(
        OPTION, "+ t_on: the clock starts at step t_on (nothing readable before)", term=Onset
    ),
    "compete": Part(
        OPTION,
        "+ c_lam: a concept's speed also follows its signal's lead over the other concepts",
        term=Compete,
    ),
    "mean": Part(
        DISCREPANCY,
        "+ the training runs' mean residual (observed - law) at each step",
        {"discrepancy": "mean"},
    ),
    "local": Part(
        DISCREPANCY,
        "+ the residuals of the training runs nearest in covariate space",
        {"discrepancy": "local"},
    ),
}


def options_of(names) -> tuple[str, ...]:
    """The options among ``names``, in :data:`PARTS`' order (θ's order)."""
    return tuple(n for n, p in PARTS.items() if p.kind == OPTION and n in names)


@dataclass(frozen=True)
class LawSpec:
    """A parsed law: its canonical name and the settings of
    :func:`fitting.estimators.pooled.fit_law` it names."""

    name: str
    base: str
    order: str
    gate: str
    masked: bool = False
    options: tuple[str, ...] = ()
    discrepancy: str | None = None


def parse(text: str) -> LawSpec:
    """'memorize+onset+mean' -> its LawSpec; ValueError naming the part and what is valid."""
    names = [p.strip() for p in str(text).split("+")]
    unknown = [n for n in names if n not in PARTS]
    if unknown:
        raise ValueError(
            f"--law {text}: unknown part {unknown[0]!r}; valid: {', '.join(PARTS)} (--list-laws)"
        )
    if len(set(names)) != len(names):
        raise ValueError(f"--law {text}: a part named twice")
    kinds = [PARTS[n].kind for n in names]
    if kinds[0] != BASE or kinds.count(BASE) != 1:
        bases = ", ".join(n for n, p in PARTS.items() if p.kind == BASE)
        raise ValueError(f"--law {text}: begin with exactly one base model ({bases})")
    if kinds.count(DISCREPANCY) > 1:
        raise ValueError(f"--law {text}: at most one discrepancy (mean or local)")
    ordered = sorted(
        names, key=lambda n: (list((BASE, OPTION, DISCREPANCY)).index(PARTS[n].kind), n)
    )
    settings: dict = {"options": options_of(names)}
    for n in ordered:
        settings.update(PARTS[n].sets)
    return LawSpec("+".join(ordered), ordered[0], **settings)


def listing() -> str:
    """Every part, one line each, grouped by kind (``--list-laws``)."""
    lines = ["a law: BASE[+OPTION...][+DISCREPANCY], e.g. memorize+onset+compete+mean"]
    for kind in (BASE, OPTION, DISCREPANCY):
        lines.append(f"{kind}:")
        lines += [f"  {n:<9} {p.summary}" for n, p in PARTS.items() if p.kind == kind]
    return "\n".join(lines)
