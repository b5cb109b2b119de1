"""Leave one level out (``python -m fitting.predict --leave-out``): the summaries per level, per
held-out run, and over all held-out runs inside and outside the training range, with the law's
paired differences to the baselines; the variant trained on a few runs a level; leave_out.json."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from fitting.estimators.intervals import clustered_mean
from fitting.analyses.prediction import Setup, analyse, pooled_fit
from core.progress import bar as progress_bar
from core.cli import UsageError
from fitting.records import LeaveOutRecord
from core.trajectory import Trajectory

KEYS = (
    "law",
    "interpolation",
    "nearest",
    "mean",
    "seed_floor",
    "ceiling",
    "law_at_interpolation",
    "law_at_nearest",
    "linear",
    "trend",
    "law_at_linear",
    "law_at_trend",
)


def split_summary(doc: dict) -> dict:
    """A split's held-out runs: per run the RMSE of the law, of interpolation (None where it does
    not apply), of the nearest run, of the mean of every training run, the seed floor (None without
    another seed at the run's covariates) and the law's ceiling (None with fewer than 3 held out),
    the line through the two nearest levels and the nearest level plus the levels' per-step trend
    (``linear``, ``trend``: None where the training points are not in a line), the law's RMSE at the
    points each baseline predicts (``law_at_<baseline>``: a baseline has no value where none of its
    runs was located yet), and their means."""
    return level_summary(
        [
            {
                "run": r,
                "law": h["rmse"],
                "interpolation": h["baselines"]["interpolation"]["rmse"],
                "nearest": h["baselines"]["nearest"]["rmse"],
                "mean": h["baselines"]["mean"]["rmse"],
                "seed_floor": (h["seed_floor"] or {}).get("rmse"),
                "ceiling": h.get("ceiling"),
                "law_at_interpolation": h["baselines"]["interpolation"].get("law_rmse"),
                "law_at_nearest": h["baselines"]["nearest"]["law_rmse"],
                **{
                    key: h["baselines"][base]["rmse" if key == base else "law_rmse"]
                    for base in ("linear", "trend")
                    for key in (base, f"law_at_{base}")
                },
            }
            for r, h in doc["holdout"].items()
        ]
    )


def level_summary(per_run: list[dict]) -> dict:
    """Per-run rows -> the level's means (None where no run has the number) and the rows."""
    return {
        "runs": [row["run"] for row in per_run],
        **{key: mean_or_none([row[key] for row in per_run]) for key in KEYS},
        "per_run": per_run,
    }


def means(rows: list[dict]) -> dict:
    """Over every held-out run of every level: the law and each baseline, apart for the runs
    inside the training range (interpolation applies) and outside it (extrapolation)."""
    runs = [r for row in rows for r in row["per_run"]]
    out = {}
    for where, inside in (("inside", True), ("outside", False)):
        chosen = [r for r in runs if (r["interpolation"] is not None) == inside]
        for key in KEYS:
            values = [r[key] for r in chosen if r[key] is not None]
            out[f"{key}_{where}"] = float(np.mean(values)) if values else None
        out[f"runs_{where}"] = len(chosen)
    return out


def differences(rows: list[dict]) -> dict:
    """The law's RMSE minus the baseline's, paired per held-out run and scored at the same points
    (those the baseline predicts; negative: the law is better): against interpolation inside the
    training range; the nearest run, the line through the two nearest levels and the nearest level
    plus the levels' trend outside it. The mean over runs with a 95% t-interval clustered by level
    (the unit held out: the runs of a level share their fit;
    :func:`fitting.estimators.intervals.clustered_mean`), None with one level; ``runs``, ``levels``,
    ``law_better`` (runs where the law is better) and ``text`` (:func:`gap_text`)."""
    out = {}
    for name, inside, base in (
        ("law_minus_interpolation_inside", True, "interpolation"),
        ("law_minus_nearest_outside", False, "nearest"),
        ("law_minus_linear_outside", False, "linear"),
        ("law_minus_trend_outside", False, "trend"),
    ):
        law = f"law_at_{base}"
        pairs = [
            (r[law] - r[base], i)
            for i, row in enumerate(rows)
            for r in row["per_run"]
            if (r["interpolation"] is not None) == inside
            and r[law] is not None
            and r[base] is not None
        ]
        if pairs:
            d, level = zip(*pairs)
            gap = clustered_mean(d, level)
            out[name] = {
                "mean": gap["mean"],
                "ci95": gap["ci95"],
                "runs": gap["runs"],
                "levels": gap["clusters"],
                "law_better": int(np.sum(np.array(d) < 0)),
                "interval": "t, clustered by level",
            }
            out[name]["text"] = gap_text(out[name])
    return out


def gap_text(gap: dict) -> str:
    """One of :func:`differences`' entries in words: ``+0.004 [-0.003, +0.012] (10 runs, 3
    levels)``."""
    where = f"{gap['runs']} runs, {gap['levels']} level{'s' if gap['levels'] > 1 else ''}"
    if gap["ci95"] is None:
        return f"{gap['mean']:+.3f} ({where}: no interval from one level)"
    return f"{gap['mean']:+.3f} [{gap['ci95'][0]:+.3f}, {gap['ci95'][1]:+.3f}] ({where})"


def mean_or_none(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return float(np.mean(values)) if values else None


def write_leave_out(
    setup: Setup,
    column: str,
    rows: list[dict],
    out: Path,
    stamped: dict,
    train_per_level: int | None = None,
    draws: int | None = None,
) -> None:
    """leave_out.json from the per-level rows; prints the means and the differences."""
    spec = setup.spec
    summary = LeaveOutRecord(
        column=column,
        label=setup.label,
        protocol=setup.protocol,
        model=spec.base,
        law_name=spec.name,
        onset="onset" in spec.options,
        compete="compete" in spec.options,
        discrepancy=spec.discrepancy,
        covariate=setup.covariate,
        train_per_level=train_per_level,
        draws=draws,
        levels=rows,
        means=means(rows),
        differences=differences(rows),
        stamp=stamped,
    )
    path = summary.write(out / LeaveOutRecord.FILE)
    print(
        f"wrote {path}: "
        + "; ".join(f"{k} {v:.3g}" for k, v in summary.means.items() if v is not None)
    )
    for name, g in summary.differences.items():
        print(f"  {name}: {g['text']}")


def scarce(
    setup: Setup,
    trajs: list[Trajectory],
    cov: dict,
    level: dict[str, str],
    plans: list[tuple[str, list[str]]],
    per_level: int,
    draws: int,
    seed: int = 0,
) -> list[dict]:
    """Leave one level out with only ``per_level`` runs of each other level (``level``: run -> its
    level) training the law, drawn at random ``draws`` times: the law and the baselines when runs
    are scarce. Per held-out run, each number is its mean over the draws; nothing is written per
    split."""
    by_run, concepts = {t.run: t for t in trajs}, trajs[0].concepts
    x = {r: np.array(cov[r]) for r in by_run}
    gen = np.random.default_rng(seed)
    # per split, the other levels' runs by level; every split checked before any fit
    splits_pools = []
    for name, held in plans:
        pools: dict[str, list[str]] = {}
        for r in by_run:
            if r not in held:
                pools.setdefault(level[r], []).append(r)
        if per_level * len(pools) < 3:
            raise UsageError(
                f"--train-per-level {per_level}: {name} leaves {len(pools)} levels, "
                f"{per_level * len(pools)} training runs; a pooled fit needs at least 3"
            )
        splits_pools.append(pools)
    rows = []
    for (name, held), pools in zip(plans, splits_pools):
        got: dict[str, list[dict]] = {r: [] for r in held}
        for _ in progress_bar(
            range(draws), desc=f"{name}: draws of {per_level} run(s) a level", leave=False
        ):
            train = [
                str(r)
                for pool in pools.values()
                for r in gen.choice(pool, size=min(per_level, len(pool)), replace=False)
            ]
            fitted = pooled_fit(setup, by_run, x, train)
            doc = analyse(fitted, by_run, x, train, held, concepts, setup)
            for row in split_summary(doc)["per_run"]:
                got[row["run"]].append(row)
        per_run = [
            {"run": r, **{k: mean_or_none([d[k] for d in got[r]]) for k in KEYS}} for r in held
        ]
        rows.append({"left_out": name, **level_summary(per_run)})
        print(
            f"{name}: law {rows[-1]['law']:.3f}, "
            + ", ".join(f"{k} {rows[-1][k]:.3f}" for k in KEYS[1:4] if rows[-1][k] is not None)
            + f" (mean over {draws} draws of {per_level} training run(s) a level)"
        )
    return rows
