"""The study's numbers per level of the swept covariate and across runs (``python -m
fitting.study``): the seeds' steps summarised (median, range, censored), the held-out class's times
and reach per level, the relations between capability, behavior and turn across the elicited runs,
and the markdown tables."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from fitting.records import StudyRecord
from core.trajectory import target_of


def summarise(values: list[float | None], censored_at: list[float | None]) -> dict:
    """Median and range of the seeds' steps that were reached; how many were censored (and from
    when); and ``median_all``, the median over every seed with a censored one counted as later than
    any reached (None where that median falls on a censored seed, half or more never got there, or
    where a censored seed stopped before it: runs of unequal length, one too short to say it would
    have come later)."""
    got = [v for v in values if v is not None]
    every = np.median([np.inf if v is None else v for v in values]) if values else np.inf
    if any(c is not None and c < every for c in censored_at):
        every = np.inf
    return {
        "n": len(values),
        "n_censored": len(values) - len(got),
        "median": float(np.median(got)) if got else None,
        "median_all": float(every) if np.isfinite(every) else None,
        "range": [min(got), max(got)] if got else None,
        "censored_from": min((c for c in censored_at if c is not None), default=None),
    }


def held_summary(group: Sequence[dict], label: str, key: str) -> dict:
    """summarise() of one held-out time over a level's runs (a run without it is censored at its
    last step; a run that was never elicited does not count for capability)."""
    recs = [r["held_out"][label] for r in group if label in r["held_out"]]
    if key == "capability_step":
        recs = [h for h in recs if h["capability_unbiased"] is not None]
    return summarise([h[key] for h in recs], [h["last_step"] for h in recs if h[key] is None])


def _ci_text(ci: list[float] | None, fmt: str, prefix: str = "") -> str:
    """' [lo, hi]' for a resampled interval (with ``prefix`` before it), '' without one."""
    return "" if ci is None else f"{prefix} [{ci[0]:{fmt}}, {ci[1]:{fmt}}]"


def resampled(xs: np.ndarray, ys: np.ndarray, stat, draws: int = 2000) -> list[float] | None:
    """95% percentile interval of ``stat(x, y)`` over the pairs resampled with replacement (the run
    is the unit; resamples with a single x value are skipped); None when fewer than 3 pairs or
    distinct x values."""
    if len(xs) < 3 or len(set(xs.tolist())) < 2:
        return None
    rng = np.random.default_rng(0)
    values = []
    for _ in range(draws):
        idx = rng.integers(0, len(xs), len(xs))
        if len(set(xs[idx].tolist())) > 1:
            values.append(stat(xs[idx], ys[idx]))
    return [float(v) for v in np.percentile(values, [2.5, 97.5])]


def relation(runs: Sequence[dict], label: str, x_key: str, y_key: str) -> dict:
    """Two held-out times across the elicited runs: per run each observed or censored at the run's
    last step, a line through the fully observed pairs (3 or more), and how many censored pairs
    contradict it (y never came although the line puts it before the run's end)."""
    pairs = []
    for r in runs:
        h = r["held_out"].get(label)
        if h is None or h["capability_unbiased"] is None:
            continue
        x, y = h[x_key], h[y_key]
        pairs.append(
            {
                "run": r["run"],
                "x": h["last_step"] if x is None else x,
                "x_censored": x is None,
                "y": h["last_step"] if y is None else y,
                "y_censored": y is None,
            }
        )
    both = [(p["x"], p["y"]) for p in pairs if not (p["x_censored"] or p["y_censored"])]
    line, against = None, None
    if len(both) >= 3 and len({x for x, _ in both}) > 1:
        xs, ys = map(np.array, zip(*both))
        slope, intercept = np.polyfit(xs, ys, 1)
        line = {
            "slope": float(slope),
            "intercept": float(intercept),
            "r": float(np.corrcoef(xs, ys)[0, 1]),
            "slope_ci": resampled(xs, ys, lambda x, y: np.polyfit(x, y, 1)[0]),
            "lag_median": float(np.median(ys - xs)),
            "lag_median_ci": resampled(xs, ys, lambda x, y: np.median(y - x)),
        }
        against = sum(
            1
            for p in pairs
            if p["y_censored"] and not p["x_censored"] and slope * p["x"] + intercept < p["y"]
        )
    turned = [r["held_out"][label]["turn_meets_capability"] for r in runs if label in r["held_out"]]
    return {
        "x": x_key,
        "y": y_key,
        "pairs": pairs,
        "n_observed": len(both),
        "line": line,
        "censored_against_line": against,
        **(
            {"turn_meets_capability": {"yes": turned.count(True), "no": turned.count(False)}}
            if "turn" in y_key
            else {}
        ),
    }


def reach_summary(group: Sequence[dict], label: str, concept: str) -> dict | None:
    """Median and range over a level's runs of how far a held-out class's coordinate reached, and
    when."""
    got = [r["held_out"][label]["reach"][concept] for r in group if label in r["held_out"]]
    got = [g for g in got if g is not None]
    if not got:
        return None
    values, steps = [g["value"] for g in got], [g["step"] for g in got]
    return {
        "median": float(np.median(values)),
        "range": [min(values), max(values)],
        "median_step": float(np.median(steps)),
    }


def level(group: Sequence[dict], by: str, value: float, held_labels: Sequence[str]) -> dict:
    """One level's record: its runs, each concept's mean signal and the seeds' learned steps (the
    training classes', model-free and fitted, and each held-out class's), and the held-out classes'
    times and reach."""
    concepts = list(group[0]["learning"])

    def learned(key: str, of, censored: bool = True) -> dict:  # of(run): its per-concept records
        records = [of(r) for r in group if of(r) is not None]
        return {
            c: summarise(
                [rec[c][key] for rec in records],
                [rec[c]["censored_at"] if censored else None for rec in records],
            )
            for c in concepts
        }

    return {
        by: value,
        "runs": [r["run"] for r in group],
        "signal": {c: float(np.mean([r["signal"][c] for r in group])) for c in concepts},
        "learned_step": learned("learned_step", lambda r: r["learning"]),
        "learned_fit": learned("learned_fit", lambda r: r["learning"], censored=False),
        **{
            key: {lab: held_summary(group, lab, key) for lab in held_labels}
            for key in ("turn_step", "behavior_step", "capability_step")
        },
        "reach": {lab: {c: reach_summary(group, lab, c) for c in concepts} for lab in held_labels},
        **{
            f"held_{key}": {
                lab: learned(
                    key,
                    lambda r, lab=lab: (
                        r["held_out"][lab]["learning"] if lab in r["held_out"] else None
                    ),
                    censored=key == "learned_step",
                )
                for lab in held_labels
            }
            for key in ("learned_step", "learned_fit")
        },
    }


def steps_text(summary: dict) -> str:
    """A level's seeds as text: median [range] of those reached, and how many never were."""
    if summary["n"] == 0:
        return "-"
    text = "never" if summary["median"] is None else f"{summary['median']:,.0f}"
    if summary["range"] and summary["range"][0] != summary["range"][1]:
        text += " [{:,.0f}, {:,.0f}]".format(*summary["range"])
    if summary["n_censored"] and summary["censored_from"] is not None:
        text += f" ({summary['n_censored']}/{summary['n']} not by {summary['censored_from']:,.0f})"
    elif summary["n_censored"]:
        text += f" ({summary['n_censored']}/{summary['n']} never)"
    return text


def tables(doc: StudyRecord) -> str:
    """The study's numbers as markdown tables (results/study-notebook.md quotes them): per level,
    then the relations."""
    label = doc.headline
    concepts = list(doc.levels[0]["learned_step"])
    lines = _learning_table(doc, concepts) + [""] + _reach_table(doc, concepts)
    lines += ["\n" + _relation_line(rel) for rel in doc.relations[label]]
    return "\n".join(lines)


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(cells) + " |" for cells in [head, *rows]]
    return [lines[0], "|" + "---|" * len(head), *lines[1:]]


