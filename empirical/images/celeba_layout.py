"""CelebA in its published layout, read as a two-concept dataset (the paper's appendix C.3): the
layout check, the attribute and partition tables, each image's class over two attributes, the
balanced choice, an image cropped and resized as training reads it, the paper's augmentation, and a
selection written by ``python -m empirical.celeba`` read back as arrays. numpy and Pillow only.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

FILES = ("img_align_celeba", "list_attr_celeba.txt", "list_eval_partition.txt")
SPLITS = {"train": 0, "validation": 1, "test": 2}
HELD_OUT = ("11",)


@dataclass(frozen=True)
class Attributes:
    """The attribute table: image file names, attribute names, and a (N, A) array of -1/1."""

    files: tuple[str, ...]
    names: tuple[str, ...]
    values: np.ndarray


def check_layout(root: Path) -> None:
    """ValueError naming the first file or folder of the published layout that ``root`` lacks."""
    if not root.is_dir():
        raise ValueError(f"{root}: not a folder (CelebA's folder holds {', '.join(FILES)})")
    for name in FILES:
        if not (root / name).exists():
            raise ValueError(f"{root}: no {name}; CelebA's published layout has {', '.join(FILES)}")


def read_attributes(path: Path) -> Attributes:
    """``list_attr_celeba.txt``; ValueError naming the file, the line and what is valid."""
    lines = [line.split() for line in path.read_text().splitlines() if line.strip()]
    if len(lines) < 2 or len(lines[0]) != 1 or not lines[0][0].isdigit():
        raise ValueError(f"{path}: line 1 must be the number of images, then the attribute names")
    count, names = int(lines[0][0]), tuple(lines[1])
    rows = lines[2:]
    if len(rows) != count:
        raise ValueError(f"{path}: line 1 says {count} images, the file lists {len(rows)}")
    values = np.empty((count, len(names)), dtype=np.int8)
    for i, row in enumerate(rows):
        if len(row) != len(names) + 1 or not set(row[1:]) <= {"-1", "1"}:
            raise ValueError(
                f"{path}, line {i + 3}: expected a file name and {len(names)} values of -1 or 1, "
                f"got {' '.join(row)[:80]!r}"
            )
        if not _plain_name(row[0]):
            raise ValueError(
                f"{path}, line {i + 3}: {row[0][:80]!r} is not a file name inside "
                f"{FILES[0]}/ (no folders, no '..', not absolute)"
            )
        values[i] = [int(v) for v in row[1:]]
    return Attributes(tuple(row[0] for row in rows), names, values)


def _plain_name(name: str) -> bool:
    """A bare file name: read from inside the image folder, never from a path it names."""
    return name not in (".", "..") and "/" not in name and "\\" not in name


def read_partition(path: Path) -> dict[str, int]:
    """``list_eval_partition.txt``: file -> 0 (train), 1 (validation) or 2 (test)."""
    out = {}
    for i, line in enumerate(path.read_text().splitlines(), 1):
        row = line.split()
        if not row:
            continue
        if len(row) != 2 or row[1] not in ("0", "1", "2"):
            raise ValueError(
                f"{path}, line {i}: expected 'FILE 0|1|2' (train, validation, test), got "
                f"{line[:80]!r}"
            )
        out[row[0]] = int(row[1])
    return out


def class_labels(attrs: Attributes, concepts: Sequence[str]) -> np.ndarray:
    """Each image's class ('00' ... '11'): bit i is 1 where it has concept i (``!NAME``: where it
    lacks NAME)."""
    if len(concepts) != 2:
        raise ValueError(
            f"--concepts: give two attributes, e.g. Male,Smiling; got {list(concepts)}"
        )
    bits = []
    for concept in concepts:
        negate = concept.startswith("!")
        name = concept[1:] if negate else concept
        if name not in attrs.names:
            raise ValueError(
                f"--concepts: {name!r} is not an attribute of list_attr_celeba.txt; valid: "
                f"{', '.join(attrs.names)}"
            )
        has = attrs.values[:, attrs.names.index(name)] == 1
        bits.append(~has if negate else has)
    return np.char.add(bits[0].astype(int).astype(str), bits[1].astype(int).astype(str))


def choose(
    labels: np.ndarray, in_split: np.ndarray, per_class: int, seed: int
) -> dict[str, np.ndarray]:
    """Row indices of the same number of images of each class in the split (``per_class``, or as
    many as the rarest class has), drawn without replacement; ValueError naming a class with
    none."""
    rng = np.random.default_rng(seed)
    pools = {
        label: np.flatnonzero((labels == label) & in_split) for label in ("00", "01", "10", "11")
    }
    for label, rows in pools.items():
        if rows.size == 0:
            raise ValueError(f"class {label} has no image in this split; choose other concepts")
    n = min(per_class, *(rows.size for rows in pools.values()))
    return {
        label: np.sort(rng.choice(rows, size=n, replace=False)) for label, rows in pools.items()
    }


MAX_PIXELS = 4096 * 4096


def load_image(path: Path, resolution: int) -> np.ndarray:
    """(3, R, R) in [0, 1]: the image's central square, resized (bilinear); ValueError naming an
    unreadable file."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as img:
            _check_size(path, img.size)
            img = img.convert("RGB")
            w, h = img.size
            side = min(w, h)
            box = ((w - side) // 2, (h - side) // 2, (w - side) // 2 + side, (h - side) // 2 + side)
            img = img.crop(box).resize((resolution, resolution), Image.BILINEAR)
            return np.asarray(img, dtype=np.float32).transpose(2, 0, 1) / 255.0
    except Image.DecompressionBombError as err:  # Pillow's own cap: past it, open refuses
        raise ValueError(f"{path}: more than the {MAX_PIXELS:,} pixels {TOO_BIG} ({err})") from None
    except (OSError, UnidentifiedImageError) as err:
        raise ValueError(f"{path}: not a readable image ({err})") from None


TOO_BIG = "an image may have (a decompression bomb?)"


def _check_size(path: Path, size: tuple[int, int]) -> None:
    """ValueError for an image past MAX_PIXELS, read from its header before it is decoded."""
    if size[0] * size[1] > MAX_PIXELS:
        raise ValueError(
            f"{path}: {size[0]} x {size[1]}: more than the {MAX_PIXELS:,} pixels {TOO_BIG}"
        )


def augment(images: np.ndarray, rng: np.random.Generator, jitter: float = 0.1) -> np.ndarray:
    """The paper's training augmentation on a (B, 3, R, R) batch in [0, 1]: colour jitter
    (brightness, contrast and saturation each scaled by a factor in [1 - jitter, 1 + jitter], in
    that order, contrast about the image's mean, as torchvision's ColorJitter but in a fixed order)
    and a horizontal flip with probability 1/2, each image its own draw from ``rng`` (the same
    generator state gives the same batch again); returns a new float32 batch in [0, 1]."""
    b = images.shape[0]

    def factor():
        return (1 + jitter * (2 * rng.random((b, 1, 1, 1)) - 1)).astype(np.float32)

    x = images.astype(np.float32) * factor()
    mean = x.mean(axis=(1, 2, 3), keepdims=True)
    x = mean + (x - mean) * factor()
    gray = np.einsum("bchw,c->bhw", x, np.array([0.299, 0.587, 0.114], np.float32))[:, None]
    x = gray + (x - gray) * factor()
    flip = rng.random(b) < 0.5
    x[flip] = x[flip, ..., ::-1]
    return np.clip(x, 0, 1).astype(np.float32)


def select(root: Path, concepts: Sequence[str], split: str, per_class: int, seed: int) -> dict:
    """The balanced selection: {"files": class -> files, "available": class -> count in the
    split}."""
    check_layout(root)
    attrs = read_attributes(root / FILES[1])
    partition = read_partition(root / FILES[2])
    missing = [f for f in attrs.files if f not in partition]
    if missing:
        raise ValueError(
            f"{root / FILES[2]}: no split for {missing[0]} (and {len(missing) - 1} more)"
        )
    labels = class_labels(attrs, concepts)
    in_split = np.array([partition[f] == SPLITS[split] for f in attrs.files])
    chosen = choose(labels, in_split, per_class, seed)
    images = root / FILES[0]
    absent = [attrs.files[i] for rows in chosen.values() for i in rows]
    absent = [f for f in absent if not (images / f).is_file()]
    if absent:
        raise ValueError(
            f"{images}: no {absent[0]} (and {len(absent) - 1} more of the chosen images); "
            "the folder must hold every image list_attr_celeba.txt names"
        )
    return {
        "files": {c: [attrs.files[i] for i in rows] for c, rows in chosen.items()},
        "available": {c: int(((labels == c) & in_split).sum()) for c in chosen},
    }


def selection_doc(folder: Path) -> dict:
    """classes.json of a selection written by ``python -m empirical.celeba``, its selection.csv
    checked to be there; ValueError naming the file and what is wrong."""
    from core.files import read_json

    folder = Path(folder)
    for name in ("classes.json", "selection.csv"):
        if not (folder / name).is_file():
            raise ValueError(
                f"{folder}: no {name}; give the --out of python -m empirical.celeba (it writes "
                "selection.csv, classes.json and grid.png)"
            )
    doc = read_json(folder / "classes.json", "CelebA selection (classes.json)")
    concepts = doc.get("concepts") if isinstance(doc, dict) else None
    if not (isinstance(concepts, list) and len(concepts) == 2) or "root" not in doc:
        raise ValueError(
            f"{folder / 'classes.json'}: not written by python -m empirical.celeba (it names the "
            "CelebA "
            "folder as 'root' and two 'concepts')"
        )
    return doc


def read_selection(
    folder: Path,
    resolution: int,
    per_class: int | None = None,
    classes: Sequence[str] | None = None,
) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """A selection written by ``python -m empirical.celeba`` (its selection.csv and classes.json) as
    (uint8 images (N, 3, R, R), (N,) class labels, the concepts): every row, or, given ``classes``,
    the first ``per_class`` rows of each (all of each where ``per_class`` is None; only those images
    are read), class by class; ValueError naming the file and what is wrong."""
    folder = Path(folder)
    doc = selection_doc(folder)
    with open(folder / "selection.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    bad = [
        i + 2
        for i, r in enumerate(rows)
        if r.get("class") not in ("00", "01", "10", "11") or not _plain_name(r.get("file") or "")
    ]
    if not rows or bad:
        where = f"line {bad[0]}" if bad else "no rows"
        raise ValueError(
            f"{folder / 'selection.csv'}: {where}; expected 'file,class,split' rows (a file name "
            f"inside {FILES[0]}/, a class 00, 01, 10 or 11)"
        )
    if classes is not None:
        own = {label: [r for r in rows if r["class"] == label][:per_class] for label in classes}
        rows = [r for label in classes for r in own[label]]
    root = Path(doc["root"])
    if not root.is_dir():
        raise ValueError(
            f"{folder / 'classes.json'}: its CelebA folder {root} is not there (moved?); rerun "
            "python -m "
            "empirical.celeba on the folder where it is now"
        )
    images = root_images(root)
    # filled in place: no second copy of the images
    x = np.zeros((len(rows), 3, resolution, resolution), np.uint8)
    for i, r in enumerate(rows):
        x[i] = np.round(load_image(images / r["file"], resolution) * 255)
    return x, np.array([r["class"] for r in rows], dtype=str), tuple(doc["concepts"])


def root_images(root: Path) -> Path:
    """The image folder of a CelebA root (checked to be in the published layout)."""
    check_layout(root)
    return root / FILES[0]
