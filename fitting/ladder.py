"""One row per training run: what its held-out class did, and what the run cost (the composition
ladder).

  python -m fitting.ladder RUN_DIR [RUN_DIR ...] [--class 11] [--out FILE.json]

Each RUN_DIR is a folder written by ``python -m empirical.train`` (config.json, trajectories.csv,
metrics.jsonl, or metrics.jsonl.gz as results keeps it). Printed as a markdown table, one row per
run, and written to FILE.json (default ``ladder.json`` in the current folder) with:

  settings    the training settings that differ between the runs given (all of seed and sep always)
  probe       the hash of the probe that read the run
  cost        training steps, steps/s of training alone, minutes of training and evaluation, the
              device and threads of the last start (from the run's reproducibility stamp)
  memorized   the training class the held-out class is drawn as first: of the other corners, the one
              with the highest share of its samples once the training classes are drawn (share,
              step)
  turn        the turn toward its own corner (fitting.turn, 95% bootstrap interval), or none
  best        the highest naive joint accuracy and its step
  composed    the first checkpoint from which the naive joint accuracy stays >= 0.5 for 2
              checkpoints (the behavior step of fitting.study), or null: censored at the last step
  capability  the same for the best protocol chosen on its own draw, where the run was elicited (a
              column of the table when any run given was)
  final       the shares of the last checkpoint's samples: each corner and unreadable

The numbers come from fitting.study's per-run reading of the held-out class, so a ladder row and a
study row of the same run agree.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from fitting.analyses.study_runs import PERSIST
from core import cli
from fitting.analyses.event_records import LadderRecord
from fitting.analyses.ladder_rows import row, table


@cli.command
def main(argv: Sequence[str] | None = None) -> int:
    parser = cli.parser()
    parser.add_argument(
        "runs",
        type=Path,
        nargs="+",
        metavar="RUN_DIR",
        help="run folders written by empirical.train",
    )
    parser.add_argument(
        "--class", dest="label", default="11", help="the held-out class (default 11)"
    )
    parser.add_argument(
        "--out", default="ladder.json", help="JSON file to write (default ladder.json)"
    )
    args = parser.parse_args(argv)
    out = cli.output_file(args.out, "--out", suffix=".json", owns=("ladder.json",))
    if cli.checking(args):
        return 0
    for run in args.runs:
        if not (run / "config.json").is_file():
            raise ValueError(f"{run}: not a training run (no config.json)")
        if out.resolve() in {
            (run / name).resolve() for name in ("config.json", "trajectories.csv", "metrics.jsonl")
        }:
            raise ValueError(
                f"--out {args.out}: is one of the inputs of {run}; choose another file"
            )
    rows = [row(run, args.label) for run in args.runs]
    LadderRecord(label=args.label, persist=PERSIST, rows=rows).write(out)
    print(table(rows))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
