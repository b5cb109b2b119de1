"""The classifier probe: learns a small fast setup, abstains on images it cannot read, saves and loads frozen with its
hash, gives readings (points, shares, joint accuracy) that tell a mixture from a composition."""

import json
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from empirical.images.dgp import DataConfig, sample  # noqa: E402
from empirical.probing.reader import coordinates, load  # noqa: E402
from empirical.probe import main  # noqa: E402
from empirical.nets.probe_net import ProbeConfig, content_hash  # noqa: E402
from empirical.probing.probe_train import abstention, ece, evaluate, save, train  # noqa: E402
from empirical.probing import unreadable  # noqa: E402

FAST = ProbeConfig(
    setup="2x2",
    resolution=16,
    channels=8,
    steps=500,
    batch=32,
    train_per_class=256,
    lr=3e-3,
    eval_seps={"color": [0.4, 0.8], "size": [0.4]},
)


@pytest.fixture(scope="module")
def trained():
    torch.set_num_threads(1 if os.environ.get("PYTEST_XDIST_WORKER") else 2)
    return train(FAST, progress=False)


def test_probe_learns_a_small_setup_well_above_chance(trained):
    model, report = trained
    rows = evaluate(model, FAST, per_class=64)
    for row in rows:
        assert (
            row["color"]["accuracy"] > 0.9
            and row["size"]["accuracy"] > 0.9
            and row["readable"] > 0.9
        ), row
    assert report["train_images"] == 4 * 256 and report["train_unreadable_images"] > 900


def test_probe_abstains_on_blank_noise_and_an_untrained_model(trained):
    rates = abstention(trained[0], FAST, per_kind=64)
    assert set(rates) == set(unreadable.KINDS) | {"untrained-model"}
    for kind in ("blank", "noise", "untrained-model"):
        assert rates[kind] >= 0.95, rates


def test_the_untrained_model_is_drawn_once_and_leaves_the_callers_random_state(
    tmp_path, monkeypatch
):
    """Every probe a process trains scores the same untrained-model images, drawn once (each caller its own
    copy), and the caller's torch random stream goes on as if they had not been drawn."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # an empty user cache: they are drawn
    unreadable._untrained_model.cache_clear()
    torch.manual_seed(7)
    expected = torch.rand(3)
    torch.manual_seed(7)
    first = unreadable.untrained_model(4, 8, 3)
    assert torch.equal(torch.rand(3), expected)
    again = unreadable.untrained_model(4, 8, 3)
    assert unreadable._untrained_model.cache_info().hits == 1 and again is not first
    first[:] = 0  # a caller's copy is its own
    unreadable._untrained_model.cache_clear()
    np.testing.assert_array_equal(unreadable.untrained_model(4, 8, 3), again)


def test_the_untrained_models_images_are_kept_in_the_users_cache(tmp_path, monkeypatch):
    """Another process (the cache of this one cleared) reads them instead of drawing them again; a
    damaged file is drawn again and replaced; a cache that cannot be written is skipped."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    unreadable._untrained_model.cache_clear()
    drawn = unreadable.untrained_model(4, 8, 3)
    [kept] = (tmp_path / "concept-dynamics" / "untrained-samples").glob("4-8-3-*.npy")
    unreadable._untrained_model.cache_clear()
    draws = []
    monkeypatch.setattr(unreadable, "_draw_untrained", lambda *a: draws.append(a) or drawn * 0)
    np.testing.assert_array_equal(unreadable.untrained_model(4, 8, 3), drawn)
    assert draws == []
    kept.write_bytes(b"half a file")
    unreadable._untrained_model.cache_clear()
    assert not unreadable.untrained_model(4, 8, 3).any() and draws == [(4, 8, 3)]
    assert not np.load(kept).any()  # replaced by the new draw
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    unreadable._untrained_model.cache_clear()
    assert unreadable.untrained_model(4, 8, 3).shape == (4, 3, 8, 8)
    unreadable._untrained_model.cache_clear()


def test_every_unreadable_kind_draws_valid_images():
    rng = np.random.default_rng(0)
    for name, kind in unreadable.KINDS.items():
        x = kind(5, 16, rng)
        assert (
            x.shape == (5, 3, 16, 16) and x.dtype == np.float32 and 0 <= x.min() and x.max() <= 1
        ), name


def test_nothing_readable_gives_a_missing_point_and_zero_accuracy(trained):
    res = coordinates(trained[0], unreadable.noise(32, 16, np.random.default_rng(1)), target=(1, 1))
    assert np.isnan(res["z"]).all() and np.isnan(res["per_sample"]).all()
    assert (
        res["joint_accuracy"] == 0.0 and res["shares"]["unreadable"] == 1.0 and res["readable"] == 0
    )


def test_a_mixture_and_a_composition_are_told_apart_by_the_log(trained, tmp_path):
    """Half red-small and half blue-large samples average to about (0.5, 0.5), a point that says nothing; the log's
    shares say 'two corners, about half each', while a composition puts its mass on one corner."""
    from empirical.training.evaluate import score
    from empirical.training.runlog import write
    from core.trajectory import read_csv

    data = DataConfig(("color", "size"), {"color": 0.8, "size": 0.4}, resolution=16)
    mixture = score(trained[0], data, "11", sample(data, {"01": 32, "10": 32}, 2).images)
    composition = score(trained[0], data, "11", sample(data, {"11": 64}, 3).images)
    assert np.all(np.abs(mixture.z - 0.5) < 0.1)
    rows = [mixture.logged(100), composition.logged(200)]
    write(tmp_path, concepts=data.concepts, classes=["11"], seed=0, naive=rows, meta={})
    (log,) = read_csv(tmp_path / "trajectories.csv")
    shares = log.shares()
    assert set(shares) == {"00", "01", "10", "11", "unreadable"} and log.extra["samples"] == (
        "64",
        "64",
    )
    assert (
        shares["01"][0] > 0.35 and shares["10"][0] > 0.35 and log.accuracy[0] < 0.05
    )  # the mixture: two corners
    assert shares["11"][1] > 0.9 and log.accuracy[1] > 0.9  # the composition: one corner
    assert np.allclose(sum(shares.values()), 1)
    lo, hi = float(log.extra["accuracy_lo"][1]), float(log.extra["accuracy_hi"][1])
    assert lo < log.accuracy[1] <= hi


