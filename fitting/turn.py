"""The turn of a trajectory in concept space: where it stops heading for the memorized class and turns.

  python -m fitting.turn RUN_DIR [RUN_DIR ...] [--class 11] [--min-dev 0.05] [--min-angle 30] [--out DIR]

writes RUN_DIR/turn.json (figures.training marks it), or DIR/turn.json (several runs: DIR/<run folder>/turn.json);
a run among the committed results (docs/results) is left as committed: its turn.json goes under runs/results/.

Model-free. The path is smoothed lightly (Savitzky-Golay, window 7, in checkpoint order). The
turn is the checkpoint where the smoothed path lies farthest from the chord joining its start
and end. That point is the *memorization point*: a class-11 path that first heads for 01 and then
turns to 11 is farthest from the chord at its corner. The 95% interval comes from a residual
bootstrap: resample the residuals around the smoothed path, smooth again and find the farthest
point again.

A turn is reported only where the path bends: the farthest point must lie more than ``min_dev``
(and 3 noise sd) from the chord, and the direction must change by at least ``min_angle`` degrees
from (start -> turn) to (turn -> end). A path heading straight for its target has no turn.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
from numpy.typing import NDArray
from scipy.signal import savgol_filter

from fitting.curves import noise_scale, settled_step
from core import cli
from core.records import TurnRecord
from core.trajectory import UNREADABLE, Trajectory, held_out_of, read_csv, read_meta, run_log


@dataclass(frozen=True)
class Turn:
    """Result of :func:`find_turn`; ``step`` and ``ci`` are None when the path does not turn (``ci`` also
    when no bootstrap was asked for)."""

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


def learned_from(held: Trajectory, trajectories: Sequence[Trajectory]) -> int:
    """Index of the first checkpoint at which the other classes are drawn (mean accuracy >= 0.5).

    Before it the samples are not class-like and the probe's reading of the held-out class wanders.
    0 when no other class has accuracies on the same steps; len(steps) when they never get there.
    """
    train = [
        t
        for t in trajectories
        if t is not held and t.accuracy is not None and t.step.tolist() == held.step.tolist()
    ]
    if not train:
        return 0
    ok = np.flatnonzero(np.mean([t.accuracy for t in train], axis=0) >= 0.5)
    return int(ok[0]) if ok.size else held.step.size


NEAR = 0.15  # concept-space distance within which a path counts as drawing a corner's class


def memorized(held: Trajectory, naive: Sequence[Trajectory]) -> dict | None:
    """Of the corners other than the class's own, the one with the highest share of its samples once the
    training classes are drawn: {corner, share, step}; None when nothing was drawn."""
    start = learned_from(held, naive)
    shares = {c: s[start:] for c, s in held.shares().items() if c not in (held.label, UNREADABLE)}
    if not shares or held.step.size <= start:
        return None
    corner = max(shares, key=lambda c: np.nanmax(shares[c]))
    i = int(np.nanargmax(shares[corner]))
    return {
        "corner": corner,
        "share": float(shares[corner][i]),
        "step": float(held.step[start + i]),
    }


def distance(z: np.ndarray, corner: str) -> np.ndarray:
    """Distance of each point of a path from a class's corner of concept space ("10" -> (1, 0))."""
    return np.linalg.norm(z - np.array([float(c) for c in corner]), axis=1)


def left_corner(step: np.ndarray, z: np.ndarray, corner: str) -> float | None:
    """The step from which the path stays farther than NEAR from ``corner`` (it went there first), or None.

    None also when the path never came near the corner. A path still there at the end has not left. Where a
    path is at its memorized corner from its first readable checkpoint, its turn is at its start and
    :func:`find_turn` cannot see it; leaving the corner still can.
    """
    dist = distance(z, corner)
    if not np.any(dist < NEAR):
        return None
    return settled_step(step, dist, NEAR)


def held_out_turn(
    held: Trajectory,
    trajectories: Sequence[Trajectory],
    *,
    n_boot: int = 0,
    min_dev: float = 0.05,
    min_angle: float = 30.0,
) -> Turn | None:
    """The turn of a held-out path toward its own corner, or None.

    Looked for once the training classes are drawn (:func:`learned_from`), and kept only if the path
    ends at least 0.1 closer to the class's corner than it was at the bend: a path that bends into the
    memorized class and stays there has no turn. ``n_boot`` > 0: with a 95% bootstrap interval.
    """
    start = learned_from(held, trajectories)
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
    corner = np.array([float(d) for d in held.label[: held.z.shape[1]]])
    closer = np.linalg.norm(np.array(turn.point) - corner) - np.linalg.norm(path.z[-1] - corner)
    return turn if closer >= 0.1 else None


