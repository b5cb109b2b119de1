"""The turn of a trajectory in concept space (the method: python -m fitting.turn's help,
fitting/turn.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
from numpy.typing import NDArray
from scipy.signal import savgol_filter

from fitting.estimators.curves import noise_scale, settled_step
from fitting.records import TurnRecord
from core.sidecar import held_out_of, read_meta
from core.trajectory import (
    UNREADABLE,
    Trajectory,
    corner_of,
    read_csv,
    target_of,
)


@dataclass(frozen=True)
class Turn:
    """Result of :func:`find_turn`; ``step`` and ``ci`` are None when the path does not turn (``ci``
    also when no bootstrap was asked for)."""

    step: float | None
    ci: tuple[float, float] | None
    angle: float  # degrees between start -> farthest point and farthest point -> end
    deviation: float  # distance of the farthest point from the chord
    point: tuple[float, ...]  # the smoothed position there (the memorization point)


def _smooth(z: NDArray) -> NDArray:
    window = min(7, z.shape[0] - (1 - z.shape[0] % 2))  # odd, at most the number of points
    if window < 5:
        return z
    return savgol_filter(z, window, 2, axis=0, mode="interp")


def _farthest(s: NDArray) -> tuple[int, float]:
    chord = s[-1] - s[0]
    length = np.linalg.norm(chord)
    rel = s - s[0]
    if length < 1e-12:
        dist = np.linalg.norm(rel, axis=1)
    else:
        along = rel @ chord / length
        dist = np.sqrt(np.maximum(np.sum(rel**2, axis=1) - along**2, 0))
    i = int(np.argmax(dist))
    return i, float(dist[i])


def _angle(a: NDArray, b: NDArray) -> float:
    denom = np.linalg.norm(a) * np.linalg.norm(b)
    return float(np.degrees(np.arccos(np.clip(a @ b / denom, -1, 1)))) if denom > 0 else 0.0


def find_turn(
    step: NDArray,
    z: NDArray,
    *,
    min_angle: float = 30.0,
    min_dev: float = 0.05,
    n_boot: int = 200,
    rng: np.random.Generator | int | None = 0,
) -> Turn:
    """Locate the turn of a (T, D) path logged at (T,) steps."""
    t = np.asarray(step, dtype=float)
    z = np.asarray(z, dtype=float).reshape(t.size, -1)
    if t.size < 5:
        raise ValueError(f"finding a turn needs at least 5 logged points, got {t.size}")
    s = _smooth(z)
    i, dev = _farthest(s)
    angle = _angle(s[i] - s[0], s[-1] - s[i])
    point = tuple(float(v) for v in s[i])
    sigma = noise_scale(z)
    if dev < max(min_dev, 3 * sigma) or angle < min_angle or i in (0, t.size - 1):
        return Turn(None, None, angle, dev, point)
    if n_boot == 0:
        return Turn(float(t[i]), None, angle, dev, point)
    gen = np.random.default_rng(rng)
    resid = z - s
    draws = np.empty(n_boot)
    for b in range(n_boot):
        zb = s + resid[gen.integers(0, t.size, t.size)]
        draws[b] = t[_farthest(_smooth(zb))[0]]
    lo, hi = np.quantile(draws, [0.025, 0.975])
    return Turn(float(t[i]), (float(min(lo, t[i])), float(max(hi, t[i]))), angle, dev, point)


def learned_from(
    held: Trajectory, trajectories: Sequence[Trajectory], held_out: Sequence[str] | None = None
) -> int:
    """Index of the first checkpoint of ``held`` at which the training classes are drawn (their mean
    accuracy >= 0.5, on the checkpoints each of them logged).

    Before it the samples are not class-like and the probe's reading of the held-out class wanders.
    The training classes: every class of ``trajectories`` but ``held`` and the held-out ones
    (``held_out``, default the rule training uses: core.sidecar.held_out_of; in three concepts
    011, 101, 110 and 111, whose accuracy stays near 0 while the others are learned). 0 when no
    training class has accuracies; len(steps) when they never get there.
    """
    out = _held_out(trajectories, held_out)
    train = [
        t for t in trajectories if t is not held and t.label not in out and t.accuracy is not None
    ]
    if not train:
        return 0
    at = held.step.tolist()
    # each class's accuracy at the held-out class's checkpoints (NaN where it logged none)
    acc = np.full((len(train), len(at)), np.nan)
    for k, t in enumerate(train):
        index = {s: i for i, s in enumerate(t.step.tolist())}
        for j, s in enumerate(at):
            if s in index:
                acc[k, j] = t.accuracy[index[s]]
    logged = ~np.isnan(acc).any(axis=0)  # where every training class logged a reading
    ok = np.flatnonzero(logged & (np.where(logged, acc, 0.0).mean(axis=0) >= 0.5))
    return int(ok[0]) if ok.size else held.step.size


def _held_out(trajectories: Sequence[Trajectory], held_out: Sequence[str] | None) -> set[str]:
    """``held_out``, or the held-out classes by the rule training uses
    (core.sidecar.held_out_of)."""
    return set(held_out_of({t.label for t in trajectories}) if held_out is None else held_out)


NEAR = 0.15  # concept-space distance within which a path counts as drawing a corner's class


def memorized(
    held: Trajectory,
    naive: Sequence[Trajectory],
    held_out: Sequence[str] | None = None,
    *,
    as_registered: bool = False,
) -> dict | None:
    """Of the training classes' corners (not the class's own, nor another held-out class's:
    ``held_out`` as in :func:`learned_from`), the one with the highest share of its samples once the
    training classes are drawn: {corner, share, step}; None when nothing was drawn.

    None also when no sample was read as a training corner (the best share is 0); of corners at the
    same best share, the one reached first. ``as_registered``: as issue #57's test registered the
    reader, before errata.md item 11 (a) mended it (a corner even at share 0; a tie to the first
    corner in column order): the verdict's.
    """
    start = learned_from(held, naive, held_out)
    out = _held_out(naive, held_out)
    shares = {
        c: s[start:]
        for c, s in held.shares().items()
        if c not in (held.label, UNREADABLE) and c not in out
    }
    if not shares or held.step.size <= start or all(np.isnan(v).all() for v in shares.values()):
        return None
    # a corner never read (all NaN) loses to any read one
    best = {c: -1.0 if np.isnan(s).all() else float(np.nanmax(s)) for c, s in shares.items()}
    corner = max(shares, key=best.get)
    if not as_registered:
        if best[corner] <= 0:
            return None
        top = [c for c in shares if best[c] == best[corner]]
        corner = min(top, key=lambda c: int(np.nanargmax(shares[c])))
    i = int(np.nanargmax(shares[corner]))
    return {
        "corner": corner,
        "share": float(shares[corner][i]),
        "step": float(held.step[start + i]),
    }


def distance(z: np.ndarray, corner: str) -> np.ndarray:
    """Distance of each point of a path from a class's corner of concept space ("10" -> (1, 0));
    ValueError for a label that is not one binary digit a concept."""
    at = corner_of(corner, z.shape[1])
    if at is None:
        raise ValueError(
            f"class {corner!r} has no corner in a {z.shape[1]}-concept space: its label must be "
            f"{z.shape[1]} binary digits"
        )
    return np.linalg.norm(z - np.array(at, dtype=float), axis=1)


def left_corner(step: np.ndarray, z: np.ndarray, corner: str) -> float | None:
    """The step from which the path stays farther than NEAR from ``corner`` (it went there first),
    or None.

    None also when the path never came near the corner. A path still there at the end has not left.
    Where a path is at its memorized corner from its first readable checkpoint, its turn is at its
    start and :func:`find_turn` cannot see it; leaving the corner still can.
    """
    z = np.asarray(z, dtype=float)
    # a missing reading is neither near nor far
    read = ~np.isnan(z).any(axis=1)
    step, dist = np.asarray(step)[read], distance(z[read], corner)
    if not np.any(dist < NEAR):
        return None
    return settled_step(step, dist, NEAR)


def memorization(
    held: Trajectory,
    naive: Sequence[Trajectory],
    held_out: Sequence[str] | None = None,
    *,
    as_registered: bool = False,
) -> dict:
    """{memorized, left_memorized_step}: the training corner ``held`` was drawn as most
    (:func:`memorized`, None when none) and the step from which its path stays away from that corner
    (:func:`left_corner`; None when it never came near or never left). Read once the training
    classes are drawn (:func:`learned_from`).

    The leaving step times a path that sits at its memorized corner from its first readable
    checkpoint and moves straight to its own: :func:`find_turn` sees no bend there. In three
    concepts the corner is one of the four training classes'.
    """
    mem = memorized(held, naive, held_out, as_registered=as_registered)
    start = learned_from(held, naive, held_out)
    left = None if mem is None else left_corner(held.step[start:], held.z[start:], mem["corner"])
    return {"memorized": mem, "left_memorized_step": left}


def held_out_turn(
    held: Trajectory,
    trajectories: Sequence[Trajectory],
    *,
    n_boot: int = 0,
    min_dev: float = 0.05,
    min_angle: float = 30.0,
    held_out: Sequence[str] | None = None,
) -> Turn | None:
    """The turn of a held-out path toward its own corner, or None.

    Looked for once the training classes are drawn (:func:`learned_from`), and kept only if the path
    ends at least 0.1 closer to the class's corner than it was at the bend: a path that bends into
    the memorized class and stays there has no turn. ``n_boot`` > 0: with a 95% bootstrap interval;
    ``held_out``: as :func:`learned_from`'s.
    """
    start = learned_from(held, trajectories, held_out)
    if held.step.size - start < 5 or held.missing[start:].all():
        return None
    path = held.with_points()  # steps where something was readable
    path_from = path.step >= held.step[start]
    if path_from.sum() < 5:
        return None
    turn = find_turn(
        path.step[path_from], path.z[path_from], n_boot=n_boot, min_dev=min_dev, min_angle=min_angle
    )
    if turn.step is None:
        return None
    corner = np.array(target_of(held.label, held.z.shape[1]), dtype=float)
    closer = np.linalg.norm(np.array(turn.point) - corner) - np.linalg.norm(path.z[-1] - corner)
    return turn if closer >= 0.1 else None


def _mates(t: Trajectory, trajectories: Sequence[Trajectory], out: Sequence[str]) -> list:
    """``t`` and the training classes it is read against: of the same run, seed and protocol, or
    under naive prompting where that protocol elicited no training class (``empirical.elicit
    --classes held-out``): when the training classes are drawn is the model's, not the
    protocol's."""
    run = [u for u in trajectories if (u.run, u.seed) == (t.run, t.seed)]
    same = [u for u in run if u.protocol == t.protocol]
    if any(u.label not in out and u.accuracy is not None for u in same):
        return same
    return [t] + [u for u in run if u.protocol == "naive" and u.label not in out]


