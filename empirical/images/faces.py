"""Faces as a training run's data (the paper's appendix C.3): a CelebA selection written by ``python
-m empirical.celeba`` read as the classes of two attributes, the conditioning vector h of each
class, and the training batches, flipped and colour-jittered per batch as the paper's.

:class:`FacesConfig` stands where a synthetic run has its
:class:`empirical.images.data_config.DataConfig` (the run's ``data``): the same classes (00, 01, 10
trained, 11 held out), each attribute one slot of h (its value, 0 or 1), no separations. The images
stay uint8 on the CPU (64 px faces for a GPU run are gigabytes as floats); each batch is augmented
from a generator of (seed, step), so a resumed run draws the batches it would have.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

import numpy as np

from empirical.images.celeba_layout import augment, read_selection
from empirical.images.data_config import H_DIM, ClassGrid


@dataclass(frozen=True)
class FacesConfig(ClassGrid):
    """Two face attributes as concepts (as the selection names them, e.g. ``("!Male",
    "Smiling")``)."""

    concepts: tuple[str, ...]
    resolution: int
    n_values: Mapping[str, int] = field(default_factory=dict)
    sep: Mapping[str, float] = field(default_factory=dict)  # none: the faces are what they are
    noise: float = 0.0

    def __post_init__(self) -> None:
        concepts = tuple(self.concepts)
        if len(concepts) != 2 or len(set(concepts)) != 2:
            raise ValueError(
                f"faces take two distinct attributes as concepts, got {list(concepts)}"
            )
        if not (8 <= int(self.resolution) <= 512):
            raise ValueError(f"resolution must be between 8 and 512 pixels, got {self.resolution}")
        object.__setattr__(self, "concepts", concepts)
        object.__setattr__(self, "n_values", {c: 2 for c in concepts})

    def conditioning(self, index: np.ndarray) -> np.ndarray:
        """(N, H_DIM) float32 h of (N, 2) attribute values: attribute i's value in slot i, the other
        slots 0."""
        h = np.zeros((len(index), H_DIM), dtype=np.float32)
        h[:, : len(self.concepts)] = index
        return h


def training_faces(
    folder: str | Path, config: FacesConfig, per_class: int
) -> tuple[np.ndarray, np.ndarray]:
    """(uint8 images (N, 3, R, R), float32 h (N, H_DIM)) of the training classes: the first
    ``per_class`` images of each in the selection (fewer where it has fewer; only those are read);
    ValueError where the selection's attributes are not the config's or a training class has no
    image. The arrays of the last call are kept (no caller writes to them): the members of an
    ensemble on one selection share one copy (64 px faces are gigabytes)."""
    selection = Path(folder).resolve()
    files = [_changed(selection / name) for name in ("selection.csv", "classes.json")]
    key = (str(selection), *files, config.concepts, config.resolution, per_class)
    if key not in _LAST:
        _LAST.clear()
        _LAST[key] = _read(folder, config, per_class)
    return _LAST[key]


_LAST: dict = {}


def _changed(path: Path) -> tuple[int, int] | None:
    """When a file was last written, and its size (a rewrite within one tick of the clock may keep
    its time)."""
    if not path.is_file():
        return None
    st = path.stat()
    return st.st_mtime_ns, st.st_size


def _read(folder: str | Path, config: FacesConfig, per_class: int) -> tuple[np.ndarray, np.ndarray]:
    images, labels, concepts = read_selection(
        Path(folder), config.resolution, per_class, config.train_classes
    )
    if tuple(concepts) != config.concepts:
        raise ValueError(
            f"{folder}: the selection's concepts are {list(concepts)}, the run's "
            f"{list(config.concepts)}"
        )
    for label in config.train_classes:
        if not (labels == label).any():
            raise ValueError(f"{folder}: class {label} has no image in the selection")
    index = np.array([[int(d) for d in label] for label in labels])
    return images, config.conditioning(index)


def batch_faces(images, seed: int, step: int):
    """A batch of uint8 faces (a CPU tensor (B, 3, R, R)) as float32 in [0, 1], flipped and jittered
    as the paper's, the same for the same (seed, step) (a resumed run, an ensemble's member and its
    run alone)."""
    import torch

    looks = np.random.default_rng([seed, step, 2])  # the training augmentation's own stream
    return torch.from_numpy(augment(images.numpy().astype(np.float32) / 255, looks))
