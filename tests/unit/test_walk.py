"""empirical.elicitation.walk: your own model's checkpoints through a sampler and a reader, into the standard trajectory log."""

import math

import numpy as np
import pytest

from empirical.elicitation.walk import Prompt, SCORE, SELECT, check, reading, seed_for, walk
from core.sidecar import read_meta
from core.trajectory import read_csv

CLASSES = ["00", "01", "10", "11"]


class Toy:
    """A sampler whose 'images' are per-image concept probabilities: checkpoint = {label: (p_color, p_size)} at
    strength 1; over-prompting moves class 11 toward its corner by (strength - 1) * lift. Records every call."""

    def __init__(self, lift=0.0, fail_at=None):
        self.lift, self.fail_at, self.calls = lift, fail_at, []

    def sample(self, checkpoint, prompt, n, seed):
        self.calls.append((checkpoint["step"], prompt, seed))
        if checkpoint["step"] == self.fail_at:
            raise KeyboardInterrupt  # as if the walk were stopped here
        p = np.array(checkpoint[prompt.label], dtype=float)
        if prompt.label == "11":
            p = np.clip(p + (prompt.strength - 1) * self.lift, 0, 1)
        gen = np.random.default_rng(seed)
        return (gen.random((n, 2)) < p).astype(
            float
        )  # each image is drawn as value 1 with probability p


class Exact:
    """A reader that reads the toy's images as they are; images with a NaN are unreadable."""

    concepts = ("color", "size")

    def read(self, images):
        images = np.asarray(images)
        ok = ~np.isnan(images).any(axis=1)
        return np.nan_to_num(images, nan=0.5), ok


def checkpoints(steps=(0, 100, 200, 300)):
    out = []
    for s in steps:
        f = s / 300
        out.append(
            (s, {"step": s, "00": (0, 0), "01": (0, 1), "10": (1, 0), "11": (1 - 0.5 * f, f)})
        )
    return out


def test_a_walk_writes_the_log_every_fitting_command_reads(tmp_path):
    log = walk(
        checkpoints(),
        Toy(lift=0.3),
        Exact(),
        tmp_path / "mine",
        classes=CLASSES,
        samples=64,
        strengths=[1, 2],
    )
    trajs = read_csv(log)
    assert [(t.protocol, t.label) for t in trajs] == [("naive", c) for c in CLASSES] + [
        ("overprompt", "11")
    ]
    assert all(
        list(t.step) == [0, 100, 200, 300] and t.concepts == ("color", "size") for t in trajs
    )
    naive = {t.label: t for t in trajs if t.protocol == "naive"}
    assert np.array_equal(naive["01"].z, np.tile([0.0, 1.0], (4, 1))) and np.all(
        naive["01"].accuracy == 1
    )
    assert naive["11"].z[0, 1] == 0 and naive["11"].z[-1, 1] == 1 and naive["11"].accuracy[0] == 0
    over = trajs[-1]
    assert (
        set(over.extra["setting"]) <= {"strength=1", "strength=2"}
        and "selection_accuracy" in over.extra
    )
    assert np.all(
        over.accuracy >= naive["11"].accuracy - 0.25
    )  # the lift helps (one draw each: noisy)
    assert over.shares()["unreadable"].sum() == 0 and naive["11"].shares()["11"][
        -1
    ] == pytest.approx(naive["11"].accuracy[-1])
    meta = read_meta(log)
    assert (
        meta["source"] == "empirical.walk"
        and meta["held_out"] == ["11"]
        and meta["concepts"] == ["color", "size"]
    )


def test_the_chosen_strength_is_scored_on_the_naive_draw_and_chosen_on_another(tmp_path):
    toy = Toy(lift=0.5)
    walk(
        checkpoints((0, 150)),
        toy,
        Exact(),
        tmp_path / "w",
        classes=CLASSES,
        samples=16,
        strengths=[1, 3],
    )
    seeds = {(step, p.label, p.strength): seed for step, p, seed in toy.calls}
    naive = seed_for(0, 150, "11", SCORE)
    assert seeds[(150, "11", 1.0)] in (naive, seed_for(0, 150, "11", SELECT))
    assert [s for (step, p, s) in toy.calls if step == 150 and p.label == "11"].count(
        naive
    ) == 2  # naive + score
    assert (
        seed_for(0, 150, "11", SELECT)
        != naive
        != seed_for(0, 150, "10", SCORE)
        != seed_for(1, 150, "10", SCORE)
    )


def test_an_interrupted_walk_resumes_after_its_last_checkpoint_and_ends_as_an_uninterrupted_one(
    tmp_path,
):
    whole = read_csv(
        walk(
            checkpoints(),
            Toy(lift=0.2),
            Exact(),
            tmp_path / "a",
            classes=CLASSES,
            samples=32,
            strengths=[1, 2],
            run="r",
        )
    )
    with pytest.raises(KeyboardInterrupt):
        walk(
            checkpoints(),
            Toy(lift=0.2, fail_at=200),
            Exact(),
            tmp_path / "b",
            classes=CLASSES,
            samples=32,
            strengths=[1, 2],
            run="r",
        )
    assert [list(t.step) for t in read_csv(tmp_path / "b" / "trajectories.csv")][0] == [0, 100]
    again = Toy(lift=0.2)
    resumed = read_csv(
        walk(
            checkpoints(),
            again,
            Exact(),
            tmp_path / "b",
            classes=CLASSES,
            samples=32,
            strengths=[1, 2],
            run="r",
        )
    )
    assert {step for step, _, _ in again.calls} == {200, 300}  # nothing sampled twice
    for a, b in zip(whole, resumed, strict=True):
        assert a.key == b.key and np.array_equal(a.step, b.step)
        np.testing.assert_array_equal(a.z, b.z)
        assert a.extra == b.extra


