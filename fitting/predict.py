"""Fit one toy model to many runs at once, each run's parameters a law of its covariates, and predict
runs it has not seen from their covariates alone.

  python -m fitting.predict runs/sweep/sweep.csv --covariates runs/sweep/covariates.csv --holdout sep_color=0.5
  python -m fitting.predict LOG.csv --covariates COV.csv --leave-out sep_color --law memorize+onset

LOG.csv: many runs (a sweep's sweep.csv; several logs are pooled). COV.csv: a run column and
<name>_<concept> covariates. --leave-out COLUMN fits once per level, that level held out
(DIR/leave_out.json, leave_out.png). The law (--law; --list-laws) maps each concept's covariate to the toy
model's speed, switch and bias, its coefficients shared by every run. Writes predicted.csv (the log
format), prediction.json (coefficients with 95% intervals; per held-out run the law against
interpolation, the nearest run, the mean run, the seed floor and the ceiling) and prediction.png to --out;
docs/fitting.md explains every number.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Sequence

import numpy as np
from tqdm import tqdm

from fitting import baselines
from fitting.covariates import constant_columns, read_covariates, read_shift, read_tables, select
from fitting.curves import settled_step
from fitting.discrepancy import KINDS, features
from fitting.laws import PARTS, LawSpec, from_flags, listing, parse
from fitting.leave_out import (
    KEYS,
    differences,
    gap_text,
    level_summary,
    mean_or_none,
    means,
    split_summary,
)
from fitting.model_fit import fit_model
from fitting.pooled import PooledFit, fit_law
from fitting.report import summary
from fitting.turn import find_turn
from theory import cli
from theory.cli import UsageError
from theory.files import write_json
from theory.stamp import stamp
from theory.trajectory import Trajectory, read_csv, write_csv

LEVEL = 0.8
OUTPUTS = (
    "predicted.csv",
    "prediction.json",
    "prediction.png",
    "leave_out.json",
    "leave_out.png",
)  # what --out receives


class _ListLaws(argparse.Action):
    """--list-laws: print the parts of a law and exit (no other argument needed)."""

    def __call__(self, parser, namespace, values, option_string=None):
        print(listing())
        parser.exit()


def law_of(args: argparse.Namespace) -> LawSpec:
    """The law the command line names: --law, or the older flags that spelled it (not both)."""
    older = args.model is not None or args.onset or args.compete or args.discrepancy is not None
    try:
        if older and args.law is not None:
            raise ValueError(
                f"--law {args.law}: give the law once (--law), not with --model/--onset/--compete/--discrepancy"
            )
        if older:
            return from_flags(args.model or "eq1", args.onset, args.compete, args.discrepancy)
        return parse(args.law or "eq1")
    except ValueError as err:
        raise UsageError(str(err)) from None


def oriented(z: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Coordinates turned so that 1 is the target: z where the target is 1, 1 - z where it is 0."""
    return np.where(np.asarray(target) > 0.5, z, 1 - z)


def metrics(
    steps: np.ndarray,
    path: np.ndarray,
    observed: Trajectory,
    concepts: Sequence[str],
    target: np.ndarray,
) -> dict:
    """RMSE against the observed located points, settled-0.8 step per concept and turn step, of a (T, D) path."""
    located = _located(path, observed)
    if located.sum() < 2:
        return {"rmse": None, "settled_80": {c: None for c in concepts}, "turn": None}
    s, p = np.asarray(steps, dtype=float)[located], path[located]
    rmse = _rmse(path, observed)
    settled = {
        c: settled_step(s, oriented(p[:, i], target[i]), LEVEL) for i, c in enumerate(concepts)
    }
    turn = find_turn(s, p, n_boot=0).step if s.size >= 5 else None
    return {"rmse": rmse, "settled_80": settled, "turn": turn}


def _located(path: np.ndarray, observed: Trajectory) -> np.ndarray:
    """Rows where the observed run was located and the (T, D) path is defined."""
    return ~observed.missing & np.all(np.isfinite(path), axis=1)


def _rmse(path: np.ndarray, observed: Trajectory) -> float | None:
    """RMSE of a (T, D) path at the observed run's steps against its located points; None with fewer than 2."""
    located = _located(path, observed)
    return (
        float(np.sqrt(np.mean((path[located] - observed.z[located]) ** 2)))
        if located.sum() >= 2
        else None
    )


