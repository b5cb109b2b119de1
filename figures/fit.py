"""The per-trajectory figures of fitting.fit, drawn from its fit.json and the log it read.

  # the analysis: runs/theory/fig5/fit/fit.json
  python -m fitting.fit runs/theory/fig5/trajectories.csv --class 11
  python -m figures.fit runs/theory/fig5/fit  # one figure per trajectory, beside it

One PNG per fitted trajectory (<run>_<seed>_<class>_<protocol>.png): the logged path in concept
space with the fitted model's and the turn (two concepts), each coordinate against the step with the
fitted path, the switch times (dotted) and the turn's 95% interval, and the accuracy with its
sigmoid and t50. Every number drawn was computed by fitting.fit; the logged points come from the log
fit.json names (--log where it has moved). A record written with fitting.fit --no-figures has no
curves and is skipped, named.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

import matplotlib
import numpy as np

from core import cli, plot
from fitting.records import FitRecord
from core.trajectory import Trajectory, read_csv


def load(path: Path, log: Path | None) -> tuple[list[dict], dict[tuple, Trajectory]]:
    """fit.json's records, and the log's trajectories by (run, seed, class, protocol)."""
    rec = FitRecord.read(path)
    log = log or Path(rec.log)
    if not log.is_file():
        raise ValueError(
            f"{path} names the log {log}, which is not there; give it with --log LOG.csv"
        )
    trajs = {(t.run, t.seed, t.label, t.protocol): t for t in read_csv(log)}
    return rec.fits, trajs


def _title(traj: Trajectory) -> str:
    seed = "" if traj.seed is None else f" seed {traj.seed}"
    return f"class {traj.label}, {traj.protocol}{seed} {traj.run}".strip()


def _square(ax, traj: Trajectory, record: dict, curves: dict, color) -> None:
    """The logged path in concept space, the fitted one and the turn."""
    ax.plot(traj.z[:, 0], traj.z[:, 1], "o", ms=3.5, color="0.35", label="logged")
    if curves["z"] is not None:
        z = np.asarray(curves["z"])
        ax.plot(z[:, 0], z[:, 1], "-", color=color, lw=2, label=f"fitted {curves['model']}")
    if record["memorization_point"] is not None:
        ax.plot(
            *record["memorization_point"], "X", color="k", ms=10, label="turn (memorization point)"
        )
    plot.square(ax, traj.concepts, _title(traj))
    ax.legend(loc="best", fontsize=7)


def _coordinates(ax, traj: Trajectory, record: dict, curves: dict, colors) -> None:
    """Each coordinate against the step, the fitted path, the switch times and the turn's
    interval."""
    switches = record["params"].get("t_switch")
    for i, c in enumerate(traj.concepts):
        color = colors[i % len(colors)]
        ax.plot(traj.step, traj.z[:, i], "o", ms=3, color=color, alpha=0.7)
        if curves["z"] is not None:
            ax.plot(curves["step"], np.asarray(curves["z"])[:, i], "-", color=color, label=f"z_{c}")
            if isinstance(switches, list) and switches[i] is not None:
                ax.axvline(switches[i], color=color, ls=":", lw=1)
    if record["turn_ci"] is not None:
        ax.axvspan(*record["turn_ci"], color="0.85", zorder=0, label="turn 95% CI")
    ax.set(
        xlabel="step",
        ylabel="concept coordinate",
        ylim=(-0.02, 1.02),
        title="coordinates (dotted: t_switch)",
    )
    ax.legend(fontsize=7)
    ax.grid(alpha=0.25)


def _accuracy(ax, traj: Trajectory, record: dict, curves: dict, color) -> None:
    """The accuracy, its sigmoid fit and the t50 with its interval."""
    ax.plot(traj.step, traj.accuracy, "o", ms=3, color="0.35", label="accuracy")
    if curves["accuracy"] is not None:
        ax.plot(curves["step"], curves["accuracy"], "-", color=color, label="sigmoid fit")
        if record["accuracy_t50"] is not None:
            ax.axvline(record["accuracy_t50"], color=color, ls=":")
        ci = record["accuracy_t50_ci"]
        if ci is not None and None not in ci:
            ax.axvspan(*ci, color=color, alpha=0.15, label="t50 95% CI")
    ax.set(xlabel="step", ylabel="joint accuracy", ylim=(-0.02, 1.02), title="accuracy")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.25)


def draw(traj: Trajectory, record: dict, path: Path) -> Path:
    """One trajectory's figure: concept space (2 concepts), coordinates and accuracy against the
    step."""
    d, curves = traj.z.shape[1], record["curves"]
    panels = (d == 2) + (d > 0) + (traj.accuracy is not None)
    fig, axes = plot.subplots(
        1, panels, figsize=(5.2 * panels, 4.6), squeeze=False, layout="constrained"
    )
    axes = list(axes[0])
    colors = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    if d == 2:
        _square(axes.pop(0), traj, record, curves, colors[3])
    if d:
        _coordinates(axes.pop(0), traj, record, curves, colors)
    if traj.accuracy is not None:
        _accuracy(axes.pop(0), traj, record, curves, colors[2])
    return plot.save(fig, path)


def slug(*parts) -> str:
    """A file name from a trajectory's run, seed, class and protocol."""
    text = "_".join(str(p) for p in parts if p not in (None, ""))
    return "".join(c if c.isalnum() or c in "-." else "_" for c in text) or "trajectory"


@cli.command
def main(argv: Sequence[str] | None = None) -> int:
    parser = cli.reader_parser(
        "analysis",
        "fit.json (or its folder), from python -m fitting.fit",
        "folder for the figures (default: beside fit.json)",
    )
    parser.add_argument(
        "--log", type=Path, default=None, help="the log fit.json read (default: the path it names)"
    )
    args = parser.parse_args(argv)
    out = cli.output_dir(cli.out_or_beside(args.out, args.analysis), "--out")
    if cli.checking(args):
        return 0
    records, trajs = load(args.analysis, args.log)
    for r in records:
        key = (r["run"], r["seed"], r["class"], r["protocol"])
        if "curves" not in r or key not in trajs:
            why = "no curves (fitted with --no-figures)" if "curves" not in r else "not in the log"
            print(
                f"python -m figures.fit: skipped run={key[0]!r} seed={cli.shown(key[1])} "
                f"class={key[2]!r}: {why}",
                file=sys.stderr,
            )
            continue
        print(f"wrote {draw(trajs[key], r, out / (slug(*key) + '.png'))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