def test_save_load_is_frozen_and_hashed(trained, tmp_path):
    model, report = trained
    doc = save(model, FAST, report, tmp_path)
    assert (
        json.loads((tmp_path / "probe.json").read_text())["hash"]
        == doc["hash"]
        == content_hash(model)
    )
    loaded, cfg, digest = load(tmp_path)
    assert cfg == FAST and digest == doc["hash"]
    assert not any(p.requires_grad for p in loaded.parameters()) and not loaded.training
    x = torch.rand(5, 3, 16, 16)
    with torch.no_grad():
        a, b = model(x), loaded(x)
    for c in FAST.concepts:
        torch.testing.assert_close(a[c], b[c])


def test_tampered_weights_are_refused(trained, tmp_path):
    model, report = trained
    save(model, FAST, report, tmp_path)
    blob = torch.load(tmp_path / "probe.pt", weights_only=False)
    key = next(iter(blob["state_dict"]))
    blob["state_dict"][key] = blob["state_dict"][key] + 1e-3
    torch.save(blob, tmp_path / "probe.pt")
    with pytest.raises(ValueError, match="do not match the recorded hash"):
        load(tmp_path)
    with pytest.raises(FileNotFoundError, match="no probe here"):
        load(tmp_path / "nowhere")


def test_a_probe_from_before_abstention_is_refused_with_what_to_do(trained, tmp_path):
    model, report = trained
    save(model, FAST, report, tmp_path)
    blob = torch.load(tmp_path / "probe.pt", weights_only=False)
    blob["state_dict"] = {
        k: v for k, v in blob["state_dict"].items() if not k.startswith("readable.")
    }
    torch.save(blob, tmp_path / "probe.pt")
    with pytest.raises(
        ValueError, match="trained before probes could abstain.*python -m empirical.probe"
    ):
        load(tmp_path)


def test_coordinates_of_a_class(trained):
    model, _ = trained
    data = DataConfig(("color", "size"), {"color": 0.8, "size": 0.4}, resolution=16)
    blue_small = sample(data, {"11": 64}, 0).images
    red_large = sample(data, {"00": 64}, 1).images
    hi, lo = (
        coordinates(model, blue_small, target=(1, 1)),
        coordinates(model, red_large, target=(0, 0)),
    )
    assert hi["z"].shape == (2,) and hi["per_sample"].shape == (64, 2)
    assert np.all(hi["z"] > 0.8) and np.all(lo["z"] < 0.2)
    assert hi["joint_accuracy"] > 0.8 and lo["joint_accuracy"] > 0.8
    assert coordinates(model, blue_small)["joint_accuracy"] is None
    with pytest.raises(ValueError, match="one value index per concept"):
        coordinates(model, blue_small, target=(1,))


def test_ece_of_perfectly_calibrated_and_overconfident_predictions():
    target = np.array([0, 1, 0, 1])
    perfect = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    assert ece(perfect, target) == 0.0
    wrong = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    assert ece(wrong, target) == 1.0


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--setup", "3x3"], "unknown setup '3x3'; valid: 2x2, shape-color, 2x2x2"),
        (["--steps", "0"], "must be positive"),
        (["--res", "4"], "resolution must be between"),
    ],
)
def test_cli_bad_input(tmp_path, capsys, argv, message):
    assert main([*argv, "--out", str(tmp_path / "p")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "p").exists()


def test_an_interrupted_probe_training_resumes_to_the_same_weights(tmp_path, monkeypatch):
    """It said "run the same command again to resume" and restarted at step 0."""
    from dataclasses import replace

    from empirical.probing import probe_train

    cfg = replace(FAST, resolution=8, steps=12, train_per_class=32)
    monkeypatch.setattr(probe_train, "SAVE_EVERY", 4)
    torch.set_num_threads(1)
    whole, _ = train(cfg, progress=False)
    state = tmp_path / "probe-train.pt"
    calls = {"n": 0}

    def dies_at_step_7(x):
        calls["n"] += 1
        if calls["n"] == 7:
            raise KeyboardInterrupt
        return x

    rng = np.random.default_rng(cfg.seed)
    images, index = probe_train.diverse(cfg, cfg.train_per_class, rng)
    x_all, y_all = torch.from_numpy(probe_train.augment(images, rng)), torch.from_numpy(index)
    x_neg = torch.from_numpy(unreadable.negatives(x_all.shape[0], cfg.resolution, rng))
    with pytest.raises(KeyboardInterrupt):
        probe_train.fit(
            cfg, x_all, y_all, x_neg, progress=False, view=dies_at_step_7, checkpoint=state
        )
    assert torch.load(state, weights_only=True)["step"] == 4
    seen = []
    resumed, _ = probe_train.fit(
        cfg,
        x_all,
        y_all,
        x_neg,
        progress=False,
        view=lambda x: seen.append(1) or x,
        checkpoint=state,
    )
    assert len(seen) == 8  # steps 4 to 12: resumed, not restarted
    for a, b in zip(whole.state_dict().values(), resumed.state_dict().values()):
        assert torch.equal(a, b)
