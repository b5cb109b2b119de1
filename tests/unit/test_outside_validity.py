"""The registered outside-range test's rule at its edges (a coverage fail, the corner at 5 of 8 and against the blind
corner, an exact tie, an undecided event, interim counts) and the checks that make a verdict valid: the registered
probe, seeds and length, runs begun after an unchanged registration (an independent audit before scoring found these
unchecked or untested; errata.md item 10)."""

import subprocess

import pytest

from fitting.analyses.events import Event
from fitting.analyses.outside_score import registered_before, score, with_validity
from outside_cases import fake_registration, fake_runs, valid_git

TRUTH = [11000.0, 8000.0]


def _valid(runs, reg=None):
    reg = reg or fake_registration(pred=TRUTH, blind=[5800.0, 5800.0])
    return with_validity({**score(reg, runs), **valid_git}, reg)


def test_the_runs_as_registered_give_a_valid_verdict():
    v = _valid(fake_runs(TRUTH))
    assert v["valid"] and v["invalid_because"] == []
    assert (
        v["summary"]
        .splitlines()[1]
        .startswith("behavior (δ 0.150; runs read [8, 8], censored [0, 0]): clock pass")
    )


@pytest.mark.parametrize(
    "change, because",
    [
        (
            lambda r: r[0].update(probe_hash="93e98c6f35e88932"),
            "not the registered 16e18d564fed732e",
        ),
        (lambda r: [e.update(probe_hash=None) for e in r], "probes ['None']"),
        (lambda r: r.append({**r[0], "run": "again"}), "seeds [10, 10, 11"),
        (lambda r: [e.update(seed=e["seed"] - 10) for e in r], "not the registered 10-17"),
        (lambda r: r[3].update(steps=20000), "['t03'] not 15000 steps long"),
        (lambda r: r[2].update(seed=None), "not the registered 10-17"),
        (lambda r: r[3].pop("finished"), "finished needed"),
        (lambda r: r[5].update(finished=False), "finished needed"),
    ],
)
def test_a_run_not_as_registered_makes_the_verdict_not_the_verdict(change, because):
    runs = fake_runs(TRUTH)
    change(runs)
    v = _valid(runs)
    assert not v["valid"] and v["summary"].startswith("NOT THE VERDICT")
    assert any(because in why for why in v["invalid_because"]), v["invalid_because"]


def test_one_setting_short_of_its_seeds_is_interim():
    runs = fake_runs(TRUTH)
    v = _valid(runs[:8] + runs[8:13])
    assert v["runs_per_setting"] == [8, 5] and not v["complete"] and not v["valid"]


@pytest.mark.parametrize(
    "git, because",
    [
        ({"all_after": False, "unchanged": True}, "begun after the registration's commit"),
        ({"all_after": True, "unchanged": False}, "unchanged since its commit"),
        ({"all_after": None, "unchanged": None}, "begun after"),
    ],
)
def test_runs_before_the_registration_or_a_changed_registration_are_not_the_verdict(git, because):
    reg = fake_registration(pred=TRUTH, blind=[5800.0, 5800.0])
    v = with_validity({**score(reg, fake_runs(TRUTH)), "registered_before": git}, reg)
    assert not v["valid"] and any(because in why for why in v["invalid_because"])


def test_other_bf16_devices_are_valid_and_fp32_is_not():
    reg = fake_registration(pred=TRUTH, blind=[5800.0, 5800.0])
    v = {**score(reg, fake_runs(TRUTH)), **valid_git}
    both = ["cpu (2 threads) bf16", "cuda: NVIDIA H100 80GB HBM3 bf16"]
    assert with_validity({**v, "devices": both}, reg)["valid"]
    fp32 = with_validity({**v, "devices": ["cpu (2 threads) bf16", "cpu (2 threads) fp32"]}, reg)
    assert fp32["invalid_because"] == [
        "trained in ['cpu (2 threads) fp32']: every test run trains in bf16, as the pool did"
    ]


