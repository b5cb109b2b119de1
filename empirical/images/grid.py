"""Sample grids: one row of images per class, the held-out classes framed (the paper's Fig. 2
style)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from core import plot

CRIMSON = (0.863, 0.078, 0.235)


def mosaic(images: NDArray, labels: NDArray, classes, held_out, n: int) -> tuple[NDArray, int, int]:
    """(canvas, cell, gap): the images tiled one class a row, up to n a row, on white, each
    held-out class's images framed in crimson inside the gap around them.

    One picture for matplotlib to draw: a grid of 32 axes took 4.6 s to draw, this one axes 0.2 s.
    """
    scale = -(-48 // images.shape[-1])  # whole pixels, each image at least 48 canvas pixels wide
    images = images.repeat(scale, axis=-1).repeat(scale, axis=-2)
    size, gap = images.shape[-1], 4
    cell = size + 2 * gap
    canvas = np.ones((len(classes) * cell, n * cell, 3))
    for r, label in enumerate(classes):
        rows = np.flatnonzero(np.asarray(labels) == label)[:n]
        for c, i in enumerate(rows):
            y, x = r * cell, c * cell
            if label in held_out:
                canvas[y + gap - 2 : y + cell - gap + 2, x + gap - 2 : x + cell - gap + 2] = CRIMSON
            canvas[y + gap : y + gap + size, x + gap : x + gap + size] = np.clip(
                images[i].transpose(1, 2, 0), 0, 1
            )
    return canvas, cell, gap


def grid(
    config, images: NDArray, labels: NDArray, n: int, path: Path, title: str | None = None
) -> None:
    """A PNG with one row per class (held-out classes framed in red) and up to n images per row.

    Args:
        config: the data config (its ``classes``, ``held_out``, ``concepts``, and ``sep`` for the
        default title). images: (N, 3, R, R) images in [0, 1]; labels: (N,) their class labels.
    """
    classes = config.classes
    canvas, cell, _ = mosaic(np.asarray(images), labels, classes, config.held_out, n)
    fig, ax = plot.subplots(figsize=(0.9 * n + 1.2, 0.95 * len(classes) + 0.4))
    ax.imshow(canvas, interpolation="nearest")
    ax.set_xticks([])
    ax.set_yticks(
        [(r + 0.5) * cell - 0.5 for r in range(len(classes))],
        [f"{c}\nheld out" if c in config.held_out else c for c in classes],
        fontsize=9,
    )
    ax.tick_params(axis="y", length=0)
    for tick, label in zip(ax.get_yticklabels(), classes):
        tick.set_color("crimson" if label in config.held_out else "k")
    for spine in ax.spines.values():
        spine.set_visible(False)
    if title is None:
        seps = ", ".join(f"Δ{c} {v:g}" for c, v in config.sep.items())
        title = f"classes over ({', '.join(config.concepts)}); {seps}"
    ax.set_title(title, fontsize=9)
    plot.save(fig, path, dpi=110, bbox_inches="tight")
