"""The masking sweep: the analysis (fitting.masking) sorts runs by p with exact first steps and keeps never-reached
runs; the figure (figures.masking) draws its masking.json; bad input is named."""

import json

import numpy as np
import pytest

from figures.masking import main as draw
from fitting.masking import left_corner, main, sweep
from theory.trajectory import Trajectory, write_csv

STEPS = np.arange(0, 2001, 100)


def ramp(start: float) -> np.ndarray:
    return np.clip((STEPS - start) / 200.0, 0, 1)


def run(folder, p, naive_start, over_start, meta=True):
    z = np.stack([np.linspace(0.5, 1, STEPS.size), np.linspace(0.5, 1 - p, STEPS.size)], axis=1)
    rows = [Trajectory(STEPS, z, ("shape", "color"), "11", protocol="naive", accuracy=ramp(naive_start)),
            Trajectory(STEPS, z, ("shape", "color"), "11", protocol="overprompt", accuracy=ramp(over_start)),
            Trajectory(STEPS, z[::-1], ("shape", "color"), "00", protocol="naive", accuracy=np.ones(STEPS.size))]
    write_csv(folder / "trajectories.csv", rows, meta={"config": {"mask_p": p}} if meta else None)
    return folder


def test_sweep_sorts_by_p_and_reports_exact_first_steps(tmp_path):
    runs = [run(tmp_path / "a", 0.75, 5000, 900), run(tmp_path / "b", 0.0, 300, 100)]
    res = sweep(runs, "11", persist=1)
    assert [r["p"] for r in res] == [0.0, 0.75]
    # ramp(s) reaches 0.8 at s + 160 -> the next logged step (multiples of 100)
    assert res[0]["first_step"]["naive"]["80%"] == 500.0 and res[0]["first_step"]["capability"]["80%"] == 300.0
    assert res[1]["first_step"]["naive"]["80%"] is None and res[1]["first_step"]["capability"]["80%"] == 1100.0
    np.testing.assert_allclose(res[1]["final_z"], [1.0, 0.25])
    assert res[1]["max_accuracy"]["naive"] == 0.0


def test_left_corner_is_the_step_the_path_leaves_for_good():
    step = np.arange(6) * 100
    z = np.array([[0.5, 0.5], [0.95, 0.05], [0.5, 0.5], [1.0, 0.0], [0.8, 0.3], [0.6, 0.6]])
    assert left_corner(step, z, "10") == 400  # the visit at 100 does not count: it came back at 300
    assert left_corner(step[:4], z[:4], "10") is None  # still there at the end
    assert left_corner(step, z, "01") is None  # never went there


def test_cli_writes_json_and_figure(tmp_path, capsys):
    runs = [run(tmp_path / f"p{p}", p, 300 + 1000 * p, 100 + 500 * p) for p in (0.0, 0.5, 1.0)]
    assert main([str(r) for r in runs] + ["--out", str(tmp_path / "out")]) == 0
    doc = json.loads((tmp_path / "out" / "masking.json").read_text())
    assert [r["p"] for r in doc["runs"]] == [0.0, 0.5, 1.0]
    assert "p = 0.5: naive 80% at 1000.0" in capsys.readouterr().out
    assert doc["runs"][0]["masked_class"] == "10" and doc["runs"][0]["left_masked_class"] is None
    assert draw([str(tmp_path / "out" / "masking.json")]) == 0
    assert (tmp_path / "out" / "masking.png").stat().st_size > 20_000


@pytest.mark.parametrize("text, message", [
    (None, "no such file"), ("[]", "no 'runs' records"), ('{"runs": [{"p": 0.5}]}', "runs[0] lacks class"),
])
def test_the_figure_reads_only_a_valid_masking_json(tmp_path, capsys, text, message):
    if text is not None:
        (tmp_path / "masking.json").write_text(text)
    assert draw([str(tmp_path / "masking.json")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "masking.png").exists()


@pytest.mark.parametrize("case, message", [
    ("missing", "no trajectory log here"),
    ("no-meta", "its meta has no config.mask_p"),
    ("same-p", "two runs share a masking rate"),
    ("class", "no naive trajectory for class '01'"),
    ("persist", "persist 0: must be >= 1"),
])
def test_bad_input_is_named(tmp_path, capsys, case, message):
    good = run(tmp_path / "good", 0.5, 300, 100)
    args = {"missing": [str(tmp_path / "nope")],
            "no-meta": [str(run(tmp_path / "bare", 0.5, 300, 100, meta=False))],
            "same-p": [str(good), str(run(tmp_path / "twin", 0.5, 300, 100))],
            "class": [str(good), "--class", "01"],
            "persist": [str(good), "--persist", "0"]}[case]
    assert main(args) == 2
    assert message in capsys.readouterr().err