def _rmse_where(path: np.ndarray, other: np.ndarray, observed: Trajectory) -> float | None:
    """RMSE of ``path`` at the points where the ``other`` path (a baseline's) is defined: a paired comparison."""
    return _rmse(np.where(np.isfinite(other), path, np.nan), observed)


def compare(pred: dict, obs: dict, concepts: Sequence[str]) -> dict:
    """A prediction's metrics next to the observed ones."""
    return {
        "rmse": pred["rmse"],
        "settled_80": {
            c: {"predicted": pred["settled_80"][c], "observed": obs["settled_80"][c]}
            for c in concepts
        },
        "turn": {"predicted": pred["turn"], "observed": obs["turn"]},
    }


def build_parser() -> argparse.ArgumentParser:
    parser = cli.parser("fitting.predict", __doc__)
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
    group.add_argument(
        "--holdout",
        metavar="RUN,..",
        help="runs to predict: ids, or COLUMN=VALUE (e.g. sep_color=0.5)",
    )
    group.add_argument(
        "--train",
        metavar="RUN,..",
        help="runs that train the law (as --holdout); the others are predicted",
    )
    group.add_argument(
        "--leave-out",
        metavar="COLUMN",
        help="one fit per value of COLUMN, holding its runs out (e.g. sep_color)",
    )
    parser.add_argument("--class", dest="label", default="11", help="the class (default 11)")
    parser.add_argument(
        "--protocol",
        default="naive",
        help="the protocol fitted (default naive)",
    )
    parser.add_argument(
        "--law",
        default=None,
        metavar="LAW",
        help="the law, parts joined by '+' (default eq1; e.g. memorize+onset+mean)",
    )
    parser.add_argument(
        "--list-laws", nargs=0, action=_ListLaws, help="print every part of a law, then exit"
    )
    # the flags that spelled a law before --law (kept so older commands run; not in --help)
    parser.add_argument(
        "--model", choices=[n for n, p in PARTS.items() if p.kind == "base"], help=argparse.SUPPRESS
    )
    parser.add_argument("--onset", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--compete", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--discrepancy", nargs="?", const="mean", choices=KINDS, help=argparse.SUPPRESS
    )
    parser.add_argument(
        "--masked", metavar="CONCEPT", help="--law eq2: the masked concept (e.g. color)"
    )
    parser.add_argument(
        "--shift",
        default="mask_p",
        metavar="COLUMN",
        help="--law eq2: COV.csv's masking fraction column (default mask_p)",
    )
    parser.add_argument(
        "--covariate",
        default="signal",
        metavar="NAME",
        help="covariate columns NAME_<concept> (default signal; or sep)",
    )
    parser.add_argument(
        "--ci",
        choices=["wald", "runs"],
        default="wald",
        help="intervals: wald, or runs (a bootstrap over training runs)",
    )
    parser.add_argument(
        "--boot",
        type=int,
        default=50,
        metavar="B",
        help="resamples for --ci runs (default 50)",
    )
    parser.add_argument(
        "--train-per-level",
        type=int,
        metavar="K",
        help="with --leave-out: train on K runs drawn per level, --draws times",
    )
    parser.add_argument(
        "--draws",
        type=int,
        default=5,
        metavar="R",
        help="draws for --train-per-level (default 5)",
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed of the draws (default 0)")
    parser.add_argument("--no-figure", action="store_true", help="write the CSV and JSON only")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help="output folder (default: LOG's folder/predict)",
    )
    return parser


def load(
    args: argparse.Namespace,
) -> tuple[list[Trajectory], dict[str, list[float]], dict[str, dict[str, str]]]:
    """The class's trajectories (one per run, from every log), their covariates, and the covariates table."""
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
                    f"run {t.run!r} has several trajectories of class {args.label} ({args.protocol}), "
                    f"{where}; give every run its own id (a sweep's sweep.csv does; pooled sweeps need "
                    "distinct seeds)"
                )
            origin[t.run] = log
        trajs += got
    runs = [t.run for t in trajs]
    table = read_tables(args.covariates)
    absent = [r for r in runs if r not in table]
    if absent:
        raise UsageError(
            f"{cli_list(args.covariates)}: no row for run {absent[0]!r} of {origin[absent[0]]} "
            f"({len(absent)} runs missing)"
        )
    args.masked_index, args.shift_values = None, None
    concepts = trajs[0].concepts
    mine = {r: table[r] for r in runs}
    if args.spec.masked:
        if args.masked not in concepts:
            given = "" if args.masked is None else f" {args.masked}"
            raise UsageError(
                f"--masked{given}: eq2 needs the masked concept, one of {', '.join(concepts)}"
            )
        args.masked_index = concepts.index(args.masked)
        args.shift_values = read_shift(mine, args.shift)
    elif args.masked:
        raise UsageError(f"--masked: only with --law eq2 (the law is {args.spec.name})")
    cov = read_covariates(mine, args.covariate, concepts)
    for column in constant_columns(cov, concepts, args.covariate):
        print(
            f"python -m fitting.predict: warning: {column} is the same in every run; the law's exponent for it is not "
            "identified (only its scale is fitted)",
            file=sys.stderr,
        )
    return trajs, cov, table


