"""core.plot.save: PNGs with a 256-colour palette by default (a third of the bytes), full colour on request,
other formats as matplotlib writes them."""

import numpy as np
from PIL import Image

from core import plot


def figure():
    fig, ax = plot.subplots(figsize=(5, 3.5))
    ax.scatter(np.arange(200), np.sin(np.arange(200) / 9), c=np.arange(200), cmap="viridis")
    fig.colorbar(ax.collections[0])
    return fig


def test_a_png_is_paletted_smaller_and_looks_the_same(tmp_path):
    small = plot.save(figure(), tmp_path / "p.png")
    full = plot.save(figure(), tmp_path / "f.png", palette=False)
    with Image.open(small) as a, Image.open(full) as b:
        assert a.mode == "P" and b.mode == "RGBA" and a.size == b.size
        diff = np.abs(
            np.asarray(a.convert("RGB"), dtype=int) - np.asarray(b.convert("RGB"), dtype=int)
        )
    assert small.stat().st_size < 0.6 * full.stat().st_size
    assert np.mean(diff) < 2 and np.percentile(diff, 99) < 24  # within a few levels of 255


def test_other_formats_are_written_as_matplotlib_writes_them(tmp_path):
    path = plot.save(figure(), tmp_path / "f.svg")
    assert path.read_text().lstrip().startswith("<?xml")
