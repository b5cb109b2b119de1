"""The registered outside-range test: censored fits, concept clocks, the event laws' recovery of a known truth, and a
scoring rule that passes a right law, fails a wrong one and fails the covariate-blind mean."""

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fitting.estimators import censored
from fitting.estimators import event_laws as el
from fitting import outside
from fitting.analyses import outside_pool
from fitting.analyses.events import Event, concept_steps, run_events
from fitting.analyses.outside_score import error, margin, observed, score
from core.trajectory import Trajectory
from outside_cases import fake_registration, fake_runs, valid_git


def test_censored_fit_recovers_a_line_that_plain_least_squares_gets_wrong():
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 2, 400)
    y = 1.0 + 0.8 * x + rng.normal(0, 0.3, x.size)
    bound = 1.9
    cens = y > bound
    y_seen = np.where(cens, bound, y)
    mean = lambda th, cov: th[0] + th[1] * cov["x"]  # noqa: E731
    fit = censored.fit(mean, np.zeros(2), y_seen, cens, {"x": x})
    assert cens.mean() > 0.25
    np.testing.assert_allclose(fit.theta, [1.0, 0.8], atol=0.08)
    assert abs(fit.sigma - 0.3) < 0.04
    naive = np.polyfit(x, y_seen, 1)
    assert (
        naive[0] < 0.7
    )  # ignoring the censoring flattens the slope: the test would notice a fit that ignores it


def test_censored_fit_refuses_when_nothing_was_observed():
    with pytest.raises(ValueError, match="every run is censored"):
        censored.fit(
            lambda th, cov: th[0] + 0 * cov["x"],
            np.zeros(1),
            np.ones(3),
            np.ones(3, bool),
            {"x": np.ones(3)},
        )


@pytest.mark.parametrize(
    "values, cens, expected",
    [
        ([1, 2, 3, 4], [0, 0, 0, 0], (2.5, False)),
        ([1, 2, 3, 9], [0, 0, 0, 1], (2.5, False)),
        ([1, 2, 9, 9], [0, 0, 1, 1], (5.5, True)),  # the upper middle censored: a lower bound
        ([1, 9, 9, 9], [0, 1, 1, 1], (9.0, True)),
        ([5, 1, 3], [0, 0, 0], (3.0, False)),
    ],
)
def test_censored_median(values, cens, expected):
    assert censored.median(np.array(values, float), np.array(cens, bool)) == expected


@given(st.lists(st.floats(0, 10), min_size=1, max_size=9))
def test_censored_median_without_censoring_is_the_median(values):
    med, bound = censored.median(np.array(values), np.zeros(len(values), bool))
    assert not bound
    assert med == pytest.approx(float(np.median(values)))


def _traj(label, steps, z):
    return Trajectory(
        step=np.array(steps), z=np.array(z, float), concepts=("color", "size"), label=label
    )


def test_concept_steps_find_the_first_held_checkpoint_and_count_unreadable_as_wrong():
    steps = [0, 100, 200, 300, 400, 500]
    nan = np.nan
    # color right from 100 on; size right at 200 only, then from 400 on (200 alone is not held)
    t00 = _traj(
        "00", steps, [[nan, nan], [0.05, 0.5], [0.1, 0.1], [0.0, 0.5], [0.0, 0.1], [0.0, 0.0]]
    )
    t01 = _traj(
        "01", steps, [[nan, nan], [0.1, 0.6], [0.0, 0.9], [0.0, 0.9], [0.0, 0.9], [0.0, 1.0]]
    )
    t10 = _traj(
        "10", steps, [[nan, nan], [0.9, 0.5], [0.95, 0.1], [1.0, 0.0], [nan, nan], [1.0, 0.0]]
    )
    t11 = _traj("11", steps, [[0.5, 0.5]] * 6)  # the held-out class is not a training class
    got = concept_steps([t00, t01, t10, t11])
    assert got == {
        "color": 100.0,
        "size": None,
    }  # 10 is unreadable at 400, so size never holds 2 checkpoints
    t10b = _traj(
        "10", steps, [[nan, nan], [0.9, 0.5], [0.95, 0.1], [1.0, 0.0], [1.0, 0.1], [1.0, 0.0]]
    )
    assert concept_steps([t00, t01, t10b]) == {"color": 100.0, "size": 400.0}


