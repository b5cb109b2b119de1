"""The leave-one-level-out summaries of ``python -m fitting.predict``: per level, per held-out run, and over all
held-out runs inside and outside the training range, with the law's paired differences to the baselines."""

from __future__ import annotations

import numpy as np

from fitting.intervals import clustered_mean

KEYS = (
    "law",
    "interpolation",
    "nearest",
    "mean",
    "seed_floor",
    "ceiling",
    "law_at_interpolation",
    "law_at_nearest",
)


def split_summary(doc: dict) -> dict:
    """A split's held-out runs: per run the RMSE of the law, of interpolation (None where it does not apply),
    of the nearest run, of the mean of every training run, the seed floor (None without another seed at the
    run's covariates) and the law's ceiling (None with fewer than 3 held out), the law's RMSE at the points
    each of the two baselines predicts (``law_at_interpolation``, ``law_at_nearest``: a baseline has no value
    where none of its runs was located yet), and their means."""
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
    """The law's RMSE minus the baseline's, paired per held-out run and scored at the same points (those the
    baseline predicts; negative: the law is better): against interpolation inside the training range, the
    nearest run outside it. The mean over runs with a 95% t-interval clustered by level (the unit held out: the
    runs of a level share their fit; :func:`fitting.intervals.clustered_mean`), None with one level; ``runs``,
    ``levels`` and ``law_better`` (runs where the law is better)."""
    out = {}
    for name, inside, base in (
        ("law_minus_interpolation_inside", True, "interpolation"),
        ("law_minus_nearest_outside", False, "nearest"),
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
    return out


def gap_text(gap: dict) -> str:
    """One of :func:`differences`' entries in words: ``+0.004 [-0.003, +0.012] (10 runs, 3 levels)``."""
    where = f"{gap['runs']} runs, {gap['levels']} level{'s' if gap['levels'] > 1 else ''}"
    if gap["ci95"] is None:
        return f"{gap['mean']:+.3f} ({where}: no interval from one level)"
    return f"{gap['mean']:+.3f} [{gap['ci95'][0]:+.3f}, {gap['ci95'][1]:+.3f}] ({where})"


def mean_or_none(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return float(np.mean(values)) if values else None
