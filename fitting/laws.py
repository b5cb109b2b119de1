"""The pooled laws of ``python -m fitting.predict`` by name: a base model and its options, joined by '+'.

  --law memorize+onset+compete+mean
  --list-laws                            every part, one line each

A law is one base (how each run's switch goes), then any options (one more shared coefficient each), then
at most one discrepancy (what is added to every predicted path). :data:`PARTS` lists them; :func:`parse`
reads a name and refuses, in one place, what does not combine. The law itself (its coefficients, bounds
and starts) is :class:`fitting.pooled.Law`; a part here says which of its switches it sets. Adding a part
is one entry of :data:`PARTS` (and, for a new coefficient, its switch in ``Law``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

BASE, OPTION, DISCREPANCY = "base", "option", "discrepancy"


@dataclass(frozen=True)
class Part:
    """One named piece of a law: its kind, one line for ``--list-laws``, and what it sets."""

    kind: str
    summary: str
    sets: dict = field(default_factory=dict)


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
        "eq1 whose masked concept's target shifts with the run's masking fraction p (needs --masked)",
        {"order": "bias-first", "gate": "time", "masked": True},
    ),
    "onset": Part(
        OPTION, "+ t_on: the clock starts at step t_on (nothing readable before)", {"onset": True}
    ),
    "compete": Part(
        OPTION,
        "+ c_lam: a concept's speed also follows its signal's lead over the other concepts",
        {"compete": True},
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


@dataclass(frozen=True)
class LawSpec:
    """A parsed law: its canonical name and the switches of :func:`fitting.pooled.fit_law` it sets."""

    name: str
    base: str
    order: str
    gate: str
    masked: bool = False
    onset: bool = False
    compete: bool = False
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
    settings: dict = {}
    for n in ordered:
        settings.update(PARTS[n].sets)
    return LawSpec("+".join(ordered), ordered[0], **settings)


def from_flags(model: str, onset: bool, compete: bool, discrepancy: str | None) -> LawSpec:
    """The law the older flags (--model, --onset, --compete, --discrepancy) spelled."""
    parts = [model] + ["onset"] * onset + ["compete"] * compete + [discrepancy] * bool(discrepancy)
    return parse("+".join(parts))


def listing() -> str:
    """Every part, one line each, grouped by kind (``--list-laws``)."""
    lines = ["a law: BASE[+OPTION...][+DISCREPANCY], e.g. memorize+onset+compete+mean"]
    for kind in (BASE, OPTION, DISCREPANCY):
        lines.append(f"{kind}:")
        lines += [f"  {n:<9} {p.summary}" for n, p in PARTS.items() if p.kind == kind]
    return "\n".join(lines)
