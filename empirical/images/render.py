"""Rendering concept values to images: resolution-agnostic, anti-aliased, vectorized numpy.

The coverage of each pixel is a one-pixel linear ramp of the signed distance to the shape's edge, so
edges are anti-aliased at any resolution. Circles and triangles of the same size have the same area.
Images are float32, (N, 3, R, R), in [0, 1]; the image spans [-1, 1] in x and y, +y up.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
from numpy.typing import NDArray

# equilateral triangle with the area of the unit circle
TRIANGLE_SIDE = np.sqrt(4 * np.pi / np.sqrt(3))


def coverage(values: Mapping[str, NDArray], resolution: int) -> NDArray[np.float32]:
    """(N, R, R) fraction of each pixel covered by the shape (anti-aliased, resolution-agnostic)."""
    pixel = 2.0 / resolution
    grid = -1 + pixel * (np.arange(resolution, dtype=np.float32) + 0.5)  # pixel centres in [-1, 1]
    x = values["x"].astype(np.float32)[:, :, None]  # (N, 1, 1): columns
    y = values["y"].astype(np.float32)[:, :, None]  # rows; +y is up
    dx = grid[None, None, :] - x  # (N, 1, R)
    dy = -grid[None, :, None] - y  # (N, R, 1): image row 0 is the top
    r = values["size"].astype(np.float32)[:, :, None]
    circle = r - np.sqrt(dx**2 + dy**2)  # signed distance, > 0 inside
    triangle_mask = values["shape"][:, 0] > 0.5
    sd = circle
    if triangle_mask.any():
        side = TRIANGLE_SIDE * r
        inner = side / (2 * np.sqrt(3))  # inradius; the centroid sits at the centre
        n1 = -dy - inner  # bottom edge (outward normal pointing down)
        n2 = (np.sqrt(3) / 2) * dx + 0.5 * dy - inner  # right edge
        n3 = -(np.sqrt(3) / 2) * dx + 0.5 * dy - inner  # left edge
        tri = -np.maximum(np.maximum(n1, n2), n3)
        sd = np.where(triangle_mask[:, None, None], tri, circle)
    return np.clip(sd / pixel + 0.5, 0.0, 1.0).astype(np.float32)


def render(
    values: Mapping[str, NDArray],
    resolution: int,
    *,
    noise: float = 0.0,
    rng: np.random.Generator | None = None,
) -> NDArray[np.float32]:
    """(N, 3, R, R) images from concept values."""
    m = coverage(values, resolution)[:, None]  # (N, 1, R, R)
    color = values["color"].astype(np.float32)[:, :, None, None]
    bg = values["bg"].astype(np.float32)[:, :, None, None]
    img = m * color + (1 - m) * bg
    if noise > 0:
        gen = rng if rng is not None else np.random.default_rng()
        img += np.float32(noise) * gen.standard_normal(img.shape, dtype=np.float32)
    return np.clip(img, 0, 1, out=img)
