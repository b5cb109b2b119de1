"""The trajectory log (design.md section 6): exact round trips and every malformed input."""

import json
import math
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.sidecar import meta_path, read_meta
from core.trajectory import (
    Trajectory,
    corner_of,
    target_of,
    read_csv,
    write_csv,
)

unit = st.floats(0, 1, allow_nan=False)
names = st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8)


def same(a: Trajectory, b: Trajectory) -> bool:
    acc_same = (a.accuracy is None and b.accuracy is None) or (
        a.accuracy is not None
        and b.accuracy is not None
        and np.array_equal(a.accuracy, b.accuracy, equal_nan=True)
    )
    return (
        a.step.dtype == b.step.dtype
        and np.array_equal(a.step, b.step)
        and np.array_equal(a.z, b.z)
        and a.concepts == b.concepts
        and a.key == b.key
        and acc_same
        and dict(a.extra) == dict(b.extra)
    )


@st.composite
def logs(draw):
    concepts = tuple(draw(st.lists(names, min_size=1, max_size=3, unique=True)))
    int_steps = draw(st.booleans())
    with_acc = draw(st.booleans())
    extra_cols = draw(st.lists(st.sampled_from(["note", "lr", "tag"]), max_size=2, unique=True))
    trajs, keys = [], set()
    for _ in range(draw(st.integers(1, 4))):
        n = draw(st.integers(1, 12))
        if int_steps:
            step = np.cumsum(draw(st.lists(st.integers(1, 10**6), min_size=n, max_size=n))) - 1
        else:
            step = np.cumsum(draw(st.lists(st.floats(1e-6, 1e3), min_size=n, max_size=n)))
            if np.any(np.diff(step) <= 0):
                continue
        key = (
            draw(st.sampled_from(["", "r1", "run b"])),
            draw(st.none() | st.integers(-5, 10**9)),
            draw(st.sampled_from(["00", "01", "11", "011"])),
            draw(st.sampled_from(["naive", "sim", "cfg"])),
        )
        if key in keys:
            continue
        keys.add(key)
        z = np.array(
            draw(
                st.lists(
                    st.lists(unit, min_size=len(concepts), max_size=len(concepts)),
                    min_size=n,
                    max_size=n,
                )
            )
        )
        acc = None
        if with_acc:
            acc = np.array(draw(st.lists(unit | st.just(math.nan), min_size=n, max_size=n)))
        extra = {
            c: tuple(draw(st.lists(st.text("xyz0123 .-", max_size=5), min_size=n, max_size=n)))
            for c in extra_cols
        }
        trajs.append(
            Trajectory(
                step,
                z.reshape(n, len(concepts)),
                concepts,
                key[2],
                key[3],
                key[1],
                key[0],
                acc,
                extra,
            )
        )
    return trajs


@given(logs())
def test_round_trip_is_exact(tmp_path_factory, trajs):
    if not trajs:
        return
    path = tmp_path_factory.mktemp("log") / "t.csv"
    write_csv(path, trajs)
    back = read_csv(path)
    assert len(back) == len(trajs)
    for a, b in zip(trajs, back):
        assert same(a, b)
    # and the file itself is a fixed point of read -> write
    text = path.read_text()
    write_csv(path, back)
    assert path.read_text() == text


