"""The classifier probe: learns a small fast setup, saves and loads frozen with its hash, gives coordinates."""

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from empirical.data import DataConfig, sample  # noqa: E402
from empirical.probe import ProbeConfig, content_hash, coordinates, ece, evaluate, load, main, save, train  # noqa: E402

FAST = ProbeConfig(setup="2x2", resolution=16, channels=8, steps=150, batch=32, train_per_class=256, lr=3e-3,
                   eval_seps={"color": [0.4, 0.8], "size": [0.4]})


@pytest.fixture(scope="module")
def trained():
    torch.set_num_threads(2)
    return train(FAST, progress=False)


def test_probe_learns_a_small_setup_well_above_chance(trained):
    model, report = trained
    rows = evaluate(model, FAST, per_class=64)
    for row in rows:
        assert row["color"]["accuracy"] > 0.9 and row["size"]["accuracy"] > 0.9, row
    assert report["train_images"] == 4 * 256


def test_save_load_is_frozen_and_hashed(trained, tmp_path):
    model, report = trained
    doc = save(model, FAST, report, tmp_path)
    assert json.loads((tmp_path / "probe.json").read_text())["hash"] == doc["hash"] == content_hash(model)
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


def test_coordinates_of_a_class(trained):
    model, _ = trained
    data = DataConfig(("color", "size"), {"color": 0.8, "size": 0.4}, resolution=16)
    blue_small = sample(data, {"11": 64}, 0).images
    red_large = sample(data, {"00": 64}, 1).images
    hi, lo = coordinates(model, blue_small, target=(1, 1)), coordinates(model, red_large, target=(0, 0))
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


@pytest.mark.parametrize("argv,message", [
    (["--setup", "3x3"], "unknown setup '3x3'; valid: 2x2, shape-color, 2x2x2"),
    (["--steps", "0"], "must be positive"),
    (["--res", "4"], "resolution must be between"),
])
def test_cli_bad_input(tmp_path, capsys, argv, message):
    assert main([*argv, "--out", str(tmp_path / "p")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "p").exists()
