"""The forecast's default (`anchor`) and its baselines on pools with a known truth: the learning-curve ensemble finds
a known crossing, the anchor recovers the clocks and lags it was simulated with, the Kaplan-Meier baseline matches
a hand count, a reference pool round-trips and a pool of another kind is named, the registered rule fails when it
should."""

import shutil
from pathlib import Path

import numpy as np
import pytest
from scipy import special

from fitting import forecast, forecast_registered as fr
from fitting.analyses import forecast_baselines as fb
from fitting.analyses import forecast_methods as fm, reference_pool
from fitting.analyses.events import Event
from fitting.estimators import lc_ensemble


def _curve(cross, width=500.0, top=0.95, end=10000.0, noise=0.02, seed=0):
    steps = np.arange(250.0, end + 1, 250.0)
    rng = np.random.default_rng(seed)
    y = top * special.expit((steps - cross) / width) + rng.normal(0, noise, steps.size)
    return steps, np.clip(y, 0, 1)


@pytest.mark.parametrize("cross", [5000.0, 7000.0])
def test_the_learning_curve_ensemble_finds_a_known_crossing(cross):
    # the curve is seen up to just past its rise: the ensemble's median crossing is near the truth and its
    # 80% band holds it
    steps, y = _curve(cross)
    keep = steps <= cross - 250
    c = lc_ensemble.crossings(steps[keep], y[keep], 0.5, 15000.0, seed=1)
    lo, med, hi = np.quantile(c, [0.1, 0.5, 0.9], method="inverted_cdf")
    assert lo <= cross + 250 and hi >= cross - 250
    assert abs(med - cross) < 1500


def test_the_learning_curve_ensemble_weights_sum_to_one_and_a_flat_curve_rarely_crosses():
    steps, y = _curve(50000.0)  # flat at 0 within the data
    members = lc_ensemble.fit(steps, y)
    assert sum(m.weight for m in members) == pytest.approx(1.0)
    c = lc_ensemble.crossings(steps, y, 0.5, 10000.0)
    assert np.mean(np.isfinite(c) & (c <= 10000.0)) < 0.5
    with pytest.raises(ValueError, match="fewer than 5"):
        lc_ensemble.fit(steps[:3], y[:3])


def _pool(n=40, seed=0, lag_color=1.8, lag_size=1.2):
    """Runs whose clocks follow log T_c = log(1000) - log(Δ_c / 0.8) (+ noise) and whose behavior is T_slow times
    a lag that depends on which concept is slower."""
    rng = np.random.default_rng(seed)
    events = []
    for i in range(n):
        sep = {"color": float(rng.uniform(0.15, 0.8)), "size": float(rng.uniform(0.15, 0.4))}
        t = {k: 1000.0 * (0.8 / v) * float(np.exp(rng.normal(0, 0.05))) for k, v in sep.items()}
        slow = max(t, key=t.get)
        b = (
            t[slow]
            * (lag_color if slow == "color" else lag_size)
            * float(np.exp(rng.normal(0, 0.05)))
        )
        end = 30000.0
        events.append(
            {
                "seed": i,
                "sep": sep,
                "concept_steps": {k: Event(v, end) for k, v in t.items()},
                "behavior": Event(b, end),
                "capability": Event(t[slow], end),
            }
        )
    return fm.Pool(events)


def test_the_anchor_recovers_the_clocks_and_the_lags_it_was_simulated_with():
    m = _pool().anchor_model()
    for k in ("color", "size"):
        assert m.clocks[k].slope == pytest.approx(-1.0, abs=0.1)
        assert np.exp(m.clocks[k].mu) == pytest.approx(800.0, rel=0.15)
    assert np.exp(m.after_slow["color"].mu) == pytest.approx(1.8, rel=0.05)
    assert np.exp(m.after_slow["size"].mu) == pytest.approx(1.2, rel=0.05)