def cli_list(paths: Sequence[Path]) -> str:
    return " + ".join(str(p) for p in paths)


def splits(args: argparse.Namespace, runs: list[str], table: dict) -> list[tuple[str, list[str]]]:
    """(name, held-out runs) for each fit: one for --holdout/--train, one per value of the --leave-out column."""
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


@cli.command("fitting.predict")
def main(argv: Sequence[str] | None = None) -> int:
    """``python -m fitting.predict``: see the module docstring."""
    args = build_parser().parse_args(argv)
    args.spec = law_of(args)
    cli.nonnegative_seed(args.seed)
    if args.boot < 10:
        raise UsageError(f"--boot {args.boot}: need at least 10 resamples")
    if args.train_per_level is not None and (
        not args.leave_out or args.train_per_level < 1 or args.draws < 1
    ):
        raise UsageError(
            f"--train-per-level {args.train_per_level} --draws {args.draws}: both at least 1, and only with "
            "--leave-out COLUMN (each fit trains on that many runs drawn from every other level of COLUMN)"
        )
    if args.out is None and len(args.logs) > 1:
        raise UsageError(
            f"--out: {len(args.logs)} logs are pooled; say where the outputs go (--out DIR)"
        )
    out = cli.output_dir(args.out or args.logs[0].parent / "predict", "--out")
    cli.not_an_input([out / name for name in OUTPUTS], [*args.logs, *args.covariates])
    if cli.checking(args):
        return 0
    stamped = stamp()
    trajs, cov, table = load(args)
    runs = [t.run for t in trajs]
    plans = splits(args, runs, table)
    for name, held in plans:
        if len(runs) - len(held) < 3 or not held:
            raise UsageError(
                f"{name or 'the split'}: need at least 3 training runs and 1 held-out run; "
                f"got {len(runs) - len(held)} and {len(held)}"
            )
    if args.train_per_level is not None:
        summary_rows = scarce(args, trajs, cov, table, plans)
    else:
        summary_rows = []
        for name, held in plans:
            train = [r for r in runs if r not in held]
            doc = predict_split(args, trajs, cov, train, held, out / name if name else out, stamped)
            summary_rows.append({"left_out": name, **split_summary(doc)})
    if args.leave_out:
        write_leave_out(args, summary_rows, out, stamped)
    return 0


def law_keys(spec: LawSpec) -> dict:
    """The law's name in a saved record, with the keys older readers know it by."""
    return {"model": spec.base, "law_name": spec.name}


def write_leave_out(args, summary_rows: list[dict], out: Path, stamped: dict) -> None:
    """leave_out.json (and its figure) from the per-level rows; prints the means and the differences."""
    summary = {
        "column": args.leave_out,
        "class": args.label,
        "protocol": args.protocol,
        **law_keys(args.spec),
        "onset": args.spec.onset,
        "compete": args.spec.compete,
        "discrepancy": args.spec.discrepancy,
        "covariate": args.covariate,
        "train_per_level": args.train_per_level,
        "draws": args.draws if args.train_per_level else None,
        "levels": summary_rows,
        "means": means(summary_rows),
        "differences": differences(summary_rows),
        "stamp": stamped,
    }
    write_json(out / "leave_out.json", summary)
    if not args.no_figure:
        from fitting.predict_plot import leave_out_figure

        leave_out_figure(summary, out / "leave_out.png")
    print(
        f"wrote {out / 'leave_out.json'}: "
        + "; ".join(f"{k} {v:.3g}" for k, v in summary["means"].items() if v is not None)
    )
    for name, g in summary["differences"].items():
        print(f"  {name}: {gap_text(g)}")