def _learning_table(doc: StudyRecord, concepts: list[str]) -> list[str]:
    """Per level and concept: the signal, and when the training classes and the headline class
    learned it."""
    by, label = doc.by, doc.headline
    head = [by] + [
        f"{c}: signal; learned by the training classes (model-free; fitted); by class {label} "
        "(model-free; fitted)"
        for c in concepts
    ]
    rows = [
        [f"{lev[by]:g}"]
        + [
            f"{lev['signal'][c]:.3f}; {steps_text(lev['learned_step'][c])}; "
            f"{steps_text(lev['learned_fit'][c])}; "
            f"{steps_text(lev['held_learned_step'][label][c])}; "
            f"{steps_text(lev['held_learned_fit'][label][c])}"
            for c in concepts
        ]
        for lev in doc.levels
    ]
    return _table(head, rows)


def _reach_table(doc: StudyRecord, concepts: list[str]) -> list[str]:
    """Per level: how far the headline class reached each concept, and its event steps."""
    by, label = doc.by, doc.headline
    head = (
        [by]
        + [
            f"class {label}: {'highest' if bit else 'lowest'} {c} (median [range], at step)"
            for c, bit in zip(concepts, target_of(label, len(concepts)))
        ]
        + ["turn", "behavior", "capability"]
    )

    def reach(r: dict | None) -> str:
        if r is None:
            return "-"
        low, high = r["range"]
        return f"{r['median']:.2f} [{low:.2f}, {high:.2f}], {r['median_step']:,.0f}"

    rows = [
        [f"{lev[by]:g}"]
        + [reach(lev["reach"][label][c]) for c in concepts]
        + [steps_text(lev[key][label]) for key in ("turn_step", "behavior_step", "capability_step")]
        for lev in doc.levels
    ]
    return _table(head, rows)


def _relation_line(rel: dict) -> str:
    """One relation between two event steps: its line fit, lag and censored pairs."""
    line = rel["line"]
    fit = (
        "no line (fewer than 3 fully observed pairs)"
        if line is None
        else (
            f"{rel['y']} = {line['slope']:.2f} x {rel['x']} {line['intercept']:+,.0f} (r = "
            f"{line['r']:.2f}"
            f"{_ci_text(line.get('slope_ci'), '.2f', ', slope')}); {rel['y']} - {rel['x']}: "
            "median "
            f"{line['lag_median']:+,.0f}{_ci_text(line.get('lag_median_ci'), '+,.0f')}; "
            f"{rel['censored_against_line']} censored pair(s) against it"
        )
    )
    text = (
        f"{rel['y']} vs {rel['x']}: {len(rel['pairs'])} elicited runs, {rel['n_observed']} "
        f"with both observed; {fit}"
    )
    if "turn_meets_capability" in rel:
        meets = rel["turn_meets_capability"]
        text += (
            f"; turn and capability intervals overlap in {meets['yes']} run(s), "
            f"not in {meets['no']}"
        )
    return text
