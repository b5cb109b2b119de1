"""Concept-space figure of training runs (paper Fig. 3/4 style), from their trajectories.csv.

  python -m figures.training RUN_DIR [RUN_DIR ...] [--out DIR] [--protocol naive]

One column per run. Top: every class's path in concept space, points coloured by training step (log
scale), the held-out class drawn thick, with its turn marked when the run has a turn.json (written
by ``python -m fitting.turn RUN_DIR``); a step where no sample was readable has no point. Middle:
each class's joint accuracy against step. Bottom, when the log has share columns: what the held-out
class's samples were read as, step by step (a stacked strip: the share read as each corner of
concept space, and unreadable in gray), so a mixture of two memorized classes and a genuine
composition look different even where their mean points agree. Reads only saved outputs
(trajectories.csv, its meta, turn.json); computes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from matplotlib.cm import ScalarMappable

from core import cli
from core.plot import save, square, subplots
from core.sidecar import run_log
from figures import cube
from figures.class_paths import accuracy_axes, accuracy_of, load, path_of, shares_strip, turn_file


def draw(runs: Sequence[Path], out: Path, *, protocol: str = "naive") -> Path:
    """concept_space.png: one column per run, paths on top, accuracies below (three concepts:
    figures.cube)."""
    loaded = [load(run, protocol) for run in runs]
    if any(len(trajectories[0].concepts) == 3 for trajectories, *_ in loaded):
        return cube.draw(runs, loaded, out, protocol=protocol)
    fig, axes = subplots(
        3,
        len(runs),
        figsize=(4.6 * len(runs), 10.2),
        squeeze=False,
        gridspec_kw={"height_ratios": [1.25, 1, 0.55]},
    )
    for col, (run, (trajectories, held, turns, sep, norm)) in enumerate(zip(runs, loaded)):
        top, bottom, strip = axes[0, col], axes[1, col], axes[2, col]
        for t in trajectories:
            turn = turns.get((t.label, protocol)) if t.label in held else None
            path_of(top, t, t.label in held, norm, turn)
            accuracy_of(bottom, t, t.label in held)
        seps = ", ".join(f"Δ{c} {v:g}" for c, v in sep.items())
        square(top, trajectories[0].concepts, Path(run).name + (f"\n{seps}" if sep else ""))
        top.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.17), ncol=3)
        fig.colorbar(
            ScalarMappable(norm=norm, cmap="viridis"), ax=top, shrink=0.8, label="training step"
        )
        accuracy_axes(bottom, protocol)
        shares_strip(strip, [t for t in trajectories if t.label in held])
    fig.tight_layout()
    return save(fig, out)


@cli.command
def main(argv: Sequence[str] | None = None) -> int:
    parser = cli.reader_parser(
        "runs",
        "run folders (or their trajectories.csv)",
        "folder to write concept_space.png in, or a .png, .pdf or .svg path (default: the "
        "first run's folder)",
        nargs="+",
    )
    parser.add_argument(
        "--protocol", default="naive", help="which protocol's rows to draw (default naive)"
    )
    args = parser.parse_args(argv)
    out = cli.figure_path(
        args.out or cli.default_out(run_log(args.runs[0]).parent),
        "concept_space.png",
        folder=args.out is None,
    )
    if cli.checking(args):
        return 0
    for run in args.runs:
        if not run_log(run).exists():
            raise ValueError(
                f"{run_log(run)}: no trajectory log here (train with python -m empirical.train)"
            )
    path = draw(args.runs, out, protocol=args.protocol)
    unmarked = [str(run) for run in args.runs if turn_file(run_log(run)) is None]
    if unmarked:
        print(
            f"no turn.json in {', '.join(unmarked)}: python -m fitting.turn {' '.join(unmarked)} "
            "marks the held-out turn"
        )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
