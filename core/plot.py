"""Drawing primitives every part uses: concept-space axes, coordinates over time, new figures and
saving them.

Figures are built with matplotlib's object API (``matplotlib.figure.Figure``), never pyplot:
importing this module, or any module of the package, leaves matplotlib's backend and global state
alone, so it is safe inside a notebook or a GUI, and works on a machine with no display.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Sequence

import numpy as np
from matplotlib import colormaps
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.text import Text

from core.files import atomic_write


def covariate_label(name: str) -> str:
    """A covariate or setting as the text names it: ``sep_color`` (or ``sep.color``) is Δcolor,
    ``signal_size`` the size signal, ``sep_color=0.2`` Δcolor 0.2; any other name as given."""
    if "=" in name:
        key, value = name.split("=", 1)
        return f"{covariate_label(key)} {value}"
    for prefix, form in (("sep_", "Δ{}"), ("sep.", "Δ{}"), ("signal_", "{} signal (pixel MSE)")):
        if name.startswith(prefix) and len(name) > len(prefix):
            return form.format(name[len(prefix) :])
    return name


def concept_space(
    ax,
    paths: np.ndarray,
    values: Sequence[float],
    *,
    concepts: Sequence[str],
    cmap: str = "viridis",
    norm: Normalize | None = None,
    targets: Sequence[tuple[Sequence[float], str, str]] = (),
    title: str = "",
):
    """Draw (N, T, 2) paths in the unit square, coloured by ``values``; returns the ScalarMappable.

    Args:
        ax: matplotlib axes.
        paths: (N, T, 2) trajectories.
        values: (N,) the swept parameter, for the colours.
        concepts: names of the two axes.
        targets: (point, marker, legend label) to mark, e.g. true and biased targets.
    """
    values = np.asarray(values, dtype=float)
    norm = norm or Normalize(
        values.min(), values.max() if values.max() > values.min() else values.min() + 1
    )
    sm = ScalarMappable(norm=norm, cmap=cmap)
    for path, v in zip(paths, values):
        ax.plot(path[:, 0], path[:, 1], color=sm.to_rgba(v), lw=1.6)
        ax.plot(path[-1, 0], path[-1, 1], "o", color=sm.to_rgba(v), ms=3)
    starts = np.unique(np.round(paths[:, 0, :], 9), axis=0)
    ax.plot(starts[:, 0], starts[:, 1], "ko", ms=6, mfc="white", label="start z(0)", zorder=5)
    for point, marker, label in targets:
        ax.plot(point[0], point[1], marker, color="k", ms=11, label=label, zorder=6, clip_on=False)
    square(ax, concepts, title)
    if targets:
        ax.legend(loc="best", fontsize=7, framealpha=0.85)
    return sm


def square(ax, concepts: Sequence[str], title: str = "", names=None) -> None:
    """The unit square of a 2-concept space (or a projection of a larger one): limits, labels, and
    the class names at the corners (inside the square, clear of the tick labels and of a marker
    drawn on the corner); ``names``: corner (a, b) -> its name (default "ab")."""
    for corner in ((0, 0), (0, 1), (1, 0), (1, 1)):
        ax.annotate(
            names(*corner) if names else f"{corner[0]}{corner[1]}",
            corner,
            textcoords="offset points",
            color="0.35",
            fontsize=8,
            xytext=(9 if corner[0] == 0 else -9, 9 if corner[1] == 0 else -9),
            ha="left" if corner[0] == 0 else "right",
            va="bottom" if corner[1] == 0 else "top",
            zorder=7,
            bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.7},
        )
    ax.set(xlim=(-0.02, 1.02), ylim=(-0.02, 1.02), aspect="equal", title=title)
    ax.set_xlabel(f"z_{concepts[0]}")
    ax.set_ylabel(f"z_{concepts[1]}")
    ax.grid(alpha=0.25)


def coordinates(
    ax,
    t: np.ndarray,
    paths: np.ndarray,
    values: Sequence[float],
    *,
    concepts,
    cmap="viridis",
    norm=None,
):
    """Each coordinate against time; one line style per concept, colour per swept value. A later
    concept is drawn thinner on top of an earlier one, so two that coincide both show."""
    values = np.asarray(values, dtype=float)
    norm = norm or Normalize(
        values.min(), values.max() if values.max() > values.min() else values.min() + 1
    )
    styles = ["-", "--", ":", "-."]
    width = [1.0 + 1.0 * (len(concepts) - 1 - d) for d in range(len(concepts))]
    for path, v in zip(paths, values):
        for d in range(path.shape[1]):
            color = colormaps[cmap](norm(v))
            ax.plot(t, path[:, d], styles[d % 4], color=color, lw=width[d], zorder=2 + d)
    for d, c in enumerate(concepts):
        ax.plot([], [], styles[d % 4], color="k", lw=width[d], label=f"z_{c}")
    ax.set(xlabel="model time t", ylabel="concept coordinate", ylim=(-0.02, 1.02))
    ax.legend(fontsize=8)
    ax.grid(alpha=0.25)


def text_overlaps(fig: Figure, *, pad: float = 0.0) -> list[tuple[str, str]]:
    """Pairs of visible, non-empty texts of a drawn figure whose boxes intersect, and texts that
    leave the figure (paired with ``"<edge>"``): what a figure test asserts is empty. Tick labels
    outside the view are not drawn and not counted."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    canvas.draw()  # lays the figure out (constrained layout included) as saving does
    renderer = canvas.get_renderer()
    ticks = [
        t
        for ax in fig.axes
        for axis in (ax.xaxis, ax.yaxis)
        for t in axis.get_major_ticks() + axis.get_minor_ticks()
    ]
    drawn = {
        id(t) for ax in fig.axes for axis in (ax.xaxis, ax.yaxis) for t in axis._update_ticks()
    }
    # outside the view
    hidden = {id(label) for t in ticks if id(t) not in drawn for label in (t.label1, t.label2)}
    boxes, seen = [], set()
    for text in fig.findobj(Text):
        if not text.get_visible() or not text.get_text().strip() or id(text) in hidden | seen:
            continue
        seen.add(id(text))
        box = text.get_window_extent(renderer).padded(pad)
        if box.width > 0 and box.height > 0:
            boxes.append((text.get_text(), box))
    edge = fig.bbox
    out = [
        (name, "<edge>")
        for name, box in boxes
        if box.x0 < edge.x0 - 1
        or box.y0 < edge.y0 - 1
        or box.x1 > edge.x1 + 1
        or box.y1 > edge.y1 + 1
    ]
    for i, (a, box_a) in enumerate(boxes):
        for b, box_b in boxes[i + 1 :]:
            if (
                box_a.overlaps(box_b)
                and min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0) > 0.5
                and min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0) > 0.5
            ):
                out.append((a, b))
    return out


