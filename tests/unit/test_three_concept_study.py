"""A sweep of three-concept runs through fitting.study, figures.study and fitting.capability's control (issue #55):
the headline class is 111, not the first held-out class; each coordinate's reach is toward the class's own value;
the held-out figure draws the cube's faces; the training classes are the four trained ones."""

from __future__ import annotations

import csv
import json

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from fitting.records import StudyRecord  # noqa: E402
from core.trajectory import Trajectory, read_csv, write_csv  # noqa: E402
from figures.study import _final_shares, _paths  # noqa: E402
from figures.study import main as draw  # noqa: E402
from fitting.analyses.capability_readings import control  # noqa: E402
from fitting.study import main as study  # noqa: E402

STEPS = np.arange(0, 3001, 100)
CONCEPTS = ("color", "size", "bg")
CORNERS = [f"{i:03b}" for i in range(8)]
HELD = ["011", "101", "110", "111"]


def bits(label):
    return np.array([int(ch) for ch in label], float)


def shares(z):
    """Each corner's share when each concept is drawn present with probability z[:, c], independently."""
    out = {}
    for k in CORNERS:
        s = np.prod([z[:, c] if k[c] == "1" else 1 - z[:, c] for c in range(3)], axis=0)
        out[f"share_{k}"] = tuple(f"{v:.6f}" for v in s)
    out["share_unreadable"] = tuple("0" for _ in STEPS)
    return out


def one_run(name, seed, late):
    """Training classes reach their corners by step 1,000; each held-out class first reaches the training
    class named below, then its own corner from step ``late`` on."""
    u = np.clip(STEPS / 1000, 0, 1)[:, None]
    out = []
    for label in ("000", "001", "010", "100"):
        z = 0.5 + (bits(label) - 0.5) * u
        out.append(
            Trajectory(
                STEPS, z, CONCEPTS, label, run=name, seed=seed, accuracy=u[:, 0], extra=shares(z)
            )
        )
    for label, via in (("011", "010"), ("101", "100"), ("110", "100"), ("111", "110")):
        first = np.clip(STEPS / 1200, 0, 1)[:, None]
        then = np.clip((STEPS - late) / 1000, 0, 1)[:, None]
        z = np.clip(0.5 + (bits(via) - 0.5) * first + (bits(label) - bits(via)) * then, 0, 1)
        out.append(
            Trajectory(
                STEPS, z, CONCEPTS, label, run=name, seed=seed, accuracy=then[:, 0], extra=shares(z)
            )
        )
    return out


@pytest.fixture
def sweep(tmp_path):
    trajectories, rows = [], []
    for bg, late in ((0.15, 1900), (0.6, 1400)):
        for seed in (0, 1):
            name = f"seed={seed},sep.bg={bg}"
            trajectories += one_run(name, seed, late + 100 * seed)
            signals = {"signal_color": 0.05, "signal_size": 0.04, "signal_bg": bg / 10}
            rows.append({"run": name, "seed": seed, "sep_bg": bg} | signals)
    write_csv(tmp_path / "sweep.csv", trajectories, meta={"held_out": HELD})
    with open(tmp_path / "covariates.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return tmp_path


@pytest.mark.slow  # long end to end: run with -m slow
def test_the_study_is_about_111_and_reaches_toward_each_class_s_own_value(sweep, capsys):
    assert study([str(sweep)]) == 0
    said = capsys.readouterr().out
    assert "by class 111" in said and "by class 011" not in said  # not the first held-out class
    doc = StudyRecord.read(sweep / "study.json")
    assert doc.headline == "111"
    held = doc.runs[0]["held_out"]
    # 101 has no size: its reach in size is its lowest reading (0), not its highest (the start, 0.5)
    assert held["101"]["reach"]["size"]["value"] == 0.0
    assert held["101"]["reach"]["color"]["value"] == 1.0
    assert held["011"]["memorized"]["corner"] == "010"  # a training class's corner
    assert draw([str(sweep), "--out", str(sweep / "fig")]) == 0
    assert (sweep / "fig" / "held_out.png").stat().st_size > 0


def test_a_missing_signal_column_is_named(sweep, capsys):
    text = (sweep / "covariates.csv").read_text().replace("signal_size", "other")
    (sweep / "covariates.csv").write_text(text)
    assert study([str(sweep)]) == 2
    err = capsys.readouterr().err
    assert "has no signal_size: the study needs each concept's measured signal" in err


def test_the_held_out_paths_and_turns_are_drawn_on_each_face():
    """The turn's star sits at the face's two coordinates of its 3-D point (before: at its first two, plus a
    stray point at the third)."""
    t = Trajectory(
        STEPS[:3], np.array([[0.5, 0.5, 0.5], [1.0, 0.2, 0.9], [1.0, 1.0, 1.0]]), CONCEPTS, "111"
    )
    run = {"bg": 0.6, "held_out": {"111": {"turn_step": 100.0, "turn_point": [1.0, 0.2, 0.9]}}}
    ax = Figure().add_subplot()
    norm = matplotlib.colors.Normalize(0, 1)
    _paths(ax, [run], [t], ["Δbg 0.6"], "111", "bg", norm, dims=(0, 2))
    path, star = ax.lines
    np.testing.assert_allclose(path.get_xydata(), [[0.5, 0.5], [1.0, 0.9], [1.0, 1.0]])
    np.testing.assert_allclose(star.get_xydata(), [[1.0, 0.9]])


def test_each_corner_has_a_colour_of_its_own_in_the_last_readings():
    final = {k: 1 / 9 for k in CORNERS} | {"unreadable": 1 / 9}
    runs = [{"held_out": {"111": {"final_shares": final}}}]
    ax = Figure().add_subplot()
    _final_shares(ax, runs, ["run"], "111")
    colours = {tuple(p.get_facecolor()) for p in ax.patches}
    assert len(colours) == 9


def test_the_control_is_the_four_training_classes(sweep):
    mine = [t for t in read_csv(sweep / "sweep.csv") if t.run == "seed=0,sep.bg=0.6"]
    ctrl = control(mine, "111", persist=2)
    assert sorted(ctrl["classes"]) == ["000", "001", "010", "100"]
    assert (
        ctrl["learned_step"] is not None
    )  # the held-out classes, never at 80%, no longer hold it back
    assert json.dumps(ctrl)  # elicitation.json can hold it
