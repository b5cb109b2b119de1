"""The probe of faces (issue #55, the paper's C.3): on a miniature CelebA folder in the published layout whose two
attributes show in the pixels (Male: a red cast; Smiling: a bright lower half), empirical.celeba chooses the
selection, python -m empirical.probe --celeba trains the probe on it, and the saved probe reads held-out faces
as their class and refuses noise; bad selections are refused in one line."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from empirical import celeba, probe  # noqa: E402
from empirical.images.celeba_layout import read_selection  # noqa: E402
from empirical.nets.probe_net import ProbeConfig  # noqa: E402
from empirical.probing import celeba_probe  # noqa: E402
from empirical.probing.reader import ProbeReader, load  # noqa: E402

NAMES = ["Male", "Smiling", "Young"]


def face(male: bool, smiling: bool, rng) -> np.ndarray:
    """A 40 x 32 'face': grey noise, a red cast where male, a bright lower half where smiling."""
    x = rng.uniform(0.25, 0.55, (40, 32, 3))
    if male:
        x[..., 0] += 0.35
    if smiling:
        x[24:] += 0.3
    return (np.clip(x, 0, 1) * 255).astype(np.uint8)


def miniature(root, per_class=20, seed=0):
    from PIL import Image

    rng = np.random.default_rng(seed)
    (root / "img_align_celeba").mkdir(parents=True)
    rows, parts = [], []
    for i in range(4 * per_class):
        male, smiling = bool(i % 2), bool((i // 2) % 2)
        name = f"{i + 1:06d}.png"
        Image.fromarray(face(male, smiling, rng)).save(root / "img_align_celeba" / name)
        values = [1 if male else -1, 1 if smiling else -1, 1]
        rows.append(name + " " + " ".join(f"{v:2d}" for v in values))
        parts.append(f"{name} 0")
    (root / "list_attr_celeba.txt").write_text(
        f"{len(rows)}\n{' '.join(NAMES)}\n" + "\n".join(rows) + "\n"
    )
    (root / "list_eval_partition.txt").write_text("\n".join(parts) + "\n")
    return root


@pytest.fixture(scope="module")
def selection(tmp_path_factory):
    base = tmp_path_factory.mktemp("celeba")
    root, out = miniature(base / "celeba"), base / "selection"
    argv = [str(root), "--concepts", "!Male,Smiling", "--out", str(out), "--per-class", "20"]
    assert celeba.main(argv) == 0
    return out


@pytest.mark.slow  # long end to end: run with -m slow
def test_the_face_probe_learns_both_attributes_and_refuses_noise(selection, tmp_path, monkeypatch):
    monkeypatch.setattr(
        celeba_probe, "ABSTENTION_PER_KIND", 32
    )  # the untrained model's samples are slow
    out = tmp_path / "probe"
    argv = ["--celeba", str(selection), "--res", "16", "--steps", "300", "--out", str(out)]
    assert probe.main(argv) == 0
    doc = json.loads((out / "probe.json").read_text())
    assert doc["config"]["setup"] == "celeba" and doc["config"]["pool"] == "mean"
    assert doc["config"]["attributes"] == ["!Male", "Smiling"]
    row = doc["evaluation"][0]
    assert row["n"] == 8  # 2 of each class's 20 kept out of training
    assert min(doc["min_accuracy"].values()) >= 0.85 and row["readable"] >= 0.85
    assert doc["abstention"]["noise"] >= 0.9 and doc["abstention"]["blank"] >= 0.8

    model, cfg, digest = load(out)  # read back as any probe: config, pooling, hash
    assert cfg.concepts == ("!Male", "Smiling") and model.pool == "mean" and digest == doc["hash"]
    images, labels, _ = read_selection(selection, 16)
    z, read = ProbeReader(out).read(images.astype(np.float32) / 255)
    truth = celeba_probe.values_of(labels)
    assert read.mean() > 0.9 and np.mean((z > 0.5) == truth) > 0.9


def test_training_faces_are_seen_through_the_view_every_batch():
    from empirical.probing.probe_train import fit

    cfg = ProbeConfig(resolution=8, steps=3, batch=8, channels=8)
    seen = []

    def view(batch):
        seen.append(batch.dtype)
        return batch.float() / 255

    x = torch.randint(0, 256, (16, 3, 8, 8), dtype=torch.uint8)
    fit(
        cfg,
        x,
        torch.zeros(16, 2, dtype=torch.long),
        torch.rand(16, 3, 8, 8),
        progress=False,
        view=view,
    )
    assert seen == [torch.uint8] * 3  # each step's readable rows, as stored, through the view


def test_the_test_share_of_each_class_is_kept_out_of_training():
    labels = np.array(["00", "01", "10", "11"] * 10)
    train, test = celeba_probe.split(labels, seed=0)
    assert len(test) == 4 and not set(train) & set(test) and len(train) + len(test) == 40
    assert sorted(labels[test]) == ["00", "01", "10", "11"]  # one of each class
    with pytest.raises(ValueError, match="class 11 has 1 image"):
        celeba_probe.split(np.array(["00", "00", "01", "01", "10", "10", "11"]), seed=0)


@pytest.mark.parametrize(
    "setup, said",
    [
        ({"setup": "celeba", "attributes": ("Male",), "data": "x"}, "needs its two attributes"),
        ({"setup": "celeba", "attributes": ("A", "B")}, "needs its two attributes"),
        ({"setup": "faces"}, "valid: 2x2, shape-color, 2x2x2, celeba"),
        ({"pool": "sum"}, "pool 'sum': valid: max, mean"),
    ],
)
def test_a_bad_probe_config_names_what_is_valid(setup, said):
    with pytest.raises(ValueError, match=said):
        ProbeConfig(**setup)


def test_a_folder_that_is_not_a_selection_is_refused_in_one_line(tmp_path, capsys):
    assert probe.main(["--celeba", str(tmp_path), "--out", str(tmp_path / "p")]) == 2
    err = capsys.readouterr().err
    assert "no classes.json; give the --out of python -m empirical.celeba" in err
    assert err.count("\n") == 1 and not (tmp_path / "p").exists()


FACES_RUN = ["resolution=16", "steps=12", "evals=2", "probe_steps=60", "precision=fp32"]


def test_training_faces_reads_only_its_rows_and_ensemble_members_share_them(selection, monkeypatch):
    """The first per_class faces of each training class are read (not the held-out class's, not the rest), and a
    second member on the same selection gets the same arrays, not a copy; a rewritten selection is read again."""
    from empirical.images import celeba_layout as layout
    from empirical.images import faces

    read = []
    load = layout.load_image
    monkeypatch.setattr(
        layout, "load_image", lambda path, res: read.append(path) or load(path, res)
    )
    config = faces.FacesConfig(("!Male", "Smiling"), 16)
    faces._LAST.clear()
    images, h = faces.training_faces(selection, config, per_class=3)
    assert images.shape == (9, 3, 16, 16) and images.dtype == np.uint8 and len(read) == 9
    assert [tuple(row[:2]) for row in h[::3]] == [(0, 0), (0, 1), (1, 0)]
    again, h_again = faces.training_faces(selection, config, per_class=3)
    assert again is images and h_again is h and len(read) == 9
    # another size: read again
    assert faces.training_faces(selection, config, per_class=2)[0].shape[0] == 6
    csv = selection / "selection.csv"
    later = csv.stat().st_mtime_ns + 10**9
    os.utime(csv, ns=(later, later))  # the selection written again
    try:
        again = faces.training_faces(selection, config, per_class=2)[0]
        assert again is not images and len(read) == 21
    finally:
        faces._LAST.clear()


def test_training_faces_are_each_class_s_first_faces_in_the_selection_s_order(selection, tmp_path):
    """Rows of the classes interleaved in selection.csv: the training set is still class by class (00, 01, 10),
    each class's first per_class rows in the file's order, as the whole selection read and indexed gives."""
    import shutil

    from empirical.images import faces

    mixed = tmp_path / "mixed"
    shutil.copytree(selection, mixed)
    head, *rows = (mixed / "selection.csv").read_text().splitlines()
    rows = [rows[i] for i in np.random.default_rng(0).permutation(len(rows))]
    (mixed / "selection.csv").write_text("\n".join([head, *rows]) + "\n")
    config = faces.FacesConfig(("!Male", "Smiling"), 16)
    everything, labels, _ = read_selection(mixed, 16)
    want = np.concatenate([np.flatnonzero(labels == c)[:4] for c in ("00", "01", "10")])
    faces._LAST.clear()
    try:
        images, h = faces.training_faces(mixed, config, per_class=4)
    finally:
        faces._LAST.clear()
    assert np.array_equal(images, everything[want])
    assert [f"{a:.0f}{b:.0f}" for a, b in h[:, :2]] == list(labels[want])


def test_an_evaluation_of_faces_is_sized_as_float_samples(selection):
    """Faces are held as uint8, but their samples are drawn as float32: 4,096 at 256 px are 3.0 GiB (as uint8,
    0.8 GiB, under the 2 GiB an evaluation may hold)."""
    from empirical.training.config import make_config

    with pytest.raises(ValueError, match="samples=4096 at 256 px is 3.0 GiB"):
        make_config("celeba-cpu", [f"celeba={selection}", "resolution=256", "samples=4096"])


@pytest.fixture(scope="module")
def faces_run(selection, tmp_path_factory):
    """A smoke-sized diffusion run on the selection's faces: python -m empirical.train --set celeba=SELECTION."""
    from empirical import train

    out = tmp_path_factory.mktemp("faces") / "run"
    sets = [f"celeba={selection}", *FACES_RUN]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(celeba_probe, "ABSTENTION_PER_KIND", 16)
        argv = ["--preset", "smoke", "--out", str(out)]
        assert train.main([*argv, *(a for s in sets for a in ("--set", s))]) == 0
    return out, sets


def test_a_diffusion_model_trains_on_the_faces_of_a_selection(selection, faces_run):
    """The selection's attributes are the run's concepts, its classes 00, 01, 10 the training set (augmented per
    batch, the same batch for the same step), the face probe trained beside the run, and every class read at each
    checkpoint into the run's trajectory log."""
    from empirical.images.faces import FacesConfig
    from empirical.training.config import make_config
    from empirical.training.run import Run, training_set
    from core.trajectory import read_csv

    out, sets = faces_run
    cfg = make_config("smoke", sets)
    assert cfg.concepts == ("!Male", "Smiling") and isinstance(cfg.data, FacesConfig)
    x, h, _ = training_set(cfg, torch.device("cpu"))
    assert x.dtype == torch.uint8 and len(x) == 60  # 20 faces of each training class, none of 11
    assert (
        h[:, :2].sum(1).max() == 1 and h[:, 2:].abs().sum() == 0
    )  # 00, 01, 10: one attribute at most

    tracks = {t.label: t for t in read_csv(out / "trajectories.csv")}
    assert sorted(tracks) == ["00", "01", "10", "11"] and list(tracks["11"].step) == [0, 12]
    doc = json.loads((out / "probe" / "probe.json").read_text())
    assert doc["config"]["setup"] == "celeba" and doc["config"]["data"] == str(selection)

    run = Run(cfg, out)
    first, again = run.batch(), run.batch()
    assert torch.equal(first[0], again[0]) and first[0].dtype == torch.float32
    run.step += 1
    assert not torch.equal(run.batch()[0], first[0])


@pytest.mark.slow  # 9 s; members as runs alone: test_ensemble.py
def test_a_faces_ensemble_member_trains_as_its_run_alone(faces_run, tmp_path):
    """Each member draws its augmented batches as its run alone (the stacked engine, 6 steps)."""
    from empirical.ensemble import train_members
    from empirical.training.config import make_config
    from empirical.training.loop import train

    out, sets = faces_run
    shared = [*sets, f"probe={out / 'probe'}", "steps=6", "log_every=1"]
    cfgs = [make_config("smoke", [*shared, f"seed={s}"]) for s in (0, 1)]
    done, failed = train_members(
        cfgs, [tmp_path / "a", tmp_path / "b"], engine="stacked", progress=False
    )
    assert failed == [] and [d["step"] for d in done] == [6, 6]
    train(cfgs[1], tmp_path / "alone", progress=False)

    def losses(folder):
        rows = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
        return {r["step"]: r["total"] for r in rows if r["kind"] == "train"}

    alone, member = losses(tmp_path / "alone"), losses(tmp_path / "b")
    assert alone.keys() == member.keys() and len(alone) == 6
    for step, value in alone.items():
        assert member[step] == pytest.approx(value, rel=1e-4)


@pytest.mark.parametrize(
    "sets, said",
    [
        (["celeba={missing}"], "no classes.json"),
        (["celeba={selection}", "concepts=color,size"], "the selection .* is of !Male,Smiling"),
        (["celeba={selection}", "protocols=overprompt"], "protocols cfg only"),
        (["celeba={selection}", "sep.color=0.3"], "has no separations"),
        (["celeba={selection}", "mask_p=0.5"], "has no masking"),
    ],
)
def test_a_faces_run_refuses_what_it_cannot_train(selection, tmp_path, sets, said):
    from empirical.training.config import make_config

    filled = [s.format(selection=selection, missing=tmp_path / "none") for s in sets]
    with pytest.raises(ValueError, match=said):
        make_config("smoke", filled)
    with pytest.raises(ValueError, match="give --set celeba=SELECTION"):
        make_config("celeba-cpu")


def test_the_readers_of_runs_read_a_faces_run_and_refuse_what_it_lacks(faces_run, tmp_path):
    """The sweep's tables read a faces run (no pixel signal: its data are no rendering of separations);
    over-prompting and intervention, which move the synthetic concepts' values, are refused by name; a probe of
    another selection is refused; {selection} in a synthetic run's probe path is refused."""
    from empirical.elicitation.finished_run import run_protocols
    from pipeline.collect import covariates, read_run
    from empirical.training.config import make_config
    from empirical.training.probes import load_probe

    out, sets = faces_run
    run = read_run(out)
    assert run.signal() == {} and len(covariates([run])) == 1
    for name in ("overprompt", "intervention"):
        with pytest.raises(ValueError, match=f"the {name} protocol .* a faces run takes patch"):
            run_protocols(out, [name], progress=False)
    other = tmp_path / "other"
    other.mkdir()
    for name in ("selection.csv", "classes.json"):
        (other / name).write_text((Path(sets[0].split("=", 1)[1]) / name).read_text())
    cfg = make_config("smoke", [f"celeba={other}", *FACES_RUN, f"probe={out / 'probe'}"])
    with pytest.raises(ValueError, match="the probe read the faces of"):
        load_probe(cfg, tmp_path / "run")
    with pytest.raises(ValueError, match="is a faces run's"):
        make_config("smoke", ["probe={selection}/p"]).probe_path("x")
