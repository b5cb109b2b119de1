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


def test_the_selection_names_its_folder_absolutely_and_reads_from_anywhere(tmp_path, monkeypatch):
    """Issue #74: a relative DIR was stored as given, so reading the selection from another folder read
    that folder's images."""
    miniature(tmp_path / "celeba")
    monkeypatch.chdir(tmp_path)
    argv = ["celeba", "--concepts", "Male,Smiling", "--out", "sel", "--per-class", "2"]
    assert celeba.main(argv) == 0
    assert json.loads((tmp_path / "sel" / "classes.json").read_text())["root"] == str(
        tmp_path / "celeba"
    )
    elsewhere = tmp_path / "elsewhere"
    miniature(elsewhere / "celeba", seed=1)  # another CelebA at the same relative path
    monkeypatch.chdir(elsewhere)
    x, labels, _ = dataset.read_selection(tmp_path / "sel", 8)
    first = next(line for line in (tmp_path / "sel" / "selection.csv").read_text().splitlines()[1:])
    own = dataset.load_image(tmp_path / "celeba" / "img_align_celeba" / first.split(",")[0], 8)
    assert np.array_equal(x[0], np.round(own * 255).astype(np.uint8))


def test_a_file_name_with_a_comma_is_quoted_and_read_back(tmp_path):
    root = miniature(tmp_path / "celeba", n=8)
    table = root / "list_attr_celeba.txt"
    table.write_text(table.read_text().replace("000004.jpg", "a,b.jpg"))
    parts = root / "list_eval_partition.txt"
    parts.write_text(parts.read_text().replace("000004.jpg", "a,b.jpg"))
    (root / "img_align_celeba" / "000004.jpg").rename(root / "img_align_celeba" / "a,b.jpg")
    out = tmp_path / "out"
    assert celeba.main([str(root), "--concepts", "Male,Smiling", "--out", str(out)]) == 0
    assert '"a,b.jpg",11,train' in (out / "selection.csv").read_text()  # the one training 11
    _, labels, _ = dataset.read_selection(out, 8)
    assert sorted(labels) == ["00", "01", "10", "11"]  # one of each: the rarest classes have one


def test_a_doubly_negated_concept_is_refused_not_read_as_one_negation(tmp_path):
    attrs = dataset.read_attributes(miniature(tmp_path / "c", n=4) / "list_attr_celeba.txt")
    with pytest.raises(ValueError, match="'!Male' is not an attribute"):
        dataset.class_labels(attrs, ["!!Male", "Smiling"])


@pytest.mark.parametrize("name", ["/etc/passwd", "../secret.jpg", "sub/000001.jpg", ".."])
def test_a_file_name_outside_the_image_folder_is_refused(tmp_path, name):
    """Names in the attribute table, and in a selection.csv, are read inside img_align_celeba/ only."""
    root = miniature(tmp_path / "celeba", n=8)
    table = root / "list_attr_celeba.txt"
    table.write_text(table.read_text().replace("000002.jpg", name))
    with pytest.raises(ValueError, match="line 4: .* is not a file name inside img_align_celeba/"):
        dataset.read_attributes(table)
    table.write_text(table.read_text().replace(name, "000002.jpg"))
    out = tmp_path / "out"
    assert celeba.main([str(root), "--concepts", "Male,Smiling", "--out", str(out)]) == 0
    rows = (out / "selection.csv").read_text().splitlines()
    (out / "selection.csv").write_text("\n".join([rows[0], f"{name},00,train", *rows[2:]]) + "\n")
    with pytest.raises(ValueError, match="selection.csv: line 2; .*inside img_align_celeba/"):
        dataset.read_selection(out, 8)


@pytest.mark.parametrize("side", [5000, 30000])  # under Pillow's own cap, and past it
def test_an_image_of_a_billion_pixels_is_refused_before_it_is_decoded(tmp_path, side):
    """Issue #74: a 30000 x 30000 image was a Pillow traceback (its own cap, at open); one of 5000 x 5000 would
    be decoded whole before anything was said."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)  # 8-bit RGB
    path = tmp_path / "bomb.png"  # its header says 2.7 GB; a decoder would allocate that first
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\0" * 64))
        + chunk(b"IEND", b"")
    )
    with pytest.raises(ValueError, match="more than the 16,777,216 pixels an image may have"):
        dataset.load_image(path, 8)
