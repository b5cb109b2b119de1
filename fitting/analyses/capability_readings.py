"""Capability versus behavior per run and over seeds (the readings: python -m fitting.capability's
help)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

import numpy as np

from fitting.estimators.curves import LEVELS, settled_step, threshold_step
from core import cli
from core.sidecar import headline_class, held_out_of, read_meta, run_log
from core.trajectory import (
    UNREADABLE,
    Trajectory,
    read_csv,
)


def _column(t: Trajectory, name: str, ok: np.ndarray) -> np.ndarray | None:
    if name not in t.extra:
        return None
    return np.array([float(v) if v else np.nan for v in t.extra[name]])[ok]


def curves(
    trajectories: Sequence[Trajectory], label: str
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """protocol -> (steps, accuracy) for one class, plus 'capability' (see :func:`capability`)."""
    out = {}
    for t in trajectories:
        if t.label == label and t.accuracy is not None:
            ok = ~np.isnan(t.accuracy)
            out[t.protocol] = (t.step[ok].astype(float), t.accuracy[ok])
    cap = capability(trajectories, label)
    if cap is not None:
        out["capability"] = cap[:2]
    return out


def capability(
    trajectories: Sequence[Trajectory], label: str, *, as_registered: bool = False
) -> tuple[np.ndarray, np.ndarray, list[str], bool] | None:
    """(steps, accuracy, protocol chosen per step, unbiased) of a class's capability, or None when
    never elicited.

    On every step some elicitation protocol logged, chosen among those that did (``as_registered``:
    on the steps every protocol logged, as issue #57's test registered it before errata.md item 11
    (b)): when each protocol kept the accuracy of its chosen setting on the draw that chose it
    (``selection_accuracy``), the capability is the *score* of the protocol whose selection accuracy
    was best, so neither the setting nor the protocol is chosen on the samples that score it
    (unbiased). Older logs have no selection accuracy; there it is the best score over protocols
    (biased upward, flagged False).
    """
    found = {}
    for t in trajectories:
        if t.label == label and t.protocol != "naive" and t.accuracy is not None:
            ok = ~np.isnan(t.accuracy)
            found[t.protocol] = (
                t.step[ok].astype(float),
                t.accuracy[ok],
                _column(t, "selection_accuracy", ok),
            )
    if not found:
        return None
    each = [set(v[0].tolist()) for v in found.values()]
    common = sorted(set.intersection(*each) if as_registered else set.union(*each))
    if not common:
        return None
    names = sorted(found)
    unbiased = all(v[2] is not None and not np.isnan(v[2]).any() for v in found.values())
    # a protocol's score and chooser on the steps, NaN where it logged none (never chosen there)
    score = np.array([_on(common, found[p][0], found[p][1]) for p in names])
    chooser = (
        np.array([_on(common, found[p][0], found[p][2]) for p in names]) if unbiased else score
    )
    # a protocol that logged nothing at a step ranks below any that did, whatever its chooser says
    if not as_registered:
        chooser = np.where(np.isnan(score), -np.inf, np.clip(chooser, -1.0, 2.0))
    pick = np.argmax(chooser, axis=0)
    return np.array(common), score[pick, np.arange(len(common))], [names[i] for i in pick], unbiased


def _on(steps: list[float], at: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``values`` logged at ``at``, on ``steps`` (NaN where not logged)."""
    index = {s: i for i, s in enumerate(at.tolist())}
    return np.array([values[index[s]] if s in index else np.nan for s in steps], dtype=float)


def intervals(trajectories: Sequence[Trajectory], label: str) -> dict[str, dict[str, list]]:
    """protocol -> {step, lo, hi}: the logged 95% interval of each accuracy (protocols that logged
    one)."""
    out = {}
    for t in trajectories:
        if t.label == label and t.accuracy is not None and "accuracy_lo" in t.extra:
            ok = ~np.isnan(t.accuracy)
            lo, hi = _column(t, "accuracy_lo", ok), _column(t, "accuracy_hi", ok)
            out[t.protocol] = {"step": t.step[ok].tolist(), "lo": lo.tolist(), "hi": hi.tolist()}
    return out