def _git(repo, *args):
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def test_registered_before_finds_the_commit_that_added_the_registration(tmp_path, monkeypatch):
    _git(tmp_path, "init", "-q")
    for key, value in [("user.email", "t@t"), ("user.name", "t"), ("commit.gpgsign", "false")]:
        _git(tmp_path, "config", key, value)
    (tmp_path / "other").write_text("x")
    _git(tmp_path, "add", "other")
    _git(tmp_path, "commit", "-qm", "before")
    before = _git(tmp_path, "rev-parse", "HEAD")
    (tmp_path / "reg.json").write_text("{}")
    _git(tmp_path, "add", "reg.json")
    _git(tmp_path, "commit", "-qm", "register")
    added = _git(tmp_path, "rev-parse", "HEAD")
    (tmp_path / "other").write_text("y")
    _git(tmp_path, "commit", "-qam", "after")
    after = _git(tmp_path, "rev-parse", "HEAD")
    monkeypatch.chdir(tmp_path)
    ok = registered_before("reg.json", [added, after])
    assert ok == {
        "registration_commit": added,
        "all_after": True,
        "after": [True, True],
        "unchanged": True,
    }
    early = registered_before("reg.json", [after, before, None])
    assert early["after"] == [True, False, False] and not early["all_after"]
    (tmp_path / "reg.json").write_text('{"edited": 1}')
    assert registered_before("reg.json", [after])["unchanged"] is False
    assert registered_before("missing.json", [after])["all_after"] is None


