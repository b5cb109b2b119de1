"""One W(t) for every class of a run: sim2 fitted jointly, against per-class fits of sim2 and eq1.

  python -m fitting.sim_joint runs/small-c08/trajectories.csv --out runs/joint
  python -m fitting.sim_joint LOG.csv --protocol naive --run color0.8 --seed 0

A per-class fit cannot test sim2: with its own W(0) and signals for each class it bends to any one
path. The structured identity mapping says more: the training classes (10, 01) and the held-out
class (11) are read off one map W(t) at different inputs, so one set of signals and one start must
draw them all. For every run and seed of the log (protocol --protocol), the classes with a concept
present are fitted three ways, over the same located points:

  sim2 joint      one W(t) for all classes (signals, probe norms, W(0): 6 parameters for 2 concepts)
  sim2 per class  a W(t) of its own for each class (6 parameters each)
  eq1 per class   Eq. 1 for each class (9 parameters each: switch times, rates, bias, end level,
                  start)

and scored by AIC over the pooled coordinates, n log(RSS / n) + 2 k (lower is better). Each fit's
parameters that ended on a bound of the search are named (``at_bounds``): their Wald intervals are
not valid. Output in --out (default: a 'sim_joint' folder beside the log): sim_joint.json, one
record per run with each model's AIC, RMSE per class, bounds hit and the joint fit's parameters and
paths (drawn by figures.sim_joint). Class 00 is left out: its input is zero, so sim2 draws it at the
origin whatever its parameters.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

import numpy as np

from fitting.estimators.model_fit import fit_model
from fitting.analyses.report import rounded
from core.trajectory import target_of
from fitting.estimators.sim_fit import fit_sim
from core.progress import bar as progress_bar
from core import cli
from core.cli import UsageError
from fitting.records import SimJointRecord
from core.stamp import stamp
from core.trajectory import Trajectory, read_csv

MODELS = ("sim2 joint", "sim2 per class", "eq1 per class")
CURVE_POINTS = 80


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m fitting.sim_joint``."""
    parser = cli.parser()
    parser.add_argument("log", type=Path, metavar="LOG.csv", help="a trajectory log")
    parser.add_argument(
        "--protocol", default="naive", help="the protocol whose classes are fitted (default naive)"
    )
    parser.add_argument("--run", default=None, help="only this run (default: every run)")
    parser.add_argument(
        "--seed", type=int, default=None, help="only this seed (default: every seed)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help="output folder (default LOG's folder/sim_joint)",
    )
    return parser


def _aic(resid: list[np.ndarray], k: int) -> tuple[float, float, int]:
    flat = np.concatenate([r.ravel() for r in resid])
    rss, n = float(flat @ flat), flat.size
    return float(n * np.log(max(rss, 1e-300) / n) + 2 * k), rss, n


def compare_run(trajs: Sequence[Trajectory]) -> dict:
    """The three fits of one run's classes (each with a concept present and a located point),
    scored."""
    located = [t.with_points() for t in trajs]
    joint = fit_sim(located)
    rows = np.cumsum([0] + [t.step.size for t in located])
    singles = {
        "sim2 per class": [fit_sim(t) for t in located],
        "eq1 per class": [fit_model(t, "eq1", ci="wald") for t in located],
    }
    fitted = {
        "sim2 joint": [joint.fitted[rows[i] : rows[i + 1]] for i in range(len(located))],
        **{name: [f.fitted for f in fits] for name, fits in singles.items()},
    }
    sizes = {
        "sim2 joint": joint.theta.size,
        **{name: sum(f.theta.size for f in fits) for name, fits in singles.items()},
    }
    bounds = {
        "sim2 joint": joint.at_bounds,
        **{
            name: {t.label: f.at_bounds for t, f in zip(located, fits)}
            for name, fits in singles.items()
        },
    }
    models = {}
    for name in MODELS:
        resid = [f - t.z for f, t in zip(fitted[name], located)]
        aic, rss, n = _aic(resid, sizes[name])
        models[name] = {
            "n_params": int(sizes[name]),
            "aic": aic,
            "rss": rss,
            "n": n,
            "rmse": {t.label: float(np.sqrt(np.mean(r**2))) for t, r in zip(located, resid)},
            "at_bounds": bounds[name],
        }
    best = min(models, key=lambda m: models[m]["aic"])
    grid = np.linspace(0, max(t.step[-1] for t in located), CURVE_POINTS)
    return {
        "run": trajs[0].run,
        "seed": trajs[0].seed,
        "concepts": list(trajs[0].concepts),
        "classes": [t.label for t in located],
        "models": models,
        "preferred": best,
        "aic_gaps": {m: models[m]["aic"] - models[best]["aic"] for m in MODELS},
        "joint": {"params": joint.params, "ci": joint.ci, "success": joint.success},
        "curves": {
            "step": rounded(grid),
            "sim2 joint": {
                t.label: rounded(joint.predict(grid, bits=target_of(t.label, len(t.concepts))))
                for t in located
            },
            "eq1 per class": {
                t.label: rounded(f.predict(grid)) for t, f in zip(located, singles["eq1 per class"])
            },
            "observed": {t.label: {"step": t.step.tolist(), "z": rounded(t.z)} for t in located},
        },
    }


def groups(trajs: Sequence[Trajectory], args) -> list[list[Trajectory]]:
    """The log's runs (run, seed) under --protocol/--run/--seed, each its classes with a concept
    present."""
    by_run: dict[tuple, list[Trajectory]] = {}
    for t in trajs:
        if t.protocol != args.protocol or (args.run is not None and t.run != args.run):
            continue
        if args.seed is not None and t.seed != args.seed:
            continue
        if not any(target_of(t.label, len(t.concepts))) or t.missing.all():
            continue
        by_run.setdefault((t.run, t.seed), []).append(t)
    return [sorted(v, key=lambda t: t.label) for v in by_run.values()]


@cli.command
def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    out = cli.output_dir(args.out or cli.default_out(args.log.parent / "sim_joint"), "--out")
    if cli.checking(args):
        return 0
    if not args.log.exists():
        raise UsageError(
            f"{args.log}: no such file (a log from theory.simulate or empirical.train)"
        )
    trajs = read_csv(args.log)
    runs = groups(trajs, args)
    if not runs:
        have = sorted({(t.run, t.seed, t.protocol) for t in trajs})
        raise UsageError(
            f"{args.log}: no class with a concept present matches "
            f"{cli.selection(protocol=args.protocol, run=args.run, seed=args.seed)}; "
            f"the log has (run, seed, protocol): {have}"
        )
    stamped, records, skipped = stamp(), [], []
    for group in progress_bar(runs, desc="joint fits", unit="run"):
        try:
            records.append(compare_run(group))
        except ValueError as err:  # too few points, say: the other runs are still fitted
            skipped.append(
                {"run": group[0].run, "seed": group[0].seed, "reason": cli.one_line(str(err))}
            )
    if not records:
        raise UsageError(f"{args.log}: no run could be fitted; the first: {skipped[0]['reason']}")
    record = SimJointRecord(
        log=str(args.log), protocol=args.protocol, runs=records, skipped=skipped, stamp=stamped
    )
    path = record.write(out / SimJointRecord.FILE)
    print(f"wrote {path}")
    for s in skipped:
        print(
            f"python -m fitting.sim_joint: skipped run={s['run']!r} seed={cli.shown(s['seed'])}: "
            f"{s['reason']}",
            file=sys.stderr,
        )
    for r in records:
        scores = ", ".join(f"{m} {r['models'][m]['aic']:.1f}" for m in MODELS)
        print(
            f"  {r['run'] or '-'} seed={cli.shown(r['seed'])} classes {'/'.join(r['classes'])}: "
            f"AIC {scores}; preferred {r['preferred']}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
