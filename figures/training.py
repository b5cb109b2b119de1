"""Concept-space figure of training runs (paper Fig. 3/4 style), from their trajectories.csv.

  python -m figures.training RUN_DIR [RUN_DIR ...] [--out FILE.png] [--protocol naive]

One column per run. Top: every class's path in concept space, points coloured by training step (log
scale), the held-out class drawn thick with its turn marked (model-free, fitting.turn). Bottom: each
class's joint accuracy against step. Reads only saved outputs; never trains.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

import numpy as np
from matplotlib.colors import LogNorm

from fitting.turn import find_turn
from theory import cli
from theory.plot import save, square, subplots
from theory.trajectory import Trajectory, read_csv, read_meta

CLASS_COLORS = {"00": "tab:red", "01": "tab:orange", "10": "tab:purple", "11": "tab:blue"}


def run_log(path: Path) -> Path:
    """A run folder's trajectory log (a path to a CSV is returned as is)."""
    return path / "trajectories.csv" if path.is_dir() else path


def learned_from(held: Trajectory, trajectories: Sequence[Trajectory]) -> int:
    """Index of the first checkpoint at which the other classes are drawn (mean accuracy >= 0.5).

    Before it the samples are not class-like and the probe's reading of the held-out class wanders.
    0 when no other class has accuracies on the same steps; len(steps) when they never get there.
    """
    train = [t for t in trajectories if t is not held and t.accuracy is not None and t.step.tolist() == held.step.tolist()]
    if not train:
        return 0
    ok = np.flatnonzero(np.mean([t.accuracy for t in train], axis=0) >= 0.5)
    return int(ok[0]) if ok.size else held.step.size


def held_out_turn(held: Trajectory, trajectories: Sequence[Trajectory]):
    """The turn of a held-out path toward its own corner, or None.

    Looked for once the training classes are drawn (``learned_from``), and kept only if the path ends at least 0.1
    closer to the class's corner than it was at the bend: a path that bends into the memorized
    class and stays there has no turn.
    """
    start = learned_from(held, trajectories)
    if held.step.size - start < 5:
        return None
    turn = find_turn(held.step[start:], held.z[start:], n_boot=0)
    if turn.step is None:
        return None
    corner = np.array([float(d) for d in held.label[: held.z.shape[1]]])
    closer = np.linalg.norm(np.array(turn.point) - corner) - np.linalg.norm(held.z[-1] - corner)
    return turn if closer >= 0.1 else None


def draw(runs: Sequence[Path], out: Path, *, protocol: str = "naive") -> Path:
    fig, axes = subplots(2, len(runs), figsize=(4.6 * len(runs), 8.2), squeeze=False,
                             gridspec_kw={"height_ratios": [1.25, 1]})
    for col, run in enumerate(runs):
        log = run_log(Path(run))
        trajectories = [t for t in read_csv(log) if t.protocol == protocol]
        if not trajectories:
            raise ValueError(f"{log}: no trajectories with protocol={protocol!r}")
        meta = read_meta(log) or {}
        held = set(meta.get("held_out", ["11"]))
        sep = (meta.get("config") or {}).get("sep", {})
        top, bottom = axes[0, col], axes[1, col]
        steps = np.concatenate([t.step for t in trajectories]).astype(float)
        norm = LogNorm(max(steps[steps > 0].min(), 1), steps.max())
        for t in trajectories:
            color = CLASS_COLORS.get(t.label, "k")
            thick = t.label in held
            top.plot(t.z[:, 0], t.z[:, 1], "-", color=color, lw=2.2 if thick else 1, alpha=1 if thick else 0.6,
                     label=f"{t.label}{' (held out)' if thick else ''}")
            sc = top.scatter(t.z[:, 0], t.z[:, 1], c=np.maximum(t.step, 1), cmap="viridis", norm=norm, s=14 if thick else 6, zorder=3)
            if thick:
                turn = held_out_turn(t, trajectories)
                if turn is not None:
                    top.plot(*turn.point, "k*", ms=13, zorder=5, label=f"turn ≈ step {turn.step:.0f}")
            if t.accuracy is not None:
                bottom.plot(np.maximum(t.step, 1), t.accuracy, "-o", color=color, ms=2.5, lw=2 if thick else 1, label=t.label)
        title = Path(run).name + ("\n" + ", ".join(f"Δ{c} {v:g}" for c, v in sep.items()) if sep else "")
        square(top, trajectories[0].concepts, title)
        top.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=3)
        fig.colorbar(sc, ax=top, shrink=0.8, label="training step")
        bottom.set(xscale="log", xlabel="training step", ylabel=f"joint accuracy ({protocol})", ylim=(-0.02, 1.02))
        bottom.grid(alpha=0.25)
        bottom.legend(fontsize=7)
    fig.tight_layout()
    return save(fig, out)


@cli.command("figures.training")
def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m figures.training", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", type=Path, help="run folders (or their trajectories.csv)")
    parser.add_argument("--out", type=Path, default=None,
                        help="PNG to write, or a folder to write concept_space.png in (default RUN_DIR/concept_space.png)")
    parser.add_argument("--protocol", default="naive", help="which protocol's rows to draw (default naive)")
    args = parser.parse_args(argv)
    out = args.out or run_log(args.runs[0]).parent
    if out.is_dir() or not out.suffix:
        out = out / "concept_space.png"
    cli.output_file(out, "--out", suffix=".png")
    for run in args.runs:
        if not run_log(run).exists():
            raise ValueError(f"{run_log(run)}: no trajectory log here (train with python -m empirical.train)")
    path = draw(args.runs, out, protocol=args.protocol)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
