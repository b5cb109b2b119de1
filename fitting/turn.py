"""The turn of a trajectory in concept space: where it stops heading for the memorized class and
turns.

  python -m fitting.turn RUN_DIR [RUN_DIR ...] [--class 11] [--min-dev 0.05] [--min-angle 30] \\
      [--out DIR]

writes RUN_DIR/turn.json (figures.training marks it), or DIR/turn.json (several runs: DIR/<run
folder>/turn.json); a run among the committed results (results) is left as committed: its turn.json
goes under runs/results/.

Model-free. The path is smoothed lightly (Savitzky-Golay, window 7, in checkpoint order). The
turn is the checkpoint where the smoothed path lies farthest from the chord joining its start
and end. That point is the *memorization point*: a class-11 path that first heads for 01 and then
turns to 11 is farthest from the chord at its corner. The 95% interval comes from a residual
bootstrap: resample the residuals around the smoothed path, smooth again and find the farthest
point again.

Each class's record also names its *memorized corner*: of the training classes (in three concepts
one of four corners, never another held-out class's: a sample of 111 read as 011 has dropped a
concept, it has not memorized a training class), the one its samples were read as most once the
training classes are drawn, with that share and step, and the step from which its mean path stays
farther than 0.15 from that corner (``left_memorized_step``; null when it never came near or never
left). A path that sits at that corner from its first reading and then goes straight to its own has
no bend, so no turn, but it has a leaving step.

A turn is reported only where the path bends: the farthest point must lie at least ``min_dev``
(and 3 noise sd) from the chord, and the direction must change by at least ``min_angle`` degrees
from (start -> turn) to (turn -> end). A path heading straight for its target has no turn.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Sequence

from core import cli
from fitting.records import TurnRecord
from core.sidecar import run_log
from fitting.estimators.trajectory_turn import NEAR, run_turns


def _outputs(runs: Sequence[Path], out: Path | None) -> dict[Path, Path]:
    """Each run's turn.json: in the run's folder (committed results: under runs/results/), or under
    --out (one subfolder per run when there are several); checked before any work."""
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


@cli.command
def main(argv: Sequence[str] | None = None) -> int:
    parser = cli.reader_parser(
        "runs",
        "run folders (or their trajectories.csv)",
        "folder for turn.json (default: the run's folder; several runs: one subfolder each)",
        nargs="+",
    )
    parser.add_argument(
        "--class",
        dest="labels",
        default=None,
        metavar="LABEL[,LABEL]",
        help="the classes to look at (default: the log's held-out classes, else 11)",
    )
    parser.add_argument(
        "--min-dev",
        type=float,
        default=0.05,
        metavar="D",
        help="the bend must lie at least D (and 3 noise sd) from the chord (default 0.05)",
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
        say(run, doc, labels)
        print(f"wrote {path}")
    return 0


def say(run: Path, doc: TurnRecord, labels: Sequence[str] | None) -> None:
    """Each class's turn, or why there was no path to read."""
    for t in doc.turns:
        where = "no turn" if t["turn_step"] is None else f"turn at step {t['turn_step']:,.0f}"
        print(f"{run}: class {t['class']} {t['protocol']}: {where}{_memorized(t)}")
    if not doc.turns:
        print(
            f"{run}: no path to read: the log has no class {', '.join(labels or ['held out'])} "
            "with "
            "concept-space coordinates (an accuracy-only log, or a held-out class it does not "
            "hold)",
            file=sys.stderr,
        )


def _memorized(row: dict) -> str:
    """ "; drawn as 01 (62% at step 2,000), left it at step 3,500", or "" (rows of turn.json before
    these keys)."""
    mem = row.get("memorized")
    if not mem:
        return ""
    left = row.get("left_memorized_step")
    gone = (
        f"not left (its mean path never within {NEAR} of it, or still there)"
        if left is None
        else f"left it at step {left:,.0f}"
    )
    return f"; drawn as {mem['corner']} ({mem['share']:.0%} at step {mem['step']:,.0f}), {gone}"


if __name__ == "__main__":
    raise SystemExit(main())
