"""The held-out class's readings in fitting.estimators.trajectory_turn on logs beyond one two-concept run: three concepts,
several runs in one log, checkpoints that differ between classes, missing readings (audit of 2026-11-29)."""

from __future__ import annotations

import numpy as np
import pytest

from core.trajectory import SHARE_PREFIX, Trajectory, write_csv
from fitting.estimators.trajectory_turn import (
    distance,
    learned_from,
    left_corner,
    memorized,
    run_turns,
)

STEPS = np.arange(0, 3100, 100)


def rising(at: int, top: float = 0.8, n: int = STEPS.size) -> np.ndarray:
    """An accuracy 0 before checkpoint ``at``, ``top`` from it."""
    return np.where(np.arange(n) >= at, top, 0.0)


def traj(label, acc, z=None, shares=None, steps=STEPS, seed=0, run="r"):
    d = len(label)
    z = np.full((len(steps), d), 0.5) if z is None else np.asarray(z, float)
    extra = {
        SHARE_PREFIX + c: tuple("" if np.isnan(v) else str(v) for v in s)
        for c, s in (shares or {}).items()
    }
    concepts = ("color", "size", "bg")[:d]
    return Trajectory(
        np.asarray(steps),
        z,
        concepts,
        label,
        seed=seed,
        run=run,
        accuracy=np.asarray(acc, float),
        extra=extra,
    )


def three_concepts(held_acc=0.0):
    """Training classes 000, 100, 010, 001 drawn from checkpoint 7 (at 0.8); held out 011, 101, 110, 111 never."""
    train = [traj(c, rising(7)) for c in ("000", "100", "010", "001")]
    held = [traj(c, np.full(STEPS.size, held_acc)) for c in ("011", "101", "110", "111")]
    return train + held


def test_three_concepts_the_other_held_out_classes_are_not_training_classes():
    """Counted as training classes, the other three held-out classes at accuracy 0 would keep the mean of the
    seven at 3.2 / 7 = 0.46 < 0.5."""
    trajs = three_concepts()
    held = trajs[-1]
    assert learned_from(held, trajs) == 7
    assert learned_from(held, trajs, held_out=["111"]) == STEPS.size  # the old reading: never


def test_the_training_classes_are_read_on_the_checkpoints_they_share_with_the_class():
    """The held-out class logged one more checkpoint (an evaluation the others missed): not 'learned at 0'."""
    train = [traj(c, rising(5)) for c in ("00", "01", "10")]
    extra = np.append(STEPS, 3100)
    held = traj("11", np.zeros(extra.size), steps=extra)
    assert learned_from(held, [*train, held]) == 5


def test_memorized_is_a_training_class_s_corner_and_none_when_nothing_else_was_drawn():
    n = STEPS.size
    share = {"001": np.full(n, 0.3), "011": np.full(n, 0.9), "111": np.full(n, 0.1)}
    trajs = three_concepts()
    held = traj("111", np.zeros(n), shares=share)
    trajs[-1] = held
    assert memorized(held, trajs)["corner"] == "001"  # not 011: another held-out class
    nothing = traj("111", np.zeros(n), shares={"001": np.full(n, np.nan), "111": np.full(n, 1.0)})
    trajs[-1] = nothing
    assert memorized(nothing, trajs) is None


def test_a_corner_never_read_loses_to_one_read():
    """00 never read, 01 read at 0.4: 01 (before: 00 kept, then ValueError "All-NaN slice encountered")."""
    n = STEPS.size
    train = [traj(c, np.ones(n)) for c in ("00", "01", "10")]
    held = traj("11", np.zeros(n), shares={"00": np.full(n, np.nan), "01": np.full(n, 0.4)})
    assert memorized(held, [*train, held]) == {"corner": "01", "share": 0.4, "step": 0.0}
    assert memorized(traj("11", np.zeros(n), shares={"00": np.full(n, np.nan)}), train) is None


def test_leaving_a_corner_skips_missing_readings():
    step = np.array([0, 100, 200, 300, 400, 500])
    z = np.array([[1, 0], [1, 0.05], [0.9, 0.1], [0.5, 0.6], [0.3, 0.9], [np.nan, np.nan]])
    assert (
        left_corner(step, z, "10") == 300
    )  # before: None (the missing last point counted as near)
    z[4] = np.nan
    z[5] = [0.2, 1.0]
    assert left_corner(step, z, "10") == 300


def test_a_corner_needs_a_label_of_binary_digits():
    with pytest.raises(ValueError, match="class 'A' has no corner in a 2-concept space"):
        distance(np.zeros((3, 2)), "A")


def test_turns_are_read_per_run_in_a_log_of_several(tmp_path):
    """Two seeds in one log: each seed's training classes say when its held-out class's reading starts."""
    logs = []
    for seed, at in ((0, 5), (1, 9)):
        logs += [traj(c, rising(at), seed=seed, run=f"s{seed}") for c in ("00", "01", "10")]
        logs.append(traj("11", np.zeros(STEPS.size), seed=seed, run=f"s{seed}"))
    write_csv(tmp_path / "trajectories.csv", logs)
    doc = run_turns(tmp_path / "trajectories.csv")
    learned = {t["seed"]: t["learned_step"] for t in doc.turns}
    assert learned == {0: 500.0, 1: 900.0}  # before: 900 for both (the two seeds' classes averaged)


def test_the_command_says_when_there_is_no_path_to_read(tmp_path, capsys):
    """An accuracy-only log: no class has concept-space coordinates, and the command says so (it wrote [] quietly)."""
    from fitting.turn import main

    rows = [
        Trajectory(STEPS, np.zeros((STEPS.size, 0)), (), c, accuracy=rising(5))
        for c in ("00", "11")
    ]
    write_csv(tmp_path / "trajectories.csv", rows)
    assert main([str(tmp_path)]) == 0
    assert "no path to read: the log has no class held out with concept-space coordinates" in (
        capsys.readouterr().err
    )