def run_turns(
    log: Path,
    labels: Sequence[str] | None = None,
    *,
    min_dev: float = 0.05,
    min_angle: float = 30.0,
) -> TurnRecord:
    """turn.json's record: per protocol and class (``labels``, default the log's held-out classes: core.trajectory.held_out_of), the
    turn toward the class's corner, with the thresholds it was found with."""
    trajectories = read_csv(log)
    held = set(labels or held_out_of({t.label for t in trajectories}, read_meta(log)))
    have = {t.label for t in trajectories}
    if labels and held - have:
        raise ValueError(
            f"{log}: no class {', '.join(sorted(held - have))}; the log has {', '.join(sorted(have))}"
        )
    turns = []
    for t in trajectories:
        if t.label not in held or not t.concepts:
            continue
        same = [u for u in trajectories if u.protocol == t.protocol]
        start = learned_from(t, same)
        turn = held_out_turn(t, same, min_dev=min_dev, min_angle=min_angle)
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
        )
    return TurnRecord(log=str(log), min_dev=min_dev, min_angle=min_angle, turns=turns)


def _outputs(runs: Sequence[Path], out: Path | None) -> dict[Path, Path]:
    """Each run's turn.json: in the run's folder (committed results: under runs/results/), or under --out (one
    subfolder per run when there are several); checked before any work."""
    outs = {}
    for run in runs:
        if not run_log(run).exists():
            raise ValueError(
                f"{run_log(run)}: no trajectory log here (train with python -m empirical.train)"
            )
        folder = run_log(run).parent
        home = (
            cli.default_out(folder) if out is None else out / folder.name if len(runs) > 1 else out
        )
        outs[run] = cli.output_file(home / TurnRecord.FILE, "--out", owns=("turn.json",))
    if len(set(outs.values())) < len(outs):
        raise cli.UsageError(
            f"--out {out}: two runs share a folder name, so their turn.json would collide; "
            "turn them one at a time"
        )
    return outs


@cli.command("fitting.turn")
def main(argv: Sequence[str] | None = None) -> int:
    """``python -m fitting.turn``: see the module docstring."""
    parser = cli.parser("fitting.turn", __doc__)
    parser.add_argument(
        "runs", nargs="+", type=Path, help="run folders (or their trajectories.csv)"
    )
    parser.add_argument(
        "--class",
        dest="labels",
        default=None,
        metavar="LABEL[,LABEL]",
        help="the classes to look at (default: the log's held-out classes, else 11)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="folder for turn.json (default: the run's folder; several runs: one subfolder each)",
    )
    parser.add_argument(
        "--min-dev",
        type=float,
        default=0.05,
        metavar="D",
        help="the bend must lie farther than D (and 3 noise sd) from the chord (default 0.05)",
    )
    parser.add_argument(
        "--min-angle",
        type=float,
        default=30.0,
        metavar="DEG",
        help="the direction must change by at least DEG degrees at the bend (default 30)",
    )
    args = parser.parse_args(argv)
    if not (math.isfinite(args.min_dev) and args.min_dev >= 0):
        raise ValueError(
            f"--min-dev {args.min_dev}: give a distance >= 0 in concept space (default 0.05)"
        )
    if not (math.isfinite(args.min_angle) and 0 <= args.min_angle <= 180):
        raise ValueError(f"--min-angle {args.min_angle}: give degrees in [0, 180] (default 30)")
    labels = (
        None if args.labels is None else [c.strip() for c in args.labels.split(",") if c.strip()]
    )
    if labels is not None and not labels:
        raise ValueError(f"--class {args.labels!r}: give one or more class labels, e.g. 11")
    if cli.checking(args):
        return 0
    outs = _outputs(args.runs, args.out)
    for run in args.runs:
        doc = run_turns(run_log(run), labels, min_dev=args.min_dev, min_angle=args.min_angle)
        path = doc.write(outs[run])
        for t in doc.turns:
            where = "no turn" if t["turn_step"] is None else f"turn at step {t['turn_step']:.0f}"
            print(f"{run}: class {t['class']} {t['protocol']}: {where}")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