def subplots(nrows: int = 1, ncols: int = 1, **kwargs):
    """``(fig, axes)`` like ``pyplot.subplots``, without pyplot; figure options (figsize, layout) go
    to the Figure."""
    fig_kw = {k: kwargs.pop(k) for k in ("figsize", "layout", "dpi") if k in kwargs}
    fig = Figure(**fig_kw)
    return fig, fig.subplots(nrows, ncols, **kwargs)


def save(fig: Figure, path: str | Path, *, dpi: int = 130, palette: bool = True, **kwargs) -> Path:
    """Write a figure atomically (its folder created), in the format of the path's suffix. A PNG is
    written with a 256-colour palette (``palette=False``: full colour): a third of the bytes, with
    no difference a reader sees in a plot."""
    path = Path(path)
    fmt = path.suffix.lstrip(".") or "png"
    if fmt != "png" or not palette:
        return atomic_write(
            path, lambda fh: fig.savefig(fh, format=fmt, dpi=dpi, **kwargs), binary=True
        )
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, **kwargs)
    buffer.seek(0)
    return atomic_write(path, lambda fh: fh.write(paletted(buffer.read())), binary=True)


def paletted(png: bytes) -> bytes:
    """A PNG's bytes with its colours reduced to a 256-colour palette (median cut), alpha flattened
    on white."""
    from PIL import Image

    with Image.open(io.BytesIO(png)) as im:
        rgba = im.convert("RGBA")
    flat = Image.new("RGB", rgba.size, "white")
    flat.paste(rgba, mask=rgba.getchannel("A"))
    out = io.BytesIO()
    flat.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(
        out, format="png", optimize=True
    )
    return out.getvalue()
