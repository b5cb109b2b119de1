"""The study's per-run and per-level readings of a collected sweep (what each field means: python -m
fitting.study's help)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import numpy as np

from fitting.analyses.capability_readings import capability
from fitting.estimators.curves import fit_logistic, threshold_step
from fitting.analyses.covariates import read_table, select
from fitting.analyses.study_levels import level, relation
from fitting.estimators.trajectory_turn import held_out_turn, learned_from, memorization
from fitting.records import StudyRecord
from core.sidecar import held_out_of, read_meta
from core.trajectory import (
    UNREADABLE,
    Trajectory,
    read_csv,
    target_of,
)

# a concept is learned when 80% of readable samples carry it, held 2 checkpoints
LEVEL, PERSIST = (
    0.8,
    2,
)
MIN_READABLE = (
    0.25  # below this share of readable samples a class's concept accuracy is not defined
)


def concept_accuracy(traj: Trajectory, index: int) -> np.ndarray:
    """(T,) among a class's readable samples, the share whose concept ``index`` has the class's
    value.

    NaN where fewer than MIN_READABLE of the samples were readable (the model draws nothing
    recognizable yet). Conditioning on readability keeps the probe's abstentions (about 10% of a
    trained tiny model's samples, whatever the concept) from capping the curve below the threshold.
    """
    parts = traj.shares()
    if not any(corner != UNREADABLE for corner in parts):
        raise ValueError(
            f"class {traj.label} of run {traj.run!r}: the log has no share_<corner> columns; it "
            "needs the "
            "per-sample shares that empirical.train writes (issue 13 on)"
        )
    readable = np.sum([s for corner, s in parts.items() if corner != UNREADABLE], axis=0)
    right = np.sum(
        [
            s
            for corner, s in parts.items()
            if corner != UNREADABLE and corner[index] == traj.label[index]
        ],
        axis=0,
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(readable >= MIN_READABLE, right / readable, np.nan)


def learning(trajectories: Sequence[Trajectory], train_classes: Sequence[str]) -> dict[str, dict]:
    """Per concept: when the training classes' samples carry it (model-free and fitted), see python
    -m fitting.study --help."""
    train = [t for t in trajectories if t.label in train_classes and t.protocol == "naive"]
    if not train:
        have = sorted({t.label for t in trajectories})
        raise ValueError(
            f"run {trajectories[0].run!r}: no naive trajectory of a training class (the log "
            "holds class "
            f"{', '.join(have)} only); learning times need the training classes' rows"
        )
    step = train[0].step
    out = {}
    for i, concept in enumerate(train[0].concepts):
        curve = np.mean([concept_accuracy(t, i) for t in train], axis=0)
        learned = threshold_step(step, curve, LEVEL, persist=PERSIST)
        fit = fit_logistic(step, curve, level=LEVEL) if np.sum(~np.isnan(curve)) >= 5 else None
        t, ci = rising_crossing(fit, step)
        out[concept] = {
            "learned_step": learned,
            "learned_fit": t,
            "learned_fit_ci": ci,
            "censored_at": float(step[-1]) if learned is None else None,
            "final": None if np.isnan(curve[-1]) else float(curve[-1]),
        }
    return out


def timing(name: str, step: np.ndarray, accuracy: np.ndarray) -> dict:
    """``<name>_step`` (model-free, censored), ``<name>_censored_at`` and ``<name>_t50`` with its
    interval."""
    ok = ~np.isnan(accuracy)
    step, accuracy = step[ok], accuracy[ok]
    first = threshold_step(step, accuracy, 0.5, persist=PERSIST)
    fit = fit_logistic(step, accuracy) if step.size >= 5 else None
    t, ci = rising_crossing(fit, step)
    return {
        f"{name}_step": first,
        f"{name}_censored_at": float(step[-1]) if first is None and step.size else None,
        f"{name}_t50": t,
        f"{name}_t50_ci": ci,
    }


def rising_crossing(fit, step: np.ndarray) -> tuple[float | None, list | None]:
    """A fitted sigmoid's crossing and its interval, counted only when the sigmoid rises and crosses
    within the logged steps (a falling curve, or a crossing extrapolated before the first step, is
    not a learning time)."""
    if fit is None or fit.t50 is None or not fit.hi > fit.lo or not step[0] <= fit.t50 <= step[-1]:
        return None, None
    return fit.t50, None if fit.t50_ci is None else list(fit.t50_ci)


def overlap(a: Sequence[float | None] | None, b: Sequence[float | None] | None) -> bool | None:
    """Whether two intervals (an open end is None) overlap; None when either is missing."""
    if a is None or b is None:
        return None
    lo = max(-math.inf if a[0] is None else a[0], -math.inf if b[0] is None else b[0])
    hi = min(math.inf if a[1] is None else a[1], math.inf if b[1] is None else b[1])
    return bool(lo <= hi)


def held_out(
    trajectories: Sequence[Trajectory], label: str, *, as_registered: bool = False
) -> dict:
    """The held-out class's turn, behavior and capability times, and final reading (see python -m
    fitting.study --help); ``as_registered``: the memorized corner and the capability as issue #57's
    test registered their readers (:func:`fitting.estimators.trajectory_turn.memorized`,
    :func:`fitting.analyses.capability_readings.capability`)."""
    naive = [t for t in trajectories if t.protocol == "naive"]
    held = next((t for t in naive if t.label == label), None)
    if held is None:
        raise ValueError(
            f"run {trajectories[0].run!r}: no naive trajectory of the held-out class {label}"
        )
    turn = held_out_turn(held, naive, n_boot=200)
    out = {
        "turn_step": None if turn is None else turn.step,
        "turn_ci": None if turn is None or turn.ci is None else list(turn.ci),
        "turn_point": None if turn is None else list(turn.point),
    }
    # the paper's Fig. 3 measure: when the held-out class carries each value
    out["learning"] = learning([held], [label])
    # before the training classes are drawn, the readings of 11 wander
    start = learned_from(held, naive)
    drawn = held.z[start:]
    out["reach"] = reach(held.step[start:], drawn, held.concepts, label)
    if held.accuracy is None:
        raise ValueError(f"run {held.run!r}: class {label} has no accuracy column")
    out |= timing("behavior", held.step.astype(float), held.accuracy)
    cap = capability(trajectories, label, as_registered=as_registered)
    out |= (
        timing("capability", cap[0], cap[1])
        if cap is not None
        else dict.fromkeys(
            ("capability_step", "capability_censored_at", "capability_t50", "capability_t50_ci")
        )
    )
    out["capability_unbiased"] = None if cap is None else cap[3]
    out |= memorization(held, naive, as_registered=as_registered)
    out["turn_meets_capability"] = overlap(out["turn_ci"], out["capability_t50_ci"])
    out |= {
        "last_step": float(held.step[-1]),
        "final_shares": {corner: float(s[-1]) for corner, s in held.shares().items()},
        "final_point": [None if math.isnan(v) else float(v) for v in held.z[-1]],
    }
    return out


def reach(step: np.ndarray, z: np.ndarray, concepts: Sequence[str], label: str) -> dict:
    """concept -> the reading of it nearest the class's value (core.trajectory.target_of: the
    highest where the class has the concept, the lowest where it has not) and its step, {value,
    step}; None where never read."""
    target = target_of(label, len(concepts))
    out = {}
    for i, c in enumerate(concepts):
        toward = z[:, i] if target[i] else -z[:, i]
        if np.isnan(toward).all():
            out[c] = None
            continue
        k = int(np.nanargmax(toward))
        out[c] = {"value": float(z[k, i]), "step": float(step[k])}
    return out


def read_covariates(path: Path) -> dict[str, dict[str, str]]:
    """covariates.csv as run -> {column: value} (strings): fitting.predict's table, with a seed and
    numbers only."""
    table = read_table(path)
    if not table or "seed" not in next(iter(table.values())):
        raise ValueError(
            f"{path}: not a sweep's covariates table (no run, or no 'seed' column); "
            "write it with python -m pipeline.sweep collect"
        )
    # a column empty in every row does not apply to this sweep (collect writes sep_shape empty:
    # shape has no
    # separation); a column with no number in any row is a list-valued setting that varies
    # (protocols,
    # channels as 32-64): neither is a covariate
    empty = {
        k
        for k in next(iter(table.values()))
        if not any(_number(cells.get(k)) for cells in table.values())
        and (k != "run" and not k.startswith("_"))
    }
    for cells in table.values():
        for key, value in cells.items():
            if key != "run" and not key.startswith("_") and key not in empty and not _number(value):
                raise ValueError(
                    f"{path}, row {cells['_row']}, column {key}: {value!r} is not a number"
                )
    return {
        run: {k: v for k, v in cells.items() if not k.startswith("_") and k not in empty}
        for run, cells in table.items()
    }


def _number(text: str | None) -> bool:
    try:
        return math.isfinite(float(text))
    except (TypeError, ValueError):
        return False


def varying(covariates: dict[str, dict[str, str]]) -> list[str]:
    """Covariate columns (not run or seed, not a measured signal) whose value differs between
    runs."""
    cols = [
        c
        for c in next(iter(covariates.values()))
        if c not in ("run", "seed") and not c.startswith("signal_")
    ]
    return [c for c in cols if len({r[c] for r in covariates.values()}) > 1]


def study(sweep_dir: Path, by: str | None = None, only: str | None = None) -> StudyRecord:
    """study.json's record for a collected sweep folder; ``only`` (``RUN,..`` or ``COLUMN=VALUE``)
    keeps those runs."""
    sweep_dir = Path(sweep_dir)
    log, cov_path = sweep_dir / "sweep.csv", sweep_dir / "covariates.csv"
    for path in (log, cov_path):
        if not path.is_file():
            raise ValueError(
                f"{path}: not found; run python -m pipeline.sweep collect {sweep_dir} first"
            )
    covariates = read_covariates(cov_path)
    # by default the covariate that varies in the whole sweep, not only in the --only slice
    by = _grouping(covariates, by, cov_path)
    if only is not None:
        kept = select(only, "--only", list(covariates), covariates, str(cov_path))
        covariates = {run: covariates[run] for run in kept}
    trajectories = read_csv(log)
    held_labels = held_out_of({t.label for t in trajectories}, read_meta(log))
    uncovered = sorted({t.run for t in trajectories} - set(covariates))
    if uncovered and only is None:
        raise ValueError(
            f"{log}: {len(uncovered)} run(s) have no row in {cov_path} "
            f"({', '.join(map(repr, uncovered[:5]))}"
            f"{', ...' if len(uncovered) > 5 else ''}), so every statistic would leave them out; "
            "collect the "
            f"sweep again (python -m pipeline.sweep collect {sweep_dir}) or give them rows"
        )
    logged = _logged(covariates, trajectories, held_labels, log, cov_path)
    runs = [
        _run(run_id, cov, logged[run_id], by, held_labels) for run_id, cov in covariates.items()
    ]
    values = sorted({r[by] for r in runs})
    levels = [level([r for r in runs if r[by] == v], by, v, held_labels) for v in values]
    relations = {
        lab: [
            relation(runs, lab, "capability_step", "behavior_step"),
            relation(runs, lab, "capability_t50", "turn_step"),
        ]
        for lab in held_labels
    }
    return StudyRecord(
        sweep=str(sweep_dir),
        by=by,
        level=LEVEL,
        persist=PERSIST,
        held_out=held_labels,
        runs=runs,
        levels=levels,
        relations=relations,
        only=only or "",
    )


def _grouping(covariates: dict, by: str | None, cov_path: Path) -> str:
    """The covariate to group by: ``by`` (a column of the table) or the one that varies."""
    columns = varying(covariates)
    if by is None:
        if len(columns) != 1:
            raise ValueError(
                "--by: give the covariate to group by; the runs vary in "
                f"{', '.join(columns) or 'nothing'}"
            )
        by = columns[0]
    if by not in next(iter(covariates.values())):
        raise ValueError(
            f"--by {by}: not a column of {cov_path}; valid: "
            f"{', '.join(c for c in next(iter(covariates.values())) if c != 'run')}"
        )
    return by


def _logged(covariates: dict, trajectories, held_labels, log: Path, cov_path: Path) -> dict:
    """Each run's rows of the log, every run's rows and signals checked, and the held-out class
    found, before any fit (the fits take seconds)."""
    logged = {}
    for run_id, cov in covariates.items():
        logged[run_id] = [t for t in trajectories if t.run == run_id]
        if not logged[run_id]:
            raise ValueError(f"{cov_path}: run {run_id!r} has no rows in {log}")
        _check_signals(run_id, cov, logged[run_id], cov_path)
    if not any(t.label in held_labels for mine in logged.values() for t in mine):
        have = sorted({t.label for t in trajectories})
        raise ValueError(
            f"{log}: no run logs the held-out class {', '.join(held_labels)} (the log has "
            f"{', '.join(have)}); "
            "the study reads the held-out class's turn, behavior and capability"
        )
    return logged


def _check_signals(run_id: str, cov: dict, mine: list[Trajectory], cov_path: Path) -> None:
    """Refuse a run whose covariates lack a concept's measured signal."""
    lacking = [c for c in mine[0].concepts if not cov.get(f"signal_{c}")]
    if lacking:
        raise ValueError(
            f"{cov_path}: run {run_id!r} has no {', '.join(f'signal_{c}' for c in lacking)}: the "
            "study needs each concept's measured signal (the log's concepts: "
            f"{', '.join(mine[0].concepts)}); "
            f"python -m pipeline.sweep collect {cov_path.parent} writes them"
        )


def _run(run_id: str, cov: dict, mine: list[Trajectory], by: str, held_labels: list[str]) -> dict:
    """One run's record: its covariates, the training classes' learning and each held-out class."""
    labels = sorted({t.label for t in mine})
    train_classes = [lab for lab in labels if lab not in held_labels]
    return {
        "run": run_id,
        "seed": int(cov["seed"]),
        by: float(cov[by]),
        "signal": {
            k[len("signal_") :]: float(v) for k, v in cov.items() if k.startswith("signal_")
        },
        "learning": learning(mine, train_classes),
        "held_out": {lab: held_out(mine, lab) for lab in held_labels if lab in labels},
    }
