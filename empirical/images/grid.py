"""Sample grids: one row of images per class, the held-out classes framed (the paper's Fig. 2
style)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from core import plot


def grid(
    config, images: NDArray, labels: NDArray, n: int, path: Path, title: str | None = None
) -> None:
    """A PNG with one row per class (held-out classes framed in red) and up to n images per row.

    Args:
        config: the data config (its ``classes``, ``held_out``, ``concepts``, and ``sep`` for the
        default title). images: (N, 3, R, R) images in [0, 1]; labels: (N,) their class labels.
    """
    classes = config.classes
    fig, axes = plot.subplots(
        len(classes), n, figsize=(0.9 * n + 1.2, 0.95 * len(classes) + 0.4), squeeze=False
    )
    for r, label in enumerate(classes):
        rows = np.flatnonzero(np.asarray(labels) == label)
        for c in range(n):
            ax = axes[r, c]
            ax.set_xticks([])
            ax.set_yticks([])
            if c < rows.size:
                ax.imshow(
                    np.clip(images[rows[c]].transpose(1, 2, 0), 0, 1), interpolation="nearest"
                )
            if label in config.held_out:
                for spine in ax.spines.values():
                    spine.set(color="crimson", linewidth=2)
        held = "\nheld out" if label in config.held_out else ""
        axes[r, 0].set_ylabel(
            f"{label}{held}",
            rotation=0,
            ha="right",
            va="center",
            fontsize=9,
            color="crimson" if held else "k",
        )
    if title is None:
        seps = ", ".join(f"Δ{c} {v:g}" for c, v in config.sep.items())
        title = f"classes over ({', '.join(config.concepts)}); {seps}"
    fig.suptitle(title, fontsize=9)
    plot.save(fig, path, dpi=110, bbox_inches="tight")