def control(
    trajectories: Sequence[Trajectory],
    label: str,
    persist: int,
    held_out: Sequence[str] | None = None,
) -> dict:
    """The training classes as a control: when each became readable and correct under naive
    prompting, and what the protocols did to it. A protocol that lifts a class the model cannot draw
    yet, or breaks one it can, shows here.

    Per training class (every class in the log but ``label`` and the classes held out in training:
    ``held_out``, default the rule training uses, core.sidecar.held_out_of; in three concepts
    011, 101, 110, 111): ``readable_step``, the first step from which at most 5% of its samples were
    unreadable (held ``persist`` checkpoints; None without share columns);
    ``naive`` and ``capability`` first steps at 50%/80%; and the curves. ``learned_step``: the step
    by which every training class reached 80% naive accuracy (None if one never did).
    """
    have = {t.label for t in trajectories}
    classes = sorted(have - {label} - set(held_out_of(have) if held_out is None else held_out))
    out = {}
    for train in classes:
        c = curves(trajectories, train)
        if "naive" not in c:
            continue
        naive = next(t for t in trajectories if t.label == train and t.protocol == "naive")
        unread = naive.shares().get(UNREADABLE)
        readable = None
        if unread is not None and not np.isnan(unread).all():
            readable = threshold_step(
                naive.step.astype(float), 1 - np.nan_to_num(unread, nan=1.0), 0.95, persist=persist
            )
        out[train] = {
            "readable_step": readable,
            "first_step": thresholds(c, persist),
            "curves": {
                p: {"step": st.tolist(), "accuracy": a.tolist()} for p, (st, a) in c.items()
            },
        }
    naive80 = [v["first_step"]["naive"]["80%"] for v in out.values()]
    learned = max(naive80) if naive80 and None not in naive80 else None
    return {"classes": out, "learned_step": learned}


def thresholds(curve: dict, persist: int) -> dict[str, dict[str, float | None]]:
    """protocol -> level -> the first step the curve holds it for ``persist`` checkpoints (None:
    never)."""
    return {
        p: {f"{int(lv * 100)}%": threshold_step(s, a, lv, persist=persist) for lv in LEVELS}
        for p, (s, a) in curve.items()
    }


def settled(curve: dict) -> dict[str, dict[str, float | None]]:
    """protocol -> level -> the step from which the curve stays at or above it (None: never)."""
    return {
        p: {f"{int(lv * 100)}%": settled_step(s, a, lv) for lv in LEVELS}
        for p, (s, a) in curve.items()
    }


def behavior_lags(th: dict) -> dict[str, float | None]:
    """Per level, behavior's step minus capability's (positive: the capability came first)."""
    out = {}
    for lv in ("50%", "80%"):
        b, c = th.get("naive", {}).get(lv), th.get("capability", {}).get(lv)
        out[lv] = None if b is None or c is None else b - c
    return out


def analyse_run(run: Path, label: str | None, persist: int) -> dict:
    """elicitation.json's content for one run: first and settled steps per protocol, lags, curves;
    ``label`` None: the log's headline class (core.sidecar.headline_class: 11, or 111 of three
    concepts)."""
    if persist < 1:
        raise ValueError(f"persist {persist}: must be >= 1 (checkpoints a level must hold)")
    log = run_log(run)
    if not log.exists():
        raise ValueError(f"{log}: no trajectory log (train, then python -m empirical.elicit)")
    trajectories = read_csv(log)
    runs = sorted({(str(t.run), str(t.seed)) for t in trajectories})
    if len(runs) > 1:  # curves are keyed by protocol: two runs' would overwrite each other
        said = ", ".join(f"run {r} seed {s}" for r, s in runs[:4]) + (
            ", ..." if len(runs) > 4 else ""
        )
        raise ValueError(
            f"{log}: holds {len(runs)} runs ({said}); capability reads one run's log: give each "
            "run's own"
        )
    label = label or headline_class({t.label for t in trajectories}, read_meta(log))
    c = curves(trajectories, label)
    if "naive" not in c:
        have = sorted({t.label for t in trajectories if t.protocol == "naive"})
        raise ValueError(
            f"{log}: no naive accuracy for class {label!r} (naive classes in the log: "
            f"{', '.join(have)}; "
            "an accuracy column is needed: logs written by empirical.train have one)"
        )
    if len(c) == 1:
        logged = sorted({t.protocol for t in trajectories if t.label == label})
        raise ValueError(
            f"{log}: class {label!r} was never elicited (protocols logged: {', '.join(logged)}); "
            f"run python -m empirical.elicit {Path(run)} first, so capability is measured, not "
            "assumed absent"
        )
    th, st = thresholds(c, persist), settled(c)
    cap = capability(trajectories, label)
    return {
        "run": str(run),
        "class": label,
        "persist": persist,
        "protocols": sorted(p for p in c if p != "capability"),
        "capability_unbiased": None if cap is None else cap[3],
        "capability_protocol": [] if cap is None else cap[2],
        "first_step": th,
        "lag_behavior_minus_capability": behavior_lags(th),
        "settled_step": st,
        "settled_lag_behavior_minus_capability": behavior_lags(st),
        "curves": {p: {"step": s.tolist(), "accuracy": a.tolist()} for p, (s, a) in c.items()},
        "intervals": intervals(trajectories, label),
        "control": control(
            trajectories,
            label,
            persist,
            held_out_of({t.label for t in trajectories}, read_meta(log)),
        ),
    }


