"""The training figure of a three-concept run (issue #55, the paper's Fig. 15): ``python -m
figures.training`` draws it for a log with three concepts.

Concept space is a cube; a drawn cube hides paths behind each other and its depth cannot be read off
a page, so each run gets the cube's three faces instead: the classes' paths projected on (c1, c2),
(c1, c3) and (c2, c3), each corner named by its two bits with a dot for the concept the face leaves
out (``1·0``: first present, third absent, second either), the held-out classes thick, points
coloured by step, the turn marked where fitting.turn found one. Below them, as in two dimensions:
every class's joint accuracy, and what the first held-out class's samples were read as (its share of
each of the 8 corners and unreadable).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
from matplotlib.cm import ScalarMappable
from matplotlib.figure import Figure

from core.plot import save, square
from figures.class_paths import accuracy_axes, accuracy_of, path_of, shares_strip

FACES = ((0, 1), (0, 2), (1, 2))


def corner_names(d: int, dims: tuple[int, int]):
    """Corner (a, b) of the face of concepts ``dims`` -> its name: the two bits in place, '·'
    elsewhere."""

    def name(a: int, b: int) -> str:
        chars = ["·"] * d
        chars[dims[0]], chars[dims[1]] = str(a), str(b)
        return "".join(chars)

    return name


def draw(
    runs: Sequence[Path], loaded: Sequence[tuple], out: Path, *, protocol: str = "naive"
) -> Path:
    """concept_space.png for three-concept runs (``loaded``: figures.class_paths.load of each): a
    column of three faces, accuracies and shares per run."""
    fig = Figure(figsize=(11 * len(runs), 10.5), layout="constrained")
    subs = np.atleast_1d(fig.subfigures(1, len(runs)))
    for sub, run, (trajectories, held, turns, sep, norm) in zip(subs, runs, loaded):
        concepts = trajectories[0].concepts
        if len(concepts) != 3:
            raise ValueError(
                f"{run}: {len(concepts)} concepts; draw runs of two and of three concepts apart"
            )
        axes = sub.subplot_mosaic(
            [["f0", "f1", "f2"], ["acc", "acc", "acc"], ["sh", "sh", "sh"]],
            height_ratios=[1.2, 1, 0.55],
        )
        faces = [axes[f"f{k}"] for k in range(3)]
        for ax, dims in zip(faces, FACES):
            for t in trajectories:
                turn = turns.get((t.label, protocol)) if t.label in held else None
                path_of(ax, t, t.label in held, norm, turn, dims)
            square(ax, [concepts[i] for i in dims], names=corner_names(3, dims))
        for t in trajectories:  # its legend names the classes for the faces too
            accuracy_of(axes["acc"], t, t.label in held)
        seps = ", ".join(f"Δ{c} {v:g}" for c, v in sep.items())
        sub.suptitle(Path(run).name + (f": {seps}" if sep else ""), fontsize=11)
        sub.colorbar(
            ScalarMappable(norm=norm, cmap="viridis"), ax=faces, shrink=0.8, label="training step"
        )
        accuracy_axes(
            axes["acc"], protocol, ncol=4, title="class (thick: held out)", title_fontsize=7
        )
        shares_strip(axes["sh"], [t for t in trajectories if t.label in held])
    return save(fig, out)