def scarce(
    args, trajs: list[Trajectory], cov: dict, table: dict, plans: list[tuple[str, list[str]]]
) -> list[dict]:
    """Leave one level out with only ``--train-per-level`` K runs of each other level training the law (drawn at
    random, ``--draws`` times): the law and the baselines when runs are scarce. Per held-out run, each number is
    its mean over the draws; nothing is written per split."""
    by_run, concepts = {t.run: t for t in trajs}, trajs[0].concepts
    x = {r: np.array(cov[r]) for r in by_run}
    level = {r: table[r].get(args.leave_out, "") for r in by_run}
    gen = np.random.default_rng(args.seed)
    splits_pools = []  # per split, the other levels' runs by level; every split checked before any fit
    for name, held in plans:
        pools: dict[str, list[str]] = {}
        for r in by_run:
            if r not in held:
                pools.setdefault(level[r], []).append(r)
        if args.train_per_level * len(pools) < 3:
            raise UsageError(
                f"--train-per-level {args.train_per_level}: {name} leaves {len(pools)} levels, "
                f"{args.train_per_level * len(pools)} training runs; a pooled fit needs at least 3"
            )
        splits_pools.append(pools)
    rows = []
    for (name, held), pools in zip(plans, splits_pools):
        draws: dict[str, list[dict]] = {r: [] for r in held}
        for _ in tqdm(
            range(args.draws),
            desc=f"{name}: draws of {args.train_per_level} run(s) a level",
            leave=False,
            disable=None,
        ):
            train = [
                str(r)
                for pool in pools.values()
                for r in gen.choice(pool, size=min(args.train_per_level, len(pool)), replace=False)
            ]
            doc = analyse(_fit(args, by_run, x, train), by_run, x, train, held, concepts, args)
            for row in split_summary(doc)["per_run"]:
                draws[row["run"]].append(row)
        per_run = [
            {"run": r, **{k: mean_or_none([d[k] for d in draws[r]]) for k in KEYS}} for r in held
        ]
        rows.append({"left_out": name, **level_summary(per_run)})
        print(
            f"{name}: law {rows[-1]['law']:.3f}, "
            + ", ".join(f"{k} {rows[-1][k]:.3f}" for k in KEYS[1:4] if rows[-1][k] is not None)
            + f" (mean over {args.draws} draws of {args.train_per_level} training run(s) a level)"
        )
    return rows


def predict_split(
    args,
    trajs: list[Trajectory],
    cov: dict,
    train: list[str],
    held: list[str],
    out: Path,
    stamped: dict,
) -> dict:
    """One pooled fit on ``train``, predicting ``held``; writes predicted.csv, prediction.json and the figure in ``out``."""
    start = time.perf_counter()
    by_run = {t.run: t for t in trajs}
    concepts = trajs[0].concepts
    x = {r: np.array(cov[r]) for r in by_run}
    shift = args.shift_values
    fit = _fit(args, by_run, x, train, ci=args.ci)
    pooled_s = time.perf_counter() - start
    doc = analyse(fit, by_run, x, train, held, concepts, args)
    ceiling = _fit(args, by_run, x, held) if len(held) >= 3 else None
    for r in held:
        doc["holdout"][r]["ceiling"] = (
            _rmse(_path(ceiling, x[r], by_run[r], shift), by_run[r]) if ceiling else None
        )
    doc |= {
        "log": [str(p) for p in args.logs],
        "covariates": [str(p) for p in args.covariates],
        "stamp": stamped,
        "seconds": {"pooled_fit": round(pooled_s, 2)},
    }
    predicted = [
        Trajectory(
            by_run[r].step,
            _path(fit, x[r], by_run[r], shift),
            concepts,
            args.label,
            "predicted" if r in held else "fitted",
            by_run[r].seed,
            r,
        )
        for r in train + held
    ]
    write_csv(out / "predicted.csv", predicted)
    doc["per_run_fits"] = per_run_fits([by_run[r] for r in train])
    doc["seconds"]["total"] = round(time.perf_counter() - start, 2)
    write_json(out / "prediction.json", doc)
    if not args.no_figure:
        from fitting.predict_plot import figure

        figure(
            doc, {r: by_run[r] for r in held}, {t.run: t for t in predicted}, out / "prediction.png"
        )
    print(
        f"pooled {args.spec.name} fit of {len(train)} runs in {pooled_s:.1f} s (rmse {fit.rmse:.3f}); "
        f"law: {law_text(fit.coefficients)}"
    )
    for r in held:
        h = doc["holdout"][r]
        base = h["baselines"]
        interp = (
            "n/a"
            if base["interpolation"]["rmse"] is None
            else f"{base['interpolation']['rmse']:.3f}"
        )
        print(
            f"  held out {r}: rmse {h['rmse']:.3f} (interpolation {interp}, nearest {base['nearest']['rmse']:.3f})"
        )
    print(
        f"wrote {out / 'predicted.csv'}, {out / 'prediction.json'}"
        + ("" if args.no_figure else f", {out / 'prediction.png'}")
    )
    return doc


