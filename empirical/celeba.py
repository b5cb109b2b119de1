"""CelebA in its published layout as a two-concept dataset (the paper's appendix C.3): two attributes are the
concepts, the four classes balanced, images square-cropped and resized, jittered and flipped in training.

  python -m empirical.celeba DIR --concepts Male,Smiling --out OUT [--per-class N] [--split train]
                             [--resolution 64] [--seed 0]

DIR holds CelebA as published: ``img_align_celeba/*.jpg``, ``list_attr_celeba.txt`` (a count, the 40 attribute
names, then ``FILE v1 ... v40`` with values -1 or 1) and ``list_eval_partition.txt`` (``FILE 0|1|2``: train,
validation, test). A concept is an attribute, bit 1 where the image has it; ``!Male`` takes its absence (the
paper's "Not Male"). Class ``ab`` holds the images whose first concept is a and second is b; 11 is held out of
training, as in the paper.

Writes OUT/selection.csv (each chosen image: file, class, split: the dataset a run reads), OUT/classes.json (how
many images each class has in the split and how many were chosen) and OUT/grid.png (8 images a class, cropped and
resized as training reads them, before augmentation). Nothing is downloaded: the package never fetches CelebA.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from core import cli

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
        values[i] = [int(v) for v in row[1:]]
    return Attributes(tuple(row[0] for row in rows), names, values)


def read_partition(path: Path) -> dict[str, int]:
    """``list_eval_partition.txt``: file -> 0 (train), 1 (validation) or 2 (test)."""
    out = {}
    for i, line in enumerate(path.read_text().splitlines(), 1):
        row = line.split()
        if not row:
            continue
        if len(row) != 2 or row[1] not in ("0", "1", "2"):
            raise ValueError(
                f"{path}, line {i}: expected 'FILE 0|1|2' (train, validation, test), got {line[:80]!r}"
            )
        out[row[0]] = int(row[1])
    return out


def class_labels(attrs: Attributes, concepts: Sequence[str]) -> np.ndarray:
    """Each image's class ('00' ... '11'): bit i is 1 where it has concept i (``!NAME``: where it lacks NAME)."""
    if len(concepts) != 2:
        raise ValueError(
            f"--concepts: give two attributes, e.g. Male,Smiling; got {list(concepts)}"
        )
    bits = []
    for concept in concepts:
        name, negate = concept.lstrip("!"), concept.startswith("!")
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
    """Row indices of the same number of images of each class in the split (``per_class``, or as many as the
    rarest class has), drawn without replacement; ValueError naming a class with none."""
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


