"""The data-generating process: concept values, their images, masking and the concept signal (the
command: python -m empirical.data)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from empirical.images.render import render

# this module's API: the configuration lives there
from empirical.images.data_config import (  # noqa: F401
    CONCEPTS,
    H_DIM,
    MASK_FILL,
    MIN_RADIUS,
    SEP_RANGE,
    SLOTS,
    DataConfig,
    parse_label,
)


@dataclass(frozen=True, eq=False)
class Batch:
    """Images and what made them.

    Attributes:
        images: (N, 3, R, R) float32 in [0, 1].
        h: (N, 11) conditioning vectors (sampled values; see empirical.data's docstring).
        index: (N, C) value index per active concept (the class).
        labels: (N,) class labels.
        values: concept -> (N, width) the sampled values (every concept, active or not).
    """

    images: NDArray[np.float32]
    h: NDArray[np.float32]
    index: NDArray[np.int64]
    labels: NDArray
    values: dict[str, NDArray]


def sample_values(
    config: DataConfig, index: NDArray, rng: np.random.Generator, *, mode: str = "train"
) -> dict[str, NDArray]:
    """Concept values for (N, C) class indices: ``train`` draws within-class spread, ``mean`` uses
    class means.

    Position is random in both modes when x and y are not concepts (as in the paper).
    """
    if mode not in ("train", "mean"):
        raise ValueError(f"mode must be 'train' or 'mean', got {mode!r}")
    n = index.shape[0]
    values: dict[str, NDArray] = {}
    for concept in CONCEPTS:
        if concept in config.concepts:
            col = config.concepts.index(concept)
            mean = config.mean(concept, index[:, col])
            if mode == "train" and concept != "shape":
                mean = mean + rng.uniform(-1, 1, mean.shape) * config.spread(concept)
            values[concept] = mean
        elif concept in ("x", "y"):
            # random in both modes, as in the paper
            values[concept] = rng.uniform(-0.5, 0.5, (n, 1))
        elif concept == "color":
            values[concept] = np.full((n, 3), 0.5)
        elif concept == "size":
            values[concept] = np.full((n, 1), 0.45)
        elif concept == "bg":
            values[concept] = (
                rng.uniform(0.8, 1.0, (n, 3)) if mode == "train" else np.full((n, 3), 0.9)
            )
        else:
            values[concept] = np.zeros((n, 1))
    values["size"] = np.maximum(values["size"], MIN_RADIUS)
    values["color"] = np.clip(values["color"], 0, 1)
    values["bg"] = np.clip(values["bg"], 0, 1)
    return values


def conditioning(values: Mapping[str, NDArray], config: DataConfig) -> NDArray[np.float32]:
    """(N, 11) h: the sampled values of the active concepts in their slots, zeros elsewhere."""
    n = next(iter(values.values())).shape[0]
    h = np.zeros((n, H_DIM), dtype=np.float32)
    for c in config.concepts:
        if c == "shape":
            h[:, 0] = 1 - values["shape"][:, 0]
            h[:, 1] = values["shape"][:, 0]
        else:
            h[:, SLOTS[c]] = values[c]
    return h


def sample(
    config: DataConfig,
    counts: Mapping[str, int],
    rng: np.random.Generator | int,
    *,
    mode: str = "train",
    chunk_pixels: int = 1 << 21,
) -> Batch:
    """Draw images per class, e.g. ``sample(cfg, {"00": 2048, "01": 2048, "10": 2048}, seed)``.

    Deterministic for a seed. Rows are grouped by class in the order given.
    """
    rng = np.random.default_rng(rng)
    labels = []
    for label, count in counts.items():
        parse_label(config, label)
        if int(count) < 0:
            raise ValueError(f"count for class {label!r} must be >= 0, got {count}")
        labels += [label] * int(count)
    index = np.array([parse_label(config, lab) for lab in labels], dtype=np.int64).reshape(
        len(labels), len(config.concepts)
    )
    values = sample_values(config, index, rng, mode=mode)
    images = np.empty((len(labels), 3, config.resolution, config.resolution), dtype=np.float32)
    chunk = max(16, chunk_pixels // config.resolution**2)  # keep the temporaries cache-sized
    for start in range(0, len(labels), chunk):
        part = {k: v[start : start + chunk] for k, v in values.items()}
        images[start : start + chunk] = render(part, config.resolution, noise=config.noise, rng=rng)
    return Batch(images, conditioning(values, config), index, np.array(labels), values)


def mask(
    h: NDArray,
    labels: Sequence[str],
    *,
    concepts: Sequence[str],
    classes: Sequence[str],
    p: float,
    rng: np.random.Generator | int,
) -> tuple[NDArray[np.float32], NDArray[np.bool_]]:
    """Underspecification (paper Sec. 5): for rows of ``classes``, with probability p, fill the
    slots of ``concepts`` with MASK_FILL (the "red triangle" loses its color word).

    Returns:
        (masked copy of h, (N,) which rows were masked).
    """
    if not 0 <= p <= 1:
        raise ValueError(f"masking probability p must be in [0, 1], got {p}")
    for c in concepts:
        if c not in SLOTS:
            raise ValueError(f"cannot mask unknown concept {c!r}; valid: {', '.join(CONCEPTS)}")
    rng = np.random.default_rng(rng)
    h = np.array(h, dtype=np.float32, copy=True)
    eligible = np.isin(np.asarray(labels), list(classes))
    hit = eligible & (rng.random(h.shape[0]) < p)
    for c in concepts:
        h[np.ix_(hit, np.arange(H_DIM)[SLOTS[c]])] = MASK_FILL
    return h, hit


# ---------------------------------------------------------------------------------------------
# CLI


def _base(config: DataConfig, n: int, rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    index = np.stack([rng.integers(0, config.n_values[c], n) for c in config.concepts], axis=1)
    return index, sample_values(config, index, rng, mode="mean")


def _with(config: DataConfig, values: dict, concept: str, frac: float | np.ndarray) -> dict:
    out = dict(values)
    top = config.n_values[concept] - 1
    out[concept] = config.mean(
        concept, np.broadcast_to(np.asarray(frac, dtype=float) * top, (values["x"].shape[0],))
    )
    if concept == "size":
        out["size"] = np.maximum(out["size"], 0.1)
    return out


def concept_signal(
    config: DataConfig, *, n: int = 512, eps: float = 0.02, rng: int = 0
) -> dict[str, dict]:
    """Concept signal, measured: how strongly each concept moves the pixels (paper Sec. 3).

    Two estimates per active concept, on noise-free renders at matched positions and matched values
    of every other concept: ``mse``, the mean squared pixel difference between the classes that
    differ only in this concept (value 0 vs value n-1); ``grad_rms``, |∂G/∂z_i|, the RMS over pixels
    of the central finite difference of the image with respect to the concept's coordinate z_i,
    averaged over z_i in {0.25, 0.5, 0.75} (None for shape, which has no continuous coordinate).
    Both grow with the separation; their ordering says which concept the model is expected to learn
    first.

    Returns:
        concept -> {"sep", "mse", "grad_rms"}.
    """
    gen = np.random.default_rng(rng)
    _, values = _base(config, n, gen)
    res = config.resolution
    out = {}
    for concept in config.concepts:
        lo = render(_with(config, values, concept, 0.0), res)
        hi = render(_with(config, values, concept, 1.0), res)
        mse = float(np.mean((hi - lo) ** 2))
        grad = None
        if concept != "shape":
            sq = []
            for z in (0.25, 0.5, 0.75):
                up = render(_with(config, values, concept, z + eps), res)
                down = render(_with(config, values, concept, z - eps), res)
                sq.append(np.mean(((up - down) / (2 * eps)) ** 2))
            grad = float(np.sqrt(np.mean(sq)))
        out[concept] = {"sep": config.sep.get(concept), "mse": mse, "grad_rms": grad}
    return out


def class_means(config: DataConfig) -> dict[str, dict[str, list[float]]]:
    """Class label -> concept -> mean value (for signals.json)."""
    out = {}
    for label in config.classes:
        idx = [int(d) for d in label]
        out[label] = {
            c: [float(v) for v in np.atleast_1d(config.mean(c, i))]
            for c, i in zip(config.concepts, idx)
        }
    return out
