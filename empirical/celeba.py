"""CelebA in its published layout as a two-concept dataset (the paper's appendix C.3): two
attributes are the concepts, the four classes balanced, images square-cropped and resized, jittered
and flipped in training.

  python -m empirical.celeba DIR --concepts Male,Smiling --out OUT [--per-class N] [--split train]
                             [--resolution 64] [--seed 0]

DIR holds CelebA as published: ``img_align_celeba/*.jpg``, ``list_attr_celeba.txt`` (a count, the 40
attribute names, then ``FILE v1 ... v40`` with values -1 or 1) and ``list_eval_partition.txt``
(``FILE 0|1|2``: train, validation, test). A concept is an attribute, bit 1 where the image has it;
``!Male`` takes its absence (the paper's "Not Male"). Class ``ab`` holds the images whose first
concept is a and second is b; 11 is held out of training, as in the paper.

Writes OUT/selection.csv (each chosen image: file, class, split: the dataset a run reads),
OUT/classes.json (how many images each class has in the split and how many were chosen) and
OUT/grid.png (8 images a class, cropped and resized as training reads them, before augmentation).
Nothing is downloaded: the package never fetches CelebA. Next, ``python -m empirical.probe --celeba
OUT`` trains the probe of faces on the selection.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

import numpy as np

from core import cli
from empirical.images.celeba_layout import FILES, HELD_OUT, SPLITS, load_image, select


def write(out: Path, root: Path, args, picked: dict) -> None:
    """grid.png, classes.json and selection.csv under ``out``, each written whole (the grid's images
    read first: an unreadable one stops the command before anything is written)."""
    import csv
    import io
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
        "root": str(root.resolve()),  # absolute: the selection is read from any folder
        "concepts": list(args.concepts),
        "split": args.split,
        "seed": args.seed,
        "per_class": args.per_class,
        "held_out": list(HELD_OUT),
        "available": picked["available"],
        "chosen": {c: len(files) for c, files in picked["files"].items()},
    }
    write_json(out / "classes.json", doc)
    text = io.StringIO()
    rows = csv.writer(text, lineterminator="\n")  # quoted where a name holds a comma or a quote
    rows.writerow(("file", "class", "split"))
    rows.writerows((f, c, args.split) for c, files in picked["files"].items() for f in files)
    atomic_write(out / "selection.csv", lambda fh: fh.write(text.getvalue()))


MAX_RESOLUTION = 512  # pixels a side: CelebA's aligned images are 178 x 218


@cli.command
def main(argv: Sequence[str] | None = None) -> int:
    parser = cli.parser()
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
    if args.per_class < 1 or not 4 <= args.resolution <= MAX_RESOLUTION:
        raise cli.UsageError(
            f"--per-class must be >= 1 and --resolution from 4 to {MAX_RESOLUTION} "
            f"(got {args.per_class}, {args.resolution}; 20,000 would ask for ~143 GB)"
        )
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
