"""The sample grid (empirical.images.grid): one picture, each image in its class's row, held out framed."""

import numpy as np

from empirical.images.dgp import DataConfig
from empirical.images.grid import CRIMSON, grid, mosaic


def test_each_image_stands_whole_in_its_class_row_and_only_held_out_rows_are_framed():
    rng = np.random.default_rng(0)
    images = rng.uniform(size=(7, 3, 8, 8))
    labels = np.array(["00", "11", "00", "10", "11", "11", "11"])  # 01 has none, 11 more than n
    canvas, cell, gap = mosaic(images, labels, ("00", "01", "10", "11"), ("11",), n=3)
    scale = (cell - 2 * gap) // 8
    assert canvas.shape == (4 * cell, 3 * cell, 3) and scale * 8 >= 48
    for r, label in enumerate(("00", "01", "10", "11")):
        mine = np.flatnonzero(labels == label)[:3]
        for c in range(3):
            y, x = r * cell + gap, c * cell + gap
            shown = canvas[y : y + 8 * scale : scale, x : x + 8 * scale : scale]
            expected = images[mine[c]].transpose(1, 2, 0) if c < mine.size else np.ones((8, 8, 3))
            np.testing.assert_array_equal(shown, expected)
            frame = canvas[y - 1, x]
            assert np.allclose(frame, CRIMSON) == (label == "11" and c < mine.size)


def test_the_grid_is_written_as_a_png(tmp_path):
    data = DataConfig(("color", "size"), {"color": 0.3, "size": 0.4}, resolution=8)
    images = np.random.default_rng(1).uniform(size=(8, 3, 8, 8))
    grid(data, images, np.repeat(data.classes, 2), 2, tmp_path / "g.png")
    assert (tmp_path / "g.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