def _pool(truth_k=1.5, n_seeds=4, noise=0.1, seed=0):
    """Runs whose events follow the clock law exactly (up to lognormal noise): the truth is known."""
    rng = np.random.default_rng(seed)
    pool = []
    for dc, ds in [
        (0.2, 0.4),
        (0.3, 0.4),
        (0.4, 0.4),
        (0.6, 0.4),
        (0.8, 0.4),
        (0.5, 0.2),
        (0.5, 0.3),
        (0.5, 0.25),
    ]:
        tc, ts = 900 * dc**-1.0, 1400 * ds**-0.9
        for s in range(n_seeds):
            jitter = lambda: float(np.exp(rng.normal(0, noise)))  # noqa: E731
            end = 15000.0
            beh = truth_k * max(tc, ts) * jitter()
            pool.append(
                {
                    "run": f"r{dc}-{ds}-{s}",
                    "seed": s,
                    "sep": {"color": dc, "size": ds},
                    "probe_hash": "p",
                    "corner": "10" if tc < ts else "01",
                    "turn": Event(0.8 * max(tc, ts) * jitter(), end),
                    "capability": Event(0.9 * max(tc, ts) * jitter(), end),
                    "behavior": Event(beh, end) if beh < end else Event(None, end),
                    "concept_steps": {
                        "color": Event(tc * jitter(), end),
                        "size": Event(ts * jitter(), end),
                    },
                }
            )
    return pool


def test_the_clock_law_recovers_its_truth_outside_the_pool():
    pool = _pool()
    new = np.array([[0.15, 0.4], [0.8, 0.15]])
    coef, cov_new, fits = outside_pool.fit_all(pool, new, list(el.LAWS + el.BASELINES))
    np.testing.assert_allclose(coef[:, 1], [-1.0, -0.9], atol=0.1)
    truth = 1.5 * np.maximum(900 * new[:, 0] ** -1.0, 1400 * new[:, 1] ** -0.9)
    med = fits["behavior"]["clock"][0]
    np.testing.assert_allclose(np.log(med), np.log(truth), atol=0.1)
    assert fits["behavior"]["power"][2][1] == pytest.approx(
        1.0, abs=0.15
    )  # the exponent: the theory's 1
    blind = fits["behavior"]["blind"][0]
    assert (
        np.max(np.abs(np.log(blind) - np.log(truth))) > 0.3
    )  # the blind mean misses where the truth is far


def test_score_passes_a_right_law_and_the_blind_mean_would_fail():
    truth = [11000.0, 8000.0]
    reg = fake_registration(pred=truth, blind=[5800.0, 5800.0])
    v = score(reg, fake_runs(truth))
    law = v["events"]["behavior"]["methods"]["clock"]
    assert law["verdict"] == "pass" and law["coverage_verdict"] == "pass"
    blind_errors = v["events"]["behavior"]["methods"]["blind"]["errors_log"]
    assert (
        max(blind_errors) > reg["margins"]["behavior"]["delta_log"]
    )  # scored as a law, the blind mean fails
    assert v["corner"]["clock"]["verdict"] == "pass"


def test_score_fails_a_law_off_by_more_than_the_margin_even_when_it_beats_the_baselines():
    truth = [11000.0, 8000.0]
    reg = fake_registration(pred=[11000.0 * np.exp(0.3), 8000.0], blind=[4000.0, 4000.0])
    v = score(reg, fake_runs(truth))
    law = v["events"]["behavior"]["methods"]["clock"]
    assert law["beats_every_baseline"] and not law["within_margin"]
    assert law["verdict"] == "fail"


def test_score_fails_a_law_within_the_margin_that_a_baseline_beats():
    truth = [11000.0, 8000.0]
    reg = fake_registration(pred=[11000.0 * np.exp(0.1), 8000.0 * np.exp(-0.1)], blind=truth)
    law = score(reg, fake_runs(truth))["events"]["behavior"]["methods"]["clock"]
    assert law["within_margin"] and not law["beats_every_baseline"]
    assert law["verdict"] == "fail"