def test_other_settings_on_the_same_folder_are_refused(tmp_path):
    walk(checkpoints((0,)), Toy(), Exact(), tmp_path / "w", classes=CLASSES, samples=8)
    with pytest.raises(ValueError, match="made with other settings"):
        walk(checkpoints((0,)), Toy(), Exact(), tmp_path / "w", classes=CLASSES, samples=9)


def test_unreadable_images_count_against_the_accuracy_and_stay_out_of_the_point():
    prob = np.array([[1.0, 1.0], [0.9, 0.8], [0.0, 0.0], [0.2, 1.0]])
    got = reading(5, "11", prob, np.array([True, True, False, True]), 4, "here")
    assert got.z == pytest.approx(((1 + 0.9 + 0.2) / 3, (1 + 0.8 + 1) / 3))
    assert got.accuracy == 0.5 and got.shares == {
        "00": 0.0,
        "01": 0.25,
        "10": 0.0,
        "11": 0.5,
        "unreadable": 0.25,
    }
    nothing = reading(5, "11", prob, np.zeros(4, bool), 4, "here")
    assert (
        all(math.isnan(v) for v in nothing.z)
        and nothing.accuracy == 0
        and nothing.shares["unreadable"] == 1
    )


class Broken:
    """A sampler or reader that breaks its promise in one way."""

    concepts = ("color", "size")

    def __init__(self, how):
        self.how = how

    def sample(self, checkpoint, prompt, n, seed):
        nan_images = np.zeros((n, 3, 4, 4))
        nan_images[1:3, 0, 0, 0] = np.nan  # a diverged model: issue #51 blamed these on the reader
        return {"count": np.zeros((n - 1, 2)), "object": 3, "nan-images": nan_images}.get(
            self.how, np.zeros((n, 2))
        )

    def read(self, images):
        n = len(images)
        return {
            "range": (np.full((n, 2), 1.5), np.ones(n, bool)),
            "shape": (np.zeros((n, 3)), np.ones(n, bool)),
            "nan": (np.full((n, 2), np.nan), np.ones(n, bool)),
            "mask": (np.zeros((n, 2)), np.ones(n)),
        }.get(self.how, (np.zeros((n, 2)), np.ones(n, bool)))


@pytest.mark.parametrize(
    "how, match",
    [
        ("count", "the sampler returned 3 images; 4 were asked for"),
        ("object", "returned int, not a batch of images"),
        ("nan-images", "the sampler returned 2 of 4 images holding NaN or infinite pixels"),
        ("range", r"a probability 1\.5; each must lie in \[0, 1\]"),
        ("shape", r"shape \(4, 3\); expected \(4, 2\)"),
        ("nan", "a probability nan"),
        ("mask", "expected \\(4,\\) booleans"),
    ],
)
def test_a_sampler_or_reader_that_breaks_its_promise_is_named(tmp_path, how, match):
    broken = Broken(how)
    with pytest.raises(ValueError, match=match) as err:
        walk(checkpoints((0,)), broken, broken, tmp_path / "w", classes=CLASSES, samples=4)
    assert "step 0, class 00, strength 1" in str(err.value)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (
            dict(checkpoints=[(0, "a"), (200, "b"), (100, "c")]),
            r"checkpoints\[2\]: step 100 comes after step 200",
        ),
        (dict(checkpoints=[(0, "a"), (0, "b")]), r"checkpoints\[1\]: step 0 comes after step 0"),
        (dict(checkpoints=[(-1, "a")]), "step -1 is not a whole number >= 0"),
        (dict(checkpoints=[(1.5, "a")]), "step 1.5 is not a whole number"),
        (dict(checkpoints=["a"]), r"checkpoints\[0\]: give \(step, checkpoint\) pairs"),
        (dict(checkpoints=[]), "give at least one"),
        (
            dict(classes=["00", "12"]),
            "classes \\['00', '12'\\]: give distinct labels among 00, 01, 10, 11",
        ),
        (dict(classes=["00", "00"]), "distinct"),
        (dict(classes=[]), "classes"),
        (
            dict(held_out=["11"], classes=["00", "01"]),
            "held_out \\['11'\\]: each must also be one of classes",
        ),
        (dict(samples=0), "samples 0"),
        (dict(seed=-1), "seed -1"),
        (dict(strengths=[0]), "strengths \\[0\\]"),
        (dict(strengths=[float("inf")]), "finite numbers > 0"),
    ],
)
def test_bad_arguments_are_refused_by_name_before_anything_is_sampled(kwargs, match):
    args = dict(
        checkpoints=[(0, "a")], classes=CLASSES, held_out=["11"], samples=4, seed=0, strengths=[]
    )
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        check(
            args["checkpoints"],
            Exact(),
            args["classes"],
            args["held_out"],
            args["samples"],
            args["seed"],
            args["strengths"],
        )


def test_a_reader_without_concept_names_and_an_output_that_is_a_file_are_refused(tmp_path):
    class Nameless(Exact):
        concepts = ()

    with pytest.raises(ValueError, match="reader.concepts"):
        walk(checkpoints((0,)), Toy(), Nameless(), tmp_path / "w", classes=CLASSES)
    (tmp_path / "f").write_text("x")
    with pytest.raises(ValueError, match="is a file"):
        walk(checkpoints((0,)), Toy(), Exact(), tmp_path / "f", classes=CLASSES)


def test_prompt_defaults_to_the_plain_prompt():
    assert Prompt("11") == Prompt("11", 1.0)
