"""Logged readings: the saved forms (last.pt lists, elicitation JSON) round-trip, old forms still load, a missing
point survives, and a malformed row is refused by name."""

import math

import pytest

from empirical.training.runlog import Logged, wilson


def test_saved_form_round_trips():
    point = Logged(
        40, "11", (0.25, 1.0), 0.5, shares={"01": 0.5, "11": 0.5, "unreadable": 0.0}, samples=64
    )
    assert point.to_list() == [
        40,
        "11",
        [0.25, 1.0],
        0.5,
        {"01": 0.5, "11": 0.5, "unreadable": 0.0},
        64,
    ]
    assert Logged.from_list(point.to_list()) == point


def test_old_four_field_rows_still_load():
    assert Logged.from_list([40, "11", [0.25, 1.0], 0.5]) == Logged(40, "11", (0.25, 1.0), 0.5)


def test_a_missing_point_round_trips_as_null_in_json():
    point = Logged(0, "11", (math.nan, math.nan), 0.0, "reach=1", {"unreadable": 1.0}, 64, 0.0)
    doc = point.to_json()
    assert (
        doc["z"] is None
        and doc["interval"] == list(wilson(0, 64))
        and doc["selection_accuracy"] == 0.0
    )
    back = Logged.from_json(0, "11", doc)
    assert (
        back.z == ()
        and back.accuracy == 0.0
        and back.shares == {"unreadable": 1.0}
        and back.samples == 64
    )
    assert (
        Logged.from_json(5, "11", [[0.1, 0.9], 0.25, "strength=2"]).setting == "strength=2"
    )  # the old list form


def test_wilson_interval_covers_the_estimate_and_narrows_with_samples():
    lo, hi = wilson(16, 32)
    assert lo < 0.5 < hi and hi - lo > wilson(64, 128)[1] - wilson(64, 128)[0]
    assert wilson(0, 64)[0] == 0.0 and wilson(64, 64)[1] == 1.0 and wilson(0, 0) == (0.0, 1.0)
    assert abs(hi - lo - 2 * 1.96 * math.sqrt(0.25 / 32) / (1 + 1.96**2 / 32)) < 0.02


@pytest.mark.parametrize(
    "row",
    [
        [40, "11", [0.5]],
        [40, "11", 0.5, 0.5],
        ["x", "11", [0.5], 0.5],
        None,
        [40, "11", [0.5], 0.5, {}],
        [40, "11", [0.5], 0.5, [], 3],
    ],
)
def test_a_malformed_row_is_refused(row):
    with pytest.raises(ValueError, match="is not a logged point"):
        Logged.from_list(row)


@pytest.mark.parametrize(
    "entry,message",
    [
        ({"z": [2.0], "accuracy": 0.5}, "z is not"),
        ({"z": None, "accuracy": 1.5}, "accuracy"),
        ({"z": None, "accuracy": 0.5, "samples": -1}, "samples"),
        ("x", "not a reading"),
    ],
)
def test_a_malformed_elicitation_entry_is_refused(entry, message):
    with pytest.raises(ValueError, match=message):
        Logged.from_json(0, "11", entry)
