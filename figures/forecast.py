"""A run's forecast drawn on its path so far: when plain prompting will show the held-out class.

  python -m fitting.forecast RUN --at 4000 --json RUN/forecast.json     # the forecast
  python -m figures.forecast RUN/forecast.json [--out PNG]

forecast.png (default: beside the forecast): the held-out class's joint accuracy under naive
prompting (black) and over-prompting (red, where logged) against the training step, solid up to the
cut the forecast read and faded after it (what was logged later, if anything: the forecast did not
see it); the 0.5 line that counts as "shows the class"; below, one row per method, then per
baseline: its forecast step (a dot) and 80% interval (a bar), an arrow where the interval runs past
the horizon, and why where a method gave no step. Reads forecast.json and the run's
trajectories.csv; every number drawn was computed by fitting.forecast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
from matplotlib.figure import Figure

from core import cli
from core.plot import subplots
from figures.command import one_figure
from fitting.records import ForecastRecord
from figures.palette import PROTOCOL_COLORS
from core.trajectory import read_csv

THRESHOLD = 0.5


def _paths(ax, run: Path, label: str, at: float) -> None:
    """The class's accuracy per protocol, solid up to the cut and faded after it."""
    trajectories = read_csv(run / "trajectories.csv")
    drawn = [
        t
        for t in trajectories
        if t.label == label and t.protocol in ("naive", "overprompt") and t.accuracy is not None
    ]
    if not drawn:
        there = sorted({t.label for t in trajectories if t.accuracy is not None})
        raise ValueError(
            f"--class {label}: no naive or over-prompted accuracy of that class in "
            f"{run / 'trajectories.csv'} (classes with one: {', '.join(there) or 'none'})"
        )
    for traj in drawn:
        step, acc = np.asarray(traj.step, float), np.asarray(traj.accuracy, float)
        color = PROTOCOL_COLORS.get(traj.protocol, "0.5")
        seen = step <= at
        name = "naive prompting" if traj.protocol == "naive" else "over-prompting"
        ax.plot(step[seen], acc[seen], color=color, lw=2, label=f"{name} (read)")
        if (~seen).any():
            later = np.r_[step[seen][-1:], step[~seen]], np.r_[acc[seen][-1:], acc[~seen]]
            ax.plot(*later, color=color, lw=1, alpha=0.35, label=f"{name} (after the cut)")
    ax.axhline(THRESHOLD, color="0.6", lw=0.8, ls=":")
    ax.set_ylabel(f"class {label}: joint accuracy")
    ax.set_ylim(-0.03, 1.03)


def _number(value, what: str) -> float | None:
    """A step read from the record: a finite number or None (a NaN or a string is refused, never
    drawn)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
        raise ValueError(f"{what}: {value!r} is not a step (a finite number or null)")
    return float(value)


def _rows(rec: ForecastRecord) -> list[dict]:
    """The methods, then the baselines (marked), each with its numbers checked."""
    rows = [
        *rec.methods,
        *({**b, "method": b["method"] + " (baseline)"} for b in rec.baselines or []),
    ]
    for m in rows:
        where = f"forecast.json, method {m.get('method')!r}"
        m["behavior_step"] = _number(m.get("behavior_step"), f"{where}, behavior_step")
        m["interval"] = (
            None
            if m.get("interval") is None
            else [_number(x, f"{where}, interval") for x in m["interval"]]
        )
    return rows


def _methods(ax, rec: ForecastRecord) -> None:
    """One row per method and baseline: the forecast step and its 80% interval."""
    rows = _rows(rec)
    for i, m in enumerate(rows):
        y = len(rows) - 1 - i
        low, high = m["interval"] or (None, None)
        if m["behavior_step"] is None:
            said = (
                f"does not apply: {m.get('note') or 'nothing to go on'}"
                if m["p_compose"] is None
                else f"P(by the horizon) {m['p_compose']:.2f}, no step"
                if m["method"].startswith("base-rate")
                else f"none by the horizon (P {m['p_compose']:.2f})"
            )
            ax.text(rec.at, y, f"  {said}", va="center", fontsize=7, color="0.4")
            continue
        right = rec.horizon if high is None else high
        ax.plot([low if low is not None else m["behavior_step"], right], [y, y], color="k", lw=3)
        if high is None:
            ax.annotate("", (right * 1.02, y), (right, y), arrowprops=dict(arrowstyle="->"))
        ax.plot(m["behavior_step"], y, "o", color="C1", ms=7, zorder=5)
    ax.set_yticks(range(len(rows)), [m["method"] for m in reversed(rows)])
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xlabel("training step")


def draw(rec: ForecastRecord, label: str | None = None) -> Figure:
    """The forecast on the run's path (top) and each method's and baseline's step (bottom), for
    ``label`` (default: the class forecast)."""
    label = label or rec.label
    fig, (top, bottom) = subplots(
        2, 1, figsize=(7.5, 7), sharex=True, gridspec_kw={"height_ratios": [2, 1.8]}
    )
    _paths(top, Path(rec.run), label, rec.at)
    _methods(bottom, rec)
    for ax in (top, bottom):
        ax.axvline(rec.at, color="0.3", lw=1, ls="--")
        ax.axvline(rec.horizon, color="0.7", lw=1)
    top.text(rec.at, 1.0, " cut", fontsize=8, va="top")
    top.text(rec.horizon, 1.0, " horizon", fontsize=8, va="top")
    top.set_title(_title(rec), fontsize=9)
    top.legend(fontsize=7, loc="upper left", bbox_to_anchor=(0.0, 0.85), frameon=False)
    fig.subplots_adjust(left=0.26, right=0.97)
    return fig


def _title(rec: ForecastRecord) -> str:
    if rec.observed_behavior_step is not None:
        return (
            f"{Path(rec.run).name}: shown at {rec.observed_behavior_step:,.0f} (read to "
            f"{rec.at:,.0f})"
        )
    if rec.behavior_step is None:
        return f"{Path(rec.run).name}: not expected by {rec.horizon:,.0f} ({rec.method})"
    return (
        f"{Path(rec.run).name}: forecast {rec.behavior_step:,.0f} ({rec.method}), "
        f"read to {rec.at:,.0f}"
    )


def load(path: Path) -> ForecastRecord:
    """The forecast in ``path``, whose run's trajectories.csv must be here to draw its path."""
    rec = ForecastRecord.read(path)
    if not (Path(rec.run) / "trajectories.csv").exists():
        raise cli.UsageError(f"{path}: its run {rec.run} has no trajectories.csv here (moved?)")
    return rec


@cli.command
def main(argv: Sequence[str] | None = None) -> int:
    source = ("forecast", "forecast.json (python -m fitting.forecast --json)")
    label = dict(dest="label", default=None, help="the class (default: the one forecast)")
    options = [("--class", label)]
    return one_figure(source, "forecast.png", load, draw, argv, options)


if __name__ == "__main__":
    raise SystemExit(main())