def _fit(args, by_run: dict, x: dict, runs: list[str], ci: str = "wald") -> PooledFit:
    """The pooled law of the command line's options fitted to ``runs``."""
    shift = args.shift_values
    return fit_law(
        [by_run[r] for r in runs],
        np.stack([x[r] for r in runs]),
        ci=ci,
        n_boot=args.boot,
        masked=args.masked_index,
        p=None if shift is None else np.array([shift[r] for r in runs]),
        order=args.spec.order,
        onset=args.spec.onset,
        compete=args.spec.compete,
        gate=args.spec.gate,
        discrepancy=args.spec.discrepancy,
    )


def _path(fit: PooledFit, x: np.ndarray, traj: Trajectory, shift: dict | None) -> np.ndarray:
    p = None if shift is None else np.array([shift[traj.run]])
    return fit.predict(x[None], _target(traj)[None], traj.step, p)[0]


def _target(traj: Trajectory) -> np.ndarray:
    d = traj.z.shape[1]
    ok = len(traj.label) == d and set(traj.label) <= {"0", "1"}
    return np.array([float(c) for c in traj.label]) if ok else np.ones(d)


def _params(
    fit: PooledFit, x: np.ndarray, target: np.ndarray, shift: dict | None, run: str
) -> dict:
    p = None if shift is None else np.array([shift[run]])
    return fit.law.run_params(fit.theta, x[None], target[None], p)[0]


def law_text(c: dict) -> str:
    switch = (
        f"t_switch = {c['t_ref']:,.0f} x (x/x_ref)^{c['b_t']:.2f}, "
        if "t_ref" in c
        else f"switch when the others' progress passes theta = {c['theta']:.2f} (sharpness kappa = {c['kappa']:.3g}), "
    )
    return (
        f"lam = {c['lam_ref']:.3g}/step x (x/x_ref)^{c['b_lam']:.2f}, {switch}"
        f"bias depth m = {c['m']:.2f}, sharpness {c['gamma']:.2f}"
        + (f", k = {c['k']:.3g}/step" if "k" in c else "")
        + (f", target shift beta = {c['beta']:.2f}" if "beta" in c else "")
        + (f", onset t_on = {c['t_on']:,.0f}" if "t_on" in c else "")
        + (f", lead exponent c_lam = {c['c_lam']:.2f}" if "c_lam" in c else "")
    )


def discrepancy_doc(fit: PooledFit, concepts: Sequence[str]) -> dict | None:
    """The law's discrepancy: its kind, the training runs' mean residual per concept with its RMS, and (local)
    each training covariate point's residual RMS (None without one)."""
    d = fit.discrepancy
    if d is None:
        return None

    def rms(delta: np.ndarray) -> dict:
        return {c: float(np.sqrt(np.mean(delta[:, i] ** 2))) for i, c in enumerate(concepts)}

    doc = {
        "kind": d.kind,
        "steps": d.steps.tolist(),
        "delta": {c: d.mean[:, i].tolist() for i, c in enumerate(concepts)},
        "rms": rms(d.mean),
    }
    if d.kind == "local":
        doc["points"] = [{"runs": list(ref.runs), "rms": rms(ref.path)} for ref in d.references]
    return doc