def _reading(sep, clocks, at, capability=None):
    return fm.Reading(
        at=at,
        step=np.arange(250.0, at + 1, 250.0),
        accuracy=np.zeros(int(at // 250)),
        behavior=None,
        floor=at,
        capability=capability,
        clocks=clocks,
        sep=sep,
    )


def test_the_anchor_forecasts_from_the_separations_before_any_clock_and_from_the_clock_after():
    pool = _pool()
    sep = {"color": 0.2, "size": 0.4}  # color slower: T_color ~ 4000, behavior ~ 7200
    early = fm.anchor(_reading(sep, {"color": None, "size": None}, 1000.0), pool, 20000.0)
    assert early.step == pytest.approx(7200.0, rel=0.1)
    assert early.interval[0] <= 7200.0 <= early.interval[1] and "from Δcolor 0.2" in early.note
    late = fm.anchor(_reading(sep, {"color": 5000.0, "size": 2000.0}, 5200.0), pool, 20000.0)
    assert late.step == pytest.approx(9000.0, rel=0.05) and "T_color 5,000" in late.note
    # conditioned on the cut: never before it
    assert late.interval[0] >= 5200.0
    # the horizon: P(by the horizon) falls as the horizon comes before the forecast
    assert (
        fm.anchor(_reading(sep, {"color": 5000.0, "size": 2000.0}, 5200.0), pool, 6000.0).p_compose
        < 0.1
    )


def test_without_the_separations_the_anchor_draws_the_unseen_clock_from_the_pool_past_the_cut():
    pool = _pool()
    f = fm.anchor(_reading({}, {"color": None, "size": 2000.0}, 2500.0), pool, 30000.0)
    assert "pool runs" in f.note and f.interval[0] > 2500.0
    tiny = fm.Pool(pool.events[:2])
    none = fm.anchor(_reading({}, {"color": None, "size": 2000.0}, 2500.0), tiny, 30000.0)
    assert none.step is None and none.p_compose is None and none.note.startswith("no forecast")


def test_kaplan_meier_matches_a_hand_count():
    values = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    cens = np.array([False, False, True, False, False])
    times, surv = fb.km_survival(values, cens)
    # 5 at risk: 1 dies (0.8); 4: 1 dies (0.6); the censored 3 leaves; 2 at risk at 4: 0.3; at 5: 0
    assert list(times) == [1.0, 2.0, 4.0, 5.0] and surv == pytest.approx([0.8, 0.6, 0.3, 0.0])
    med, (lo, hi), p, _ = fb.km_forecast(values, cens, 2.5, 4.5)
    assert med == 4.0 and p == pytest.approx(0.5)


def test_the_reference_pool_round_trips_and_names_a_kind_that_differs(tmp_path):
    kind, events = reference_pool.load(
        reference_pool.path_for(
            {"preset": "small", "resolution": 24, "concepts": ["color", "size"]}
        )
    )
    assert kind == {"preset": "small", "resolution": 24, "concepts": ["color", "size"]}
    assert len(events) == 53 and all(isinstance(e["behavior"], Event) for e in events)
    again = reference_pool.from_json(reference_pool.to_json(events[0], kind))
    assert again["behavior"] == events[0]["behavior"]
    assert again["concept_steps"] == events[0]["concept_steps"]
    said = reference_pool.mismatch({**kind, "resolution": 16}, kind)
    assert said == "resolution 16 against the pool's 24"
    assert reference_pool.mismatch(kind, kind) is None


def test_a_pool_of_another_preset_is_refused_in_one_line(capsys):
    run = Path(__file__).parents[2] / "results/study-small/weak-cpu/runs/sep.color=0.2,seed=1"
    tiny = Path(__file__).parents[2] / "results/tiny/color0.3-size0.4"
    assert forecast.main([str(run), "--at", "3000", "--pool", str(tiny)]) == 2
    err = capsys.readouterr().err
    assert "preset 'small' against the pool's 'tiny'" in err and "--mix-pool" in err
    assert "Traceback" not in err


def _log_only(tmp_path, name, run):
    """A run folder holding only a copy of a committed run's log: a model of the user's own."""
    home = tmp_path / name
    home.mkdir()
    shutil.copy(run / "trajectories.csv", home / "trajectories.csv")
    return home


@pytest.mark.slow  # two pooled forecasts, 30 s; the pool's checks: test_forecast.py
def test_a_run_without_config_takes_a_pool_of_its_own_kind_and_refuses_the_package_runs(
    tmp_path, capsys
):
    root = Path(__file__).parents[2]
    runs = root / "results/study-small/weak-cpu/runs"
    mine = _log_only(tmp_path, "mine", runs / "sep.color=0.2,seed=1")
    own = [
        _log_only(tmp_path, f"own{i}", runs / f"sep.color=0.{k},seed={s}")
        for i, (k, s) in enumerate([(2, 0), (2, 2), (3, 0), (3, 2)])
    ]
    three = _log_only(tmp_path, "three", root / "results/small-3d/bg0.15-seed0")
    package = runs / "sep.color=0.2,seed=0"
    cut = [str(mine), "--at", "3000", "--horizon", "10000", "--pool"]
    assert forecast.main([*cut, *map(str, own)]) == 0  # runs of its own kind: concepts alike
    capsys.readouterr()
    assert forecast.main([*cut, str(package)]) == 2
    err = capsys.readouterr().err
    assert "preset None against the pool's 'small'" in err and "has no config.json" in err
    assert forecast.main([*cut, str(three)]) == 2
    assert "concepts ['color', 'size'] against the pool's ['color', 'size', 'bg']" in (
        capsys.readouterr().err
    )
    assert forecast.main([*cut, str(package), *map(str, own), "--mix-pool"]) == 0


def _row(truth, default, baseline, cut="2000", end=10000.0):
    f = lambda m, s: {  # noqa: E731
        "method": m,
        "behavior_step": s,
        "interval": [s * 0.8, s * 1.2],
        "p_compose": 0.9,
        "note": "",
    }
    return {
        "run": "r",
        "cut": cut,
        "at": 1000.0,
        "already": False,
        "truth": truth,
        "end": end,
        "forecasts": [
            f("default", default),
            *(f(b, baseline) for b in fr.SCORED_BASELINES),
            {
                "method": "base-rate",
                "behavior_step": None,
                "interval": None,
                "p_compose": 0.5,
                "note": "",
            },
        ],
    }


def test_the_registered_rule_passes_only_when_every_part_holds():
    cuts = fr.CAUSAL
    good = [_row(5000.0, 5100.0, 7000.0, cut) for cut in cuts for _ in range(5)]
    v = fr.verdict(good, 12)
    assert v["parts"]["a_beats_baselines"] and v["parts"]["c_brier"]
    # every interval holds the truth: coverage 1.0 is outside [0.7, 0.9]: a fail, as registered
    assert not v["parts"]["b_coverage"] and v["verdict"] == "FAIL"
    mixed = good[:16] + [_row(9000.0, 5100.0, 7000.0, c) for c in cuts]
    assert fr.verdict(mixed, 12)["parts"]["b_coverage"]
    worse = [_row(5000.0, 7000.0, 5100.0, cut) for cut in cuts for _ in range(5)]
    assert not fr.verdict(worse, 12)["parts"]["a_beats_baselines"]
    assert fr.verdict(good, 9)["verdict"] == "INVALID"


@pytest.mark.usefixtures("few_logistic_bootstraps")
def test_the_json_keeps_its_keys_and_says_what_it_learned_from(tmp_path):
    import json

    run = Path(__file__).parents[2] / "results/study-small/weak-cpu/runs/sep.color=0.2,seed=1"
    out = tmp_path / "f.json"
    assert forecast.main([str(run), "--at", "3000", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    for key in ("behavior_step", "interval", "p_compose", "observed_behavior_step", "method", "at"):
        assert key in doc
    assert doc["method"] == "anchor" and doc["pool"]["source"].startswith("reference")
    assert {b["method"] for b in doc["baselines"]} == set(fm.BASELINES)
    # the run composed at 7,134: the default never says "not expected" with a low p about it
    assert doc["p_compose"] > 0.5 and doc["interval"][0] <= 7134 <= doc["interval"][1]


def test_the_queue_refuses_a_registration_that_is_not_committed(tmp_path):
    from pipeline import registered_queue

    (tmp_path / "preregistration.json").write_text("{}")
    with pytest.raises(ValueError, match="not committed"):
        registered_queue.registering_commit(tmp_path / "preregistration.json")
    (tmp_path / "jobs.txt").write_text("")
    assert registered_queue.main([str(tmp_path)]) == 2  # one line, exit 2, no run started
    assert registered_queue.main([str(tmp_path / "nothing"), "--check-args"]) == 2
