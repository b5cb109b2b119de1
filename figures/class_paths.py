"""What the training figures draw of a run's classes (figures.training in two concepts, figures.cube
in three): their colours, a run's trajectories and turns, a class's path in a plane of concepts, its
accuracy, and the held-out class's shares."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
from matplotlib import colormaps
from matplotlib.colors import LogNorm

from core import cli
from fitting.records import TurnRecord
from core.sidecar import held_out_of, read_meta, run_log
from core.trajectory import UNREADABLE, read_csv

CLASS_COLORS = {"00": "tab:red", "01": "tab:orange", "10": "tab:purple", "11": "tab:blue"}


def turn_file(log: Path) -> Path | None:
    """The run's turn.json (written by python -m fitting.turn), if any. For a committed run, the one
    fitting.turn writes for it by default (cli.default_out: runs/results/...) comes first, if it was
    made from this log; else the run's own."""
    copy = cli.results_copy(log.parent)
    if copy is not None and (copy / TurnRecord.FILE).exists():
        made_from = Path(TurnRecord.read(copy / TurnRecord.FILE).log)
        if made_from.resolve() == log.resolve():
            return copy / TurnRecord.FILE
    own = log.parent / TurnRecord.FILE
    return own if own.exists() else None


def saved_turns(log: Path) -> dict[tuple[str, str], dict]:
    """(class, protocol) -> the turn record of the run's turn.json (:func:`turn_file`), if any."""
    path = turn_file(log)
    if path is None:
        return {}
    return {(t["class"], t["protocol"]): t for t in TurnRecord.read(path).turns}


def class_color(label: str):
    """A class's colour: the paper's four for 2-concept labels, tab10 by the label's bits for longer
    ones."""
    if label in CLASS_COLORS:
        return CLASS_COLORS[label]
    if label and set(label) <= {"0", "1"}:
        return colormaps["tab10"](int(label, 2) % 10)
    return "k"


def load(run: Path, protocol: str):
    """A run's trajectories under ``protocol``, its held-out classes, turns, separations and a step
    colour scale."""
    log = run_log(Path(run))
    trajectories = [t for t in read_csv(log) if t.protocol == protocol]
    if not trajectories:
        raise ValueError(f"{log}: no trajectories with protocol={protocol!r}")
    meta = read_meta(log) or {}
    held = set(held_out_of({t.label for t in trajectories}, meta))
    sep = (meta.get("config") or {}).get("sep", {})
    steps = np.concatenate([t.step for t in trajectories]).astype(float)
    norm = LogNorm(max(steps[steps > 0].min(), 1), steps.max())
    return trajectories, held, saved_turns(log), sep, norm


def path_of(ax, t, thick: bool, norm: LogNorm, turn: dict | None, dims=(0, 1)) -> None:
    """A class's path in the plane of concepts ``dims``, coloured by step (none where nothing was
    readable), and its turn; a held-out class (``thick``) drawn heavier."""
    i, j = dims
    if not t.missing.all():
        path = t.with_points()
        label = f"{t.label}{' (held out)' if thick else ''}"
        lw, alpha, size = (2.2, 1, 14) if thick else (1, 0.6, 6)
        ax.plot(
            path.z[:, i],
            path.z[:, j],
            "-",
            color=class_color(t.label),
            lw=lw,
            alpha=alpha,
            label=label,
        )
        c = np.maximum(path.step, 1)
        ax.scatter(path.z[:, i], path.z[:, j], c=c, cmap="viridis", norm=norm, s=size, zorder=3)
    if turn is not None and turn["turn_step"] is not None:
        label = f"turn ≈ step {turn['turn_step']:.0f}"
        point = turn["turn_point"]
        ax.plot(point[i], point[j], "k*", ms=13, zorder=5, label=label)


def accuracy_of(ax, t, thick: bool) -> None:
    """A class's joint accuracy against step (a held-out class heavier)."""
    if t.accuracy is not None:
        ax.plot(
            np.maximum(t.step, 1),
            t.accuracy,
            "-o",
            color=class_color(t.label),
            ms=2.5,
            lw=2 if thick else 1,
            label=t.label,
        )


def shares_strip(ax, held: Sequence) -> None:
    """What the first held-out class's samples were read as, per step: stacked shares per corner,
    unreadable gray."""
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
        colors=[class_color(k) if k != UNREADABLE else "0.82" for k in keys],
        labels=[f"read as {k}" if k != UNREADABLE else UNREADABLE for k in keys],
    )
    ax.set(
        xscale="log", xlabel="training step", ylabel=f"class {t.label}:\nshare read as", ylim=(0, 1)
    )
    ax.legend(fontsize=6, ncol=min(len(keys), 3), loc="upper center", bbox_to_anchor=(0.5, -0.35))


def accuracy_axes(ax, protocol: str, *, ylabel: str | None = None, **legend) -> None:
    """The accuracy panel's axes (log steps, joint accuracy in [0, 1]), grid and legend (``legend``:
    its options); ``ylabel`` replaces the label naming ``protocol``."""
    ax.set(
        xscale="log",
        xlabel="training step",
        ylabel=ylabel or f"joint accuracy ({protocol})",
        ylim=(-0.02, 1.02),
    )
    ax.grid(alpha=0.25)
    if ax.get_legend_handles_labels()[0]:  # nothing drawn (a log without accuracy): no empty legend
        ax.legend(**{"fontsize": 7, **legend})
