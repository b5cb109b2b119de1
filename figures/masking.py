"""The underspecification figure (paper Fig. 8, 9a and 10) of a masking sweep, from its
masking.json.

  python -m fitting.masking RUN_DIR [RUN_DIR ...] --out DIR  # the analysis, once: DIR/masking.json
  python -m figures.masking DIR/masking.json [--detail 0.5] [--out DIR]

masking.png (default: beside masking.json):

  (a) the held-out class's naive path in concept space, one line per masking rate p (Fig. 9a);
  (b) the first step at which naive prompting and the best elicitation protocol reach 80% (and 50%)
      accuracy against p, with runs that never get there drawn on the top edge (Fig. 8); and the
      step from which the held-out path stays away from the masked class it drew (open: never left);
  (c) naive against overprompt accuracy over training at the p nearest --detail (Fig. 10).

Reads masking.json only; every number drawn was computed by fitting.masking.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

import numpy as np
from matplotlib import colormaps
from matplotlib.figure import Figure

from core import cli
from figures.command import one_figure
from fitting.records import MaskingRecord
from core.plot import square, subplots
from figures.class_paths import accuracy_axes
from figures.palette import PROTOCOL_COLORS


def load(path: Path) -> list[dict]:
    """The run records of a masking.json written by python -m fitting.masking (checked on
    reading)."""
    return MaskingRecord.rows_of(path, "runs")


SEED_STYLES = ("-", "--", ":", "-.")


def _seed_index(results: Sequence[dict]) -> dict:
    """seed -> 0, 1, ... (line style and jitter of a run); runs without a seed share index 0."""
    seeds = sorted({r.get("seed") for r in results}, key=lambda s: -1 if s is None else s)
    return {s: i for i, s in enumerate(seeds)}


def _steps_panel(ax, results: Sequence[dict]) -> None:
    """Fig. 8: per run (jittered by seed) the first step at 80% / 50%, naive and best protocol; the
    line joins each p's median over the seeds that got there; runs that never did sit above the end
    of training."""
    index = _seed_index(results)
    ps = sorted({r["p"] for r in results})
    width = 0.012 * (max(ps) - min(ps) or 1)
    x = np.array([r["p"] + width * (index[r.get("seed")] - (len(index) - 1) / 2) for r in results])
    horizon = max(max(r["path"]["step"]) for r in results)
    for key, marker in (("naive", "o"), ("capability", "s")):
        for level, ls in (("80%", "-"), ("50%", ":")):
            _first_steps(ax, results, x, ps, horizon, key, level, marker, ls)
    _left_masked_class(ax, results, x, horizon)
    ax.axhline(horizon, color="0.5", lw=0.7, ls="--")
    ax.text(
        min(ps),
        horizon * 1.02,
        f"end of training ({horizon:,.0f}); markers above: never",
        fontsize=7,
        va="bottom",
    )
    ax.set(
        xlabel="masking rate p (share of the masked class's prompts without the masked concept)",
        ylabel="training step",
        ylim=(0, horizon * 1.25),
    )
    ax.grid(alpha=0.25)
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title(
        "(b) steps to 80% / 50% accuracy, and leaving the masked class, vs p (Fig. 8)", fontsize=10
    )


def _first_steps(ax, results, x, ps, horizon, key: str, level: str, marker: str, ls: str) -> None:
    """One protocol's first step at one accuracy level: per run, the median per p, and 'never' on
    top."""
    px = np.array([r["p"] for r in results])
    first = [r["first_step"].get(key, {}).get(level) for r in results]
    y = np.array([np.nan if v is None else v for v in first], dtype=float)
    color = PROTOCOL_COLORS[key]
    mfc = "none" if level == "50%" else color
    ms = 6 if level == "80%" else 4
    ax.plot(x, y, marker=marker, ls="none", color=color, ms=ms, mfc=mfc)
    at = [y[(px == p) & np.isfinite(y)] for p in ps]
    med = [np.median(v) if v.size else np.nan for v in at]
    ax.plot(ps, med, ls, color=color, lw=1.2, label=f"{key} {level}")
    never = ~np.isfinite(y)
    top = np.full(never.sum(), horizon * (1.1 if key == "naive" else 1.18))
    ax.plot(x[never], top, marker="^" if level == "80%" else "2", ls="none", color=color, ms=8)


def _left_masked_class(ax, results, x, horizon) -> None:
    """The step from which each run stays away from the masked class it drew (open: never left)."""
    left = [r["left_masked_class"] for r in results]
    left = np.array([np.nan if v is None else v for v in left], dtype=float)
    went = np.array([bool(r["steps_near_masked_class"]) for r in results])
    label = f"left class {results[0]['masked_class']} for good"
    ax.plot(x[went], left[went], "D", color="0.45", ms=5, ls="none", label=label)
    stays = went & ~np.isfinite(left)
    ax.plot(x[stays], np.full(stays.sum(), horizon * 1.02), "D", color="0.45", ms=5, mfc="none")


def draw(results: Sequence[dict], *, detail: float) -> Figure:
    """masking.png from masking.json's records: panels (a), (b), (c) of the module docstring; one
    line style per seed where the sweep has several."""
    fig, axes = subplots(1, 3, figsize=(15.5, 4.8))
    _paths_panel(axes[0], results)
    _steps_panel(axes[1], results)
    _detail_panel(axes[2], results, detail)
    fig.tight_layout()
    return fig


def _paths_panel(ax, results: Sequence[dict]) -> None:
    """Fig. 9a: the held-out class's naive path per run, colored by p (dot: the last checkpoint)."""
    cmap = colormaps["viridis"]
    index = _seed_index(results)
    labelled = set()
    for r in results:
        z = np.array(r["path"]["z"])
        color = cmap(0.9 * r["p"])
        ls = SEED_STYLES[index[r.get("seed")] % len(SEED_STYLES)]
        label = None if r["p"] in labelled else f"p = {r['p']:g}"
        ax.plot(z[:, 0], z[:, 1], ls, color=color, lw=1.4, label=label)
        ax.plot(*z[-1], "o", color=color, ms=6, mec="k")
        labelled.add(r["p"])
    styles = ", ".join(f"{s} {SEED_STYLES[i % len(SEED_STYLES)]}" for s, i in index.items())
    seeds = "" if len(index) < 2 else "; seeds " + styles
    title = f"(a) class {results[0]['class']}, naive prompting (Fig. 9a){seeds}"
    square(ax, results[0]["concepts"], title)
    ax.legend(fontsize=7, loc="center right")


