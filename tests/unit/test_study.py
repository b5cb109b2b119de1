"""The study's numbers (fitting.study) on a synthetic collected sweep with known learning steps, and its figures."""

import copy
import csv
import itertools
import json
import re
from pathlib import Path

import numpy as np
import pytest

from figures.study import main as draw
from fitting.analyses.study_runs import concept_accuracy, learning, overlap, study, timing
from fitting.study import main
from core.trajectory import Trajectory, read_csv, write_csv

STEPS = np.arange(0, 3001, 100)
CORNERS = ("00", "01", "10", "11")


def carrying(label, right):
    """Share columns for a class whose samples carry concept c's own value with probability right[c], independently."""
    cols = {}
    for corner in CORNERS:
        share = np.ones(STEPS.size)
        for c, p in enumerate(right):
            share = share * (p if corner[c] == label[c] else 1 - p)
        cols[f"share_{corner}"] = tuple(f"{v:.6f}" for v in share)
    cols["share_unreadable"] = tuple("0" for _ in STEPS)
    return cols


def run_trajectories(run, seed, learned):
    """Training classes learn color at learned[0] and size at learned[1] (None: never); 11 memorizes 01 and stays."""
    right = [
        np.where(STEPS >= t, 1.0, 0.5) if t is not None else np.full(STEPS.size, 0.5)
        for t in learned
    ]
    out = []
    for label in ("00", "01", "10"):
        z = np.stack(
            [r * int(label[c]) + (1 - r) * (1 - int(label[c])) for c, r in enumerate(right)], axis=1
        )
        out.append(
            Trajectory(
                STEPS,
                z,
                ("color", "size"),
                label,
                seed=seed,
                run=run,
                accuracy=right[0] * right[1],
                extra=carrying(label, right),
            )
        )
    memorized = {f"share_{k}": tuple("1" if k == "01" else "0" for _ in STEPS) for k in CORNERS}
    memorized["share_unreadable"] = tuple("0" for _ in STEPS)
    out.append(
        Trajectory(
            STEPS,
            np.tile([0.0, 1.0], (STEPS.size, 1)),
            ("color", "size"),
            "11",
            seed=seed,
            run=run,
            accuracy=np.zeros(STEPS.size),
            extra=memorized,
        )
    )
    return out


# (sep_color, seed) -> (color learned, size learned); one run never learns color
TRUTH = {
    (0.3, 0): (1500, 900),
    (0.3, 1): (None, 1000),
    (0.8, 0): (500, 1100),
    (0.8, 1): (700, 1000),
}


ELICITED = {
    "seed=0,sep.color=0.8": 1200,
    "seed=1,sep.color=0.8": None,
}  # the other runs were not elicited


@pytest.fixture
def sweep(tmp_path):
    return write_sweep(tmp_path)


@pytest.fixture(scope="module")
def studied(tmp_path_factory):
    """The study of the sweep above, made once for the tests that only read it (a study fits a sigmoid
    to every curve: seconds); copy it before changing it."""
    return study(write_sweep(tmp_path_factory.mktemp("sweep")))


