"""Images the probe must refuse to read: the negatives it learns to abstain on, and the suite it is
validated on.

A generated image is *readable* when it shows one object of the data-generating process: a circle or
triangle whose color lies on the setup's color axis, whose size is at least the smallest radius the
data ever draws, on a clean canvas. Everything else gets the probe's "unreadable" outcome, so an
untrained model (noise), a collapsed one (a blank canvas) or one that draws something the concepts
do not describe (a green object) is never read as a class.

Kinds (each a function of (n, resolution, rng) -> (n, 3, R, R) float32 images in [0, 1]):

- ``blank``: a uniform canvas of any color, with pixel noise (a collapsed model; an object with a
  negative radius)
- ``noise``: per-pixel Gaussian noise around a random gray, sd 0.15-1 (an untrained model, step 0)
- ``blobs``: smooth noise, Gaussian noise on a coarse grid, upsampled (a model early in training)
- ``partial``: a render mixed with noise, at most 40% render (a partly denoised sample)
- ``speck``: an object of radius 0.005-0.035, the data's floor being 0.1 (an object too small to
  read)
- ``huge``: an object larger than the canvas, radius 1.5-3: one flat color (an out-of-range size)
- ``off-axis``: an object whose color is far from the red-blue axis: green, yellow, black, white
  (colors outside the concept)

The probe trains on draws of every kind (:func:`negatives`) and is validated on fresh draws of each
(:func:`suite`), plus ``untrained-model``: samples of a freshly initialized diffusion model, a kind
it never trained on (the images a run scores at step 0).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Callable

import numpy as np
from numpy.typing import NDArray

from empirical.images.dgp import DataConfig, sample_values
from empirical.images.render import render

Kind = Callable[[int, int, np.random.Generator], NDArray[np.float32]]


def _canvas(n: int, resolution: int, rgb: NDArray) -> NDArray[np.float32]:
    return np.broadcast_to(rgb[:, :, None, None], (n, 3, resolution, resolution)).astype(np.float32)


def _noisy(images: NDArray, rng: np.random.Generator, sd: float = 0.02) -> NDArray[np.float32]:
    return np.clip(images + sd * rng.standard_normal(images.shape), 0, 1).astype(np.float32)


def _objects(
    n: int, resolution: int, rng: np.random.Generator, **override: NDArray
) -> NDArray[np.float32]:
    """Renders of random valid objects (any color on the axis, any trained size), with some values
    overridden."""
    data = DataConfig(
        ("color", "size"),
        {"color": float(rng.uniform(0.1, 0.8)), "size": 0.4},
        resolution=resolution,
    )
    index = rng.integers(0, 2, (n, 2))
    values = sample_values(data, index, rng, mode="train")
    values.update({k: np.asarray(v, dtype=float) for k, v in override.items()})
    values["shape"] = rng.integers(0, 2, (n, 1)).astype(float)
    return render(values, resolution, noise=1e-3, rng=rng)


def blank(n: int, resolution: int, rng: np.random.Generator) -> NDArray[np.float32]:
    """A flat canvas of any color; half of them in the data's light background range."""
    rgb = rng.uniform(0, 1, (n, 3))
    light = rng.random(n) < 0.5
    rgb[light] = rng.uniform(0.75, 1.0, (int(light.sum()), 3))
    return _noisy(_canvas(n, resolution, rgb), rng, float(rng.uniform(0, 0.04)))


def noise(n: int, resolution: int, rng: np.random.Generator) -> NDArray[np.float32]:
    """Per-pixel Gaussian noise (per channel or gray) around a random level."""
    mean = rng.uniform(0.2, 0.8, (n, 1, 1, 1))
    sd = rng.uniform(0.15, 1.0, (n, 1, 1, 1))
    x = rng.standard_normal((n, 3, resolution, resolution))
    gray = rng.random(n) < 0.3
    x[gray] = x[gray, :1]
    return np.clip(mean + sd * x, 0, 1).astype(np.float32)


