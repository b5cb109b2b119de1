"""The law registry (fitting/estimators/laws.py): names parse to the switches of fitting.estimators.pooled.fit_law, in one place;
a new option is one Term and its line in PARTS."""

import numpy as np
import pytest

from fitting.estimators.laws import OPTION, PARTS, Part, Term, listing, parse
from fitting.estimators.pooled import Law, fit_law
from fitting.analyses.synthetic import TRUE_LAW, sweep_case


def test_a_name_sets_the_switches_and_reads_back_canonical():
    spec = parse("memorize+onset+compete+mean")
    assert (spec.base, spec.order, spec.gate) == ("memorize", "target-first", "time")
    assert spec.options == ("onset", "compete") and spec.discrepancy == "mean" and not spec.masked
    assert parse("memorize+compete+onset+mean").name == spec.name == "memorize+compete+onset+mean"
    assert parse(" eq2 ").masked and parse("coupled").gate == "state"


@pytest.mark.parametrize("name", [n for n, p in PARTS.items() if p.kind == "base"])
def test_every_base_builds_a_law_the_fit_accepts(name):
    spec = parse(name)
    law = Law(2, 1.0, 1.0, masked=0 if spec.masked else None, order=spec.order, gate=spec.gate)
    assert law.size > 0 and ("beta" in law.names) == spec.masked


@pytest.mark.parametrize(
    "text, message",
    [
        ("gp", "unknown part 'gp'"),
        ("eq1+eq1", "a part named twice"),
        ("eq1+memorize", "begin with exactly one base model"),
        ("mean", "begin with exactly one base model"),
        ("eq1+mean+local", "at most one discrepancy"),
    ],
)
def test_what_does_not_combine_is_refused_naming_why(text, message):
    with pytest.raises(ValueError, match=message):
        parse(text)


def test_the_listing_has_a_line_per_part():
    lines = listing().splitlines()
    assert all(any(line.startswith(f"  {name} ") for line in lines) for name in PARTS)


class Boost(Term):
    """A made-up option: every speed times exp(boost)."""

    coefficients = {"boost": (-1.0, 1.0, "")}

    def starts(self, law, data):
        return {"boost": (0.0,)}

    def apply(self, law, col, runs, out):
        out["log_lam"] = out["log_lam"] + col("boost")


def test_a_new_option_is_one_term_and_its_registry_line(monkeypatch):
    monkeypatch.setitem(
        PARTS, "boost", Part(OPTION, "+ boost: every speed x exp(boost)", term=Boost)
    )
    spec = parse("eq1+boost")
    assert spec.name == "eq1+boost" and spec.options == ("boost",) and "  boost " in listing()
    law, base = Law(2, 5000.0, 0.03, options=spec.options), Law(2, 5000.0, 0.03)
    assert law.names == (*base.names, "boost") and law.bounds()[1][-1] == 1.0
    x, target = np.array([[0.01, 0.04]]), np.ones((1, 2))
    boosted = law.params(law.theta(TRUE_LAW | {"boost": 0.5}), x, target)
    plain = base.params(base.theta(TRUE_LAW), x, target)
    np.testing.assert_allclose(boosted["lam"], plain["lam"] * np.exp(0.5), rtol=1e-12)
    np.testing.assert_array_equal(boosted["t_switch"], plain["t_switch"])
    case = sweep_case(np.geomspace(0.005, 0.08, 6), seed=2)
    fit = fit_law(case.trajectories, case.x, options=spec.options)
    assert fit.success and set(fit.coefficients) == {*TRUE_LAW, "boost"}
