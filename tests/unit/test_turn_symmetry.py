"""The turn readers see concept space, not how it is written down (hypothesis).

Numbering the concepts in another order, swapping a concept's two values (z -> 1 - z, a label's digit flipped) or
shifting and stretching the clock moves a path's turn, bend and departure from a corner with the path; it never
decides whether there is one. Paths are drawn from a seed (continuous noise: no exact ties between points)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.trajectory import Trajectory
from fitting.estimators.trajectory_turn import find_turn, held_out_turn, left_corner

seeds = st.integers(0, 2**32 - 1)


def bent(rng: np.random.Generator, d: int, n: int, end=None, at=None) -> np.ndarray:
    """A noisy path in [0, 1]^d: straight to a bend (``at``, random if None), then straight on to ``end``
    (random if None)."""
    start, bend, stop = rng.uniform(0, 1, (3, d))
    bend = bend if at is None else np.asarray(at, dtype=float)
    stop = stop if end is None else np.asarray(end, dtype=float)
    k = int(rng.integers(2, n - 2))
    z = np.concatenate(
        [np.linspace(start, bend, k, endpoint=False), np.linspace(bend, stop, n - k)]
    )
    return np.clip(z + rng.normal(0, rng.uniform(0.005, 0.05), z.shape), 0, 1)


class Relabel:
    """A relabelling of concept space and of the clock: concept i of the new names is concept perm[i] of the
    old, with its values swapped where flip[i]; new step = scale * step + shift."""

    def __init__(self, rng: np.random.Generator, d: int):
        self.perm = rng.permutation(d)
        self.flip = rng.random(d) < 0.5
        self.scale, self.shift = float(rng.uniform(0.1, 10)), float(rng.uniform(-1e3, 1e3))

    def z(self, z) -> np.ndarray:
        z = np.asarray(z, dtype=float)[..., self.perm]
        return np.where(self.flip, 1 - z, z)

    def label(self, label: str) -> str:
        return "".join(str(int(label[p]) ^ int(f)) for p, f in zip(self.perm, self.flip))

    def step(self, step):
        return None if step is None else self.scale * np.asarray(step, dtype=float) + self.shift

    def trajectory(self, t: Trajectory) -> Trajectory:
        return Trajectory(
            self.step(t.step),
            self.z(t.z),
            tuple(t.concepts[p] for p in self.perm),
            self.label(t.label),
            accuracy=t.accuracy,
        )


@given(seed=seeds, d=st.sampled_from([2, 3]), n=st.integers(8, 60))
def test_find_turn_moves_with_a_relabelled_path(seed, d, n):
    rng = np.random.default_rng(seed)
    step, z = np.cumsum(rng.integers(1, 500, n)).astype(float), bent(rng, d, n)
    r = Relabel(rng, d)
    a, b = find_turn(step, z, n_boot=20), find_turn(r.step(step), r.z(z), n_boot=20)
    assert (a.step is None) == (b.step is None)
    assert b.angle == pytest.approx(
        a.angle, abs=1e-4
    )  # arccos near 0 or 180 degrees: ~1e-6 a rounding
    assert b.deviation == pytest.approx(a.deviation, rel=1e-9, abs=1e-12)
    np.testing.assert_allclose(b.point, r.z(a.point), atol=1e-9)
    if a.step is not None:
        assert b.step == pytest.approx(r.step(a.step), rel=1e-9)
        np.testing.assert_allclose(b.ci, r.step(a.ci), rtol=1e-9)


def run_of(rng: np.random.Generator, d: int, n: int, held: str) -> list[Trajectory]:
    """One run's naive log: the training classes (at most one concept present) learned from a random checkpoint
    on, the held-out class ``held`` on a bent path that ends at its corner, bending at a training class's corner
    (memorizing it first) half the time."""
    step = np.cumsum(rng.integers(1, 500, n))
    names = tuple("abc"[:d])
    learned = int(rng.integers(0, n // 2))
    runs = []
    for i in range(-1, d):
        label = "".join("1" if j == i else "0" for j in range(d))
        acc = np.clip((np.arange(n) - learned + rng.uniform(0.5, 2)) / 3, 0, 1)
        corner = np.array([float(ch) for ch in label])
        z = np.clip(corner + rng.normal(0, 0.03, (n, d)), 0, 1)
        runs.append(Trajectory(step, z, names, label, accuracy=acc))
    end = [float(ch) for ch in held]
    at = runs[rng.integers(len(runs))].z[0].round() if rng.random() < 0.5 else None
    runs.append(Trajectory(step, bent(rng, d, n, end, at), names, held, accuracy=np.zeros(n)))
    return runs


@given(seed=seeds, d=st.sampled_from([2, 3]), n=st.integers(12, 50))
def test_a_held_out_turn_and_leaving_a_corner_move_with_a_relabelled_run(seed, d, n):
    rng = np.random.default_rng(seed)
    held = "1" * d
    log = run_of(rng, d, n, held)
    r = Relabel(rng, d)
    moved = [r.trajectory(t) for t in log]
    a = held_out_turn(log[-1], log, held_out=[held])
    b = held_out_turn(moved[-1], moved, held_out=[r.label(held)])
    assert (a is None) == (b is None)
    if a is not None:
        assert b.step == pytest.approx(r.step(a.step), rel=1e-9)
        np.testing.assert_allclose(b.point, r.z(a.point), atol=1e-9)
    for corner in log[:-1]:
        left = left_corner(log[-1].step, log[-1].z, corner.label)
        moved_left = left_corner(moved[-1].step, moved[-1].z, r.label(corner.label))
        assert (left is None) == (moved_left is None)
        if left is not None:
            assert moved_left == pytest.approx(r.step(left), rel=1e-9)


def test_the_relabelling_is_one_of_concept_space():
    """The helper itself: a corner's label and its point relabel alike, and the clock's map is increasing."""
    r = Relabel(np.random.default_rng(3), 3)
    for label in ("000", "110", "101", "011"):
        assert tuple(r.z([float(ch) for ch in label])) == tuple(float(ch) for ch in r.label(label))
    assert r.scale > 0
