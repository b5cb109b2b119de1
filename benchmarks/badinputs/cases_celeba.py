"""Bad input to python -m empirical.celeba: a CelebA folder that is not in the published layout, or bad flags."""

from __future__ import annotations

from pathlib import Path

from badinputs.fixtures import Case, no_file

CB = "empirical.celeba"
NAMES = "Male Smiling Young"


def layout(attr_rows: list[str] | None = None, count: int | None = None, drop: str = ""):
    """A miniature CelebA folder in {c}/celeba: 4 JPEGs (one a class) and both attribute files; ``drop``
    leaves one of them out, ``attr_rows``/``count`` replace the attribute table's rows/count."""

    def setup(c: Path, w: Path) -> None:
        import numpy as np
        from PIL import Image

        root = c / "celeba"
        (root / "img_align_celeba").mkdir(parents=True)
        rows = attr_rows or [
            f"{i + 1:06d}.jpg {1 if i % 2 else -1} {1 if i // 2 else -1} 1" for i in range(4)
        ]
        for i in range(4):
            pixels = np.full((218, 178, 3), 60 * i, dtype=np.uint8)
            Image.fromarray(pixels).save(root / "img_align_celeba" / f"{i + 1:06d}.jpg")
        n = len(rows) if count is None else count
        (root / "list_attr_celeba.txt").write_text(f"{n}\n{NAMES}\n" + "\n".join(rows) + "\n")
        (root / "list_eval_partition.txt").write_text(
            "".join(f"{i + 1:06d}.jpg 0\n" for i in range(4))
        )
        if drop:
            target = root / drop
            if target.is_dir():
                for f in target.iterdir():
                    f.unlink()
                target.rmdir()
            else:
                target.unlink()

    return setup


ARGS = ["{c}/celeba", "--concepts", "Male,Smiling", "--out", "{c}/out"]
TR = "empirical.train"
FACES, OUT = ["--preset", "smoke", "--set"], ["--out", "{c}/run"]


def selection(c: Path, w: Path) -> None:
    """The two files of a selection that a run's config reads (classes.json, selection.csv) in {c}/sel."""
    (c / "sel").mkdir()
    (c / "sel" / "selection.csv").write_text("file,class,split\n")
    (c / "sel" / "classes.json").write_text('{"root": "x", "concepts": ["!Male", "Smiling"]}')


CASES = [
    Case("missing input", CB, ["{c}/none", *ARGS[1:]], "not a folder"),
    Case(
        "missing input",
        CB,
        ARGS,
        "no list_attr_celeba.txt",
        setup=layout(drop="list_attr_celeba.txt"),
    ),
    Case("missing input", CB, ARGS, "no img_align_celeba", setup=layout(drop="img_align_celeba")),
    Case(
        "wrong format",
        CB,
        ARGS,
        "line 3: expected a file name and 3 values of -1 or 1",
        setup=layout(attr_rows=["000001.jpg 0 1 1"]),
        check=no_file("out/selection.csv"),
    ),
    Case("wrong format", CB, ARGS, "line 1 says 9 images", setup=layout(count=9)),
    Case(
        "bad flag",
        CB,
        ["{c}/celeba", "--concepts", "Male,Smilling", "--out", "{c}/out"],
        "'Smilling' is not an attribute",
        setup=layout(),
    ),
    Case(
        "bad flag",
        CB,
        ["{c}/celeba", "--concepts", "Male", "--out", "{c}/out"],
        "give two attributes",
        setup=layout(),
    ),
    Case("bad number", CB, [*ARGS, "--per-class", "0"], "--per-class must be >= 1", setup=layout()),
    Case("valid", CB, ARGS, expect="ok", setup=layout()),
    # a faces run of python -m empirical.train (issue #55): the selection is named, read and matched
    Case("missing input", TR, ["--preset", "celeba-cpu", *OUT], "give --set celeba=SELECTION"),
    Case("missing input", TR, [*FACES, "celeba={c}/none", *OUT], "no classes.json"),
    Case(
        "bad flag",
        TR,
        [*FACES, "celeba={c}/sel", "--set", "protocols=overprompt", *OUT],
        "protocols cfg only",
        setup=selection,
        check=no_file("run/config.json"),
    ),
    Case(
        "bad flag",
        TR,
        [*FACES, "celeba={c}/sel", "--set", "concepts=color,size", *OUT],
        "is of !Male,Smiling",
        setup=selection,
    ),
]
