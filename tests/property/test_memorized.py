"""The memorized corner (fitting.estimators.trajectory_turn.memorized), the registered test's corner event, against its
definition written the slow way (hypothesis), on logs whose shares are continuous (no two corners tie); and the two
readings errata.md item 11 (a) mended after issue #57's test was scored (``as_registered=True`` reads them as the
test registered the reader: its verdict's reading)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from core.sidecar import held_out_of
from core.trajectory import Trajectory
from fitting.estimators.trajectory_turn import memorized

seeds = st.integers(0, 2**32 - 1)


def labels(d: int) -> list[str]:
    return [format(i, f"0{d}b") for i in range(2**d)]


def run_log(seed: int, d: int, n: int = 20) -> list[Trajectory]:
    """Every class of a d-concept run at the same n checkpoints: the training classes' accuracy rising from a
    random checkpoint, the other held-out classes' at 0, the head class (all ones) with a share of its samples read as each corner (continuous,
    some checkpoints not logged)."""
    rng = np.random.default_rng(seed)
    step = np.cumsum(rng.integers(1, 400, n))
    names = tuple("abc"[:d])
    out = []
    rise = int(rng.integers(0, n))
    for label in labels(d)[:-1]:  # the other held-out classes too: never drawn
        acc = np.clip((np.arange(n) - rise + rng.uniform(0, 1)) / rng.uniform(1, 4), 0, 1)
        acc = acc if label.count("1") <= 1 else np.zeros(n)
        out.append(Trajectory(step, np.full((n, d), np.nan), names, label, accuracy=acc))
    shares = rng.dirichlet(np.ones(2**d + 1), n)
    shares[rng.random(n) < 0.15] = np.nan
    extra = {
        f"share_{c}": tuple("" if np.isnan(v) else repr(float(v)) for v in shares[:, k])
        for k, c in enumerate([*labels(d), "unreadable"])
    }
    head = "1" * d
    out.append(Trajectory(step, np.full((n, d), np.nan), names, head, extra=extra))
    return out


def by_definition(log: list[Trajectory]) -> dict | None:
    """From the first checkpoint at which the training classes' mean accuracy is >= 0.5: the training class's
    corner read in the largest share of the head class's samples, that share, and the first step it was."""
    out = set(held_out_of({t.label for t in log}))
    head, train = log[-1], [t for t in log[:-1] if t.label not in out]
    mean = np.mean([t.accuracy for t in train], axis=0)
    start = int(np.argmax(mean >= 0.5)) if (mean >= 0.5).any() else head.step.size
    best = None
    for c, s in head.shares().items():
        if c == head.label or c == "unreadable" or c in out:
            continue
        for i in range(start, head.step.size):
            if not np.isnan(s[i]) and (best is None or s[i] > best["share"]):
                best = {"corner": c, "share": float(s[i]), "step": float(head.step[i])}
    return best


@given(seed=seeds, d=st.sampled_from([2, 3]))
def test_the_memorized_corner_is_its_definition(seed, d):
    log = run_log(seed, d)
    assert memorized(log[-1], log) == by_definition(log)


def _head(shares: dict[str, list[float]]) -> list[Trajectory]:
    """A two-concept log whose training classes are drawn from the start, the head class's shares as given."""
    n = len(next(iter(shares.values())))
    step = np.arange(1, n + 1) * 100
    log = [
        Trajectory(step, np.full((n, 2), np.nan), ("a", "b"), c, accuracy=np.ones(n))
        for c in ("00", "01", "10")
    ]
    extra = {f"share_{c}": tuple(repr(v) for v in s) for c, s in shares.items()}
    return [*log, Trajectory(step, np.full((n, 2), np.nan), ("a", "b"), "11", extra=extra)]


def test_a_class_never_read_as_a_training_corner_memorized_none():
    log = _head({"00": [0.0] * 6, "01": [0.0] * 6, "10": [0.0] * 6, "11": [1.0] * 6})
    assert memorized(log[-1], log) is None


def test_of_two_corners_at_the_same_share_the_one_reached_first_is_named():
    zero = [0.0] * 6
    log = _head(
        {"00": zero, "01": [0, 0, 0, 0, 1.0, 1.0], "10": [0, 1.0, 1.0, 0, 0, 0], "11": zero}
    )
    assert memorized(log[-1], log)["corner"] == "10"


def test_as_registered_a_never_read_class_has_a_corner_and_a_tie_goes_by_column_not_to_the_first():
    """The same two logs read as issue #57's test registered the reader (its verdict's reading): a corner at share
    0, and of two corners at the same share the first in column order."""
    log = _head({"00": [0.0] * 6, "01": [0.0] * 6, "10": [0.0] * 6, "11": [1.0] * 6})
    assert memorized(log[-1], log, as_registered=True) == {
        "corner": "00",
        "share": 0.0,
        "step": 100.0,
    }
    zero = [0.0] * 6
    log = _head(
        {"00": zero, "01": [0, 0, 0, 0, 1.0, 1.0], "10": [0, 1.0, 1.0, 0, 0, 0], "11": zero}
    )
    assert memorized(log[-1], log) == {"corner": "10", "share": 1.0, "step": 200.0}
    assert memorized(log[-1], log, as_registered=True)["corner"] == "01"


@given(seed=seeds, d=st.sampled_from([2, 3]))
def test_without_ties_or_empty_reads_the_registered_reader_agrees(seed, d):
    log = run_log(seed, d)
    assert memorized(log[-1], log, as_registered=True) == memorized(log[-1], log)
