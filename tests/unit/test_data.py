"""The data-generating process: rendering invariants, classes, h, masking, concept signal, bad input."""

import json

import numpy as np
import pytest

from empirical.images.dgp import MASK_FILL, DataConfig, concept_signal, mask, sample, sample_values
from empirical.data import main
from empirical.images.render import coverage, render

CFG = DataConfig(("color", "size"), {"color": 0.3, "size": 0.4}, noise=0.0)


def one(shape=0.0, x=0.0, y=0.0, size=0.4, color=(0.8, 0.2, 0.2), bg=(0.9, 0.9, 0.9)):
    return {
        "shape": np.array([[shape]]),
        "x": np.array([[x]]),
        "y": np.array([[y]]),
        "size": np.array([[size]]),
        "color": np.array([color]),
        "bg": np.array([bg]),
    }


@pytest.mark.parametrize("res", [16, 32, 64])
def test_area_grows_with_radius_at_every_resolution(res):
    areas = [coverage(one(size=r), res).sum() / res**2 for r in (0.15, 0.3, 0.45, 0.6)]
    assert np.all(np.diff(areas) > 0)
    for r, a in zip((0.15, 0.3, 0.45, 0.6), areas):
        assert a == pytest.approx(
            np.pi * r**2 / 4, rel=0.1 if res == 16 else 0.02
        )  # image spans [-1, 1]²; 16 px: r=0.15 is 1.2 px


def test_triangle_has_the_area_of_the_circle():
    circle = coverage(one(size=0.5), 64).sum()
    triangle = coverage(one(shape=1.0, size=0.5), 64).sum()
    assert triangle == pytest.approx(circle, rel=0.02)


def test_object_has_the_class_color_and_background_is_untouched():
    batch = sample(CFG, {"00": 20, "11": 20}, 3)
    m = coverage(batch.values, CFG.resolution)
    for i in range(40):
        img = batch.images[i].reshape(3, -1)
        inside, outside = m[i].ravel() == 1.0, m[i].ravel() == 0.0
        np.testing.assert_allclose(
            img[:, inside].mean(axis=1), batch.values["color"][i], atol=1e-5
        )  # float32
        np.testing.assert_array_equal(
            img[:, outside],
            np.repeat(batch.values["bg"][i][:, None].astype(np.float32), outside.sum(), 1),
        )
    means = {lab: batch.values["color"][batch.labels == lab].mean(axis=0) for lab in ("00", "11")}
    np.testing.assert_allclose(means["00"], CFG.mean("color", 0), atol=0.02)  # red
    np.testing.assert_allclose(means["11"], CFG.mean("color", 1), atol=0.02)  # blue


def test_edges_are_anti_aliased():
    m = coverage(one(size=0.5), 32)
    partial = (m > 0) & (m < 1)
    assert partial.sum() > 20  # a ring of fractional pixels around the disk


def test_render_is_resolution_agnostic():
    v = one(size=0.5, x=0.2, y=-0.1)
    hi, lo = render(v, 64), render(v, 32)
    block = hi.reshape(1, 3, 32, 2, 32, 2).mean(axis=(3, 5))
    assert np.abs(block - lo).mean() < 0.01


def test_classes_balance_and_held_out_rule():
    assert (
        CFG.classes == ["00", "01", "10", "11"]
        and CFG.held_out == ["11"]
        and CFG.train_classes == ["00", "01", "10"]
    )
    three = DataConfig(("color", "size", "bg"), {"color": 0.3, "size": 0.4, "bg": 0.3})
    assert three.held_out == ["011", "101", "110", "111"] and three.train_classes == [
        "000",
        "001",
        "010",
        "100",
    ]
    multi = DataConfig(("color", "size"), {"color": 0.6, "size": 0.4}, n_values={"color": 3})
    assert len(multi.classes) == 6 and "20" in multi.train_classes and "21" in multi.held_out
    np.testing.assert_allclose(multi.mean("color", 1), [0.5, 0.2, 0.5])
    batch = sample(CFG, {"00": 7, "01": 5, "10": 3}, 0)
    assert [int(np.sum(batch.labels == c)) for c in ("00", "01", "10")] == [7, 5, 3]
    assert batch.images.shape == (15, 3, 32, 32) and batch.images.dtype == np.float32
    assert batch.images.min() >= 0 and batch.images.max() <= 1


def test_seed_determinism():
    a, b = sample(CFG, {"00": 8, "11": 8}, 42), sample(CFG, {"00": 8, "11": 8}, 42)
    np.testing.assert_array_equal(a.images, b.images)
    np.testing.assert_array_equal(a.h, b.h)
    c = sample(CFG, {"00": 8, "11": 8}, 43)
    assert not np.array_equal(a.images, c.images)


def test_h_carries_the_sampled_values_in_documented_slots():
    cfg = DataConfig(("shape", "color", "size"), {"color": 0.4, "size": 0.3})
    batch = sample(cfg, {"011": 5, "100": 5}, 1)
    np.testing.assert_allclose(batch.h[:, 4:7], batch.values["color"], rtol=1e-6)
    np.testing.assert_allclose(batch.h[:, 7], batch.values["size"][:, 0], rtol=1e-6)
    np.testing.assert_array_equal(batch.h[:5, 0:2], [[1, 0]] * 5)  # circles
    np.testing.assert_array_equal(batch.h[5:, 0:2], [[0, 1]] * 5)  # triangles
    assert np.all(batch.h[:, [2, 3, 8, 9, 10]] == 0)  # inactive: x, y, bg


