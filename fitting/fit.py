"""Fit the toy models to logged concept-space trajectories: when each concept switched, where the
model was biased toward before the turn, how strong each concept's signal is, with intervals.

  python -m fitting.fit runs/theory/fig5/trajectories.csv --class 11
  python -m fitting.fit runs/train/tiny-color0.8-size0.2-seed0/trajectories.csv --model eq1 \\
      --protocol naive --out runs/fit
  python -m fitting.fit LOG.csv --model eq2 --fix z_target=1,1 --ci bootstrap --boot 200

Every trajectory of the log that matches --class/--protocol/--run (a trajectory is the rows sharing
run, seed, class and protocol) gets:

  model-free  threshold steps (first step each coordinate and the accuracy reach 0.5 / 0.8, held for
              --persist checkpoints); the turn (a two-segment fit in concept space,
              profile-likelihood 95% interval) and the memorization point; the accuracy 50% time
              (sigmoid fit, profile-likelihood interval) when the log has an accuracy column;
  model fit   eq1, eq2 or notebook by least squares on the simulated path (training steps are the
              model's time unit): t_switch, k, lam, z_bias, z0 (z_target fixed to the class corner,
              e.g. 11 -> (1, 1), unless --fix says otherwise), p_beta for eq2; 95% intervals (wald,
              or a residual bootstrap); a switch the data cannot identify gets t_switch null.

Output in --out (default: a 'fit' folder beside the log): fit.json ({"fits": [...], "skipped":
[...], "lags": [...]}, written once all fits are done), each record with the fitted curves that the
command python -m figures.fit draws (one figure per trajectory: data and fitted path;
--no-figures leaves them out). A trajectory that cannot be fitted (fewer than 8 points, say) is
skipped and named, with why, in "skipped" and on stderr; the others are still fitted (exit 2 only
when none can be). "lags" gives, per run, seed and class, how many steps each protocol's accuracy
reached 0.5 before naive prompting. A malformed log exits with code 2 and the validator's message,
and nothing is written.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from fitting.estimators.registry import ESTIMATORS
from fitting.analyses.report import analyse, fitted_curves
from core.progress import bar as progress_bar
from core import cli
from core.cli import UsageError
from fitting.records import FitRecord
from core.stamp import stamp
from core.trajectory import read_csv


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m fitting.fit``."""
    parser = cli.parser()
    parser.add_argument(
        "log",
        type=Path,
        metavar="LOG.csv",
        help="a trajectory log (theory.simulate or empirical.train)",
    )
    parser.add_argument(
        "--model",
        choices=list(ESTIMATORS),
        default="eq1",
        help="toy model to fit (default eq1; sim2: the structured identity mapping's two-layer "
        "model)",
    )
    parser.add_argument(
        "--compare",
        choices=list(ESTIMATORS),
        default=None,
        metavar="MODEL",
        help="also fit MODEL to every trajectory and compare the two by AIC (record 'comparison')",
    )
    parser.add_argument("--class", dest="label", metavar="LABEL", help="only this class (e.g. 11)")
    parser.add_argument("--protocol", metavar="NAME", help="only this protocol (e.g. naive, sim)")
    parser.add_argument("--run", metavar="ID", help="only this run id")
    parser.add_argument(
        "--fix",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="hold a parameter fixed, in the log's units (repeatable; vectors comma-separated)",
    )
    parser.add_argument(
        "--ci",
        choices=["wald", "bootstrap"],
        default="wald",
        help="interval method for the model parameters (default wald; bootstrap is ~25x slower)",
    )
    parser.add_argument(
        "--boot", type=int, default=100, metavar="B", help="bootstrap resamples (default 100)"
    )
    parser.add_argument(
        "--persist",
        type=int,
        default=2,
        metavar="M",
        help="threshold steps must hold for M consecutive checkpoints (default 2; the official "
        "analysis used 3)",
    )
    parser.add_argument("--no-figures", action="store_true", help="no curves for figures.fit")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help="output folder (default LOG's folder/fit)",
    )
    return parser


def _fixes(items: Sequence[str]) -> dict[str, list[float]]:
    fix = {}
    for item in items:
        name, text = cli.assignment(item, "--fix")
        fix[name] = cli.numbers(text, "--fix", name)
    return fix


def protocol_lags(records: list[dict]) -> list[dict]:
    """Steps by which each protocol's accuracy reached 0.5 before naive prompting did (positive:
    earlier)."""
    out = []
    groups: dict[tuple, dict[str, dict]] = {}
    for r in records:
        groups.setdefault((r["run"], r["seed"], r["class"]), {})[r["protocol"]] = r
    for (run, seed, label), by_protocol in groups.items():
        naive = by_protocol.get("naive")
        if naive is None:
            continue
        for protocol, r in by_protocol.items():
            if protocol == "naive":
                continue
            t_naive = naive["threshold_steps"]["50%"].get("accuracy")
            t_other = r["threshold_steps"]["50%"].get("accuracy")
            out.append(
                {
                    "run": run,
                    "seed": seed,
                    "class": label,
                    "protocol": protocol,
                    "level": 0.5,
                    "naive_step": t_naive,
                    "protocol_step": t_other,
                    "lag": None if t_naive is None or t_other is None else t_naive - t_other,
                    "lag_t50": None
                    if naive["accuracy_t50"] is None or r["accuracy_t50"] is None
                    else naive["accuracy_t50"] - r["accuracy_t50"],
                }
            )
    return out


