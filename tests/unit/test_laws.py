"""The law registry (fitting/laws.py): names parse to the switches of fitting.pooled.fit_law, in one place."""

import pytest

from fitting.laws import PARTS, from_flags, listing, parse
from fitting.pooled import Law


def test_a_name_sets_the_switches_and_reads_back_canonical():
    spec = parse("memorize+onset+compete+mean")
    assert (spec.base, spec.order, spec.gate) == ("memorize", "target-first", "time")
    assert spec.onset and spec.compete and spec.discrepancy == "mean" and not spec.masked
    assert parse("memorize+compete+onset+mean").name == spec.name == "memorize+compete+onset+mean"
    assert parse(" eq2 ").masked and parse("coupled").gate == "state"


@pytest.mark.parametrize("model", [n for n, p in PARTS.items() if p.kind == "base"])
@pytest.mark.parametrize(
    "onset, compete, discrepancy", [(False, False, None), (True, True, "local")]
)
def test_the_older_flags_spell_the_same_laws(model, onset, compete, discrepancy):
    spec = from_flags(model, onset, compete, discrepancy)
    assert spec == parse(spec.name) and spec.base == model
    assert (spec.onset, spec.compete, spec.discrepancy) == (onset, compete, discrepancy)


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
