"""The concept clock (fitting.analyses.events.concept_steps), the registered test's per-concept signal, as hypothesis
properties: it is its definition written the slow way on logs with gaps and unreadable checkpoints, it follows the
concepts when they are numbered in another order, and it moves with the clock."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from core.trajectory import Trajectory
from fitting.analyses.events import HOLD, THRESHOLD, concept_steps

seeds = st.integers(0, 2**32 - 1)


def training_log(seed: int, d: int) -> list[Trajectory]:
    """The naive trajectories of a run's training classes (at most one concept present) and one held-out class,
    each logged at its own random subset of the checkpoints, with unreadable points; each concept is learned
    (read within THRESHOLD) from a random checkpoint on, with the odd slip back."""
    rng = np.random.default_rng(seed)
    grid = np.cumsum(rng.integers(1, 300, 25))
    names = tuple("abcd"[:d])
    learn = rng.integers(0, 25, d)
    out = []
    for i in range(-1, d):
        label = "".join("1" if j == i else "0" for j in range(d))
        at = np.sort(rng.choice(25, size=int(rng.integers(15, 26)), replace=False))
        own = np.array([float(ch) for ch in label])
        off = np.where(np.arange(25)[:, None] >= learn, 0.05, 0.5) * rng.uniform(0, 2, (25, d))
        off[rng.random((25, d)) < 0.05] = 0.6  # a slip
        z = np.clip(np.abs(own - off), 0, 1)
        z[rng.random(25) < 0.1] = np.nan  # unreadable
        out.append(Trajectory(grid[at], z[at], names, label))
    held = "1" * d
    out.append(Trajectory(grid, rng.uniform(0, 1, (25, d)), names, held))
    return out


def by_definition(log: list[Trajectory]) -> dict:
    """The first checkpoint (of those any training class logged) from which, for HOLD checkpoints in a row, every
    training class logged a reading there within THRESHOLD of its own value of the concept."""
    train = [t for t in log if t.label.count("1") <= 1]
    steps = sorted({int(s) for t in train for s in t.step})
    out = {}
    for d, name in enumerate(train[0].concepts):

        def good(s, d=d):
            for t in train:
                hit = np.flatnonzero(t.step == s)
                if not hit.size or not abs(t.z[hit[0], d] - float(t.label[d])) <= THRESHOLD:
                    return False
            return True

        ok = [good(s) for s in steps]
        first = [i for i in range(len(steps) - HOLD + 1) if all(ok[i : i + HOLD])]
        out[name] = float(steps[first[0]]) if first else None
    return out


@given(seed=seeds, d=st.sampled_from([2, 3]))
def test_the_concept_clock_is_its_definition(seed, d):
    log = training_log(seed, d)
    assert concept_steps(log) == by_definition(log)


@given(seed=seeds, d=st.sampled_from([2, 3]), scale=st.integers(1, 5), shift=st.integers(0, 10**4))
def test_the_concept_clock_follows_the_concepts_and_the_clock(seed, d, scale, shift):
    log = training_log(seed, d)
    perm = np.random.default_rng(seed + 1).permutation(d)
    moved = [
        Trajectory(
            t.step * scale + shift,
            t.z[:, perm],
            tuple(t.concepts[p] for p in perm),
            "".join(t.label[p] for p in perm),
        )
        for t in log
    ]
    before, after = concept_steps(log), concept_steps(moved)
    assert set(after) == set(before)
    for name, step in before.items():
        assert after[name] == (None if step is None else step * scale + shift)
