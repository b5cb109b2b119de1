"""The forecast's registered test drawn: the default forecast against each baseline, on new runs.

  python -m fitting.forecast_registered score results/forecast/registered    # the verdict
  python -m figures.forecast_verdict results/forecast/registered/verdict.json [--out PNG]

verdict.png (default: beside the verdict). Top, one panel per causal cut (2,000 and 3,000 steps,
memorization read live, the capability): for the default forecast (blue) and each baseline (grey),
the absolute error of its behavior step on each run it forecast at that cut (a dot; an open dot
where the run never composed, whose error is a lower bound) and the median the scoring gave (a
bar); the title says whether the default's median was below every baseline's (the rule's part a).
Bottom: the default's 80% interval (a bar) and its step (a dot) at every causal-cut row, against the
observed behavior step (a star; an open triangle at the run's end where it never came), the rows
sorted by run and cut; the title gives the share of intervals that hold it (part b, with the
registered range) and the Brier score against the base rate's (part c). Reads only verdict.json:
the medians, shares and scores drawn are the ones the scoring wrote.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from core import cli
from matplotlib.figure import Figure

from figures.command import one_figure
from fitting.records import ForecastVerdictRecord

DEFAULT_COLOR, BASELINE_COLOR = "tab:blue", "0.55"


def error(forecast: dict, truth, end) -> float | None:
    """A forecast's absolute error of the behavior step, as the scoring counts it: no step means
    the run's end; a run that never composed counts at its end (a lower bound). None where the
    method gave neither a step nor a chance."""
    if forecast["behavior_step"] is None and forecast["p_compose"] is None:
        return None
    guess = forecast["behavior_step"] if forecast["behavior_step"] is not None else end
    return max(0.0, end - guess) if truth is None else abs(guess - truth)


def _errors(rows: list[dict], method: str) -> tuple[list[float], list[bool]]:
    """The errors of one method over rows (where it forecast), and whether each is a lower bound."""
    out, bound = [], []
    for row in rows:
        f = next((f for f in row["forecasts"] if f["method"] == method), None)
        e = None if f is None else error(f, row["truth"], row["end"])
        if e is not None:
            out.append(e)
            bound.append(row["truth"] is None)
    return out, bound


def _cut_panel(ax, cut: str, entry: dict, rows: list[dict]) -> None:
    methods, counts = ["default", *entry.get("baselines", {})], []
    for x, method in enumerate(methods):
        errors, bound = _errors(rows, method)
        counts.append(len(errors))
        color = DEFAULT_COLOR if method == "default" else BASELINE_COLOR
        spread = np.linspace(-0.18, 0.18, max(len(errors), 1))[: len(errors)]
        for dx, e, b in zip(spread, errors, bound):
            ax.plot(x + dx, e, "o", ms=3.5, color=color, mfc="none" if b else color)
        median = (
            entry.get("default", {}).get("mae")
            if method == "default"
            else entry["baselines"][method]["baseline_mae"]
        )  # (a cut with no row has no scores)
        if median is not None:
            ax.plot([x - 0.3, x + 0.3], [median, median], color=color, lw=2.5)
    labels = [f"{m} ({k})" for m, k in zip(methods, counts)]  # (rows it forecast)
    ax.set_xticks(range(len(methods)), labels, fontsize=7, rotation=30)
    beats = entry.get("baselines", {})
    if not entry["scored"]:
        said = f"{entry['rows']} rows: too few to score"
    else:
        lost = [b for b, v in beats.items() if v["rows"] and not v["beats"]]
        said = "beats every baseline" if not lost else "not below " + ", ".join(lost)
    ax.set_title(f"cut {cut}: {said}", fontsize=9)


def _interval_panel(ax, rows: list[dict], pooled: dict, cuts: list[str]) -> None:
    rows = sorted(rows, key=lambda r: (r["run"], cuts.index(r["cut"])))
    for x, row in enumerate(rows):
        f = row["forecasts"][0]
        if f["interval"]:
            low, high = f["interval"]
            top = row["end"] if high is None else high
            ax.plot(
                [x, x], [low, top], color=DEFAULT_COLOR, lw=2.5, alpha=0.5, label="80% interval"
            )
        if f["behavior_step"] is not None:
            ax.plot(x, f["behavior_step"], "o", color=DEFAULT_COLOR, ms=4, label="forecast")
        if row["truth"] is not None:
            ax.plot(x, row["truth"], "*", color="k", ms=7, label="observed")
        else:
            ax.plot(x, row["end"], "^", color="k", mfc="none", ms=6, label="not by the run's end")
    handles = dict(zip(*reversed(ax.get_legend_handles_labels())))  # one entry a label
    ax.legend(handles.values(), handles.keys(), fontsize=7, loc="upper left", bbox_to_anchor=(1, 1))
    ax.set_xticks(
        range(len(rows)), [f"{Path(r['run']).name} @ {r['cut']}" for r in rows], fontsize=6
    )
    ax.tick_params(axis="x", rotation=90)
    ax.set_ylabel("behavior step")
    d, base = pooled["default"] or {}, pooled["base_rate"] or {}
    cover = d.get("coverage")
    said = "no interval" if cover is None else f"{cover:.2f} of the 80% intervals hold it"
    brier, base_brier = d.get("brier"), base.get("brier")
    if brier is not None and base_brier is not None:
        said += (
            f" (registered: 0.70-0.90); Brier {brier:.3f} against the base rate's {base_brier:.3f}"
        )
    ax.set_title(said, fontsize=9)


def draw(doc: dict):
    """The figure (see the module docstring) of a verdict.json's contents (its record read it)."""
    causal = [r for r in doc["rows"] if r["cut"] in doc["per_cut"] and not r["already"]]
    if not causal:
        raise ValueError("no forecast row at a causal cut: nothing to draw")
    cuts = list(doc["per_cut"])
    fig = Figure(figsize=(3.4 * len(cuts), 7.6), layout="constrained")
    grid = fig.add_gridspec(2, len(cuts), height_ratios=(1, 1.1))
    for i, cut in enumerate(cuts):
        ax = fig.add_subplot(grid[0, i])
        _cut_panel(ax, cut, doc["per_cut"][cut], [r for r in causal if r["cut"] == cut])
        if i == 0:
            ax.set_ylabel("|forecast - observed| (steps)")
    _interval_panel(fig.add_subplot(grid[1, :]), causal, doc["pooled"], cuts)
    parts = ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in doc["parts"].items())
    fig.suptitle(
        f"registered forecast test: {doc['verdict']} ({doc['n_valid']} valid runs; {parts})"
    )
    return fig


@cli.command
def main(argv: Sequence[str] | None = None) -> int:
    source = ("verdict", "verdict.json of python -m fitting.forecast_registered score")
    read = lambda path: ForecastVerdictRecord.read(path).to_json()  # noqa: E731
    return one_figure(source, "verdict.png", read, draw, argv)


if __name__ == "__main__":
    raise SystemExit(main())
