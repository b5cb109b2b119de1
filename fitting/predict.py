"""Fit one toy model to many runs at once, each run's parameters a law of its covariates, and
predict runs it has not seen from their covariates alone.

  python -m fitting.predict runs/sweep/sweep.csv --covariates runs/sweep/covariates.csv \\
      --holdout sep_color=0.5
  python -m fitting.predict LOG.csv --covariates COV.csv --leave-out sep_color --law memorize+onset
  python -m figures.predict runs/sweep/predict       # the figures: prediction.png, leave_out.png

LOG.csv: many runs (a sweep's sweep.csv; several logs are pooled). COV.csv: a run column and
<name>_<concept> covariates. --leave-out COLUMN fits once per level, that level held out
(DIR/leave_out.json and one folder per level). The law (--law; --list-laws) maps each concept's
covariate to the toy model's speed, switch and bias, its coefficients shared by every run. Writes
predicted.csv (the log format) and prediction.json (coefficients with 95% intervals, the law's
curves; per held-out run the law against interpolation, the nearest run, the mean run, the seed
floor and the ceiling) to --out; docs/fitting.md explains every number.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from fitting.analyses.covariates import (
    constant_columns,
    read_covariates,
    read_shift,
    read_tables,
    select,
)
from fitting.estimators.laws import LawSpec, listing, parse
from fitting.analyses.leave_out import scarce, split_summary, write_leave_out
from fitting.analyses.prediction import (
    Setup,
    analyse,
    law_path,
    law_text,
    path_rmse,
    per_run_fits,
    pooled_fit,
)
from core import cli
from core.cli import UsageError
from fitting.records import PredictionRecord
from core.stamp import stamp
from core.trajectory import Trajectory, read_csv, write_csv

OUTPUTS = ("predicted.csv", "prediction.json", "leave_out.json")  # what --out receives


class _ListLaws(argparse.Action):
    """--list-laws: print the parts of a law and exit (no other argument needed)."""

    def __call__(self, parser, namespace, values, option_string=None):
        print(listing())
        parser.exit()


def law_of(args: argparse.Namespace) -> LawSpec:
    """The law the command line names (--law, default eq1)."""
    try:
        return parse(args.law or "eq1")
    except ValueError as err:
        raise UsageError(str(err)) from None


SPLITS = (  # one of them: which runs are predicted
    ("--holdout", "RUN,..", "runs to predict: ids, or COLUMN=VALUE (e.g. sep_color=0.5)"),
    ("--train", "RUN,..", "runs that train the law (as --holdout); the others are predicted"),
    ("--leave-out", "COLUMN", "one fit per value of COLUMN, holding its runs out (e.g. sep_color)"),
)
OPTIONS = {  # flag -> its argparse keywords
    "--class": dict(dest="label", default="11", metavar="CLASS", help="the class (default 11)"),
    "--protocol": dict(default="naive", metavar="NAME", help="the protocol fitted (default naive)"),
    "--law": dict(
        metavar="LAW", help="the law, parts joined by '+' (default eq1; e.g. memorize+onset+mean)"
    ),
    "--masked": dict(metavar="CONCEPT", help="--law eq2: the masked concept (e.g. color)"),
    "--shift": dict(
        default="mask_p",
        metavar="COLUMN",
        help="--law eq2: COV.csv's masking fraction column (default mask_p)",
    ),
    "--covariate": dict(
        default="signal",
        metavar="NAME",
        help="covariate columns NAME_<concept> (default signal; or sep)",
    ),
    "--ci": dict(
        choices=["wald", "runs"],
        default="wald",
        help="intervals: wald, or runs (a bootstrap over training runs)",
    ),
    "--boot": dict(type=int, default=50, metavar="B", help="resamples for --ci runs (default 50)"),
    "--train-per-level": dict(
        type=int,
        metavar="K",
        help="with --leave-out: train on K runs drawn per level, --draws times",
    ),
    "--draws": dict(
        type=int, default=5, metavar="R", help="draws for --train-per-level (default 5)"
    ),
    "--seed": dict(
        type=int, default=0, metavar="SEED", help="random seed of the draws (default 0)"
    ),
    "--out": dict(type=Path, metavar="DIR", help="output folder (default: LOG's folder/predict)"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = cli.parser()
    parser.add_argument(
        "logs",
        type=Path,
        nargs="+",
        metavar="LOG.csv",
        help="a log of many runs (a sweep's sweep.csv); several are pooled",
    )
    parser.add_argument(
        "--covariates",
        type=Path,
        nargs="+",
        required=True,
        metavar="COV.csv",
        help="run + <name>_<concept> columns (one table per LOG)",
    )
    group = parser.add_mutually_exclusive_group(required=True)
    for flag, metavar, text in SPLITS:
        group.add_argument(flag, metavar=metavar, help=text)
    for flag, keywords in OPTIONS.items():
        parser.add_argument(flag, **keywords)
    parser.add_argument(
        "--list-laws", nargs=0, action=_ListLaws, help="print every part of a law, then exit"
    )
    return parser


def load(
    args: argparse.Namespace, spec: LawSpec
) -> tuple[list[Trajectory], dict[str, list[float]], dict[str, dict[str, str]], Setup]:
    """The class's trajectories (one per run, from every log), their covariates, the covariates
    table, and the prediction's :class:`Setup` (the law's masked concept and each run's masking
    fraction read here)."""
    trajs, origin = _read_logs(args)
    runs = [t.run for t in trajs]
    table = read_tables(args.covariates)
    absent = [r for r in runs if r not in table]
    if absent:
        raise UsageError(
            f"{cli_list(args.covariates)}: no row for run {absent[0]!r} of {origin[absent[0]]} "
            f"({len(absent)} runs missing)"
        )
    concepts = trajs[0].concepts
    mine = {r: table[r] for r in runs}
    masked, shift = _masking(args, spec, concepts, mine)
    cov = read_covariates(mine, args.covariate, concepts)
    for column in constant_columns(cov, concepts, args.covariate):
        print(
            f"python -m fitting.predict: warning: {column} is the same in every run; the law's "
            "exponent for it is not identified (only its scale is fitted)",
            file=sys.stderr,
        )
    setup = Setup(spec, args.label, args.protocol, args.covariate, args.boot, masked, shift)
    return trajs, cov, table, setup


def _read_logs(args: argparse.Namespace) -> tuple[list[Trajectory], dict[str, Path]]:
    """The class's trajectories from every log, and the log each run came from; the logs must
    share their concepts and every run its own id."""
    trajs, origin = [], {}
    for log in args.logs:
        got = [t for t in read_csv(log) if t.label == args.label and t.protocol == args.protocol]
        if not got:
            raise UsageError(
                f"{log}: no trajectory of class {args.label!r} under protocol {args.protocol!r}"
            )
        if trajs and got[0].concepts != trajs[0].concepts:
            raise UsageError(
                f"{log}: concepts {', '.join(got[0].concepts)} differ from {args.logs[0]}'s "
                f"{', '.join(trajs[0].concepts)}; pooled logs must share their concepts"
            )
        for t in got:
            if t.run in origin:
                where = (
                    f"twice in {log}"
                    if origin[t.run] == log
                    else f"in {origin[t.run]} and in {log}"
                )
                raise UsageError(
                    f"run {t.run!r} has several trajectories of class {args.label} "
                    f"({args.protocol}), {where}; give every run its own id (a sweep's sweep.csv "
                    "does; pooled sweeps need distinct seeds)"
                )
            origin[t.run] = log
        trajs += got
    return trajs, origin


def _masking(
    args: argparse.Namespace, spec: LawSpec, concepts: Sequence[str], table: dict
) -> tuple[int | None, dict | None]:
    """eq2's masked concept (its index) and each run's masking fraction; none for other laws."""
    if spec.masked:
        if args.masked not in concepts:
            given = "" if args.masked is None else f" {args.masked}"
            raise UsageError(
                f"--masked{given}: eq2 needs the masked concept, one of {', '.join(concepts)}"
            )
        return concepts.index(args.masked), read_shift(table, args.shift)
    if args.masked:
        raise UsageError(f"--masked: only with --law eq2 (the law is {spec.name})")
    return None, None


def cli_list(paths: Sequence[Path]) -> str:
    return " + ".join(str(p) for p in paths)


def splits(args: argparse.Namespace, runs: list[str], table: dict) -> list[tuple[str, list[str]]]:
    """(name, held-out runs) for each fit: one for --holdout/--train, one per value of the
    --leave-out column."""
    if args.leave_out:
        column = args.leave_out
        if not any(column in table[r] for r in runs):
            raise UsageError(
                f"--leave-out {column}: not a column of {cli_list(args.covariates)}; columns: "
                f"{', '.join(sorted(k for k in table[runs[0]] if not k.startswith('_')))}"
            )
        values = list(dict.fromkeys(table[r].get(column, "") for r in runs))
        return [
            (f"{column}={v}", [r for r in runs if table[r].get(column, "") == v]) for v in values
        ]
    flag, text = (
        ("--holdout", args.holdout) if args.holdout is not None else ("--train", args.train)
    )
    named = select(text, flag, runs, table, cli_list(args.logs))
    return [("", named if flag == "--holdout" else [r for r in runs if r not in named])]


@cli.command
def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    spec = law_of(args)
    cli.nonnegative_seed(args.seed)
    if args.boot < 10:
        raise UsageError(f"--boot {args.boot}: need at least 10 resamples")
    if args.train_per_level is not None and (
        not args.leave_out or args.train_per_level < 1 or args.draws < 1
    ):
        raise UsageError(
            f"--train-per-level {args.train_per_level} --draws {args.draws}: both at least 1, "
            "and only with "
            "--leave-out COLUMN (each fit trains on that many runs drawn from every other level "
            "of COLUMN)"
        )
    if args.out is None and len(args.logs) > 1:
        raise UsageError(
            f"--out: {len(args.logs)} logs are pooled; say where the outputs go (--out DIR)"
        )
    out = cli.output_dir(args.out or cli.default_out(args.logs[0].parent / "predict"), "--out")
    cli.not_an_input([out / name for name in OUTPUTS], [*args.logs, *args.covariates])
    if cli.checking(args):
        return 0
    sources = {
        "log": [str(p) for p in args.logs],
        "covariates": [str(p) for p in args.covariates],
        "stamp": stamp(),
    }
    trajs, cov, table, setup = load(args, spec)
    runs = [t.run for t in trajs]
    plans = splits(args, runs, table)
    for name, held in plans:
        if len(runs) - len(held) < 3 or not held:
            raise UsageError(
                f"{name or 'the split'}: need at least 3 training runs and 1 held-out run; "
                f"got {len(runs) - len(held)} and {len(held)}"
            )
    if args.train_per_level is not None:
        level = {r: table[r].get(args.leave_out, "") for r in runs}
        rows = scarce(setup, trajs, cov, level, plans, args.train_per_level, args.draws, args.seed)
    else:
        rows = []
        for name, held in plans:
            train = [r for r in runs if r not in held]
            where = out / name if name else out
            doc = predict_split(setup, trajs, cov, train, held, where, sources, args.ci)
            rows.append({"left_out": name, **split_summary(doc)})
    if args.leave_out:
        draws = args.draws if args.train_per_level else None
        write_leave_out(
            setup, args.leave_out, rows, out, sources["stamp"], args.train_per_level, draws
        )
    return 0


def predict_split(
    setup: Setup,
    trajs: list[Trajectory],
    cov: dict,
    train: list[str],
    held: list[str],
    out: Path,
    sources: dict,
    ci: str = "wald",
) -> dict:
    """One pooled fit on ``train``, predicting ``held``; writes predicted.csv and prediction.json
    (with ``sources``: the logs, covariates tables and stamp) in ``out``."""
    start = time.perf_counter()
    by_run = {t.run: t for t in trajs}
    concepts = trajs[0].concepts
    x = {r: np.array(cov[r]) for r in by_run}
    fit = pooled_fit(setup, by_run, x, train, ci=ci)
    pooled_s = time.perf_counter() - start
    doc = analyse(fit, by_run, x, train, held, concepts, setup)
    ceiling = pooled_fit(setup, by_run, x, held) if len(held) >= 3 else None
    for r in held:
        doc["holdout"][r]["ceiling"] = (
            path_rmse(law_path(ceiling, x[r], by_run[r], setup.shift), by_run[r])
            if ceiling
            else None
        )
    doc |= {**sources, "seconds": {"pooled_fit": round(pooled_s, 2)}}
    predicted = [
        Trajectory(
            by_run[r].step,
            law_path(fit, x[r], by_run[r], setup.shift),
            concepts,
            setup.label,
            "predicted" if r in held else "fitted",
            by_run[r].seed,
            r,
        )
        for r in train + held
    ]
    write_csv(out / "predicted.csv", predicted)
    doc["per_run_fits"] = per_run_fits([by_run[r] for r in train])
    doc["seconds"]["total"] = round(time.perf_counter() - start, 2)
    PredictionRecord.from_json(doc).write(out / PredictionRecord.FILE)
    print(
        f"pooled {setup.spec.name} fit of {len(train)} runs in {pooled_s:.1f} s (rmse "
        f"{fit.rmse:.3f}); law: {law_text(fit.coefficients)}"
    )
    for r in held:
        print(f"  held out {r}: {_held_text(doc['holdout'][r])}")
    print(f"wrote {out / 'predicted.csv'}, {out / 'prediction.json'}")
    return doc


def _held_text(h: dict) -> str:
    base = h["baselines"]
    interp = base["interpolation"]["rmse"]
    interp = "n/a" if interp is None else f"{interp:.3f}"
    return f"rmse {h['rmse']:.3f} (interpolation {interp}, nearest {base['nearest']['rmse']:.3f})"


if __name__ == "__main__":
    raise SystemExit(main())