def load_image(path: Path, resolution: int) -> np.ndarray:
    """(3, R, R) in [0, 1]: the image's central square, resized (bilinear); ValueError naming an unreadable file."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as img:
            img = img.convert("RGB")
            w, h = img.size
            side = min(w, h)
            box = ((w - side) // 2, (h - side) // 2, (w - side) // 2 + side, (h - side) // 2 + side)
            img = img.crop(box).resize((resolution, resolution), Image.BILINEAR)
            return np.asarray(img, dtype=np.float32).transpose(2, 0, 1) / 255.0
    except (OSError, UnidentifiedImageError) as err:
        raise ValueError(f"{path}: not a readable image ({err})") from None


def augment(images, generator, jitter: float = 0.1):
    """The paper's training augmentation on a (B, 3, R, R) torch batch in [0, 1]: colour jitter (brightness,
    contrast and saturation each scaled by a factor in [1 - jitter, 1 + jitter], in that order, contrast about
    the image's mean, as torchvision's ColorJitter but in a fixed order) and a horizontal flip with probability 1/2, each image its own draw from ``generator``; returns a new batch in [0, 1]."""
    import torch

    b = images.shape[0]

    def factor():
        u = torch.rand(b, 1, 1, 1, generator=generator, device=images.device)
        return 1 + jitter * (2 * u - 1)

    x = images * factor()
    mean = x.mean(dim=(1, 2, 3), keepdim=True)
    x = mean + (x - mean) * factor()
    gray = (x * torch.tensor([0.299, 0.587, 0.114], device=x.device).view(1, 3, 1, 1)).sum(
        1, keepdim=True
    )
    x = gray + (x - gray) * factor()
    flip = torch.rand(b, generator=generator, device=images.device) < 0.5
    x = torch.where(flip.view(b, 1, 1, 1), x.flip(-1), x)
    return x.clamp(0, 1)


def select(root: Path, concepts: Sequence[str], split: str, per_class: int, seed: int) -> dict:
    """The balanced selection: {"rows": class -> files, "available": class -> count in the split}."""
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


def write(out: Path, root: Path, args, picked: dict) -> None:
    """grid.png, classes.json and selection.csv under ``out``, each written whole (the grid's images read
    first: an unreadable one stops the command before anything is written)."""
    from types import SimpleNamespace

    from core.files import atomic_write, write_json
    from empirical.images.grid import grid

    shown = [(c, f) for c, files in picked["files"].items() for f in files[:8]]
    images = np.stack([load_image(root / FILES[0] / f, args.resolution) for _, f in shown])
    config = SimpleNamespace(
        classes=tuple(picked["files"]), held_out=HELD_OUT, concepts=tuple(args.concepts)
    )
    title = f"CelebA: classes over ({', '.join(args.concepts)}), {args.split} split"
    grid(config, images, np.array([c for c, _ in shown]), 8, out / "grid.png", title=title)
    doc = {
        "root": str(root),
        "concepts": list(args.concepts),
        "split": args.split,
        "seed": args.seed,
        "per_class": args.per_class,
        "held_out": list(HELD_OUT),
        "available": picked["available"],
        "chosen": {c: len(files) for c, files in picked["files"].items()},
    }
    write_json(out / "classes.json", doc)
    lines = ["file,class,split"] + [
        f"{f},{c},{args.split}" for c, files in picked["files"].items() for f in files
    ]
    atomic_write(out / "selection.csv", lambda fh: fh.write("\n".join(lines) + "\n"))


@cli.command("empirical.celeba")
def main(argv: Sequence[str] | None = None) -> int:
    """``python -m empirical.celeba``: see the module docstring."""
    parser = cli.parser("empirical.celeba", __doc__)
    parser.add_argument("root", type=Path, metavar="DIR", help="CelebA's folder, as published")
    parser.add_argument(
        "--concepts",
        required=True,
        type=lambda text: tuple(text.split(",")),
        help="two attributes, e.g. Male,Smiling (!Male: where it is absent, the paper's Not Male)",
    )
    parser.add_argument("--out", type=Path, required=True, help="where the selection goes")
    parser.add_argument(
        "--per-class", type=int, default=30000, help="images a class (default 30000, as the paper)"
    )
    parser.add_argument("--split", choices=tuple(SPLITS), default="train")
    parser.add_argument("--resolution", type=int, default=64, help="pixels a side (default 64)")
    parser.add_argument("--seed", type=int, default=0, help="which images are drawn (default 0)")
    args = parser.parse_args(argv)
    if args.per_class < 1 or args.resolution < 4:
        raise cli.UsageError("--per-class must be >= 1 and --resolution >= 4")
    cli.output_dir(args.out, "--out")
    if cli.checking(args):
        return 0
    picked = select(args.root, args.concepts, args.split, args.per_class, args.seed)
    write(args.out, args.root, args, picked)
    counts = ", ".join(
        f"{c}: {len(f)} of {picked['available'][c]}" for c, f in picked["files"].items()
    )
    chosen = len(next(iter(picked["files"].values())))
    if chosen < args.per_class:
        counts += f" (the rarest class has {chosen}: every class takes that many, balanced)"
    print(
        f"celeba: {counts}; wrote {args.out}/selection.csv, classes.json, grid.png", file=sys.stderr
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