def run_turns(
    log: Path,
    labels: Sequence[str] | None = None,
    *,
    min_dev: float = 0.05,
    min_angle: float = 30.0,
) -> TurnRecord:
    """turn.json's record: per protocol and class (``labels``, default the log's held-out classes:
    core.sidecar.held_out_of), the turn toward the class's corner, with the thresholds it was
    found with."""
    trajectories = read_csv(log)
    held = set(labels or held_out_of({t.label for t in trajectories}, read_meta(log)))
    have = {t.label for t in trajectories}
    if labels and held - have:
        raise ValueError(
            f"{log}: no class {', '.join(sorted(held - have))}; the log has "
            f"{', '.join(sorted(have))}"
        )
    # the classes held out in training (not those asked for): they are not training classes
    out = held_out_of(have, read_meta(log))
    turns = []
    for t in trajectories:
        if t.label not in held or not t.concepts:
            continue
        # a log may hold several runs: the class's own run, seed and protocol (_mates)
        same = _mates(t, trajectories, out)
        start = learned_from(t, same, out)
        turn = held_out_turn(t, same, min_dev=min_dev, min_angle=min_angle, held_out=out)
        turns.append(
            {
                "class": t.label,
                "protocol": t.protocol,
                "run": t.run,
                "seed": t.seed,
                "learned_step": float(t.step[start]) if start < t.step.size else None,
                "turn_step": None if turn is None else turn.step,
                "turn_point": None if turn is None else list(turn.point),
            }
            | memorization(t, same, out)
        )
    return TurnRecord(log=str(log), min_dev=min_dev, min_angle=min_angle, turns=turns)
