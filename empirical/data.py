"""The data-generating process: synthetic images whose concepts and concept signal are controlled.

  python -m empirical.data --concepts color,size --sep color=0.3,size=0.4 [--res 32] [--n 16] [--out DIR]

writes DIR/samples.png (a grid of samples per class, the held-out classes marked, like the paper's
Fig. 2) and DIR/signals.json (the measured concept signal of each concept, the class means, the
held-out classes and the slot layout of h).

Concepts (any subset active, each with 2 or more values; the classes are their product):

| concept | values (index 0 ... n-1) | separation ``sep`` | within-class spread |
|---|---|---|---|
| shape | circle, triangle (same area) | none | none |
| x, y | centre positions -sep/2 ... +sep/2 (image spans [-1, 1]) | (0, 1] | uniform ± sep/8 |
| color | RGB from red (0.5+sep/2, 0.5-sep/2, 0.5-sep/2) to blue (0.5-sep/2, 0.5-sep/2, 0.5+sep/2) | (0, 0.8] | uniform ± sep/8 per channel |
| size | radius from large 0.45+sep/2 to small 0.45-sep/2 | (0, 0.4] | uniform ± 3 sep/8 (floor 0.1) |
| bg | gray from light 0.5+sep/2 to dark 0.5-sep/2 | (0, 0.8] | uniform ± sep/8 per channel |

With more than 2 values, the means are evenly spaced between the two ends. Inactive concepts:
circle; centre uniform in [-0.5, 0.5]²; color mid-gray-blue (0.5, 0.5, 0.5); radius 0.45;
background uniform in [0.8, 1.0] per channel. The spread scales with the separation, as in the
paper's App. A.1. Class labels are one digit per active concept, in the order the concepts were
given: with ``color,size``, 01 is red and small. The held-out classes are those with more than one
non-zero index (2x2: 11; 2x2x2: 011, 101, 110, 111).

The conditioning vector h has 11 slots and carries the *sampled* values:

    0-1 shape one-hot   2 x   3 y   4-6 color RGB   7 size (radius)   8-10 background RGB

Inactive concepts' slots are 0. Masked slots (underspecification, paper Sec. 5) hold ``MASK_FILL``
= -1, a value no concept takes.

Images are rendered by :mod:`empirical.render` (anti-aliased, resolution-agnostic); Gaussian pixel
noise (sd ``noise``) is added and the result clipped to [0, 1]. :func:`concept_signal` measures each
concept's signal; :mod:`empirical.grid` draws the sample grid.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from empirical.render import render
from core import cli

from empirical.data_config import (  # noqa: F401  (empirical.data's API: the configuration lives there)
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
        h: (N, 11) conditioning vectors (sampled values; see the module docstring).
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
    """Concept values for (N, C) class indices: ``train`` draws within-class spread, ``mean`` uses class means.

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
    """Underspecification (paper Sec. 5): for rows of ``classes``, with probability p, fill the slots of
    ``concepts`` with MASK_FILL (the "red triangle" loses its color word).

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

    Two estimates per active concept, on noise-free renders at matched positions and matched values of
    every other concept: ``mse``, the mean squared pixel difference between the classes that differ
    only in this concept (value 0 vs value n-1); ``grad_rms``, |∂G/∂z_i|, the RMS over pixels of the
    central finite difference of the image with respect to the concept's coordinate z_i, averaged over
    z_i in {0.25, 0.5, 0.75} (None for shape, which has no continuous coordinate). Both grow with the
    separation; their ordering says which concept the model is expected to learn first.

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


def _parse_seps(text: str) -> dict[str, float]:
    seps = {}
    for item in filter(None, (t.strip() for t in text.split(","))):
        name, value = cli.assignment(item, "--sep", "CONCEPT=VALUE, e.g. color=0.3")
        seps[name] = cli.numbers(value, "--sep", name)[0]
    return seps


@cli.command("empirical.data")
def main(argv: Sequence[str] | None = None) -> int:
    """``python -m empirical.data``: see the module docstring."""
    parser = cli.parser("empirical.data", __doc__)
    parser.add_argument(
        "--concepts",
        default="color,size",
        help=f"active concepts, comma-separated (valid: {', '.join(CONCEPTS)})",
    )
    parser.add_argument(
        "--sep",
        action="append",
        default=None,
        metavar="CONCEPT=VALUE",
        help="a separation, repeatable (or comma-separated); default color=0.3 and size=0.4; valid ranges above",
    )
    parser.add_argument("--res", type=int, default=32, help="resolution in pixels (default 32)")
    parser.add_argument(
        "--n", type=int, default=16, help="samples per class in the grid (default 16)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--out", type=Path, default=Path("runs/data"), help="output folder (default runs/data)"
    )
    args = parser.parse_args(argv)
    if not 1 <= args.n <= 64:
        raise ValueError(f"--n {args.n}: samples per class must be between 1 and 64")
    cli.nonnegative_seed(args.seed)
    concepts = tuple(c.strip() for c in args.concepts.split(",") if c.strip())
    config = DataConfig(
        concepts, _parse_seps(",".join(args.sep or ["color=0.3,size=0.4"])), resolution=args.res
    )
    cli.output_dir(args.out, "--out")
    if cli.checking(args):
        return 0
    from empirical.grid import grid
    from core.files import write_json

    batch = sample(config, {label: args.n for label in config.classes}, args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    grid(config, batch.images, batch.labels, args.n, args.out / "samples.png")
    signals = concept_signal(config)
    doc = {
        "concepts": list(config.concepts),
        "sep": config.sep,
        "resolution": config.resolution,
        "classes": config.classes,
        "held_out": config.held_out,
        "signal": signals,
        "class_means": class_means(config),
        "h_slots": {c: [s.start, s.stop] for c, s in SLOTS.items()},
        "mask_fill": MASK_FILL,
    }
    write_json(args.out / "signals.json", doc)
    for c, v in signals.items():
        grad = "-" if v["grad_rms"] is None else f"{v['grad_rms']:.4f}"
        print(f"{c:>6}: sep {v['sep']}, pixel MSE between classes {v['mse']:.5f}, |dG/dz| {grad}")
    print(f"wrote {args.out / 'samples.png'} and {args.out / 'signals.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