def blobs(n: int, resolution: int, rng: np.random.Generator) -> NDArray[np.float32]:
    """Smooth noise: uniform noise on a 2x2 to R/4 grid, upsampled bilinearly."""
    from scipy.ndimage import zoom

    out = np.empty((n, 3, resolution, resolution), dtype=np.float32)
    for i in range(n):
        cells = int(rng.choice([c for c in (2, 4, 8) if c <= max(2, resolution // 4)]))
        coarse = rng.uniform(0, 1, (3, cells, cells)) * rng.uniform(0.3, 1) + rng.uniform(-0.1, 0.3)
        out[i] = np.clip(
            zoom(coarse, (1, resolution / cells, resolution / cells), order=1, mode="nearest"), 0, 1
        )
    return _noisy(out, rng, 0.03)


def partial(n: int, resolution: int, rng: np.random.Generator) -> NDArray[np.float32]:
    """a x render + (1 - a) x noise with a in [0, 0.4]: more noise than object."""
    a = rng.uniform(0, 0.4, (n, 1, 1, 1))
    x = _objects(n, resolution, rng)
    eps = np.clip(0.5 + rng.uniform(0.2, 0.6, (n, 1, 1, 1)) * rng.standard_normal(x.shape), 0, 1)
    return (a * x + (1 - a) * eps).astype(np.float32)


def speck(n: int, resolution: int, rng: np.random.Generator) -> NDArray[np.float32]:
    """A valid-colored object with a radius of 0.005-0.035 (the data never draws below 0.1)."""
    return _objects(n, resolution, rng, size=rng.uniform(0.005, 0.035, (n, 1)))


def huge(n: int, resolution: int, rng: np.random.Generator) -> NDArray[np.float32]:
    """An object larger than the canvas: the image is its color, edge to edge."""
    return _objects(
        n,
        resolution,
        rng,
        size=rng.uniform(1.5, 3.0, (n, 1)),
        x=np.zeros((n, 1)),
        y=np.zeros((n, 1)),
    )


OFF_AXIS = np.array(
    [
        [0.1, 0.8, 0.1],
        [0.8, 0.8, 0.1],
        [0.05, 0.05, 0.05],
        [1.0, 1.0, 1.0],
        [0.1, 0.8, 0.8],
        [0.5, 1.0, 0.5],
    ]
)


def off_axis(n: int, resolution: int, rng: np.random.Generator) -> NDArray[np.float32]:
    """An object colored far from the red-blue axis (green, yellow, black, white, cyan, pale green),
    jittered."""
    rgb = np.clip(
        OFF_AXIS[rng.integers(0, len(OFF_AXIS), n)] + rng.uniform(-0.08, 0.08, (n, 3)), 0, 1
    )
    return _objects(n, resolution, rng, color=rgb)


KINDS: dict[str, Kind] = {
    "blank": blank,
    "noise": noise,
    "blobs": blobs,
    "partial": partial,
    "speck": speck,
    "huge": huge,
    "off-axis": off_axis,
}


def negatives(n: int, resolution: int, rng: np.random.Generator) -> NDArray[np.float32]:
    """About n unreadable images, an equal share of every kind, shuffled."""
    per = max(1, n // len(KINDS))
    images = np.concatenate([kind(per, resolution, rng) for kind in KINDS.values()])
    return images[rng.permutation(images.shape[0])]


def untrained_model(n: int, resolution: int, seed: int) -> NDArray[np.float32]:
    """Samples of a freshly initialized tiny diffusion model (U-Net (32, 64)), as a run scores them
    at step 0: drawn once for the same arguments, torch and code (a copy each call), the caller's
    torch random state left as it was. Kept in the process and in the user's cache
    (``core.cache``: ``untrained-samples/``, keyed by the arguments, torch's version and the bytes
    of the files that draw them), so a probe trained in another process does not draw them again
    (256 images at 8 px take about 6 s)."""
    return _untrained_model(n, resolution, seed).copy()


@functools.lru_cache(maxsize=4)
def _untrained_model(n: int, resolution: int, seed: int) -> NDArray[np.float32]:
    import torch

    from core.cache import source_digest, user_cache
    from core.files import atomic_write
    from empirical.images import dgp
    from empirical.nets import unet, vdm

    code = source_digest(*(Path(m.__file__) for m in (dgp, unet, vdm)), Path(__file__))
    path = (
        user_cache("untrained-samples") / f"{n}-{resolution}-{seed}-{torch.__version__}-{code}.npy"
    )
    try:
        with open(path, "rb") as fh:
            cached = np.load(fh)
        if cached.shape == (n, 3, resolution, resolution) and cached.dtype == np.float32:
            return cached
    except (OSError, ValueError):
        pass
    images = _draw_untrained(n, resolution, seed)
    try:
        atomic_write(path, lambda fh: np.save(fh, images), binary=True)
    except OSError:
        pass
    return images


def _draw_untrained(n: int, resolution: int, seed: int) -> NDArray[np.float32]:
    import torch

    from empirical.images.dgp import H_DIM, MASK_FILL
    from empirical.nets.unet import UNet
    from empirical.nets.vdm import VDM

    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(seed)
        vdm = VDM(UNet((32, 64), 1, h_dim=H_DIM), null_fill=MASK_FILL).eval()
        x = vdm.sample(
            torch.rand(n, H_DIM),
            (3, resolution, resolution),
            steps=50,
            generator=torch.Generator().manual_seed(seed),
        )
    return x.float().clamp(0, 1).numpy()


def suite(n: int, resolution: int, seed: int) -> dict[str, NDArray[np.float32]]:
    """The validation suite: n fresh images of every kind (a seed the training never uses), and of
    an untrained model."""
    rng = np.random.default_rng([seed, 0xAB57A1])
    out = {name: kind(n, resolution, rng) for name, kind in KINDS.items()}
    out["untrained-model"] = untrained_model(n, resolution, seed)
    return out
