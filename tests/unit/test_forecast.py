"""fitting.forecast: each method on runs whose behavior step is known, the cut respected, bad input refused."""

from pathlib import Path

import numpy as np
import pytest

from fitting import forecast

from fitting.analyses import forecast_baselines as fb, forecast_methods as fm
from fitting.analyses.events import Event
from core.trajectory import Trajectory

RUN = Path(__file__).parents[2] / "results/study-small/weak-cpu/runs/sep.color=0.2,seed=1"


def _run(cross=6000.0, width=400.0, learned=(1500.0, 3000.0), end=10000.0):
    """Naive trajectories: class 11's accuracy a logistic crossing 0.5 at ``cross``; the training classes learn
    color at learned[0] and size at learned[1]."""
    steps = np.arange(0.0, end + 1, 250.0)
    noise = np.random.default_rng(1).normal(
        0, 0.03, steps.size
    )  # a probe reads 32 samples: never exact
    acc = np.clip(1 / (1 + np.exp(-(steps - cross) / width)) + noise, 0, 1)
    out = [Trajectory(steps, np.full((steps.size, 2), 0.5), ("color", "size"), "11", accuracy=acc)]
    for label in ("00", "01", "10"):
        target = np.array([float(label[0]), float(label[1])])
        z = np.where((steps[:, None] >= np.array(learned)), target, 0.5)
        out.append(Trajectory(steps, z, ("color", "size"), label, accuracy=np.ones(steps.size)))
    return out


def forecast_doc(run, **changes) -> dict:
    """A forecast.json's fields: the clock's forecast of 3,400 [3,000, 4,000] read to 2,000."""
    return (
        dict(
            run=str(run),
            at=2000.0,
            horizon=5000.0,
            observed_behavior_step=None,
            behavior_step=3400.0,
            interval=[3000.0, 4000.0],
            p_compose=0.8,
            method="clock",
            methods=[],
        )
        | changes
    )


def test_the_reading_sees_nothing_past_the_cut():
    r = fm.reading(_run(), 4000.0)
    assert r.step.max() <= 4000 and r.behavior is None
    assert r.clocks == {"color": 1500.0, "size": 3000.0}
    assert fm.reading(_run(), 9000.0).behavior in (6000.0, 6250.0)  # 0.5 at 6000, read with noise


def test_logistic_extrapolation_brackets_a_crossing_near_its_data():
    # 25 bootstrap fits, not the forecast's 100 (3.3 s a call): the same code, a coarser interval
    f = fb.logistic(fm.reading(_run(), 5750.0), horizon=10000.0, n_boot=25)
    assert f.step == pytest.approx(6125.0, rel=0.05) and f.p_compose > 0.5
    lo, hi = f.interval
    assert lo <= 6250.0 and (hi is None or hi >= 6000.0)
    early = fb.logistic(fm.reading(_run(), 4000.0), horizon=10000.0, n_boot=25)
    assert (
        early.step is None
    )  # before the rise the curve says nothing of a crossing: the baseline's weakness


def _pool(factor=2.0, n=12, seed=0):
    rng = np.random.default_rng(seed)
    events = []
    for i in range(n):
        t_slow = float(rng.uniform(2000, 5000))
        b = factor * t_slow * float(np.exp(rng.normal(0, 0.05)))
        events.append(
            {
                "seed": i,
                "sep": {"color": 0.5, "size": 0.4},
                "concept_steps": {"color": Event(1000.0, 1e4), "size": Event(t_slow, 1e4)},
                "behavior": Event(b, 1e4),
                "capability": Event(b - 500.0, 1e4),
            }
        )
    return fm.Pool(events)


def test_the_clock_method_learns_the_factor_and_conditions_on_the_cut():
    pool = _pool(factor=2.0)
    a, sd = pool.clock_fit()
    assert np.exp(a) == pytest.approx(2.0, rel=0.05) and sd < 0.1
    r = fm.reading(_run(cross=6000.0, learned=(1500.0, 3000.0)), 4000.0)
    f = fm.clock(r, pool, horizon=10000.0)
    assert f.step == pytest.approx(6000.0, rel=0.05) and f.interval[0] <= 6000 <= f.interval[1]
    early = fm.clock(fm.reading(_run(learned=(1500.0, 3000.0)), 2500.0), pool, horizon=10000.0)
    assert "not yet learned" in early.note and early.interval[0] >= 2500.0


