"""CelebA in its published layout (empirical.celeba), on a miniature folder in that exact layout: the loader, the
balanced selection, the augmentation, the command and its refusals."""

from __future__ import annotations

import json

import numpy as np
import pytest

from empirical import celeba
from empirical.images import celeba_layout as dataset

NAMES = ["5_o_Clock_Shadow", "Male", "Smiling", "Young"]  # the real file has 40; any count is read


def miniature(root, n=32, seed=0):
    """n generated JPEGs (178 x 218, as the aligned set) and both attribute files, in the published layout."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    (root / "img_align_celeba").mkdir(parents=True)
    rows, parts = [], []
    for i in range(n):
        name = f"{i + 1:06d}.jpg"
        pixels = (rng.random((218, 178, 3)) * 255).astype(np.uint8)
        Image.fromarray(pixels).save(root / "img_align_celeba" / name)
        values = [1 if rng.random() < 0.5 else -1 for _ in NAMES]
        values[1], values[2] = (
            (1 if i % 2 else -1),
            (1 if (i // 2) % 2 else -1),
        )  # every class present
        rows.append(name + " " + " ".join(f"{v:2d}" for v in values))
        parts.append(f"{name} {0 if i < n * 3 // 4 else 2}")
    (root / "list_attr_celeba.txt").write_text(f"{n}\n{' '.join(NAMES)}\n" + "\n".join(rows) + "\n")
    (root / "list_eval_partition.txt").write_text("\n".join(parts) + "\n")
    return root


def test_the_command_writes_the_balanced_selection_its_counts_and_a_grid(tmp_path):
    root = miniature(tmp_path / "celeba")
    out = tmp_path / "out"
    assert (
        celeba.main(
            [str(root), "--concepts", "Male,Smiling", "--out", str(out), "--per-class", "5"]
        )
        == 0
    )
    doc = json.loads((out / "classes.json").read_text())
    assert doc["available"] == {"00": 6, "01": 6, "10": 6, "11": 6}  # 24 train images, 4 classes
    assert doc["chosen"] == {"00": 5, "01": 5, "10": 5, "11": 5} and doc["held_out"] == ["11"]
    lines = (out / "selection.csv").read_text().splitlines()
    assert lines[0] == "file,class,split" and len(lines) == 21
    attrs = dataset.read_attributes(root / "list_attr_celeba.txt")
    for line in lines[1:]:  # each chosen image is of its class, in the split
        name, label, split = line.split(",")
        row = attrs.values[attrs.files.index(name)]
        assert (row[1] == 1, row[2] == 1) == (label[0] == "1", label[1] == "1") and split == "train"
    assert (out / "grid.png").stat().st_size > 1000


def test_a_negated_concept_flips_its_bit(tmp_path):
    attrs = dataset.read_attributes(miniature(tmp_path / "c") / "list_attr_celeba.txt")
    plain = dataset.class_labels(attrs, ["Male", "Smiling"])
    negated = dataset.class_labels(attrs, ["!Male", "Smiling"])
    flip = {"0": "1", "1": "0"}
    assert [flip[a[0]] + a[1] for a in plain] == list(negated)


def test_images_are_square_cropped_and_resized_into_the_unit_range(tmp_path):
    root = miniature(tmp_path / "c", n=4)
    image = dataset.load_image(root / "img_align_celeba" / "000001.jpg", 16)
    assert image.shape == (3, 16, 16) and image.dtype == np.float32
    assert 0 <= image.min() and image.max() <= 1


def test_augmentation_flips_and_jitters_within_its_bounds():
    x = np.random.default_rng(1).random((256, 3, 8, 8)).astype(np.float32)
    y = dataset.augment(x, np.random.default_rng(0), jitter=0.1)
    assert y.shape == x.shape and y.dtype == np.float32 and 0 <= y.min() and y.max() <= 1
    flipped = [
        not np.allclose(y[i], y[i, ..., ::-1]) and _closer_flipped(x[i], y[i]) for i in range(256)
    ]
    assert 0.35 < np.mean(flipped) < 0.65  # about half the images flipped
    # its generator's draw: the same batch again from the same state (a resumed run's step)
    assert np.array_equal(dataset.augment(x, np.random.default_rng(0)), y)
    jittered = np.abs(y - np.where(np.array(flipped)[:, None, None, None], x[..., ::-1], x))
    assert 0 < jittered.mean() < 0.1  # jitter moves pixels, within its bounds' reach
    still = dataset.augment(x, np.random.default_rng(0), jitter=0.0)
    assert all(
        np.allclose(still[i], x[i], atol=1e-6) or np.allclose(still[i], x[i, ..., ::-1], atol=1e-6)
        for i in range(256)
    )


def _closer_flipped(x, y):
    return float(np.abs(y - x[..., ::-1]).mean()) < float(np.abs(y - x).mean())


@pytest.mark.parametrize("missing", dataset.FILES)
def test_a_folder_not_in_the_layout_is_named_in_one_line(tmp_path, missing, capsys):
    import shutil

    root = miniature(tmp_path / "c", n=4)
    target = root / missing
    shutil.rmtree(target) if target.is_dir() else target.unlink()
    code = celeba.main([str(root), "--concepts", "Male,Smiling", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and f"no {missing}" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize(
    "edit, said",
    [
        (lambda t: t.replace("-1", "0", 1), "line 3: expected a file name and 4 values of -1 or 1"),
        (lambda t: "99\n" + t.split("\n", 1)[1], "line 1 says 99 images, the file lists 8"),
    ],
)
def test_a_bad_attribute_table_is_named_with_its_line(tmp_path, edit, said, capsys):
    root = miniature(tmp_path / "c", n=8)
    table = root / "list_attr_celeba.txt"
    text = table.read_text()
    first_row = text.split("\n")[2]
    table.write_text(text.replace(first_row, edit(first_row)) if "line 3" in said else edit(text))
    assert celeba.main([str(root), "--concepts", "Male,Smiling", "--out", str(tmp_path / "o")]) == 2
    assert said in capsys.readouterr().err


def test_an_unknown_attribute_and_an_empty_class_are_refused(tmp_path, capsys):
    root = miniature(tmp_path / "c", n=8)
    args = ["--out", str(tmp_path / "o")]
    assert celeba.main([str(root), "--concepts", "Male,Smilling", *args]) == 2
    assert "'Smilling' is not an attribute" in capsys.readouterr().err
    assert celeba.main([str(root), "--concepts", "Male,Male", *args]) == 2  # 01 and 10 never occur
    assert "has no image in this split" in capsys.readouterr().err
    assert celeba.main([str(root), "--concepts", "Male", *args]) == 2
    assert "give two attributes" in capsys.readouterr().err


def test_every_class_takes_as_many_images_as_the_rarest_has():
    labels = np.array(["00"] * 10 + ["01"] * 3 + ["10"] * 5 + ["11"] * 4)
    split = np.ones(labels.size, bool)
    chosen = dataset.choose(labels, split, per_class=100, seed=0)
    assert {c: len(rows) for c, rows in chosen.items()} == {"00": 3, "01": 3, "10": 3, "11": 3}
    assert all((labels[rows] == c).all() for c, rows in chosen.items())
    assert {c: len(r) for c, r in dataset.choose(labels, split, 2, 0).items()} == dict.fromkeys(
        chosen, 2
    )


@pytest.mark.parametrize("damage", ["missing", "corrupt"])
def test_a_missing_or_unreadable_image_stops_the_command_before_anything_is_written(
    tmp_path, damage, capsys
):
    root = miniature(tmp_path / "c", n=8)
    image = root / "img_align_celeba" / "000003.jpg"  # class 01's only train image: always chosen
    image.unlink() if damage == "missing" else image.write_bytes(b"not a jpeg")
    out = tmp_path / "o"
    assert celeba.main([str(root), "--concepts", "Male,Smiling", "--out", str(out)]) == 2
    said = capsys.readouterr().err
    assert ("no 000003.jpg" if damage == "missing" else "000003.jpg: not a readable image") in said
    assert not out.exists() or not any(out.iterdir())
