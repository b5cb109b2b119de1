"""The two step readers every event time rests on (fitting.estimators.curves), as hypothesis properties.

``threshold_step``: the first checkpoint from which a curve holds a level for ``persist`` checkpoints;
``settled_step``: the first from which it holds it to the end of the log. Each is checked against its
definition written the slow way, and for what an event time must do: a curve that is higher everywhere, a
lower level or a shorter hold is read no later; the settled step is never before the first crossing; a missing
reading (NaN) is below every level.
"""

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from fitting.estimators.curves import settled_step, threshold_step

NEVER = math.inf
value = st.one_of(st.floats(0, 1), st.just(math.nan))
curve = st.lists(value, min_size=1, max_size=30).map(np.array)
level = st.floats(0, 1)
persist = st.integers(1, 6)


def steps_of(y: np.ndarray) -> np.ndarray:
    return 100.0 * np.arange(1, y.size + 1) + 7.0


def late(step: float | None) -> float:
    return NEVER if step is None else step


def threshold_by_definition(y, lv, k):
    steps = steps_of(y)
    for i in range(y.size - k + 1):
        if all(v >= lv for v in y[i : i + k]):  # NaN >= lv is False
            return float(steps[i])
    return None


def settled_by_definition(y, lv):
    steps = steps_of(y)
    for i in range(y.size):
        if all(v >= lv for v in y[i:]):
            return float(steps[i])
    return None


@given(curve, level, persist)
def test_threshold_step_is_its_definition(y, lv, k):
    assert threshold_step(steps_of(y), y, lv, persist=k) == threshold_by_definition(y, lv, k)


@given(curve, level)
def test_settled_step_is_its_definition(y, lv):
    assert settled_step(steps_of(y), y, lv) == settled_by_definition(y, lv)


@given(curve, st.lists(st.floats(0, 1), min_size=30, max_size=30), level, persist)
def test_a_curve_higher_everywhere_is_read_no_later(y, lift, lv, k):
    higher = np.where(
        np.isnan(y), np.array(lift[: y.size]), np.fmin(1.0, y + np.array(lift[: y.size]))
    )
    s = steps_of(y)
    assert late(threshold_step(s, higher, lv, persist=k)) <= late(
        threshold_step(s, y, lv, persist=k)
    )
    assert late(settled_step(s, higher, lv)) <= late(settled_step(s, y, lv))


@given(curve, level, level, persist, persist)
def test_a_higher_level_or_a_longer_hold_is_read_no_earlier(y, a, b, k, m):
    (lo, hi), (short, long) = sorted((a, b)), sorted((k, m))
    s = steps_of(y)
    assert late(threshold_step(s, y, hi, persist=short)) >= late(
        threshold_step(s, y, lo, persist=short)
    )
    assert late(threshold_step(s, y, lo, persist=long)) >= late(
        threshold_step(s, y, lo, persist=short)
    )
    assert late(settled_step(s, y, hi)) >= late(settled_step(s, y, lo))


@given(curve, level, persist)
def test_settled_is_never_before_the_first_crossing_and_holds_to_the_end(y, lv, k):
    s = steps_of(y)
    settled = settled_step(s, y, lv)
    assert late(settled) >= late(threshold_step(s, y, lv))
    if settled is not None:
        rest = y[s >= settled]
        assert rest.size and (rest >= lv).all()
        # holding to the end is holding for as long as the log has left
        assert threshold_step(s, y, lv, persist=min(k, rest.size)) is not None