def test_a_censored_median_is_a_lower_bound():
    runs = fake_runs([20000.0, 20000.0])  # every run censored at 15,000
    obs = observed([r for r in runs if r["sep"]["color"] == 0.8], "behavior")
    assert obs["lower_bound"] and obs["median"] == pytest.approx(15000.0)
    assert error(16000.0, obs) == 0.0  # predicted past the bound: no error
    assert error(7500.0, obs) == pytest.approx(np.log(2))


def test_margin_is_the_spread_of_a_median_of_n_seeds():
    pool = [
        {"sep": {"color": 0.2, "size": 0.4}, "behavior": Event(v, 1e5)}
        for v in np.exp([8.0, 8.2, 8.4])
    ] + [
        {"sep": {"color": 0.3, "size": 0.4}, "behavior": Event(v, 1e5)} for v in np.exp([7.0, 7.2])
    ]
    m = margin(pool, "behavior", 8)
    ss = 0.08 + 0.02
    assert m["df"] == 3
    assert m["seed_sd_log"] == pytest.approx(np.sqrt(ss / 3))
    assert m["delta_log"] == pytest.approx(2 * 1.2533 * np.sqrt(ss / 3) / np.sqrt(8))


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["register", "x", "--setting", "color=abc,size=0.1", "--steps", "1", "--out", "o.json"],
            "color",
        ),
        (
            ["register", "x", "--setting", "color=0.8", "--steps", "1", "--out", "o.json"],
            "each of color, size",
        ),
        (
            ["register", "x", "--setting", "shape=1,size=0.1", "--steps", "1", "--out", "o.json"],
            "not a concept",
        ),
        (
            ["register", "x", "--setting", "color=0.8,size=0.1", "--steps", "0", "--out", "o.json"],
            "--steps",
        ),
    ],
)
def test_bad_settings_are_refused_in_one_line(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        code = outside.main(argv)
        raise SystemExit(code)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_score_refuses_a_run_of_a_setting_it_did_not_register():
    reg = fake_registration(pred=[1.0, 1.0], blind=[1.0, 1.0])
    runs = fake_runs([1000.0, 1000.0])
    runs[0]["sep"] = {"color": 0.5, "size": 0.4}
    with pytest.raises(ValueError, match="not one the registration predicts"):
        score(reg, runs)


def test_register_then_score_end_to_end_on_a_known_truth():
    pool = _pool(n_seeds=8, noise=0.2)  # the real pool's seed spread (0.15-0.22 in log steps)
    settings = [{"color": 0.8, "size": 0.15}, {"color": 0.15, "size": 0.4}]
    doc = outside.register_pool(pool, {"probe_hash": "p"}, settings, [15000, 15000], n_boot=20)
    doc = json.loads(json.dumps(doc))  # what is committed is plain JSON
    assert all(v["blind_would_fail"] for law in doc["can_fail"]["behavior"].values() for v in [law])
    truth = [1.5 * max(900 / s["color"], 1400 * s["size"] ** -0.9) for s in settings]
    v = score(doc, fake_runs(truth, corner=["10", "01"]))
    assert v["events"]["behavior"]["methods"]["clock"]["verdict"] == "pass"
    assert v["corner"]["clock"]["verdict"] == "pass"
    wrong = score(doc, fake_runs([t * 2.5 for t in truth]))
    assert wrong["events"]["behavior"]["methods"]["clock"]["verdict"] == "fail"


def test_the_events_of_a_committed_run_are_the_ladders_reading():
    run = Path(__file__).parents[2] / "results/study-small/weak-cpu/runs/sep.color=0.2,seed=1"
    e = run_events(run)
    assert e["corner"] == "01" and e["finished"] and e["sep"] == {"color": 0.2, "size": 0.4}
    assert (e["behavior"].step, e["capability"].step) == (7134.0, 4400.0)
    assert {c: v.step for c, v in e["concept_steps"].items()} == {"color": 5154.0, "size": 4400.0}
    assert e["probe_hash"] == "93e98c6f35e88932" and e["device"] == ["cpu (2 threads) bf16"]


def test_an_event_at_step_0_is_a_step_not_a_censored_one():
    assert Event(0.0, 100.0).value == 0.0 and Event(None, 100.0).value == 100.0


def test_the_rule_s_text_is_still_the_registered_one():
    """The registration carries the scoring rule's text (outside_score's docstring): editing it, even to rename a
    module it names, would score the runs by words other than the registered ones."""
    from fitting.analyses import outside_score

    registered = Path(__file__).resolve().parents[2] / "results/study-small/outside"
    doc = json.loads((registered / "preregistration.json").read_text())
    assert doc["rule"] == " ".join(outside_score.__doc__.split())


def test_the_queue_skips_a_run_kept_whole_and_trains_a_cut_one_again(tmp_path):
    """A new checkout has no runs/ folder: queue.py must read a committed run as finished (else it trains it again
    and overwrites the kept copy), and a kept copy cut short as not finished."""
    import importlib.util
    import shutil

    here = Path(__file__).resolve().parents[2] / "results/study-small/outside"
    spec = importlib.util.spec_from_file_location("outside_queue", here / "queue.py")
    queue = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(queue)
    kept = here / "runs/color0.8-size0.15-seed10"
    assert queue.kept_whole(kept)
    cut = tmp_path / "cut"
    shutil.copytree(kept, cut)
    lines = (cut / "trajectories.csv").read_text().splitlines()
    (cut / "trajectories.csv").write_text(
        "\n".join(line for line in lines if not line.startswith("15000,")) + "\n"
    )
    assert not queue.kept_whole(cut)
    assert not queue.kept_whole(tmp_path / "missing")


def test_the_queue_starts_no_run_its_hours_cannot_hold():
    """Where runs/ is lost with the session, a run started too late is work lost: --hours starts a run only where
    RUN_MINUTES (or the longest run so far, if longer) still fits, and refuses a non-positive budget."""
    import argparse
    import importlib.util

    here = Path(__file__).resolve().parents[2] / "results/study-small/outside"
    spec = importlib.util.spec_from_file_location("outside_queue", here / "queue.py")
    queue = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(queue)
    run = queue.RUN_MINUTES * 60
    assert queue.room_for_one(run + 1, []) == (True, run)
    assert queue.room_for_one(run - 1, []) == (False, run)
    assert queue.room_for_one(run + 1, [0.5]) == (True, run)  # a skipped run's instant says nothing
    assert queue.room_for_one(run + 1, [run + 60]) == (
        False,
        run + 60,
    )  # a slower machine: its own pace
    assert queue.room_for_one(float("inf"), [run]) == (True, run)
    for bad in ("0", "-1", "nan"):
        with pytest.raises(argparse.ArgumentTypeError, match="--hours must be a positive"):
            queue.hours(bad)
    assert queue.hours("2.5") == 2.5


def test_the_verdict_figure_draws_each_setting_s_predictions_and_runs(tmp_path, capsys):
    """figures.outside reads verdict.json alone: per event and setting every method's registered median and 80%
    interval, each test run's step (an open triangle where censored), the observed median with its margin; an
    interim verdict says so, and a verdict written without the predictions is refused in one line."""
    from fitting.records import VerdictRecord
    from figures import outside as fig_outside
    from fitting.analyses.outside_score import with_validity

    truth = [11000.0, 16000.0]  # the second setting's runs all end first: censored at 15,000
    reg = fake_registration(pred=[11000.0, 9000.0], blind=[5800.0, 5800.0])
    v = with_validity({**score(reg, fake_runs(truth, n=5)), **valid_git}, reg)
    path = VerdictRecord.from_json(json.loads(json.dumps(v))).write(tmp_path / "verdict.json")
    assert VerdictRecord.read(path).runs[0]["events"]["behavior"]["step"] is not None
    figure = fig_outside.draw(VerdictRecord.read(path))
    left, right = figure.axes
    assert "observed 11,0" in left.get_title() and "at least 15,000" in right.get_title()
    marks = {
        line.get_marker(): len(line.get_xdata())
        for line in right.lines
        if line.get_marker() in "o^"
    }
    assert marks["^"] == 5  # the five censored runs
    assert "INTERIM" in figure._suptitle.get_text()  # 5 seeds of 8: not the verdict
    assert "clock" in left.get_ylabel() and "pass" not in right.get_ylabel()
    assert fig_outside.main([str(path)]) == 0
    assert (tmp_path / "verdict.png").stat().st_size > 10_000
    old = {k: x for k, x in json.loads(path.read_text()).items() if k != "settings"}
    (tmp_path / "old.json").write_text(json.dumps(old))
    with pytest.raises(SystemExit) as exit_:
        raise SystemExit(fig_outside.main([str(tmp_path / "old.json")]))
    assert exit_.value.code == 2 and "score it again" in capsys.readouterr().err


def test_the_mended_readings_are_scored_beside_the_verdict_never_as_it(tmp_path):
    """errata.md item 11: fitting.outside score also scores the runs read by the mended readers (the package's
    defaults), into verdict.json's ``mended`` (a pool run here, under a registration of its own setting); the
    verdict's own fields are the registered readers'."""
    from fitting.records import VerdictRecord
    from fitting.analyses.outside_score import with_validity

    run = Path(__file__).parents[2] / "results/study-small/weak-cpu/runs/sep.color=0.2,seed=1"
    reg = fake_registration(pred=[11000.0, 9000.0], blind=[5800.0, 5800.0])
    reg["settings"][1]["sep"] = {"color": 0.2, "size": 0.4}
    v = with_validity({**score(reg, [run_events(run, as_registered=True)]), **valid_git}, reg)
    v["mended"] = outside.mended(reg, [run])
    assert v["mended"]["rule"].startswith("errata.md item 11") and not v["valid"]
    # this run reads alike either way: a corner read (share > 0), one protocol
    assert v["mended"]["runs"] == v["runs"] and v["mended"]["events"] == v["events"]
    path = VerdictRecord.from_json(json.loads(json.dumps(v))).write(tmp_path / "verdict.json")
    assert VerdictRecord.read(path).mended["summary"] == v["summary"].split("\n", 1)[1]


def test_a_mended_reading_that_fails_never_stops_the_verdict(monkeypatch):
    def broken(run, label="11", *, as_registered=False):
        raise ValueError("a reader's bug")

    monkeypatch.setattr(outside, "run_events", broken)
    reg = fake_registration(pred=[11000.0, 9000.0], blind=[5800.0, 5800.0])
    assert outside.mended(reg, [Path("run")]) == {
        "rule": "errata.md item 11 (a), (b): the readers as mended; reporting only",
        "summary": "not read: ValueError: a reader's bug",
    }


def test_score_reads_the_verdict_as_registered_and_the_report_beside_it_as_mended(
    tmp_path, monkeypatch
):
    """After issue #57's test was scored the mended readers became the defaults; `fitting.outside score` still reads
    the verdict's runs as registered. On a committed run where the two memorized readers part (two corners at the
    same best share: column order names 01, the first reached is 10), the verdict names 01 and the report beside
    it 10."""
    from types import SimpleNamespace

    run = Path(__file__).parents[2] / "results/study-small/dsize/runs/sep.size=0.4,seed=2"
    reg = fake_registration(pred=[11000.0, 9000.0], blind=[5800.0, 5800.0])
    reg["settings"][1]["sep"] = {"color": 0.5, "size": 0.4}
    monkeypatch.setattr(
        outside.RegistrationRecord, "read", lambda path: SimpleNamespace(to_json=lambda: reg)
    )
    seen = []
    real = outside.run_events
    monkeypatch.setattr(outside, "run_events", lambda r, **kw: seen.append(kw) or real(r, **kw))
    out = tmp_path / "verdict.json"
    assert outside.main(["score", str(tmp_path / "reg.json"), str(run), "--out", str(out)]) == 0
    assert seen == [{"as_registered": True}, {}]
    v = json.loads(out.read_text())
    assert [r["corner"] for r in v["runs"]] == ["01"] and [
        r["corner"] for r in v["mended"]["runs"]
    ] == ["10"]