def test_registered_before_follows_the_registration_across_a_move(tmp_path, monkeypatch):
    """Issue #53 moved docs/results to results/: the commit that added the registration is still the one found (not
    the move), from any working folder, with a space and a non-ASCII letter in the path; a shallow clone, whose
    oldest commit would pose as it, finds none."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    for key, value in [("user.email", "t@t"), ("user.name", "t"), ("commit.gpgsign", "false")]:
        _git(repo, "config", key, value)
    (repo / "docs").mkdir()
    (repo / "docs" / "reg.json").write_text("{}")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "register")
    added = _git(repo, "rev-parse", "HEAD")
    (repo / "results Δ").mkdir()
    _git(repo, "mv", "docs/reg.json", "results Δ/reg.json")
    _git(repo, "commit", "-qm", "move")
    moved = repo / "results Δ" / "reg.json"
    monkeypatch.chdir(tmp_path)
    found = registered_before(str(moved), [_git(repo, "rev-parse", "HEAD")])
    assert found["registration_commit"] == added and found["all_after"] and found["unchanged"]
    moved.write_text('{"edited": 1}')
    assert registered_before(str(moved), [added])["unchanged"] is False
    _git(tmp_path, "clone", "-q", "--depth", "1", f"file://{repo}", "shallow")
    shallow = tmp_path / "shallow" / "results Δ" / "reg.json"
    assert registered_before(str(shallow), [added])["all_after"] is None


def test_coverage_fails_where_the_runs_spread_past_the_interval_though_the_median_is_right():
    reg = fake_registration(pred=TRUTH, blind=[5800.0, 5800.0], interval=(0.98, 1.02))
    law = score(reg, fake_runs(TRUTH, spread=2.0))["events"]["behavior"]["methods"]["clock"]
    assert law["verdict"] == "pass" and law["coverage"][1] == 16
    assert law["coverage"][0] < 9 and law["coverage_verdict"] == "fail"


def test_a_censored_run_is_inside_only_where_the_interval_reaches_past_its_end():
    reg = fake_registration(pred=[14000.0, 14000.0], blind=[5800.0, 5800.0])
    law = score(reg, fake_runs([20000.0, 20000.0]))["events"]["behavior"]["methods"]["clock"]
    assert law["coverage"] == [16, 16]  # 14,000 x 1.25 reaches past 15,000
    low = fake_registration(pred=[10000.0, 10000.0], blind=[5800.0, 5800.0])
    law = score(low, fake_runs([20000.0, 20000.0]))["events"]["behavior"]["methods"]["clock"]
    assert law["coverage"] == [0, 16] and law["coverage_verdict"] == "fail"


def test_an_exact_tie_with_a_baseline_fails():
    reg = fake_registration(pred=TRUTH, blind=TRUTH)
    law = score(reg, fake_runs(TRUTH))["events"]["behavior"]["methods"]["clock"]
    assert law["within_margin"] and not law["beats_every_baseline"] and law["verdict"] == "fail"


def test_an_error_exactly_at_the_margin_passes():
    runs = [
        {**r, "behavior": Event(TRUTH[i // 8], 15000.0)} for i, r in enumerate(fake_runs(TRUTH))
    ]
    reg = fake_registration(pred=TRUTH, blind=[5800.0, 5800.0], delta=0.0)
    assert score(reg, runs)["events"]["behavior"]["methods"]["clock"]["verdict"] == "pass"


def test_an_event_no_run_of_a_setting_has_is_undecided_not_failed():
    runs = [{**r, "behavior": None} if r["sep"]["color"] == 0.15 else r for r in fake_runs(TRUTH)]
    v = score(fake_registration(pred=TRUTH, blind=[5800.0, 5800.0]), runs)
    law = v["events"]["behavior"]["methods"]["clock"]
    assert law["verdict"] == "undecided" and "coverage_verdict" not in law
    assert v["events"]["behavior"]["observed"][1]["n"] == 0
    assert "runs read [8, 0]" in v["summary"]


@pytest.mark.parametrize(
    "right, corner, verdict",
    [(6, ("10", "01"), "pass"), (5, ("10", "01"), "fail"), (8, ("10", "10"), "fail")],
)
def test_the_corner_needs_6_of_8_at_each_setting_and_to_beat_the_blind_corner(
    right, corner, verdict
):
    """The blind corner is 10 at both settings: a law predicting 10 at both cannot beat it, even with 8 of 8
    right at the first setting."""
    runs = fake_runs(TRUTH)
    for i, r in enumerate(runs):
        wanted = corner[i // 8]
        r["corner"] = wanted if i % 8 < right else ("11" if wanted != "11" else "00")
    reg = fake_registration(pred=TRUTH, blind=[5800.0, 5800.0], corner=corner)
    assert score(reg, runs)["corner"]["clock"]["verdict"] == verdict


def test_the_verdict_reports_the_registered_speed_exponents_sign():
    reg = fake_registration(pred=TRUTH, blind=[5800.0, 5800.0])
    b = {"value": 1.25, "ci95": [-0.16, 4.5], "share_positive": 0.96}
    reg["coefficients"] = {
        "behavior": {"power": {"a": {"value": 1.0}, "b": b}, "clock": {}, "linear": {"b": b}}
    }
    assert score(reg, fake_runs(TRUTH))["b_sign"] == {"behavior": {"power": b}}


@pytest.mark.slow  # long end to end: run with -m slow
def test_the_pool_reads_today_as_it_read_when_registered():
    """The test's runs are read by today's code and the predictions came from the pool read on the registration
    day: a change to any reader of events (the ladder's row, the turn, the concept clocks) since then would score
    the test's runs by another instrument. Each pool run's events, corner and concept steps, read again, equal the
    registration's rows."""
    import json
    from pathlib import Path

    from fitting import outside
    from fitting.analyses.events import run_events
    from outside_cases import registered_run

    root = Path(__file__).resolve().parents[2]
    doc = json.loads((root / "results/study-small/outside/preregistration.json").read_text())
    assert len(doc["pool"]["runs"]) == 20
    for row in doc["pool"]["runs"]:
        again = json.loads(
            json.dumps(
                outside._pool_row(run_events(registered_run(root, row["run"]), as_registered=True))
            )
        )
        assert {**again, "run": row["run"]} == row, row["run"]


def test_the_pool_is_read_as_registered(monkeypatch):
    """register reads the pool by the readers as registered, not the package's mended defaults (no pool run reads
    differently under the two, so the test above cannot tell them apart)."""
    from fitting.analyses import outside_pool

    seen = []
    monkeypatch.setattr(outside_pool, "run_events", lambda run, **kw: seen.append(kw) or 1 / 0)
    with pytest.raises(ZeroDivisionError):
        outside_pool.pool_events(["run"], probe=None)
    assert seen == [{"as_registered": True}]