def mean_curves(results: Sequence[dict]) -> dict[str, dict[str, list]]:
    """protocol -> the mean accuracy over runs on the steps every run logged (for Fig. 6)."""
    out = {}
    for p in sorted({p for r in results for p in r["curves"]}):
        runs = [r["curves"][p] for r in results if p in r["curves"]]
        grid = sorted(set.intersection(*(set(c["step"]) for c in runs)))
        if grid:
            mean = np.mean([np.interp(grid, c["step"], c["accuracy"]) for c in runs], axis=0)
            out[p] = {"step": grid, "accuracy": mean.tolist(), "runs": len(runs)}
    return out


def summarize(results: Sequence[dict], *, rule: str = "first") -> dict:
    """Per level: the lags of the runs, their mean, and how many runs never got there.

    ``rule`` is "first" (first step, held for ``persist`` checkpoints) or "settled" (the step from
    which the level holds to the end of training).
    """
    steps, lag = {
        "first": ("first_step", "lag_behavior_minus_capability"),
        "settled": ("settled_step", "settled_lag_behavior_minus_capability"),
    }[rule]
    out = {}
    for lv in ("50%", "80%"):
        vals = [r[lag][lv] for r in results]
        known = [v for v in vals if v is not None]
        out[lv] = {
            "lags": vals,
            "mean_lag": float(np.mean(known)) if known else None,
            "capability_first": sum(v > 0 for v in known),
            "runs": len(vals),
            "naive_steps": [r[steps]["naive"][lv] for r in results],
            "capability_steps": [r[steps].get("capability", {}).get(lv) for r in results],
            "naive_never": sum(r[steps]["naive"][lv] is None for r in results),
            "capability_never": sum(
                r[steps].get("capability", {}).get(lv) is None for r in results
            ),
        }
    return out


def runs_arguments(
    argv: Sequence[str] | None,
    *,
    runs_help: str,
    out_help: str,
    label: str | None = "11",
) -> argparse.Namespace:
    """The running command's line, shared by the commands that read capability curves of runs:
    RUN... --class --persist --out, checked before any input is read; ``label``: --class's default
    (None: each log's own, see analyse_run)."""
    parser = cli.parser()
    parser.add_argument("runs", nargs="+", type=Path, help=runs_help)
    parser.add_argument(
        "--class",
        dest="label",
        default=label,
        help="the class (default: "
        + (label or "the log's held-out class with every concept present, 11 or 111")
        + ")",
    )
    parser.add_argument(
        "--persist", type=int, default=2, help="checkpoints a level must hold (default 2)"
    )
    parser.add_argument("--out", type=Path, default=None, help=out_help)
    args = parser.parse_args(argv)
    if args.persist < 1:
        raise ValueError(f"--persist {args.persist}: must be >= 1 (checkpoints a level must hold)")
    if args.label is not None and not args.label.strip():
        raise ValueError("--class '': give a class label, e.g. 11")
    return args