def test_within_class_spread_scales_with_separation():
    for sep in (0.2, 0.8):
        cfg = DataConfig(("color",), {"color": sep})
        values = sample_values(cfg, np.zeros((20000, 1), dtype=int), np.random.default_rng(0))
        assert values["color"][:, 0].std() == pytest.approx(sep / 8 / np.sqrt(3), rel=0.03)
    mean_mode = sample_values(
        CFG, np.ones((10, 2), dtype=int), np.random.default_rng(0), mode="mean"
    )
    np.testing.assert_allclose(mean_mode["color"], np.broadcast_to(CFG.mean("color", 1), (10, 3)))


@pytest.mark.parametrize("p", [0.0, 0.25, 0.5, 1.0])
def test_masking_frequency_matches_p(p):
    labels = np.array(["01"] * 4000 + ["00"] * 1000)
    h = np.ones((5000, 11), dtype=np.float32)
    masked, hit = mask(h, labels, concepts=["color"], classes=["01"], p=p, rng=0)
    n = 4000
    assert abs(hit.sum() - p * n) <= 4 * np.sqrt(n * p * (1 - p)) + 1e-9
    assert not hit[4000:].any()  # other classes untouched
    assert np.all(masked[hit][:, 4:7] == MASK_FILL) and np.all(masked[hit][:, 7] == 1)
    assert np.all(masked[~hit] == 1) and np.all(h == 1)  # the input is not modified


@pytest.mark.parametrize(
    "concept,seps",
    [("color", [0.1, 0.2, 0.4, 0.8]), ("size", [0.05, 0.1, 0.2, 0.4]), ("bg", [0.1, 0.3, 0.6])],
)
def test_concept_signal_grows_with_separation(concept, seps):
    other = {"color": "size", "size": "color", "bg": "color"}[concept]
    mse, grad = [], []
    for sep in seps:
        cfg = DataConfig((concept, other), {concept: sep, other: 0.3})
        s = concept_signal(cfg, n=128)[concept]
        mse.append(s["mse"])
        grad.append(s["grad_rms"])
    assert np.all(np.diff(mse) > 0) and np.all(np.diff(grad) > 0)


def test_shape_signal_has_no_gradient():
    s = concept_signal(DataConfig(("shape", "color"), {"color": 0.3}), n=64)
    assert s["shape"]["grad_rms"] is None and s["shape"]["mse"] > 0


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (
            {"concepts": ("colour",), "sep": {}},
            "unknown concept 'colour'; valid: shape, x, y, color, size, bg",
        ),
        (
            {"concepts": ("color",), "sep": {"color": 0.9}},
            r"separation color=0.9 is outside the valid range \(0, 0.8\]",
        ),
        ({"concepts": ("size",), "sep": {"size": 0.0}}, r"outside the valid range \(0, 0.4\]"),
        (
            {"concepts": ("color", "size"), "sep": {"color": 0.3}},
            "concept 'size' needs a separation",
        ),
        ({"concepts": ("shape",), "sep": {"shape": 0.3}}, "shape takes no separation"),
        ({"concepts": ("color",), "sep": {"color": 0.3, "size": 0.2}}, "not an active concept"),
        ({"concepts": ("color", "color"), "sep": {"color": 0.3}}, "distinct"),
        ({"concepts": (), "sep": {}}, "at least one concept"),
        ({"concepts": ("shape",), "sep": {}, "n_values": {"shape": 3}}, "shape exactly 2"),
        (
            {"concepts": ("color",), "sep": {"color": 0.3}, "resolution": 4},
            "resolution must be between",
        ),
    ],
)
def test_bad_configs(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DataConfig(**kwargs)


def test_bad_labels_and_masks():
    with pytest.raises(ValueError, match="class label '2'"):
        sample(CFG, {"2": 3}, 0)
    with pytest.raises(ValueError, match="has only 2 values"):
        sample(CFG, {"02": 3}, 0)
    with pytest.raises(ValueError, match=r"p must be in \[0, 1\]"):
        mask(np.zeros((2, 11)), ["00", "01"], concepts=["color"], classes=["01"], p=1.5, rng=0)
    with pytest.raises(ValueError, match="cannot mask unknown concept"):
        mask(np.zeros((2, 11)), ["00", "01"], concepts=["hue"], classes=["01"], p=0.5, rng=0)


def test_cli_writes_grid_and_signals(tmp_path, capsys):
    assert (
        main(
            [
                "--concepts",
                "color,size",
                "--sep",
                "color=0.3,size=0.4",
                "--n",
                "4",
                "--res",
                "16",
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    doc = json.loads((tmp_path / "signals.json").read_text())
    assert doc["held_out"] == ["11"] and set(doc["signal"]) == {"color", "size"}
    assert doc["signal"]["size"]["mse"] > doc["signal"]["color"]["mse"] > 0
    assert doc["class_means"]["01"]["size"] == [pytest.approx(0.25)]
    assert doc["h_slots"]["color"] == [4, 7]
    assert (tmp_path / "samples.png").read_bytes()[:4] == b"\x89PNG"
    assert "wrote" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--concepts", "color,hue", "--sep", "color=0.3"], "unknown concept 'hue'"),
        (["--sep", "color=0.9,size=0.4"], "outside the valid range (0, 0.8]"),
        (["--sep", "color=abc,size=0.4"], "is not a number"),
        (["--sep", "color"], "expected CONCEPT=VALUE"),
        (["--n", "0"], "between 1 and 64"),
    ],
)
def test_cli_bad_input_exits_2_and_writes_nothing(tmp_path, capsys, argv, message):
    out = tmp_path / "out"
    assert main([*argv, "--out", str(out)]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()
