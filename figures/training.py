"""Concept-space figure of training runs (paper Fig. 3/4 style), from their trajectories.csv.

  python -m figures.training RUN_DIR [RUN_DIR ...] [--out DIR] [--protocol naive]

One column per run. Top: every class's path in concept space, points coloured by training step (log
scale), the held-out class drawn thick, with its turn marked when the run has a turn.json (written by
``python -m fitting.turn RUN_DIR``); a step where no sample was readable has no point. Middle: each
class's joint accuracy against step. Bottom, when the log has share columns: what the held-out
class's samples were read as, step by step (a stacked strip: the share read as each corner of
concept space, and unreadable in gray), so a mixture of two memorized classes and a genuine
composition look different even where their mean points agree. Reads only saved outputs
(trajectories.csv, its meta, turn.json); computes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
from matplotlib.cm import ScalarMappable
from matplotlib.colors import LogNorm

from core import cli
from core.plot import save, square, subplots
from core.records import TurnRecord
from core.trajectory import UNREADABLE, read_csv, read_meta, run_log

CLASS_COLORS = {"00": "tab:red", "01": "tab:orange", "10": "tab:purple", "11": "tab:blue"}


def saved_turns(log: Path) -> dict[tuple[str, str], dict]:
    """(class, protocol) -> the turn record of the run's turn.json (written by python -m fitting.turn), if any."""
    path = log.parent / TurnRecord.FILE
    if not path.exists():
        return {}
    return {(t["class"], t["protocol"]): t for t in TurnRecord.read(path).turns}


def draw(runs: Sequence[Path], out: Path, *, protocol: str = "naive") -> Path:
    """concept_space.png: one column per run, paths on top, accuracies below."""
    fig, axes = subplots(
        3,
        len(runs),
        figsize=(4.6 * len(runs), 10.2),
        squeeze=False,
        gridspec_kw={"height_ratios": [1.25, 1, 0.55]},
    )
    for col, run in enumerate(runs):
        log = run_log(Path(run))
        trajectories = [t for t in read_csv(log) if t.protocol == protocol]
        if not trajectories:
            raise ValueError(f"{log}: no trajectories with protocol={protocol!r}")
        meta = read_meta(log) or {}
        turns = saved_turns(log)
        held = set(meta.get("held_out", ["11"]))
        sep = (meta.get("config") or {}).get("sep", {})
        top, bottom, strip = axes[0, col], axes[1, col], axes[2, col]
        steps = np.concatenate([t.step for t in trajectories]).astype(float)
        norm = LogNorm(max(steps[steps > 0].min(), 1), steps.max())
        for t in trajectories:
            turn = turns.get((t.label, protocol)) if t.label in held else None
            _class(top, bottom, t, t.label in held, norm, turn)
        seps = ", ".join(f"Δ{c} {v:g}" for c, v in sep.items())
        square(top, trajectories[0].concepts, Path(run).name + (f"\n{seps}" if sep else ""))
        top.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.17), ncol=3)
        fig.colorbar(
            ScalarMappable(norm=norm, cmap="viridis"), ax=top, shrink=0.8, label="training step"
        )
        bottom.set(
            xscale="log",
            xlabel="training step",
            ylabel=f"joint accuracy ({protocol})",
            ylim=(-0.02, 1.02),
        )
        bottom.grid(alpha=0.25)
        bottom.legend(fontsize=7)
        shares_strip(strip, [t for t in trajectories if t.label in held])
    fig.tight_layout()
    return save(fig, out)


def _class(top, bottom, t, thick: bool, norm: LogNorm, turn: dict | None) -> None:
    """One class of a run: its path coloured by step (none where nothing was readable), its turn, its accuracy;
    a held-out class (``thick``) drawn heavier."""
    color = CLASS_COLORS.get(t.label, "k")
    if not t.missing.all():
        path = t.with_points()
        label = f"{t.label}{' (held out)' if thick else ''}"
        lw, alpha, size = (2.2, 1, 14) if thick else (1, 0.6, 6)
        top.plot(path.z[:, 0], path.z[:, 1], "-", color=color, lw=lw, alpha=alpha, label=label)
        c = np.maximum(path.step, 1)
        top.scatter(path.z[:, 0], path.z[:, 1], c=c, cmap="viridis", norm=norm, s=size, zorder=3)
    if turn is not None and turn["turn_step"] is not None:
        label = f"turn ≈ step {turn['turn_step']:.0f}"
        top.plot(*turn["turn_point"], "k*", ms=13, zorder=5, label=label)
    if t.accuracy is not None:
        lw = 2 if thick else 1
        bottom.plot(
            np.maximum(t.step, 1), t.accuracy, "-o", color=color, ms=2.5, lw=lw, label=t.label
        )


def shares_strip(ax, held: Sequence) -> None:
    """What the first held-out class's samples were read as, per step: stacked shares per corner, unreadable gray."""
    shares = held[0].shares() if held else {}
    if not shares:
        ax.set_axis_off()
        ax.text(
            0.5,
            0.5,
            "no share columns in this log (logged before readings were kept per sample)",
            ha="center",
            va="center",
            fontsize=7,
            transform=ax.transAxes,
        )
        return
    t = held[0]
    keys = sorted(k for k in shares if k != UNREADABLE) + [UNREADABLE] * (UNREADABLE in shares)
    steps = np.maximum(t.step, 1)
    steps = np.append(steps, steps[-1] * 1.15)  # the last checkpoint gets a step of its own to show
    ax.stackplot(
        steps,
        *[np.append(v, v[-1]) for v in (np.nan_to_num(shares[k]) for k in keys)],
        step="post",
        colors=[CLASS_COLORS.get(k, "0.75") if k != UNREADABLE else "0.82" for k in keys],
        labels=[f"read as {k}" if k != UNREADABLE else UNREADABLE for k in keys],
    )
    ax.set(
        xscale="log", xlabel="training step", ylabel=f"class {t.label}:\nshare read as", ylim=(0, 1)
    )
    ax.legend(fontsize=6, ncol=len(keys), loc="upper center", bbox_to_anchor=(0.5, -0.35))


@cli.command("figures.training")
def main(argv: Sequence[str] | None = None) -> int:
    """``python -m figures.training``: see the module docstring."""
    parser = cli.parser("figures.training", __doc__)
    parser.add_argument(
        "runs", nargs="+", type=Path, help="run folders (or their trajectories.csv)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="folder to write concept_space.png in, or a .png, .pdf or .svg path (default: the first run's folder)",
    )
    parser.add_argument(
        "--protocol", default="naive", help="which protocol's rows to draw (default naive)"
    )
    args = parser.parse_args(argv)
    out = cli.figure_path(
        args.out or cli.default_out(run_log(args.runs[0]).parent), "concept_space.png"
    )
    if cli.checking(args):
        return 0
    for run in args.runs:
        if not run_log(run).exists():
            raise ValueError(
                f"{run_log(run)}: no trajectory log here (train with python -m empirical.train)"
            )
    path = draw(args.runs, out, protocol=args.protocol)
    unmarked = [str(run) for run in args.runs if not (run_log(run).parent / "turn.json").exists()]
    if unmarked:
        print(
            f"no turn.json in {', '.join(unmarked)}: python -m fitting.turn {' '.join(unmarked)} marks the held-out turn"
        )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
