"""The registered outside-range test's verdict drawn: each law's prediction against the test's runs.

  python -m fitting.outside score preregistration.json RUN ... --out verdict.json     # the verdict
  python -m figures.outside verdict.json [--out PNG]

verdict.png (default: beside the verdict): one row per time event (turn, capability, behavior), one
column per registered setting. In each panel, one column per method (the laws, then the baselines,
in grey): its registered median step (a dot) and its 80% interval for one new seed (a bar); at the
right, the test's runs (one dot each, an open triangle at the run's end where the event had not come
by then); across, the observed median of the runs (a line: dashed where it is only a lower bound)
and the margin δ around it (the band a law's median must reach at every setting to pass). A row's
label gives each law's verdict. Reads only verdict.json: every number drawn was written by
fitting.outside score; an interim verdict is titled as one.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from core import cli
from core.plot import covariate_label, subplots
from figures.command import one_figure
from fitting.records import VerdictRecord

LAW_COLOR, BASELINE_COLOR = "tab:blue", "0.55"


def _setting(sep: dict) -> str:
    return ", ".join(covariate_label(f"sep.{c}={v:g}") for c, v in sep.items())


def _same(sep: dict, registered: dict) -> bool:
    """Whether a run's separations are a registered setting's (as fitting.outside score groups
    them)."""
    return all(np.isclose(sep.get(c, np.nan), v) for c, v in registered.items())


def _runs(ax, verdict: VerdictRecord, setting: dict, name: str, x: float) -> None:
    """The test's runs of this setting at ``x``: a dot per event step, an open triangle where
    censored."""
    mine = [r for r in verdict.runs if _same(r["sep"], setting["sep"]) and r.get("events")]
    events = [r["events"].get(name) for r in mine]
    seen = [e["step"] for e in events if e and e["step"] is not None]
    late = [e["censored_at"] for e in events if e and e["step"] is None]
    spread = np.linspace(-0.15, 0.15, max(len(seen) + len(late), 1))
    ax.plot(x + spread[: len(seen)], seen, "o", color="k", ms=3.5, label="a test run")
    if late:
        ax.plot(
            x + spread[len(seen) :], late, "^", mfc="none", color="k", ms=5, label="not by its end"
        )


def _panel(ax, verdict: VerdictRecord, i: int, name: str) -> None:
    setting, event = verdict.settings[i], verdict.events[name]
    methods = list(event["methods"])
    for x, m in enumerate(methods):
        pred = setting["predicted"][name][m]
        law = "verdict" in event["methods"][m]
        color = LAW_COLOR if law else BASELINE_COLOR
        low, high = pred["interval80"]
        ax.plot([x, x], [low, high], color=color, lw=2.5, alpha=0.55, solid_capstyle="butt")
        ax.plot(x, pred["median"], "o", color=color, ms=6)
    _runs(ax, verdict, setting, name, len(methods))
    obs = event["observed"][i]
    if obs["median"] is not None:
        delta = event["delta_log"]
        med = obs["median"]
        ax.axhspan(med * np.exp(-delta), med * np.exp(delta), color="tab:green", alpha=0.15, lw=0)
        said = "at least " if obs["lower_bound"] else ""
        ax.axhline(med, color="tab:green", lw=1.2, ls="--" if obs["lower_bound"] else "-")
        ax.set_title(
            f"{_setting(setting['sep'])}: observed {said}{med:,.0f} ({obs['n']} runs)", fontsize=9
        )
    else:
        ax.set_title(f"{_setting(setting['sep'])}: no run has the event", fontsize=9)
    if setting["steps"]:
        ax.axhline(setting["steps"], color="0.4", lw=0.8, ls=":")
    ax.set_xticks(range(len(methods) + 1), [*methods, "runs"], fontsize=8)
    ax.set_yscale("log")


def draw(verdict: VerdictRecord):
    """The figure (see the module docstring)."""
    if not verdict.settings:
        raise ValueError(
            "this verdict.json holds no registered predictions (written before figures.outside "
            "existed); "
            "score it again with python -m fitting.outside score"
        )
    names = list(verdict.events)
    fig, axes = subplots(
        len(names),
        len(verdict.settings),
        figsize=(5.2 * len(verdict.settings), 3.1 * len(names) + 0.4),
        layout="constrained",
    )
    axes = np.asarray(axes).reshape(len(names), len(verdict.settings))
    for row, name in enumerate(names):
        laws = {
            m: v["verdict"] for m, v in verdict.events[name]["methods"].items() if "verdict" in v
        }
        for col in range(len(verdict.settings)):
            _panel(axes[row, col], verdict, col, name)
        said = ", ".join(f"{m} {v}" for m, v in laws.items())
        axes[row, 0].set_ylabel(f"{name}: step\n({said})", fontsize=9)
    axes[0, -1].legend(fontsize=7, loc="lower right")
    head = "the registered test" if verdict.valid else "INTERIM, NOT THE VERDICT"
    fig.suptitle(f"{head}: laws (blue) and baselines (grey), 80% intervals; green: observed ± δ")
    return fig


@cli.command
def main(argv: Sequence[str] | None = None) -> int:
    source = ("verdict", "verdict.json of python -m fitting.outside score")
    read = VerdictRecord.read
    return one_figure(source, "verdict.png", read, draw, argv)


if __name__ == "__main__":
    raise SystemExit(main())