def compare(record: dict, other: dict) -> dict:
    """Two models fitted to one trajectory, side by side: AIC (lower is better), RMSE, parameters
    counted."""
    models = {
        r["model"]: {
            "aic": r["aic"],
            "rmse": r["rmse"],
            "n_params": r["n_params"],
            "at_bounds": r.get("at_bounds"),
        }
        for r in (record, other)
        if r["model"] is not None
    }
    scored = {m: v["aic"] for m, v in models.items() if v["aic"] is not None}
    better = min(scored, key=scored.get) if len(scored) == 2 else None
    gap = abs(float(np.subtract(*scored.values()))) if len(scored) == 2 else None
    return {"models": models, "better": better, "aic_gap": gap}


def _chosen(args) -> list:
    """The log's trajectories that --class/--protocol/--run select (UsageError naming what it
    has)."""
    if not args.log.exists():
        raise UsageError(
            f"{args.log}: no such file (a log from python -m theory.simulate or empirical.train)"
        )
    trajs = read_csv(args.log)
    chosen = [
        t
        for t in trajs
        if (args.label is None or t.label == args.label)
        and (args.protocol is None or t.protocol == args.protocol)
        and (args.run is None or t.run == args.run)
    ]
    if not chosen:
        have = sorted({(t.label, t.protocol) for t in trajs})
        raise UsageError(
            f"{args.log}: no trajectory matches "
            f"{cli.selection(**{'class': args.label}, protocol=args.protocol, run=args.run)}; "
            f"the log has (class, protocol): {have}"
        )
    if args.model == "notebook" and len(chosen[0].concepts) != 2:
        raise UsageError(
            f"--model notebook needs 2 concepts; {args.log} has {list(chosen[0].concepts)}"
        )
    return chosen


def _fit_each(chosen, model, *, fix, ci, boot, persist, versus, log) -> tuple[list, list[dict]]:
    """(trajectory, record, fit, turn, accuracy fit) per trajectory that could be fitted, and the
    skipped ones with why (too few points, a --fix that does not fit this model: the others still
    fit)."""
    results, skipped = [], []
    for traj in progress_bar(chosen, desc="fitting", unit="trajectory"):
        try:
            kwargs = dict(fix=fix, ci=ci, n_boot=boot, persist=persist)
            result = (traj, *analyse(traj, model, **kwargs))
            if versus:  # --compare: a second model on the same trajectory
                other = analyse(traj, versus, ci="wald", persist=persist)[0]
                result[1]["comparison"] = compare(result[1], other)
            results.append(result)
        except ValueError as err:
            where = {"run": traj.run, "seed": traj.seed, "class": traj.label}
            skipped.append({**where, "protocol": traj.protocol, "reason": cli.one_line(str(err))})
    if not results:
        first = skipped[0]
        raise UsageError(
            f"{log}: none of the {len(skipped)} trajectories could be fitted; the first, "
            f"run={first['run']!r} seed={cli.shown(first['seed'])} class={first['class']!r} "
            f"protocol={first['protocol']!r}: {first['reason']}"
        )
    return results, skipped


def _say(records: list[dict], skipped: list[dict]) -> None:
    """The skipped trajectories on stderr, a line per fitted one on stdout."""
    for s in skipped:
        print(
            f"python -m fitting.fit: skipped run={s['run']!r} seed={cli.shown(s['seed'])} "
            f"class={s['class']!r} "
            f"protocol={s['protocol']!r}: {s['reason']}",
            file=sys.stderr,
        )
    for r in records:
        turn = "-" if r["turn_step"] is None else f"{r['turn_step']:.4g}"
        said = r["summary"] or ("no model fit" if r["model"] is None else f"{r['model']} fitted")
        versus = ""
        if r.get("comparison") and r["comparison"]["better"]:
            c = r["comparison"]
            versus = f"; AIC prefers {c['better']} by {c['aic_gap']:.1f}"
        print(
            f"  {r['run'] or '-'} seed={cli.shown(r['seed'])} class={r['class']} "
            f"{r['protocol']}: {said}; "
            f"turn={turn} rmse={np.nan if r['rmse'] is None else r['rmse']:.3g}{versus}"
        )


@cli.command
def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.boot < 10:
        raise UsageError(f"--boot {args.boot}: need at least 10 resamples")
    if args.persist < 1:
        raise UsageError(f"--persist {args.persist}: must be >= 1")
    fix = _fixes(args.fix)
    if args.compare == args.model:
        raise UsageError(f"--compare {args.compare}: give another model than --model {args.model}")
    out = cli.output_dir(args.out or cli.default_out(args.log.parent / "fit"), "--out")
    if cli.checking(args):
        return 0
    chosen = _chosen(args)
    start, stamped = time.perf_counter(), stamp()
    options = dict(ci=args.ci, boot=args.boot, persist=args.persist, versus=args.compare)
    results, skipped = _fit_each(chosen, args.model, fix=fix, log=args.log, **options)
    records = [r[1] for r in results]  # written only once every fit has been tried
    if not args.no_figures:  # what figures.fit draws
        for traj, record, model_fit, _, acc in results:
            record["curves"] = fitted_curves(traj, model_fit, acc)
    record = FitRecord(
        log=str(args.log),
        model=args.model,
        fits=records,
        skipped=skipped,
        lags=protocol_lags(records),
        stamp=stamped,
    )
    path = record.write(out / FitRecord.FILE)
    print(
        f"fitted {len(records)} trajectories in {time.perf_counter() - start:.1f} s; wrote {path}"
        + ("" if args.no_figures else f"; figures: python -m figures.fit {out}")
    )
    _say(records, skipped)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