def test_lag_and_setting_use_the_pool():
    pool = _pool()
    r = fm.reading(_run(), 4000.0, sep={"color": 0.5, "size": 0.4})
    assert fm.lag(r, pool, 10000.0).step is None  # no capability logged in this run
    s = fb.setting(r, pool, 10000.0)
    assert s.step is not None and s.note == "12 runs"


@pytest.mark.usefixtures("few_logistic_bootstraps")
def test_a_committed_run_already_composed_says_so(capsys):
    assert forecast.main([str(RUN)]) == 0
    out = capsys.readouterr().out
    assert "class 11 shown by naive prompting at 7,134" in out
    doc = forecast.forecast(RUN, 6000.0, None, None)
    assert doc["observed_behavior_step"] is None and doc["horizon"] == 15000.0
    # without a pool there is no forecast (never the learning curve's confident p); the baselines still run
    assert doc["method"] == "none" and doc["at"] == 6000.0 and doc["p_compose"] is None
    assert "no forecast" in forecast.summary(doc)
    assert {b["method"] for b in doc["baselines"]} == {"logistic", "lc-naive"}
    # with no flag the package's reference runs are the pool, the run itself left out
    pool, info = forecast.default_pool(RUN)
    # 53 reference runs less the run and its seed's two repeats at its setting (validation, the H100 sweep)
    assert info["runs"] == 50 and info["preset"] == "small" and pool is not None
    doc = forecast.forecast(RUN, 6000.0, None, pool, "11", info)
    assert doc["method"] == "anchor" and doc["pool"]["runs"] == 50
    assert {b["method"] for b in doc["baselines"]} == set(fm.BASELINES)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["nowhere"], "no trajectories.csv"),
        ([str(RUN), "--at", "-5"], "--at -5"),
        ([str(RUN), "--at", "6000", "--horizon", "100"], "--horizon 100 is before --at 6,000"),
    ],
)
def test_bad_input_is_one_line(argv, message, capsys):
    assert forecast.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_the_forecast_figure_draws_the_path_and_every_methods_row(tmp_path, capsys):
    """figures.forecast: the path read up to the cut, the later path faded, one row per method."""
    import numpy as np

    from figures.forecast import main as figure
    from fitting.records import ForecastRecord
    from core.trajectory import Trajectory, write_csv

    run = tmp_path / "run"
    steps = np.arange(0, 5001, 250)
    acc = 1 / (1 + np.exp(-(steps - 3500) / 300))
    z = np.stack([acc, acc], axis=1)
    write_csv(
        run / "trajectories.csv", [Trajectory(steps, z, ("color", "size"), "11", accuracy=acc)]
    )
    methods = [
        {"method": "clock", "behavior_step": 3400.0, "interval": [3000.0, None], "p_compose": 0.8},
        {
            "method": "lag",
            "behavior_step": None,
            "interval": None,
            "p_compose": None,
            "note": "no capability",
        },
    ]
    doc = forecast_doc(run, interval=[3000.0, None], methods=methods)
    ForecastRecord.from_json(doc).write(run / "forecast.json")
    assert figure([str(run / "forecast.json")]) == 0
    assert (run / "forecast.png").stat().st_size > 10_000
    assert figure([str(run / "forecast.json"), "--class", "01"]) == 2  # not in the log
    err = capsys.readouterr().err
    assert (
        "--class 01: no naive or over-prompted accuracy" in err and "(classes with one: 11)" in err
    )
    doc["class"] = "01"  # a forecast of another class draws that class by default
    ForecastRecord.from_json(doc).write(tmp_path / "other.json")
    assert figure([str(tmp_path / "other.json"), "--out", str(tmp_path / "o.png")]) == 2
    assert "--class 01:" in capsys.readouterr().err
    doc["run"] = str(tmp_path / "moved")
    ForecastRecord.from_json(doc).write(tmp_path / "moved.json")
    assert figure([str(tmp_path / "moved.json"), "--out", str(tmp_path / "x.png")]) == 2


