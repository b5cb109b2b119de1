"""core.frames: trajectories made elsewhere (a DataFrame, an array in any axis order) in and out, checked."""

import math

import numpy as np
import pytest

from core.frames import from_array, from_frame, to_frame
from core.trajectory import Trajectory, read_csv, write_csv


def sample_trajectories():
    z = np.array([[0.1, 0.2], [math.nan, math.nan], [0.9, 0.95]])
    a = Trajectory(
        np.array([0, 10, 20]),
        z,
        ("color", "size"),
        "01",
        "naive",
        3,
        "seed=3,sep.color=0.5",
        np.array([0.0, 0.5, 1.0]),
        {"share_01": ("0.25", "", "1.0"), "setting": ("", "x", "y,z")},
    )
    b = Trajectory(
        np.array([0, 10]),
        np.array([[0.5, 0.5], [0.4, 0.6]]),
        ("color", "size"),
        "11",
        "overprompt",
        None,
        "r",
    )
    return [a, b]


def assert_same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.key == w.key and np.array_equal(g.step, w.step)
        np.testing.assert_array_equal(g.z, w.z)
        if w.accuracy is None:
            assert g.accuracy is None or np.isnan(g.accuracy).all()
        else:
            np.testing.assert_array_equal(g.accuracy, w.accuracy)
        assert {k: v for k, v in g.extra.items() if any(v)} == {
            k: v for k, v in w.extra.items() if any(v)
        }


def test_a_log_goes_to_a_dataframe_and_back_unchanged(tmp_path):
    pytest.importorskip("pandas")
    trajs = sample_trajectories()
    frame = to_frame(trajs)
    assert list(frame["class"]) == ["01"] * 3 + ["11"] * 2  # leading zeros kept
    assert str(frame["seed"].dtype) == "Int64" and frame["z_color"].dtype.kind == "f"
    assert_same(from_frame(frame), trajs)
    write_csv(tmp_path / "log.csv", trajs)
    assert_same(from_frame(frame), read_csv(tmp_path / "log.csv"))


def test_a_dataframe_made_by_hand_is_read_and_its_bad_cells_are_named():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(
        {
            "step": [0, 1, 2],
            "class": ["11"] * 3,
            "z_color": [0.1, 0.5, 0.9],
            "z_size": [0.0, 0.1, 0.2],
        }
    )
    (traj,) = from_frame(frame)
    assert traj.protocol == "naive" and list(traj.step) == [0, 1, 2] and traj.z[2, 0] == 0.9
    frame.loc[1, "z_size"] = 1.5
    with pytest.raises(
        ValueError,
        match=r"the DataFrame, row 2 \(line 3\), column 'z_size': 1.5 is outside \[0, 1\]",
    ):
        from_frame(frame)
    with pytest.raises(ValueError, match="required column is missing"):
        from_frame(frame.drop(columns="class"))
    with pytest.raises(ValueError, match="not a DataFrame"):
        from_frame([[0, "11", 0.5]])


def test_an_array_in_any_axis_order_becomes_one_trajectory_per_run_and_class():
    gen = np.random.default_rng(0)
    z = gen.random(
        (3, 4, 5, 2)
    )  # (conditions, classes, checkpoints, concepts), as the official export
    steps = [0, 50, 100, 400, 1000]
    classes = ["00", "01", "10", "11"]
    trajs = from_array(
        z,
        steps,
        layout="run,class,step,concept",
        concepts=("color", "size"),
        classes=classes,
        runs=["a", "b", "c"],
    )
    assert [(t.run, t.label) for t in trajs] == [(r, c) for r in "abc" for c in classes]
    np.testing.assert_array_equal(trajs[6].z, z[1, 2])  # run b, class 10
    again = from_array(
        np.transpose(z, (2, 3, 0, 1)),
        steps,
        layout="step,concept,run,class",
        concepts=("color", "size"),
        classes=classes,
        runs=["a", "b", "c"],
    )
    for t, u in zip(trajs, again):
        np.testing.assert_array_equal(t.z, u.z)
    (one,) = from_array(
        z[0, 3][None],
        steps,
        layout="class,step,concept",
        concepts=("color", "size"),
        classes=["11"],
    )
    assert one.run == "run0" and one.label == "11"


def test_a_missing_point_is_kept_and_a_half_missing_one_is_refused():
    z = np.full((1, 3, 2), 0.5)
    z[0, 1] = np.nan
    (t,) = from_array(
        z, [0, 1, 2], layout="class,step,concept", concepts=("c", "s"), classes=["11"]
    )
    assert np.isnan(t.z[1]).all() and t.with_points().step.tolist() == [0, 2]
    z[0, 1, 0] = 0.5
    with pytest.raises(
        ValueError, match="run run0, class 11, step 1: point .* is neither finite nor missing"
    ):
        from_array(z, [0, 1, 2], layout="class,step,concept", concepts=("c", "s"), classes=["11"])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(layout="class,step"), "name the axes of the array in order"),
        (dict(layout="class,step,concept,concept"), "each once"),
        (dict(layout="run,class,step,concept"), "names 4 axes; the array has 3"),
        (dict(steps=[0, 1]), "steps: 2 given, but the array's step axis has 3"),
        (dict(classes=["11", "01"]), "classes: 2 given"),
        (dict(concepts=["c"]), "concepts: 1 given"),
        (dict(z=np.full((1, 3, 2), 1.2)), "concept c: 1.2 lies outside \\[0, 1\\]"),
    ],
)
def test_bad_arrays_are_refused_by_name(kwargs, match):
    args = dict(
        z=np.full((1, 3, 2), 0.5),
        steps=[0, 1, 2],
        layout="class,step,concept",
        concepts=["c", "s"],
        classes=["11"],
    )
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        from_array(args.pop("z"), args.pop("steps"), **args)
