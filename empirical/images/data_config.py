"""The data-generating process's configuration (:mod:`empirical.data` has the specification): the
concepts, their separations and value counts, the classes and the held-out ones, the slots of the
conditioning vector h, each concept's mean value and within-class spread."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np
from numpy.typing import NDArray

CONCEPTS = ("shape", "x", "y", "color", "size", "bg")
SEP_RANGE = {
    "x": (0.0, 1.0),
    "y": (0.0, 1.0),
    "color": (0.0, 0.8),
    "size": (0.0, 0.4),
    "bg": (0.0, 0.8),
}
SLOTS = {
    "shape": slice(0, 2),
    "x": slice(2, 3),
    "y": slice(3, 4),
    "color": slice(4, 7),
    "size": slice(7, 8),
    "bg": slice(8, 11),
}
H_DIM = 11
MASK_FILL = -1.0
MIN_RADIUS = 0.1


class ClassGrid:
    """The classes of a grid of concepts (``concepts``, ``n_values``): every label, the held-out
    ones (more than one non-zero concept index: out of distribution) and the training ones."""

    concepts: tuple[str, ...]
    n_values: Mapping[str, int]

    @property
    def classes(self) -> list[str]:
        """Every class label, e.g. ``['00', '01', '10', '11']``."""
        return [
            "".join(map(str, idx))
            for idx in itertools.product(*(range(self.n_values[c]) for c in self.concepts))
        ]

    @property
    def held_out(self) -> list[str]:
        """Classes with more than one non-zero concept index (out of distribution)."""
        return [c for c in self.classes if sum(d != "0" for d in c) > 1]

    @property
    def train_classes(self) -> list[str]:
        """The training classes: every class that is not held out, in label order."""
        return [c for c in self.classes if c not in self.held_out]


@dataclass(frozen=True)
class DataConfig(ClassGrid):
    """Which concepts are active, their separations and number of values, and how images are drawn.

    Args:
        concepts: active concepts, in label-digit order, e.g. ``("color", "size")``.
        sep: separation per concept (not for shape), e.g. ``{"color": 0.3, "size": 0.4}``.
        n_values: values per concept (default 2 each).
        resolution: image side in pixels.
        noise: sd of the Gaussian pixel noise.
    """

    concepts: tuple[str, ...] = ("color", "size")
    sep: Mapping[str, float] = field(default_factory=lambda: {"color": 0.3, "size": 0.4})
    n_values: Mapping[str, int] = field(default_factory=dict)
    resolution: int = 32
    noise: float = 1e-3

    def __post_init__(self) -> None:
        concepts = tuple(self.concepts)
        object.__setattr__(self, "concepts", concepts)
        object.__setattr__(self, "sep", dict(self.sep))
        object.__setattr__(self, "n_values", {c: int(self.n_values.get(c, 2)) for c in concepts})
        if not concepts:
            raise ValueError(f"at least one concept is needed; valid: {', '.join(CONCEPTS)}")
        for c in concepts:
            if c not in CONCEPTS:
                raise ValueError(f"unknown concept {c!r}; valid: {', '.join(CONCEPTS)}")
        if len(set(concepts)) != len(concepts):
            raise ValueError(f"concepts must be distinct, got {concepts}")
        for c, n in self.n_values.items():
            if n < 2 or (c == "shape" and n != 2) or n > 9:
                raise ValueError(f"concept {c!r} needs 2 to 9 values (shape exactly 2), got {n}")
        for c in self.sep:
            if c not in concepts:
                raise ValueError(
                    f"separation given for {c!r}, which is not an active concept {concepts}"
                )
            if c == "shape":
                raise ValueError("shape takes no separation (its values are circle and triangle)")
        for c in concepts:
            if c == "shape":
                continue
            if c not in self.sep:
                raise ValueError(f"concept {c!r} needs a separation; valid range {_range(c)}")
            lo, hi = SEP_RANGE[c]
            if not (lo < float(self.sep[c]) <= hi):
                raise ValueError(
                    f"separation {c}={self.sep[c]} is outside the valid range {_range(c)}"
                )
        if not (8 <= int(self.resolution) <= 512):
            raise ValueError(f"resolution must be between 8 and 512 pixels, got {self.resolution}")
        if not (0 <= self.noise < 0.5):
            raise ValueError(f"noise must be in [0, 0.5), got {self.noise}")

    def mean(self, concept: str, index: int | NDArray) -> NDArray:
        """Class mean of a concept's value index: (..., width) with width 3 for colors, else 1."""
        frac = np.asarray(index, dtype=float)[..., None] / (self.n_values[concept] - 1)
        h = float(self.sep.get(concept, 0.0)) / 2
        if concept == "color":
            red, blue = np.array([0.5 + h, 0.5 - h, 0.5 - h]), np.array([0.5 - h, 0.5 - h, 0.5 + h])
            return red + frac * (blue - red)
        if concept == "size":
            return (0.45 + h) - frac * 2 * h
        if concept == "bg":
            return np.repeat((0.5 + h) - frac * 2 * h, 3, axis=-1)
        if concept in ("x", "y"):
            return -h + frac * 2 * h
        return frac  # shape: 0 circle, 1 triangle

    def spread(self, concept: str) -> float:
        """Half-width of the uniform within-class spread (scales with the separation)."""
        s = float(self.sep.get(concept, 0.0))
        return 3 * s / 8 if concept == "size" else s / 8


def _range(concept: str) -> str:
    lo, hi = SEP_RANGE[concept]
    return f"({lo:g}, {hi:g}]"


def parse_label(config: DataConfig, label: str) -> tuple[int, ...]:
    """'01' -> (0, 1), validated against the config."""
    if len(label) != len(config.concepts) or not label.isdigit():
        raise ValueError(
            f"class label {label!r} needs one digit per concept {config.concepts}; valid: "
            f"{config.classes}"
        )
    idx = tuple(int(d) for d in label)
    for c, i in zip(config.concepts, idx):
        if i >= config.n_values[c]:
            raise ValueError(
                f"class label {label!r}: concept {c} has only {config.n_values[c]} values"
            )
    return idx
