"""Capability versus behavior: when a class can be elicited, and when naive prompting shows it.

  python -m fitting.capability RUN_DIR [RUN_DIR ...] [--class 11] [--persist 2] [--out DIR]

Behavior is the naive joint accuracy of the class; capability at a checkpoint is the score of the
elicitation protocol (overprompt, intervention, patch, cfg) whose chosen setting did best on the
draw that chose it, scored on an independent draw (see empirical.training.protocols; logs without
selection accuracies fall back to the best score, flagged ``capability_unbiased: false``). The
training classes are the control: when each became readable and correct, and what the protocols did
to them (``control`` in elicitation.json, gray lines in the figure). For each run: the first steps
at which behavior, capability and each protocol reach 50% and 80% (held for --persist checkpoints),
and the lag behavior - capability; and the same for the settled step, from which the level holds to
the end of training (an early excursion that is lost again, e.g. an intervention succeeding before
the training classes are learned, moves the first step but not the settled one).
Written to RUN_DIR/elicitation.json, and a summary over the runs (seeds) to
--out/elicitation_summary.json, from which python -m figures.capability draws the paper's Fig. 6
(accuracy against step, one colour per protocol, each run a thin line, the mean thick).
"""

from __future__ import annotations

from typing import Sequence

from core import cli
from fitting.records import ElicitationRecord, ElicitationSummaryRecord
from fitting.analyses.capability_readings import analyse_run, mean_curves, runs_arguments, summarize


@cli.command
def main(argv: Sequence[str] | None = None) -> int:
    args = runs_arguments(
        argv,
        runs_help="run folders (one per seed) with elicited trajectories",
        out_help="summary folder (default: the first run)",
        label=None,
    )
    folders = [run if run.is_dir() else run.parent for run in args.runs]
    homes = [cli.default_out(folder) for folder in folders]  # each run's elicitation.json
    out = cli.output_dir(args.out or homes[0], "--out")
    for home in homes:
        cli.output_dir(home, "RUN")
    if cli.checking(args):
        return 0
    results = [analyse_run(r, args.label, args.persist) for r in args.runs]
    for run, res, home in zip(args.runs, results, homes):
        ElicitationRecord.from_json(res).write(home / ElicitationRecord.FILE)
        for rule, fs in (("first", res["first_step"]), ("settled", res["settled_step"])):
            print(
                f"{run}: {rule:7s} naive 50%/80% at "
                f"{cli.shown(fs['naive']['50%'])}/{cli.shown(fs['naive']['80%'])}, capability "
                f"{cli.shown(fs.get('capability', {}).get('50%'))}/"
                f"{cli.shown(fs.get('capability', {}).get('80%'))} (-: not reached)"
            )
    summary = ElicitationSummaryRecord(
        runs=[str(r) for r in args.runs],
        label=args.label or results[0]["class"],
        summary=summarize(results),
        settled=summarize(results, rule="settled"),
        mean_curves=mean_curves(results),
        per_run=results,
    )
    path = summary.write(out / ElicitationSummaryRecord.FILE)
    print(f"wrote {path}; Fig. 6: python -m figures.capability {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