def analyse(fit: PooledFit, by_run: dict, x: dict, train: list, held: list, concepts, args) -> dict:
    """prediction.json's body: the law, and per held-out run the prediction against the baselines."""
    ref_steps = np.unique(np.concatenate([np.asarray(by_run[r].step, dtype=float) for r in by_run]))
    shift = args.shift_values
    feature = {r: features(x[r], None if shift is None else shift[r])[0] for r in by_run}
    refs = baselines.references(
        [by_run[r] for r in train], np.stack([feature[r] for r in train]), ref_steps
    )
    pooled_mean = baselines.references(
        [by_run[r] for r in train], np.zeros((len(train), 1)), ref_steps
    )[0].path
    holdout = {}
    for r in held:
        traj, target = by_run[r], _target(by_run[r])
        steps = np.asarray(traj.step, dtype=float)
        idx = np.searchsorted(ref_steps, steps)
        obs = metrics(steps, traj.z, traj, concepts, target)
        path = _path(fit, x[r], traj, shift)
        pred = metrics(steps, path, traj, concepts, target)
        interp, used, why = baselines.interpolation(refs, feature[r])
        near, near_runs = baselines.nearest(refs, feature[r])
        floor = seed_floor(by_run, feature, held, r, ref_steps, idx)
        holdout[r] = {
            **compare(pred, obs, concepts),
            "covariates": dict(zip(concepts, x[r].tolist())),
            "parameters": _params(fit, x[r], target, shift, r),
            "baselines": {
                "interpolation": {
                    **compare(metrics(steps, interp[idx], traj, concepts, target), obs, concepts),
                    "applies": True,
                    "runs": list(used),
                    "why_not": None,
                    "law_rmse": _rmse_where(path, interp[idx], traj),
                }
                if interp is not None
                else {"applies": False, "why_not": why, "rmse": None, "law_rmse": None},
                "nearest": {
                    **compare(metrics(steps, near[idx], traj, concepts, target), obs, concepts),
                    "runs": list(near_runs),
                    "law_rmse": _rmse_where(path, near[idx], traj),
                },
                "mean": {
                    **compare(
                        metrics(steps, pooled_mean[idx], traj, concepts, target), obs, concepts
                    ),
                    "runs": list(train),
                },
            },
            "seed_floor": floor,
            "discrepancy": _source(fit, feature[r]),
        }
    return {
        **law_keys(args.spec),
        "class": args.label,
        "protocol": args.protocol,
        "covariate": args.covariate,
        "concepts": list(concepts),
        "law": {
            "coefficients": fit.coefficients,
            "ci": fit.ci,
            "ci_method": fit.ci_method,
            "x_ref": fit.law.x_ref,
            "text": law_text(fit.coefficients),
            "discrepancy": discrepancy_doc(fit, concepts),
            "success": fit.success,
            "message": fit.message,
        },
        "train": {
            r: {
                "covariates": dict(zip(concepts, x[r].tolist())),
                "rmse": e,
                "parameters": _params(fit, x[r], _target(by_run[r]), shift, r),
            }
            for r, e in zip(train, fit.per_run_rmse)
        },
        "rmse_train": fit.rmse,
        "holdout": holdout,
    }


def _source(fit: PooledFit, feature: np.ndarray) -> dict | None:
    """Where a held-out run's discrepancy came from: how (mean, interpolation, nearest) and which training runs."""
    if fit.discrepancy is None:
        return None
    _, how, runs = fit.discrepancy.at(feature, fit.discrepancy.steps[:1])
    return {"how": how, "runs": list(runs)}


def seed_floor(
    by_run: dict, feature: dict, held: list, run: str, ref_steps: np.ndarray, idx: np.ndarray
) -> dict | None:
    """How far seeds differ, for scale (not a prediction: it reads held-out runs): the RMSE of ``run`` against
    the mean path of the other held-out runs at its covariates (``idx``: its steps' rows of ``ref_steps``);
    None without one."""
    others = [
        o for o in held if o != run and np.allclose(feature[o], feature[run], rtol=0, atol=1e-9)
    ]
    if not others:
        return None
    mean = baselines.references(
        [by_run[o] for o in others], np.stack([feature[o] for o in others]), ref_steps
    )[0].path
    rmse = _rmse(mean[idx], by_run[run])
    return None if rmse is None else {"rmse": rmse, "runs": others}


def per_run_fits(trajs: Sequence[Trajectory]) -> dict:
    """Each training run's own eq1 fit (lam, t_switch, z_bias and the switch verdicts), for the figure's overlay."""
    out = {}
    for t in trajs:
        located = t.with_points()
        if located.step.size < 8:
            out[t.run] = None
            continue
        try:
            f = fit_model(located, "eq1")
        except ValueError as err:
            out[t.run] = {"error": str(err)}
            continue
        out[t.run] = {
            "lam": f.params["lam"],
            "t_switch": f.params["t_switch"],
            "z_bias": f.params["z_bias"],
            "rmse": f.rmse,
            "summary": summary(t.concepts, f.switches),
        }
    return out


if __name__ == "__main__":
    raise SystemExit(main())
