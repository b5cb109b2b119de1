"""The study's numbers from a collected sweep: when each concept is learned, against its signal, and
what the held-out class does, per run and per level of the swept covariate.

  python -m fitting.study SWEEP_DIR [--by sep_color] [--out FILE]
  # a slice: SWEEP_DIR/study-sep_size=0.4.json
  python -m fitting.study SWEEP_DIR --by sep_color --only sep_size=0.4

SWEEP_DIR holds sweep.csv and covariates.csv (``python -m pipeline.sweep collect``). Writes
FILE (default SWEEP_DIR/study.json); ``python -m figures.study`` draws it. Per run:

  learning    for each concept, the share of the training classes' readable samples whose value of
  that
              concept is the class's own (from the per-sample shares: a sample read as 01 has the
              color of 00 and 01), averaged over the training classes (undefined while under a
              quarter of the samples are readable). ``learned_step``: the first checkpoint from
              which it stays >= 0.8 for 2 checkpoints (model-free); ``learned_fit``: where a fitted
              sigmoid crosses 0.8, with a 95% interval. Never reached within the run: null, and
              ``censored_at`` says the last logged step (a lower bound, never a number to average).
  held out    for each held-out class: its turn toward its own corner (fitting.turn, with a 95%
              bootstrap interval), when it carries each concept's value (``learning``, as for the
              training classes: the paper's Fig. 3 measures speed on the held-out class), how far
              each coordinate reached toward the class's value once the
              training classes are drawn (``reach``: the reading nearest that value, the highest
              where the class has the concept and the lowest where it has not, and its step; e.g.
              how near class 11 came to the color of 10 before settling), what its last checkpoint's
              samples were read as, and two times,
              each model-free (``*_step``: first checkpoint from which the accuracy stays >= 0.5 for
              2 checkpoints; null with ``*_censored_at`` when never) and fitted (``*_t50``: where a
              sigmoid crosses 0.5, with a 95% interval): behavior (naive prompting) and, when the
              run was elicited, capability (fitting.capability: the protocol chosen on its own draw,
              scored on another). ``turn_meets_capability``: whether the turn's interval and the
              capability t50's interval overlap (null when either is missing). ``memorized``: the
              other corner most of its samples were read as once the training classes are drawn
              ({corner, share, step}, fitting.ladder's "memorized as"); ``left_memorized_step``: the
              step from which its path stays farther than 0.15 from that corner (null: never near
              it, or still there at the end). A path already at its memorized corner when first
              drawn has its turn at its start, where fitting.turn cannot see it; leaving the corner
              still can.

Per level of --by (default: the one covariate that varies, e.g. sep_color): each concept's mean
signal, the seeds' learned steps, model-free and fitted (median, range, how many censored), by the
training classes and by each held-out class, and the held-out class's turn, behavior and capability
steps. Across the elicited runs (``relations``): behavior step against capability step, and turn
step against capability t50, each pair observed or censored, with a line through the observed pairs
and the count of censored pairs that contradict it.

--only RUN,.. or COLUMN=VALUE (as fitting.predict's --holdout) studies those runs alone, e.g. one
Δcolor sweep inside a pool that also varies Δsize; the record says which (``only``).
"""

from __future__ import annotations

from typing import Sequence

from fitting.analyses.study_levels import tables
from core import cli
from fitting.analyses.study_runs import study


def _file_part(text: str) -> str:
    """--only's text as part of a file name (ids and COLUMN=VALUE kept readable; path separators and
    spaces out)."""
    return "".join(c if c.isalnum() or c in "=.,_-" else "_" for c in text.strip())


@cli.command
def main(argv: Sequence[str] | None = None) -> int:
    parser = cli.reader_parser(
        "sweep",
        "a collected sweep folder (sweep.csv and covariates.csv)",
        "output JSON (default SWEEP/study.json; with --only SWEEP/study-ONLY.json)",
    )
    parser.add_argument(
        "--by", help="the covariate column to group runs by (default: the one that varies)"
    )
    parser.add_argument(
        "--only",
        metavar="RUN,..",
        help="study these runs alone: ids, or COLUMN=VALUE of covariates.csv (e.g. sep_size=0.4)",
    )
    args = parser.parse_args(argv)
    default = "study.json" if args.only is None else f"study-{_file_part(args.only)}.json"
    out = args.out or cli.default_out(args.sweep / default)
    cli.not_an_input([out], [args.sweep / "sweep.csv", args.sweep / "covariates.csv"])
    cli.output_file(out, "--out", suffix=".json", owns=("study.json",))
    if cli.checking(args):
        return 0
    doc = study(args.sweep, args.by, args.only)
    doc.write(out)
    print(tables(doc))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