def test_keeps_leading_zeros_default_protocol_and_extra_columns(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("step,class,z_color,lr\n0,011,0.5,1e-3\n10,011,0.25,5e-4\n")
    (tr,) = read_csv(path)
    assert tr.label == "011" and tr.protocol == "naive" and tr.seed is None and tr.run == ""
    assert tr.step.dtype == np.int64 and tr.step.tolist() == [0, 10]
    assert tr.extra == {"lr": ("1e-3", "5e-4")}
    assert tr.accuracy is None


def test_accuracy_only_log_and_float_steps(tmp_path):
    path = tmp_path / "acc.csv"
    path.write_text(
        "step,class,protocol,seed,accuracy\n0.5,11,naive,3,0.1\n1.5,11,naive,3,\n2,11,naive,3,0.9\n"
    )
    (tr,) = read_csv(path)
    assert tr.z.shape == (3, 0) and tr.step.dtype == np.float64
    assert np.isnan(tr.accuracy[1]) and tr.accuracy[2] == 0.9 and tr.seed == 3


def test_groups_rows_into_trajectories_in_order(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text(
        "step,class,protocol,seed,z_a\n0,11,naive,0,0.1\n0,11,naive,1,0.2\n5,11,naive,0,0.3\n0,00,cfg,0,0.4\n5,11,naive,1,0.5\n"
    )
    trajs = read_csv(path)
    assert [t.key for t in trajs] == [
        ("", 0, "11", "naive"),
        ("", 1, "11", "naive"),
        ("", 0, "00", "cfg"),
    ]
    assert trajs[1].z[:, 0].tolist() == [0.2, 0.5]


def test_meta_sidecar_round_trip(tmp_path):
    tr = Trajectory([0, 1], [[0.1], [0.2]], ("color",), "11")
    write_csv(
        tmp_path / "trajectories.csv", [tr], meta={"model": "eq1", "lam": np.array([1.0, 2.0])}
    )
    assert meta_path(tmp_path / "trajectories.csv").name == "trajectories.meta.json"
    assert read_meta(tmp_path / "trajectories.csv") == {"lam": [1.0, 2.0], "model": "eq1"}
    assert read_meta(tmp_path / "none.csv") is None
    (tmp_path / "trajectories.meta.json").write_text("{oops")
    with pytest.raises(ValueError, match="trajectories.meta.json"):
        read_meta(tmp_path / "trajectories.csv")


def test_tolerance_on_unit_interval(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("step,class,z_a\n0,11,1.0000005\n1,11,-0.0000005\n")
    (tr,) = read_csv(path)
    assert tr.z[0, 0] == 1.0000005  # kept as written, not clipped


HEADER = "step,class,protocol,seed,z_color,z_size,accuracy\n"
GOOD = "0,11,naive,0,0.5,0.5,0.1\n"

BAD = [
    ("", None, None, "empty"),
    ("\n\n", None, None, "empty"),
    (HEADER, None, None, "no data rows"),
    ("class,z_color\n11,0.5\n", None, "step", "required column is missing"),
    ("step,z_color\n0,0.5\n", None, "class", "required column is missing"),
    ("step,class,run\n0,11,a\n", None, "z_<concept>", "at least one z_<concept>"),
    ("step,class,z_,z_a\n0,11,0.5,0.5\n", None, "z_", "needs a name"),
    ("step,class,z_a,z_a\n0,11,0.5,0.5\n", None, "z_a", "more than once"),
    (HEADER + GOOD + "1,11,naive,0,abc,0.5,0.1\n", 2, "z_color", "not a number"),
    (HEADER + "-5,11,naive,0,0.5,0.5,0.1\n" + GOOD, 1, "step", "-5 is negative"),
    (HEADER + GOOD + "1,11,naive,0,nan,0.5,0.1\n", 2, "z_color", "not a finite number"),
    (
        HEADER + GOOD + "1,11,naive,0,,0.5,0.1\n",
        2,
        "z_color",
        "is empty while other z_ cells are not",
    ),
    (HEADER + GOOD + "1,11,naive,0,0.5,1.1,0.1\n", 2, "z_size", "outside \\[0, 1\\]"),
    (HEADER + GOOD + "1,11,naive,0,0.5,-0.01,0.1\n", 2, "z_size", "outside \\[0, 1\\]"),
    (HEADER + GOOD + "1,11,naive,0,0.5,0.5,1.5\n", 2, "accuracy", "outside \\[0, 1\\]"),
    (HEADER + GOOD + "1,11,naive,0,0.5,0.5,inf\n", 2, "accuracy", "not a finite number"),
    (HEADER + GOOD + "0,11,naive,0,0.5,0.5,0.1\n", 2, "step", "duplicate step"),
    (
        HEADER + "5,11,naive,0,0.5,0.5,0.1\n" + "3,11,naive,0,0.5,0.5,0.1\n",
        2,
        "step",
        "decreasing step",
    ),
    (HEADER + GOOD + "x,11,naive,0,0.5,0.5,0.1\n", 2, "step", "not a number"),
    (HEADER + GOOD + "nan,11,naive,0,0.5,0.5,0.1\n", 2, "step", "not a finite number"),
    (HEADER + GOOD + "1,,naive,0,0.5,0.5,0.1\n", 2, "class", "empty"),
    (HEADER + GOOD + "1,11,naive,x,0.5,0.5,0.1\n", 2, "seed", "not an integer"),
    (HEADER + GOOD + "1,11,naive,0,0.5\n", 2, None, "has 5 fields, the header has 7"),
]


@pytest.mark.parametrize("text,row,column,message", BAD)
def test_malformed_logs_name_file_row_and_column(tmp_path, text, row, column, message):
    path = tmp_path / "bad_log.csv"
    path.write_text(text)
    with pytest.raises(ValueError) as err:
        read_csv(path)
    msg = str(err.value)
    assert msg.startswith(str(path)), msg
    assert re.search(message, msg), msg
    if row is not None:
        assert f"row {row} (line {row + 1})" in msg, msg
    if column is not None:
        assert f"column {column!r}" in msg, msg


def test_missing_file():
    with pytest.raises(FileNotFoundError):
        read_csv("/nonexistent/log.csv")


def test_trajectory_validates_itself():
    with pytest.raises(ValueError, match="strictly increasing"):
        Trajectory([0, 1, 1], np.zeros((3, 1)), ("a",), "11")
    with pytest.raises(ValueError, match="shape"):
        Trajectory([0, 1], np.zeros((3, 1)), ("a",), "11")
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        Trajectory([0, 1], [[0.5], [2.0]], ("a",), "11")
    with pytest.raises(ValueError, match="finite"):
        Trajectory([0, 1], [[0.5], [np.inf]], ("a",), "11")
    with pytest.raises(ValueError, match="partly missing"):
        Trajectory([0, 1], [[0.5, 0.5], [np.nan, 0.5]], ("a", "b"), "11")
    with pytest.raises(ValueError, match="at least one concept"):
        Trajectory([0, 1], np.zeros((2, 0)), (), "11")
    with pytest.raises(ValueError, match="clashes"):
        Trajectory([0, 1], [[0.5], [0.5]], ("a",), "11", extra={"seed": ("1", "2")})
    with pytest.raises(ValueError, match="no concept 'b'"):
        Trajectory([0, 1], [[0.5], [0.5]], ("a",), "11").coordinate("b")


def test_writer_refuses_mixed_concepts_and_duplicate_keys(tmp_path):
    a = Trajectory([0, 1], [[0.1], [0.2]], ("color",), "11")
    b = Trajectory([0, 1], [[0.1], [0.2]], ("size",), "00")
    with pytest.raises(ValueError, match="same concepts"):
        write_csv(tmp_path / "x.csv", [a, b])
    with pytest.raises(ValueError, match="share"):
        write_csv(tmp_path / "x.csv", [a, a])
    with pytest.raises(ValueError, match="nothing to write"):
        write_csv(tmp_path / "x.csv", [])
    assert not (tmp_path / "x.csv").exists()
    assert not list(tmp_path.iterdir())  # no temp files left behind


def test_sidecar_json_is_valid(tmp_path):
    tr = Trajectory([0.0, 0.5], [[0.1, 0.2], [0.3, 0.4]], ("color", "size"), "11", "sim")
    write_csv(tmp_path / "t.csv", [tr], meta={"a": 1})
    assert json.loads((tmp_path / "t.meta.json").read_text()) == {"a": 1}


def test_a_missing_point_round_trips_and_is_dropped_on_request(tmp_path):
    """Nothing readable at a step: empty z cells in the CSV, NaN in memory; the accuracy and shares stay."""
    shares = {
        "share_00": ("0.0", "0.5"),
        "share_11": ("0.0", "0.5"),
        "share_unreadable": ("1.0", "0.0"),
    }
    t = Trajectory(
        [0, 10],
        [[np.nan, np.nan], [0.5, 0.5]],
        ("color", "size"),
        "11",
        accuracy=[0.0, 0.5],
        extra=shares,
    )
    path = write_csv(tmp_path / "log.csv", [t])
    assert path.read_text().splitlines()[1].startswith("0,11,naive,,,,,0.0,")
    back = read_csv(path)[0]
    assert back.missing.tolist() == [True, False] and back.accuracy.tolist() == [0.0, 0.5]
    assert back.shares()["unreadable"].tolist() == [1.0, 0.0] and set(back.shares()) == {
        "00",
        "11",
        "unreadable",
    }
    kept = back.with_points()
    assert (
        kept.step.tolist() == [10] and kept.extra["share_00"] == ("0.5",) and not kept.missing.any()
    )
    with pytest.raises(ValueError, match="no step has a point"):
        Trajectory([0], [[np.nan, np.nan]], ("color", "size"), "11").with_points()


@pytest.mark.parametrize(
    "column,value,message",
    [
        ("share_01", "1.5", "outside"),
        ("share_unreadable", "x", "not a number"),
        ("accuracy_lo", "-0.2", "outside"),
        ("samples", "3.5", "not a count"),
    ],
)
def test_reading_columns_are_validated(tmp_path, column, value, message):
    path = tmp_path / "log.csv"
    path.write_text(f"step,class,z_color,{column}\n0,11,0.5,{value}\n")
    with pytest.raises(ValueError, match=f"column '{column}': .*{message}"):
        read_csv(path)


def test_a_class_label_s_bits_are_its_corner_once_for_every_reader():
    assert corner_of("10", 2) == (1, 0) and corner_of("011", 3) == (0, 1, 1)
    assert corner_of("1", 2) is None and corner_of("12", 2) is None and corner_of("ab", 2) is None
    assert (
        target_of("01", 2) == (0, 1)
        and target_of("x", 2) == (1, 1)
        and target_of("cat", 3) == (1, 1, 1)
    )


@pytest.mark.parametrize(
    "key, value, kind",
    [
        ("config", [1], "a JSON object"),
        ("held_out", "11", "a list of class labels"),
        ("concepts", {}, "a list"),
    ],
)
def test_a_sidecar_key_of_the_wrong_type_is_refused_naming_it(tmp_path, key, value, kind):
    """Found by the file fuzzer (issue #74): a sidecar whose config was a list ended figures.training in an
    AttributeError traceback."""
    meta_path(tmp_path / "trajectories.csv").write_text(json.dumps({key: value}))
    with pytest.raises(ValueError, match=rf"trajectories.meta.json: '{key}' must be {kind}"):
        read_meta(tmp_path / "trajectories.csv")