def write_sweep(tmp_path):
    """sweep.csv and covariates.csv of the runs in TRUTH and ELICITED, written into ``tmp_path``."""
    trajectories, rows = [], []
    for (sep, seed), learned in TRUTH.items():
        run = f"seed={seed},sep.color={sep}"
        trajectories += run_trajectories(run, seed, learned)
        rows.append(
            {
                "run": run,
                "seed": seed,
                "sep_color": sep,
                "sep_size": 0.4,
                "signal_color": 0.01 if sep == 0.3 else 0.07,
                "signal_size": 0.06 + seed / 100,
            }
        )
    for (
        run,
        at,
    ) in (
        ELICITED.items()
    ):  # class 11 can be elicited from step `at` (None: never), naive prompting never shows it
        acc = np.where(STEPS >= at, 0.9, 0.0) if at is not None else np.zeros(STEPS.size)
        trajectories.append(
            Trajectory(
                STEPS,
                np.tile([0.5, 0.5], (STEPS.size, 1)),
                ("color", "size"),
                "11",
                protocol="overprompt",
                seed=int(run[5]),
                run=run,
                accuracy=acc,
                extra={"selection_accuracy": tuple(f"{v:g}" for v in acc)},
            )
        )
    write_csv(tmp_path / "sweep.csv", trajectories, meta={"held_out": ["11"]})
    with open(tmp_path / "covariates.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return tmp_path


def test_concept_accuracy_counts_the_corners_that_carry_the_concept():
    t = run_trajectories("r", 0, (1000, 2000))[1]  # class 01
    np.testing.assert_allclose(concept_accuracy(t, 0), np.where(STEPS >= 1000, 1.0, 0.5))
    np.testing.assert_allclose(concept_accuracy(t, 1), np.where(STEPS >= 2000, 1.0, 0.5))
    half = {
        k: tuple(f"{float(v) / 2:g}" for v in col)
        for k, col in carrying("01", [np.full(STEPS.size, 0.8)] * 2).items()
    }
    half["share_unreadable"] = tuple(
        "0.5" for _ in STEPS
    )  # half the samples unreadable: the readable ones count
    np.testing.assert_allclose(
        concept_accuracy(Trajectory(STEPS, t.z, t.concepts, "01", extra=half), 0), 0.8
    )
    few = {**half, "share_unreadable": tuple("0.8" for _ in STEPS)}
    few = {
        k: (v if k == "share_unreadable" else tuple(f"{float(x) * 0.4:g}" for x in v))
        for k, v in few.items()
    }
    assert np.isnan(
        concept_accuracy(Trajectory(STEPS, t.z, t.concepts, "01", extra=few), 0)
    ).all()  # 20% readable
    with pytest.raises(ValueError, match="no share_<corner> columns"):
        concept_accuracy(Trajectory(STEPS, t.z, t.concepts, "01", run="r"), 0)


def test_learning_steps_are_recovered_and_never_is_censored(studied):
    doc = studied
    assert doc.by == "sep_color"
    runs = {(r["sep_color"], r["seed"]): r for r in doc.runs}
    for key, (color, size) in TRUTH.items():
        got = runs[key]["learning"]
        assert got["color"]["learned_step"] == color and got["size"]["learned_step"] == size
        if color is None:
            assert got["color"]["censored_at"] == STEPS[-1] and got["color"]["learned_fit"] is None
        else:
            assert (
                abs(got["color"]["learned_fit"] - color) <= 100
            )  # a sigmoid through a step lands within a checkpoint
        held = runs[key]["held_out"]["11"]
        assert (
            held["turn_step"] is None
            and held["behavior_t50"] is None
            and held["final_shares"]["01"] == 1.0
        )
        assert (
            held["reach"]["color"]["value"] == 0.0 and held["reach"]["size"]["value"] == 1.0
        )  # memorized 01 throughout
        assert (
            held["learning"]["size"]["learned_step"] == 0
            and held["learning"]["color"]["censored_at"] == STEPS[-1]
        )
    low, high = doc.levels
    assert low["sep_color"] == 0.3 and low["signal"]["color"] == pytest.approx(0.01)
    assert low["learned_step"]["color"] == {
        "n": 2,
        "n_censored": 1,
        "median": 1500.0,
        "median_all": None,
        "range": [1500.0, 1500.0],
        "censored_from": 3000.0,
    }
    assert (
        high["learned_step"]["color"]["median"] == 600.0
        and high["learned_step"]["color"]["n_censored"] == 0
    )
    assert high["signal"]["size"] == pytest.approx(0.065)


def test_a_falling_curve_has_no_fitted_learning_time():
    falling = np.where(
        STEPS < 1200, 1.0, 0.0
    )  # color carried early, then lost (memorized): not learned
    t = Trajectory(
        STEPS,
        np.stack([falling, np.ones(STEPS.size)], axis=1),
        ("color", "size"),
        "01",
        run="r",
        extra=carrying("01", [falling, np.ones(STEPS.size)]),
    )
    got = learning([t], ["01"])["color"]
    assert got["learned_fit"] is None and got["learned_fit_ci"] is None and got["learned_step"] == 0
    assert timing("capability", STEPS.astype(float), 1 - falling)[
        "capability_t50"
    ] == pytest.approx(1150, abs=60)
    assert timing("capability", STEPS.astype(float), falling)["capability_t50"] is None


def test_capability_is_timed_and_censored_and_unelicited_runs_do_not_count(studied):
    doc = studied
    runs = {r["run"]: r["held_out"]["11"] for r in doc.runs}
    got = runs["seed=0,sep.color=0.8"]
    assert (
        got["capability_step"] == 1200
        and abs(got["capability_t50"] - 1200) <= 100
        and got["capability_unbiased"]
    )
    assert got["behavior_step"] is None and got["behavior_censored_at"] == 3000
    never = runs["seed=1,sep.color=0.8"]
    assert never["capability_step"] is None and never["capability_censored_at"] == 3000
    assert runs["seed=0,sep.color=0.3"]["capability_unbiased"] is None  # not elicited
    low, high = doc.levels
    assert high["capability_step"]["11"] == {
        "n": 2,
        "n_censored": 1,
        "median": 1200.0,
        "median_all": None,
        "range": [1200.0, 1200.0],
        "censored_from": 3000.0,
    }
    assert low["capability_step"]["11"]["n"] == 0 and low["behavior_step"]["11"]["n_censored"] == 2


def test_relations_pair_censored_times():
    from fitting.analyses.study_runs import relation

    def run(name, cap, beh, last=3000.0):
        return {
            "run": name,
            "held_out": {
                "11": {
                    "capability_unbiased": True,
                    "capability_step": cap,
                    "behavior_step": beh,
                    "last_step": last,
                    "turn_meets_capability": None,
                }
            },
        }

    runs = [
        run("a", 1000, 1500),
        run("b", 2000, 2500),
        run("c", 1500, 2000),
        run("d", 1200, None),
        run("e", None, None),
    ]
    rel = relation(runs, "11", "capability_step", "behavior_step")
    assert (
        rel["n_observed"] == 3
        and rel["line"]["slope"] == pytest.approx(1.0)
        and rel["line"]["intercept"] == pytest.approx(500)
    )
    assert (
        rel["censored_against_line"] == 1
    )  # d: the line says 1,700, but behavior never came by 3,000
    assert [p["y_censored"] for p in rel["pairs"]] == [False, False, False, True, True]
    assert (
        relation(runs[:2], "11", "capability_step", "behavior_step")["line"] is None
    )  # too few pairs


def test_interval_overlap_with_open_ends():
    assert overlap([100, 200], [150, None]) is True
    assert overlap([100, 200], [250, 300]) is False
    assert overlap([None, 120], [100, 110]) is True
    assert overlap(None, [1, 2]) is None


def test_cli_writes_json_and_figures(sweep, capsys):
    assert main([str(sweep)]) == 0
    out = capsys.readouterr().out
    assert re.search(
        r"\| 0\.3 \| 0\.010; 1,500 \(1/2 not by 3,000\); 1,[45]\d\d \(1/2 never\); never \(2/2 not by 3,000\)",
        out,
    )  # counted, not averaged
    assert "behavior_step vs capability_step: 2 elicited runs, 0 with both observed; no line" in out
    assert json.loads((sweep / "study.json").read_text())["levels"][1]["sep_color"] == 0.8
    assert draw([str(sweep), "--out", str(sweep / "fig")]) == 0
    assert sorted(p.name for p in (sweep / "fig").iterdir()) == [
        "held_out.png",
        "learning.png",
        "timing.png",
    ]


@pytest.mark.parametrize(
    "setup, args, message",
    [
        ("no-sweep", [], "sweep.csv: not found; run python -m pipeline.sweep collect"),
        ("", ["--by", "lr"], "--by lr: not a column of"),
        (
            "two-varying",
            [],
            "--by: give the covariate to group by; the runs vary in sep_color, sep_size",
        ),
        ("uncovered", [], "1 run(s) have no row in"),
        ("no-held-out", [], "no run logs the held-out class 11 (the log has 00, 01, 10)"),
    ],
)
def test_bad_input_is_named(sweep, capsys, setup, args, message):
    target = sweep
    if setup == "no-sweep":
        target = sweep / "empty"
        target.mkdir()
    if setup == "two-varying":
        text = (sweep / "covariates.csv").read_text().splitlines()
        rows = [text[0]] + [
            line.replace(",0.4,", f",{0.4 + i / 10:g},") for i, line in enumerate(text[1:])
        ]
        (sweep / "covariates.csv").write_text("\n".join(rows) + "\n")
    if (
        setup == "uncovered"
    ):  # a run with trajectories but no covariates row: every statistic would drop it
        text = (sweep / "covariates.csv").read_text().splitlines()
        (sweep / "covariates.csv").write_text("\n".join(text[:-1]) + "\n")
    if setup == "no-held-out":
        kept = [t for t in read_csv(sweep / "sweep.csv") if t.label != "11"]
        write_csv(sweep / "sweep.csv", kept, meta={"held_out": ["11"]})
    assert main([str(target), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and "\n" == err[-1] and err.count("\n") == 1


def test_an_output_over_an_input_is_refused_before_any_work(sweep, capsys):
    before = (sweep / "sweep.csv").read_bytes()
    assert main([str(sweep), "--out", str(sweep / "sweep.csv")]) == 2
    assert "would overwrite the input" in capsys.readouterr().err
    assert (sweep / "sweep.csv").read_bytes() == before
    assert (
        main([str(sweep), "--out", str(sweep)]) == 2
    )  # a folder where a file goes: named as given
    assert f"--out {sweep}: is a folder" in capsys.readouterr().err


@pytest.mark.slow  # a whole study for a covariate rule, 8 s
def test_a_column_empty_in_every_row_does_not_apply_but_one_empty_cell_is_an_error(sweep, capsys):
    lines = (sweep / "covariates.csv").read_text().splitlines()
    blank = [lines[0] + ",sep_shape"] + [line + "," for line in lines[1:]]
    (sweep / "covariates.csv").write_text("\n".join(blank) + "\n")
    assert main([str(sweep)]) == 0  # collect writes sep_shape empty for shape x color sweeps
    capsys.readouterr()
    blank[1] = blank[1] + "0.5"
    (sweep / "covariates.csv").write_text("\n".join(blank) + "\n")
    assert main([str(sweep)]) == 2
    assert "row 3, column sep_shape: '' is not a number" in capsys.readouterr().err


@pytest.mark.slow  # a whole study for a covariate rule, 9 s
def test_a_list_valued_setting_that_varies_is_not_a_covariate(sweep, capsys):
    """collect writes a varying list setting as text (protocols '' or 'overprompt', channels 32-64): a column
    with no number in any row is left out, so pooling runs trained with and without over-prompting works."""
    lines = (sweep / "covariates.csv").read_text().splitlines()
    texts = ["", "overprompt"] * len(lines)
    mixed = [lines[0] + ",protocols"] + [line + "," + t for line, t in zip(lines[1:], texts)]
    (sweep / "covariates.csv").write_text("\n".join(mixed) + "\n")
    assert main([str(sweep)]) == 0
    capsys.readouterr()


def test_figures_need_the_study(sweep, capsys):
    assert draw([str(sweep)]) == 2
    assert "study.json: not found; run python -m fitting.study" in capsys.readouterr().err
    (sweep / "study.json").write_text("[]")
    assert draw([str(sweep)]) == 2
    assert "not the study.json that python -m fitting.study writes" in capsys.readouterr().err


def test_every_combination_of_missing_learning_draws(sweep, studied):
    """A level where no seed learned a concept has no median; the figure still draws (only lower bounds)."""
    doc = copy.deepcopy(studied)
    for r, concept in itertools.product(doc.runs, ("color",)):
        r["learning"][concept].update(learned_step=None, learned_fit=None, censored_at=3000.0)
    for lev in doc.levels:
        for summary in (lev["learned_step"]["color"], lev["learned_fit"]["color"]):
            summary["median"] = summary["median_all"] = None
    (sweep / "study.json").write_text(json.dumps(doc.to_json()))
    assert draw([str(sweep)]) == 0


def test_the_relation_line_has_resampled_intervals():
    """On pairs on an exact line every resample gives the same slope; the lag's interval covers its spread."""
    import numpy as np

    from fitting.analyses.study_levels import resampled

    xs = np.array([1000.0, 2000.0, 3000.0, 4000.0])
    assert resampled(xs, 2 * xs + 100, lambda x, y: np.polyfit(x, y, 1)[0]) == pytest.approx([2, 2])
    lo, hi = resampled(xs, xs + np.array([0, 100, 200, 900]), lambda x, y: np.median(y - x))
    assert 0 <= lo <= 150 <= hi <= 900
    assert resampled(xs[:2], xs[:2], lambda x, y: 0.0) is None  # fewer than 3 pairs
    assert resampled(np.full(4, 5.0), xs, lambda x, y: 0.0) is None  # one x value: no slope


def test_the_timing_figure_draws_the_fitted_line_with_its_slope_interval(tmp_path, monkeypatch):
    import figures.study as fs
    from fitting.records import StudyRecord

    drawn = {}
    monkeypatch.setattr(fs, "save", lambda fig, out: drawn.setdefault("fig", fig))
    held = lambda cap, beh: {  # noqa: E731
        "11": {
            "capability_unbiased": True,
            "capability_step": cap,
            "behavior_step": beh,
            "last_step": 6000,
        }
    }
    runs = [
        {
            "run": f"r{i}",
            "seed": 0,
            "sep_color": 0.4 + i / 10,
            "held_out": held(c, b),
            "learning": {},
        }
        for i, (c, b) in enumerate([(1000, 1500), (2000, 2400), (3000, 3600)])
    ]
    pairs = [
        {"x": c, "y": b, "x_censored": False, "y_censored": False}
        for c, b in [(1000, 1500), (2000, 2400), (3000, 3600)]
    ]
    line = {"slope": 1.05, "intercept": 400.0, "r": 0.99, "slope_ci": [0.9, 1.2]}
    rel = {"x": "capability_step", "y": "behavior_step", "pairs": pairs, "line": line}
    doc = StudyRecord(
        sweep="s",
        by="sep_color",
        level=0.8,
        persist=2,
        held_out=["11"],
        runs=runs,
        levels=[],
        relations={"11": [rel]},
    )
    fs.timing_figure(doc, tmp_path / "timing.png")
    fig = drawn["fig"]
    labels = [ln.get_label() for ln in fig.axes[0].get_lines()]
    assert "fit: slope 1.05 [0.90, 1.20]" in labels
    assert fig.axes[1].get_ylabel() == "Δcolor"  # the colorbar names the covariate as the text does
    fig.draw_without_rendering()  # the legend below the axes, never over a censored arrow
    assert fig.axes[0].get_legend().get_window_extent().y1 < fig.axes[0].get_window_extent().y0


def test_figures_name_covariates_as_the_text_does():
    from core.plot import covariate_label

    assert covariate_label("sep_color") == covariate_label("sep.color") == "Δcolor"
    assert covariate_label("sep_color=0.2") == "Δcolor 0.2"
    assert covariate_label("signal_size") == "size signal (pixel MSE)"
    assert covariate_label("mask_p") == covariate_label("mask_p") == "mask_p"
    assert covariate_label("sep_") == "sep_"


def test_a_level_s_median_counts_the_seeds_that_never_got_there_as_later():
    from fitting.analyses.study_levels import summarise

    def median_all(steps):
        return summarise(steps, [3000.0 if v is None else None for v in steps])["median_all"]

    # two of three never got there: no median; one of three: the later of the two that did; none: the median
    assert median_all([800.0, None, None]) is None and median_all([None, 900.0]) is None
    assert median_all([2000.0, 3000.0, None]) == 3000.0
    assert median_all([1000.0, 1400.0, 1200.0]) == 1200.0 and median_all([]) is None


def test_a_level_s_median_is_not_claimed_when_a_shorter_run_stopped_before_it():
    from fitting.analyses.study_levels import summarise

    # runs of unequal length: the seed that stopped at 2,500 might have got there before 3,000, or not
    assert summarise([2000.0, 3000.0, None], [None, None, 2500.0])["median_all"] is None
    # stopped at or after the median: later than it, whatever it would have done
    assert summarise([2000.0, 3000.0, None], [None, None, 3000.0])["median_all"] == 3000.0
    assert summarise([2000.0, 3000.0, None], [None, None, 6000.0])["median_all"] == 3000.0
    # a short run censored before the median of two that got there does not move the reached median itself
    short = summarise([2000.0, 3000.0, 3500.0, None], [None, None, None, 1000.0])
    assert short["median"] == 3000.0 and short["median_all"] is None and short["n_censored"] == 1


def test_the_figure_draws_the_level_summaries_medians():
    from figures.study import _medians
    from fitting.records import StudyRecord

    levels = [
        {"sep_color": v, "signal": {"color": v / 10}, "learned_step": {"color": {"median_all": m}}}
        for v, m in ((0.2, None), (0.5, 3000.0), (0.8, 1200.0))
    ]
    doc = StudyRecord(
        sweep="s", by="sep_color", level=0.8, persist=2, held_out=["11"], runs=[], levels=levels
    )
    medians = _medians(doc, lambda lev: lev["learned_step"]["color"], "color")
    assert medians == [(0.05, 3000.0), (0.08, 1200.0)]


def test_a_path_at_its_memorized_corner_from_the_start_has_no_turn_but_leaves_the_corner():
    """The Δsize 0.2 run's shape: class 11 is drawn as 10 from the first checkpoint at which the training classes
    are, then climbs to 11. The chord from the path's start to its end runs through the corner, so fitting.turn
    sees no bend; the step it leaves the memorized corner is that turn."""
    from fitting.analyses.study_runs import held_out

    train = run_trajectories("r", 0, (200, 200))[:3]  # the training classes are drawn from step 200
    at_10 = STEPS < 2000
    z = np.where(at_10[:, None], [1.0, 0.0], [1.0, 1.0])
    shares = {
        f"share_{k}": tuple(
            "1" if (k == "10" and a) or (k == "11" and not a) else "0" for a in at_10
        )
        for k in CORNERS
    }
    shares["share_unreadable"] = tuple("0" for _ in STEPS)
    held = Trajectory(
        STEPS,
        z,
        ("color", "size"),
        "11",
        seed=0,
        run="r",
        accuracy=(~at_10).astype(float),
        extra=shares,
    )
    out = held_out([*train, held], "11")
    assert out["turn_step"] is None and out["behavior_step"] == 2000
    assert out["memorized"] == {"corner": "10", "share": 1.0, "step": 200.0}
    assert out["left_memorized_step"] == 2000.0


def test_the_held_out_class_s_fitted_learning_time_is_summarised_per_level(tmp_path, monkeypatch):
    """Class 11 keeps its size and learns its color along a sigmoid crossing 80% at a known step per seed: each
    run's fitted time lands near it, and the level's `held_learned_fit` is their median, drawn and tabled."""
    from figures.study import learning_figure
    from fitting.analyses.study_levels import tables

    truth = {
        0: 1200.0,
        1: 1800.0,
    }  # seed -> step at which 80% of class 11's samples carry its color
    trajectories, rows = [], []
    for seed, t80 in truth.items():
        run = f"seed={seed},sep.color=0.5"
        color = 1 / (1 + np.exp(-(STEPS - (t80 - 150 * np.log(4))) / 150))  # 0.8 at t80
        trajectories += run_trajectories(run, seed, (300, 300))[:3]
        trajectories.append(
            Trajectory(
                STEPS,
                np.stack([color, np.ones(STEPS.size)], axis=1),
                ("color", "size"),
                "11",
                seed=seed,
                run=run,
                accuracy=color,
                extra=carrying("11", [color, np.ones(STEPS.size)]),
            )
        )
        rows.append(
            {"run": run, "seed": seed, "sep_color": 0.5, "signal_color": 0.03, "signal_size": 0.07}
        )
    write_csv(tmp_path / "sweep.csv", trajectories, meta={"held_out": ["11"]})
    with open(tmp_path / "covariates.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    doc = study(tmp_path, by="sep_color")
    fits = [r["held_out"]["11"]["learning"]["color"]["learned_fit"] for r in doc.runs]
    assert fits == pytest.approx(list(truth.values()), abs=5)
    (lev,) = doc.levels
    summary = lev["held_learned_fit"]["11"]["color"]
    assert summary["n"] == 2 and summary["median"] == pytest.approx(np.median(fits))
    assert f"{summary['median']:,.0f}" in tables(doc).splitlines()[2].split("|")[2]
    learning_figure(doc, tmp_path / "learning.png")  # the dashed line on the held-out panel too
    assert (tmp_path / "learning.png").stat().st_size > 0
    import figures.study as fs

    drawn = {}
    monkeypatch.setattr(fs, "save", lambda fig, out: drawn.setdefault("fig", fig))
    fs.learning_figure(doc, tmp_path / "learning.png")
    top = [t for ax in drawn["fig"].axes for t in ax.child_axes]  # the secondary axes
    assert all(t.get_xlabel().startswith("swept: Δcolor") for t in top)
    assert len(top) == 2 and [t.get_text() for t in top[0].get_xticklabels()] == ["0.5"]


@pytest.mark.slow  # long end to end: run with -m slow
def test_only_studies_a_slice_and_says_so(sweep, capsys):
    doc = study(sweep, only="sep_color=0.8")
    assert {r["run"] for r in doc.runs} == {"seed=0,sep.color=0.8", "seed=1,sep.color=0.8"}
    assert [lev["sep_color"] for lev in doc.levels] == [0.8] and doc.only == "sep_color=0.8"
    assert study(sweep).only == ""  # the whole sweep
    assert len(study(sweep).relations["11"][0]["pairs"]) == 2  # the elicited runs are at 0.8
    assert (
        study(sweep, only="sep_color=0.3").relations["11"][0]["pairs"] == []
    )  # none in this slice
    assert main([str(sweep), "--by", "sep_color", "--only", "seed=1,sep.color=0.3"]) == 0
    out = sweep / "study-seed=1,sep.color=0.3.json"
    assert json.loads(out.read_text())["only"] == "seed=1,sep.color=0.3"
    assert not (sweep / "study.json").exists()  # the whole sweep's record is not overwritten
    assert "wrote" in capsys.readouterr().out


@pytest.mark.parametrize(
    "only, message",
    [
        ("sep_color=0.5", "no run of .*covariates.csv has sep_color = 0.5"),
        ("bogus-run", "not a run of .*covariates.csv"),
    ],
)
def test_only_names_what_is_wrong(sweep, only, message):
    with pytest.raises(Exception, match=message):
        study(sweep, only=only)


def test_runs_sharing_a_level_in_a_panel_are_named_by_their_ids():
    from figures.study import run_names

    runs = [
        {"run": "seed=0,sep.color=0.3", "sep_color": 0.3},
        {"run": "seed=0,sep.color=0.5", "sep_color": 0.5},
        {"run": "sep.size=0.2,seed=0", "sep_color": 0.5},
    ]
    assert run_names(runs, "sep_color") == [
        "Δcolor 0.3",
        "seed=0,sep.color=0.5",
        "sep.size=0.2,seed=0",
    ]


def test_the_leave_out_figure_names_the_left_out_setting_as_the_text_does():
    from figures.predict import _leave_out_title
    from fitting.records import LeaveOutRecord

    root = Path(__file__).resolve().parents[2]
    doc = LeaveOutRecord.read(root / "results/study-small/validation/laws/eq1/leave_out.json")
    assert _leave_out_title(doc).startswith("leave one Δcolor out")
