"""Capability versus behavior (the paper's Fig. 6), drawn from fitting.capability's
elicitation_summary.json.

  # the analysis: DIR/elicitation_summary.json
  python -m fitting.capability RUN_DIR [RUN_DIR ...] --out DIR
  python -m figures.capability DIR/elicitation_summary.json [--out DIR]

capability.png (default: beside the summary): the held-out class's joint accuracy against the
training step, one colour per protocol, each run a thin line and the mean over runs thick; naive
prompting (behavior) in black, the capability (the protocol chosen on an independent draw) red and
dashed, with the 95% intervals of both; the training classes (the control) in gray, and the step at
which they reached 80% dotted. Reads the summary only; every number drawn was computed by
fitting.capability.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from matplotlib.figure import Figure

from core import cli
from figures.command import one_figure
from figures.palette import PROTOCOL_COLORS as COLORS
from fitting.records import ElicitationSummaryRecord
from core.plot import subplots


def load(path: Path) -> tuple[list[dict], dict]:
    """(per-run results, mean curves) of an elicitation_summary.json, checked for what the figure
    needs."""
    rec = ElicitationSummaryRecord.read(path)
    if rec.per_run is None:
        raise ValueError(
            f"{path}: no per-run curves ('per_run'); it was written by an older "
            "fitting.capability: "
            "run python -m fitting.capability again on its runs"
        )
    return rec.per_run, rec.mean_curves


def _protocols(ax, results: Sequence[dict], means: dict) -> None:
    """Each run's accuracy per protocol (thin) and the mean over runs (thick)."""
    protocols = sorted(
        {p for r in results for p in r["curves"]},
        key=lambda p: list(COLORS).index(p) if p in COLORS else 99,
    )
    for p in protocols:
        runs = [r["curves"][p] for r in results if p in r["curves"]]
        color = COLORS.get(p, "0.5")
        for cur in runs:
            ax.plot(np.maximum(cur["step"], 1), cur["accuracy"], color=color, lw=0.7, alpha=0.45)
        if p in means:
            ax.plot(
                np.maximum(means[p]["step"], 1),
                means[p]["accuracy"],
                color=color,
                lw=2.4 if p in ("naive", "capability") else 1.4,
                ls="--" if p == "capability" else "-",
                zorder=5 if p == "capability" else 3,
                label=f"{p} (mean of {len(runs)})" if len(runs) > 1 else p,
            )


def _intervals(ax, results: Sequence[dict]) -> None:
    """95% intervals of the held-out class's naive accuracy and of its capability (every protocol's
    for one run)."""
    for r in results:
        for p, band in r.get("intervals", {}).items():
            if p in ("naive", "capability") or len(results) == 1:
                step = np.maximum(band["step"], 1)
                ax.fill_between(
                    step, band["lo"], band["hi"], color=COLORS.get(p, "0.5"), alpha=0.12, lw=0
                )


def _control(ax, results: Sequence[dict]) -> None:
    """The training classes under naive prompting and their capability, and when they reached
    80%."""
    for i, r in enumerate(results):
        ctrl = r.get("control", {})
        for label, v in ctrl.get("classes", {}).items():
            for p, ls in (("naive", "-"), ("capability", "--")):
                if p not in v["curves"]:
                    continue
                cur = v["curves"][p]
                first = (i, label, p) == (0, min(ctrl["classes"]), "naive")
                name = "training classes (control): naive / capability" if first else None
                ax.plot(
                    np.maximum(cur["step"], 1),
                    cur["accuracy"],
                    color="0.55",
                    lw=0.6,
                    ls=ls,
                    alpha=0.7,
                    label=name,
                )
        if ctrl.get("learned_step"):
            name = "training classes at 80%" if i == 0 else None
            ax.axvline(max(ctrl["learned_step"], 1), color="0.4", lw=0.8, ls=":", label=name)


def draw(summary: tuple[list[dict], dict]) -> Figure:
    """Fig. 6 from :func:`load`'s (per-run results, mean curves): behavior, capability and every
    protocol over training, with the control."""
    results, means = summary
    fig, ax = subplots(figsize=(6.4, 4.2))
    _protocols(ax, results, means)
    _intervals(ax, results)
    _control(ax, results)
    ax.set(
        xscale="log",
        xlabel="training step",
        ylabel=f"joint accuracy of class {results[0]['class']}",
        ylim=(-0.02, 1.02),
    )
    for level in (0.5, 0.8):
        ax.axhline(level, color="0.6", lw=0.6, ls=":")
    ax.grid(alpha=0.25)
    ax.legend(fontsize=8, loc="upper left")
    unbiased = all(r.get("capability_unbiased") for r in results)
    chosen = "setting chosen on an independent draw" if unbiased else "best score: biased upward"
    ax.set_title(f"capability ({chosen}) vs behavior (naive)", fontsize=9)
    fig.tight_layout()
    return fig


@cli.command
def main(argv: Sequence[str] | None = None) -> int:
    source = (
        "analysis",
        "elicitation_summary.json (or its folder), from python -m fitting.capability",
    )
    return one_figure(source, "capability.png", load, draw, argv)


if __name__ == "__main__":
    raise SystemExit(main())
