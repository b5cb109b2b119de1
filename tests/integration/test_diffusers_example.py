"""examples/diffusers_model.py as a user runs it, in miniature: a diffusers U-Net trained for a few steps on the
package's data, its saved checkpoints walked with the package's probe, the log read by a fitting command."""

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("torch")
# find_spec, not importorskip: importing diffusers at collection costs every pytest-xdist worker ~3 s
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("diffusers") is None, reason="needs diffusers"
)

ROOT = Path(__file__).resolve().parents[2]


def test_the_diffusers_example_trains_saves_and_walks(pristine_smoke_run, tmp_path, capsys):
    from fitting.turn import main as turn_main
    from core.trajectory import read_csv

    spec = importlib.util.spec_from_file_location(
        "diffusers_model", ROOT / "examples" / "diffusers_model.py"
    )
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    out = tmp_path / "mine"
    log = example.main(
        [
            str(out),
            "--probe",
            str(pristine_smoke_run / "probe"),
            "--steps",
            "4",
            "--every",
            "2",
            "--width",
            "8",
            "--samples",
            "4",
            "--sample-steps",
            "2",
        ]
    )
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == [
        "step_000000",
        "step_000002",
        "step_000004",
    ]
    trajs = read_csv(log)
    assert {(t.protocol, t.label) for t in trajs} == {
        ("naive", c) for c in ("00", "01", "10", "11")
    } | {("overprompt", "11")}
    assert all(list(t.step) == [0, 2, 4] for t in trajs)
    assert (
        turn_main([str(out / "walk")]) == 0
    )  # a fitting command reads the walk's folder as a run's


def test_the_example_names_bad_step_counts(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location(
        "diffusers_model", ROOT / "examples" / "diffusers_model.py"
    )
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    with pytest.raises(SystemExit):
        example.main([str(tmp_path), "--probe", "x", "--steps", "0"])
    assert "--steps 0, --every 200: both must be >= 1" in capsys.readouterr().err


def test_the_label_conditioned_variant_walks_without_over_prompting(pristine_smoke_run, tmp_path):
    """A UNet2DModel with one embedding per class label: the walk reads every class, naive only
    (a label has no strength to push)."""
    from core.trajectory import read_csv

    spec = importlib.util.spec_from_file_location(
        "diffusers_model", ROOT / "examples" / "diffusers_model.py"
    )
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    out = tmp_path / "labels"
    argv = [str(out), "--probe", str(pristine_smoke_run / "probe"), "--condition", "labels"]
    log = example.main(
        argv
        + ["--steps", "2", "--every", "2", "--width", "8", "--samples", "4", "--sample-steps", "2"]
    )
    trajs = read_csv(log)
    assert {(t.protocol, t.label) for t in trajs} == {("naive", c) for c in example.CLASSES}
    config = (out / "checkpoints" / "step_000002" / "config.json").read_text()
    assert '"_class_name": "UNet2DModel"' in config and '"num_class_embeds": 4' in config