@pytest.mark.parametrize("step", [float("nan"), "5000", True])
def test_the_forecast_figure_refuses_a_step_that_is_not_a_number(tmp_path, capsys, step):
    """Issue #74: figures.forecast drew a NaN step and the string "5000" (as text on a numeric axis)."""
    import json

    from figures.forecast import main as figure
    from core.trajectory import Trajectory, write_csv

    run = tmp_path / "run"
    steps = np.arange(0, 5001, 250)
    flat = np.zeros(21)
    write_csv(
        run / "trajectories.csv",
        [Trajectory(steps, np.zeros((21, 2)), ("color", "size"), "11", accuracy=flat)],
    )
    method = {
        "method": "clock",
        "behavior_step": step,
        "interval": [3000.0, 4000.0],
        "p_compose": 0.8,
    }
    doc = forecast_doc(run, methods=[method])
    (run / "forecast.json").write_text(json.dumps(doc))  # json writes NaN as the bare word NaN
    assert figure([str(run / "forecast.json")]) == 2
    err = capsys.readouterr().err
    assert "behavior_step" in err and "is not a step" in err and err.count("\n") == 1, err
    assert not (run / "forecast.png").exists()


@pytest.mark.slow  # four forecasts, 10 s
def test_watch_forecasts_at_each_new_checkpoint_until_the_class_shows(tmp_path, capsys):
    """--watch: a run in training gains checkpoints between looks; one line per new checkpoint, none for a look
    that finds nothing new, and it stops once naive prompting shows the class."""
    from core.trajectory import write_csv

    run, full = tmp_path / "run", _run(cross=3000.0, end=6000.0)
    cuts = iter([1500.0, 1500.0, 2500.0, 4500.0, 6000.0])

    def write_to(cut):
        write_csv(run / "trajectories.csv", [_cut(t, cut) for t in full])

    write_to(next(cuts))

    def sleep(_):
        cut = next(cuts)
        if cut != 1500.0:  # the second look finds the same log
            write_to(cut)

    assert (
        forecast.watch(run, 1.0, 6000.0, None, "11", tmp_path / "f.json", sleep=sleep, looks=9) == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and "shown by naive prompting" in lines[-1]
    assert (tmp_path / "f.json").exists()


def _cut(t, at):
    keep = t.step <= at
    return Trajectory(t.step[keep], t.z[keep], t.concepts, t.label, accuracy=t.accuracy[keep])


def test_watch_refuses_a_bad_interval_and_a_cut(capsys):
    assert forecast.main([str(RUN), "--watch", "0"]) == 2
    assert forecast.main([str(RUN), "--watch", "5", "--at", "300"]) == 2
    err = capsys.readouterr().err
    assert "--watch 0: give the seconds" in err and "leave --at out" in err


def test_the_capability_cut_is_the_capability_curve_s_checkpoint_that_confirms_it():
    """The capability step is the first of the 2 checkpoints that hold it: a log cut there cannot show it yet. The
    cut is the next checkpoint of the capability curve, which over-prompting may log less often than naive
    prompting (here every 400 steps against 250)."""
    from fitting.forecast_calibration import cut_steps

    steps = np.array([2600.0, 3000.0, 3400.0, 4000.0])
    over = Trajectory(
        steps,
        np.full((4, 2), 0.5),
        ("color", "size"),
        "11",
        "overprompt",
        accuracy=np.array([0.1, 0.6, 0.7, 0.9]),
    )
    e = {"memorized_step": 2000.0, "capability": Event(3000.0, 1e4)}
    assert cut_steps(e, [*_run(), over])["capability"] == 3400.0  # naive's next checkpoint is 3,250
    assert (
        cut_steps(e, [*_run(), _cut(over, 3000.0)])["capability"] is None
    )  # not confirmed in the log
    assert cut_steps({"capability": None}, _run())["capability"] is None


def test_the_live_memorization_cut_needs_2_checkpoints_read_as_another_corner():
    """memorized-live: the held-out class read as one training corner in half its samples at 2 checkpoints in a
    row, once the training classes are drawn (from 1,500 here), dated to the second; the first such moment of
    any corner; nothing from a single checkpoint or before the training classes are drawn."""
    from fitting.forecast_calibration import memorized_live

    runs = _run(learned=(1000.0, 1500.0))
    for t in runs[1:]:
        t.accuracy[t.step < 1500] = 0.0
    held = runs[0]
    share10 = np.where((held.step >= 2000) & (held.step != 2250), 0.7, 0.1)
    share10[held.step == 1000] = share10[held.step == 1250] = (
        0.9  # before the training classes are drawn
    )
    share01 = np.where(held.step >= 3500, 0.6, 0.0)
    held.extra.update({"share_10": tuple(map(str, share10)), "share_01": tuple(map(str, share01))})
    assert memorized_live(runs) == 2750.0  # 2,000 alone (2,250 below), then 2,500 and 2,750
    held.extra["share_10"] = tuple("0.1" for _ in held.step)
    assert memorized_live(runs) == 3750.0
    held.extra.clear()
    assert memorized_live(runs) is None


@pytest.mark.usefixtures("few_logistic_bootstraps")
def test_a_forecast_reads_nothing_past_the_cut_of_a_committed_run(tmp_path):
    """The log cut at 6,000 and the whole log, forecast at 6,000, give the same forecast."""
    import shutil

    from core.trajectory import read_csv, write_csv

    copy = tmp_path / "copy"
    shutil.copytree(RUN, copy)
    write_csv(copy / "trajectories.csv", fm.truncate(read_csv(RUN / "trajectories.csv"), 6000.0))
    whole, cut = (forecast.forecast(r, 6000.0, None, None) for r in (RUN, copy))
    assert {**whole, "run": ""} == {**cut, "run": ""}


@pytest.mark.usefixtures("few_logistic_bootstraps")
def test_a_run_without_its_length_needs_a_horizon(tmp_path, capsys):
    """Without config.json, the log's last step would tell a forecast at an earlier cut how long the run went on."""
    from core.trajectory import write_csv

    write_csv(tmp_path / "trajectories.csv", _run())
    assert forecast.main([str(tmp_path), "--at", "4000"]) == 2
    assert "no config.json giving the run's steps: give --horizon" in capsys.readouterr().err
    assert forecast.main([str(tmp_path), "--at", "4000", "--horizon", "0"]) == 2
    assert "--horizon 0: give the step the forecast is for" in capsys.readouterr().err
    assert forecast.main([str(tmp_path), "--at", "4000", "--horizon", "10000"]) == 0


def test_before_the_slower_concept_the_clock_draws_it_from_the_pool_or_says_nothing():
    pool = _pool(factor=2.0)  # T_slow uniform on 2,000-5,000, behavior 2 T_slow
    r = fm.reading(_run(learned=(1500.0, 4500.0), cross=9000.0), 3500.0)
    assert r.clocks["size"] is None
    f = fm.clock(r, pool, horizon=15000.0)
    later = pool.slow_clocks()[pool.slow_clocks() > 3500.0]
    assert "T_slow from" in f.note and f.step == pytest.approx(2 * np.median(later), rel=0.1)
    assert f.interval[0] >= 2 * 3500.0 * 0.9
    none = fm.clock(fm.reading(_run(learned=(1500.0, 6000.0)), 5500.0), pool, horizon=15000.0)
    assert (none.step, none.p_compose) == (None, None) and "fewer than 3" in none.note


def test_the_setting_method_forecasts_nothing_where_every_peer_composed_before_the_cut():
    pool = _pool()  # behavior 4,000-10,000
    r = fm.reading(_run(cross=20000.0, end=12000.0), 12000.0, sep={"color": 0.5, "size": 0.4})
    f = fb.setting(r, pool, 15000.0)
    assert f.step is None and f.p_compose is None and "composed by the cut" in f.note
    assert fm.Pool(pool.events).same_setting({}) == []  # a run of unknown separations has no peers


@pytest.mark.slow  # two forecasts, 13 s; the floor: test_a_cut_between_checkpoints_floors_at_the_unconfirmed_one
def test_an_unconfirmed_reading_at_the_cut_is_pending_and_bounds_the_methods(tmp_path, capsys):
    """At the first checkpoint read at >= 0.5 the behavior is not confirmed (it needs 2): the forecast says it is
    pending there, and no method puts it before that checkpoint."""
    run = _run(cross=6000.0, width=30.0)
    first = float(run[0].step[run[0].accuracy >= 0.5][0])
    r = fm.reading(run, first)
    assert r.behavior is None and r.floor == first
    from core.trajectory import write_csv

    write_csv(tmp_path / "trajectories.csv", run)
    doc = forecast.forecast(tmp_path, first, 10000.0, _pool())
    assert doc["pending_behavior_step"] == first and doc["observed_behavior_step"] is None
    assert all(m["interval"] is None or m["interval"][0] >= first for m in doc["methods"])
    assert "one more confirms it there" in forecast.summary(doc)
    assert (
        forecast.forecast(tmp_path, first - 250.0, 10000.0, None)["pending_behavior_step"] is None
    )


def test_the_cli_drops_the_run_its_copy_and_its_seed_s_repeat_from_the_pool(tmp_path):
    import json
    import shutil

    copy, repeat = tmp_path / "copy", tmp_path / "repeat"
    shutil.copytree(RUN, copy)
    shutil.copytree(RUN, repeat)
    cfg = json.loads((RUN / "config.json").read_text())
    cfg["train"]["seed"] = 99  # another seed: only its log's bytes make it the run's copy
    (copy / "config.json").write_text(json.dumps(cfg))
    lines = (repeat / "trajectories.csv").read_text().splitlines()
    (repeat / "trajectories.csv").write_text("\n".join(lines[:-1]) + "\n")  # another log, same seed
    assert forecast._others(RUN, [RUN, copy, repeat], "11") == []
    (repeat / "config.json").write_text(json.dumps(cfg))
    assert [e["seed"] for e in forecast._others(RUN, [RUN, copy, repeat], "11")] == [99]


def test_a_peer_that_composed_at_the_cut_is_not_one_that_had_not_yet():
    """The run reads below 0.5 at the cut; a peer whose behavior step is the cut had composed there, so it is not
    among the peers that had not composed by then."""
    pool = _pool()
    for e, b in zip(pool.events, [6000.0, 6000.0, 7000.0, 9000.0] + [5000.0] * 8):
        e["behavior"] = Event(b, 1e4)
    r = fm.reading(_run(cross=20000.0), 6000.0, sep={"color": 0.5, "size": 0.4})
    assert not r.pending and fb.setting(r, pool, 10000.0).step == 8000.0  # of 7,000 and 9,000


@pytest.mark.usefixtures("few_logistic_bootstraps")
def test_a_cut_between_checkpoints_floors_at_the_unconfirmed_one():
    """Cut at 6,100 between checkpoints 6,000 (read at >= 0.5, unconfirmed) and 6,250: the behavior may be dated
    6,000, before the cut; the methods are floored there and a same-setting peer at 6,050 still counts."""
    run = _run(cross=6000.0, width=30.0)
    first = float(run[0].step[run[0].accuracy >= 0.5][0])
    r = fm.reading(run, first + 100.0, sep={"color": 0.5, "size": 0.4})
    assert r.pending and r.floor == first and r.at == first + 100.0
    pool = _pool()
    for e, b in zip(pool.events, [first + 50.0, first + 50.0, 9000.0] + [5000.0] * 9):
        e["behavior"] = Event(b, 1e4)
    assert fb.setting(r, pool, 10000.0).step == first + 50.0  # median of first + 50 (x2) and 9,000
    assert fb.logistic(r, 10000.0).interval[0] >= first