def _detail_panel(ax, results: Sequence[dict], detail: float) -> None:
    """Fig. 10: naive, overprompt and the best protocol's accuracy over training at the p nearest
    ``detail``."""
    index = _seed_index(results)
    p_near = min({r["p"] for r in results}, key=lambda p: abs(p - detail))
    detail_runs = [r for r in results if r["p"] == p_near]  # sorted by seed (masking.json's order)
    for r in detail_runs:
        ls = SEED_STYLES[index[r.get("seed")] % len(SEED_STYLES)]
        for key in ("naive", "overprompt", "capability"):
            cur = r["curves"].get(key)
            if cur is None:
                continue
            name = key if key != "capability" else "best protocol"
            ax.plot(
                np.maximum(cur["step"], 1),
                cur["accuracy"],
                marker="o",
                ms=2.5,
                color=PROTOCOL_COLORS[key],
                ls=ls,
                lw=1.2 if key != "capability" else 0.9,
                label=name if r is detail_runs[0] else None,
            )
    label = f"joint accuracy of class {results[0]['class']}"
    accuracy_axes(ax, "", ylabel=label, fontsize=8, loc="upper left")
    ax.set_title(f"(c) naive vs overprompt at p = {p_near:g} (Fig. 10)", fontsize=10)


def _rate(text: str) -> float:
    """--detail's value: a masking rate in [0, 1]."""
    try:
        rate = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: not a number") from None
    if not 0 <= rate <= 1:
        raise argparse.ArgumentTypeError(f"{text}: a masking rate in [0, 1]")
    return rate


@cli.command
def main(argv: Sequence[str] | None = None) -> int:
    source = ("analysis", "masking.json (or its folder), written by python -m fitting.masking")
    detail = dict(type=_rate, default=0.5, help="p of panel (c): the run nearest it (default 0.5)")
    options = [("--detail", detail)]
    return one_figure(source, "masking.png", load, draw, argv, options)


if __name__ == "__main__":
    raise SystemExit(main())
