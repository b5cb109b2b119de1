"""Three concepts (issue #55, the paper's Fig. 15): the held-out rule and headline class of a log, and the
training figure's cube faces."""

from __future__ import annotations

import json

import numpy as np

from core.sidecar import headline_class, held_out_of
from core.trajectory import Trajectory, read_csv, write_csv
from figures.cube import corner_names
from figures.training import main as figure
from fitting.turn import main as turns

STEPS = np.arange(0, 3001, 100)
CONCEPTS = ("color", "size", "bg")


def test_held_out_classes_and_the_headline_class():
    assert held_out_of(["00", "01", "10", "11"]) == ["11"]
    three = [f"{i:03b}" for i in range(8)]
    assert held_out_of(three) == ["011", "101", "110", "111"]
    assert held_out_of(three, {"held_out": ["011"]}) == ["011"]  # the sidecar's word first
    assert headline_class(three) == "111" and headline_class(["00", "11"]) == "11"
    assert headline_class(three, {"held_out": ["011", "101"]}) == "101"
    assert headline_class(["0", "1"]) == "11"  # nothing held out: the two-concept default


def test_a_face_names_its_corners_with_a_dot_for_the_concept_it_leaves_out():
    assert corner_names(3, (0, 2))(1, 0) == "1·0"
    assert corner_names(3, (1, 2))(0, 1) == "·01"
    assert corner_names(3, (0, 1))(1, 1) == "11·"


def run_log(folder):
    """Training classes head for their corners; 011 memorizes 010, then turns to its own corner."""
    u = np.clip(STEPS / 1000, 0, 1)[:, None]
    out = []
    for label in ("000", "001", "010", "100"):
        corner = np.array([int(ch) for ch in label], float)
        out.append(Trajectory(STEPS, 0.5 + (corner - 0.5) * u, CONCEPTS, label, accuracy=u[:, 0]))
    for label, via in (("011", "010"), ("101", "100"), ("110", "100"), ("111", "110")):
        c, v = (np.array([int(ch) for ch in x], float) for x in (label, via))
        first = np.clip(STEPS / 1200, 0, 1)[:, None]
        then = np.clip((STEPS - 1500) / 1500, 0, 1)[:, None]
        z = 0.5 + (v - 0.5) * first + (c - v) * then
        out.append(Trajectory(STEPS, z, CONCEPTS, label, accuracy=then[:, 0]))
    write_csv(folder / "trajectories.csv", out)
    return folder


def test_the_turn_and_the_figure_of_a_three_concept_run(tmp_path, capsys):
    run = run_log(tmp_path / "run")
    assert turns([str(run)]) == 0  # every held-out class, by the rule (the log has no sidecar)
    said = capsys.readouterr().out
    assert all(f"class {label} naive: turn at step" in said for label in ("011", "111"))
    assert figure([str(run), "--out", str(tmp_path / "cube.svg")]) == 0
    svg = (tmp_path / "cube.svg").read_text()
    for text in ("z_color", "z_size", "z_bg", "1·0", "·11", "class (thick: held out)"):
        assert text in svg, text


def test_turn_json_names_the_memorized_corner_and_when_the_path_left_it(tmp_path, capsys):
    """011 sits at the training class 010 from its first reading, then goes straight to 011: no bend, so no turn,
    but turn.json names 010 as its memorized corner (one of seven) and times the leaving."""
    u = np.clip(STEPS / 1000, 0, 1)[:, None]
    out = []
    for label in ("000", "001", "010", "100"):
        corner = np.array([int(ch) for ch in label], float)
        out.append(Trajectory(STEPS, 0.5 + (corner - 0.5) * u, CONCEPTS, label, accuracy=u[:, 0]))
    then = np.clip((STEPS - 1500) / 1500, 0, 1)
    z = np.array([0, 1, 0], float) + np.outer(then, [0, 0, 1])
    # the probe's shares: 010 until the move, 011 after it; 000 once, early and little (a decoy corner)
    fmt = lambda v: tuple(f"{x:.3f}" for x in v)  # noqa: E731
    shares = {
        "share_010": fmt(1 - then),
        "share_011": fmt(then),
        "share_000": fmt(0.2 * (STEPS == 0)),
    }
    out.append(Trajectory(STEPS, z, CONCEPTS, "011", accuracy=then, extra=shares))
    folder = tmp_path / "run"
    write_csv(folder / "trajectories.csv", out)
    assert turns([str(folder), "--class", "011"]) == 0
    row = json.loads((folder / "turn.json").read_text())["turns"][0]
    assert row["turn_step"] is None  # a straight path: no bend
    assert row["memorized"]["corner"] == "010" and row["memorized"]["share"] == 1.0
    assert row["left_memorized_step"] == 1800  # farther than 0.15 from 010 from here on
    said = capsys.readouterr().out
    assert (
        "class 011 naive: no turn; drawn as 010 (100% at step 500), left it at step 1,800" in said
    )


def test_a_protocol_that_elicited_only_held_out_classes_is_read_from_when_naive_draws_the_training_classes(
    tmp_path,
):
    """``empirical.elicit --classes held-out`` logs no training class under over-prompting: the turn is looked
    for once naive prompting draws them (step 500 here), not from step 0 (before: learned_step 0)."""
    folder = run_log(tmp_path / "run")
    rows = read_csv(folder / "trajectories.csv")
    held = next(t for t in rows if t.label == "011")
    over = Trajectory(
        held.step, held.z, CONCEPTS, "011", protocol="overprompt", accuracy=held.accuracy
    )
    write_csv(folder / "trajectories.csv", [*rows, over])
    assert turns([str(folder), "--class", "011"]) == 0
    doc = json.loads((folder / "turn.json").read_text())["turns"]
    learned = {row["protocol"]: row["learned_step"] for row in doc}
    assert learned == {"naive": 500.0, "overprompt": 500.0}
