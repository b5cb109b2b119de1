"""Logged readings: the saved list form in last.pt round-trips, and a malformed row is refused by name."""

import pytest

from empirical.runlog import Logged


def test_saved_form_round_trips():
    point = Logged(40, "11", (0.25, 1.0), 0.5)
    assert point.to_list() == [40, "11", [0.25, 1.0], 0.5]
    assert Logged.from_list(point.to_list()) == point


@pytest.mark.parametrize("row", [[40, "11", [0.5]], [40, "11", 0.5, 0.5], ["x", "11", [0.5], 0.5], None])
def test_a_malformed_row_is_refused(row):
    with pytest.raises(ValueError, match="is not a logged point"):
        Logged.from_list(row)
