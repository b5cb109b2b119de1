"""The masking sweep: the analysis (fitting.masking) sorts runs by p with exact first steps and keeps never-reached
runs; the figure (figures.masking) draws its masking.json; bad input is named."""

import json

import numpy as np
import pytest

from figures.masking import main as draw
from fitting.masking import levels, main, peak_share, sweep
from fitting.estimators.trajectory_turn import left_corner
from core.trajectory import Trajectory, write_csv

STEPS = np.arange(0, 2001, 100)


def ramp(start: float) -> np.ndarray:
    return np.clip((STEPS - start) / 200.0, 0, 1)


def run(folder, p, naive_start, over_start, meta=True, seed=None, shares=None):
    z = np.stack([np.linspace(0.5, 1, STEPS.size), np.linspace(0.5, 1 - p, STEPS.size)], axis=1)
    extra = (
        {}
        if shares is None
        else {
            f"share_{k}": tuple(str(v) for v in np.full(STEPS.size, x)) for k, x in shares.items()
        }
    )
    rows = [
        Trajectory(
            STEPS,
            z,
            ("shape", "color"),
            "11",
            protocol="naive",
            accuracy=ramp(naive_start),
            extra=extra,
        ),
        Trajectory(
            STEPS, z, ("shape", "color"), "11", protocol="overprompt", accuracy=ramp(over_start)
        ),
        Trajectory(
            STEPS, z[::-1], ("shape", "color"), "00", protocol="naive", accuracy=np.ones(STEPS.size)
        ),
    ]
    config = {"mask_p": p} if seed is None else {"mask_p": p, "seed": seed}
    write_csv(folder / "trajectories.csv", rows, meta={"config": config} if meta else None)
    return folder


def test_sweep_sorts_by_p_and_reports_exact_first_steps(tmp_path):
    runs = [run(tmp_path / "a", 0.75, 5000, 900), run(tmp_path / "b", 0.0, 300, 100)]
    res = sweep(runs, "11", persist=1)
    assert [r["p"] for r in res] == [0.0, 0.75]
    # ramp(s) reaches 0.8 at s + 160 -> the next logged step (multiples of 100)
    assert (
        res[0]["first_step"]["naive"]["80%"] == 500.0
        and res[0]["first_step"]["capability"]["80%"] == 300.0
    )
    assert (
        res[1]["first_step"]["naive"]["80%"] is None
        and res[1]["first_step"]["capability"]["80%"] == 1100.0
    )
    np.testing.assert_allclose(res[1]["final_z"], [1.0, 0.25])
    assert res[1]["max_accuracy"]["naive"] == 0.0


def test_seeds_of_one_p_are_summarised_with_never_reached_runs_counted_not_averaged(tmp_path):
    shares = {"10": 0.5, "11": 0.25, "unreadable": 0.25}
    runs = [
        run(tmp_path / "a", 0.5, 300, 100, seed=0, shares=shares),
        run(tmp_path / "b", 0.5, 700, 100, seed=1),
        run(tmp_path / "c", 0.5, 5000, 100, seed=2),
        run(tmp_path / "d", 0.0, 100, 100, seed=0),
    ]
    res = sweep(runs, "11", persist=1)
    assert [(r["p"], r["seed"]) for r in res] == [(0.0, 0), (0.5, 0), (0.5, 1), (0.5, 2)]
    assert res[1]["final_shares"] == shares and res[2]["final_shares"] == {}
    assert (
        res[1]["peak_share_masked_class"]["value"] == 0.5
        and res[2]["peak_share_masked_class"] is None
    )
    lv = {x["p"]: x for x in levels(res)}
    naive = lv[0.5]["first_step"]["naive"]["80%"]
    # seeds 0 and 1 reach 80% at 500 and 900; seed 2 never (censored at the last step, 2000)
    assert (
        naive["n"] == 3
        and naive["n_censored"] == 1
        and naive["median"] == 700.0
        and naive["range"] == [500.0, 900.0]
    )
    assert naive["censored_from"] == 2000.0
    assert (
        lv[0.5]["seeds"] == [0, 1, 2] and lv[0.0]["first_step"]["naive"]["80%"]["n_censored"] == 0
    )
    assert lv[0.5]["final_share"]["10"] == {"median": 0.5, "range": [0.5, 0.5]}
    assert lv[0.5]["max_accuracy"]["naive"]["range"] == [0.0, 1.0]
    np.testing.assert_allclose(lv[0.5]["final_z"]["color"]["median"], 0.5)


def test_peak_share_counts_only_from_the_given_row():
    share = np.array([0.9, 0.1, 0.6, 0.3])
    traj = Trajectory(
        np.arange(4) * 100,
        np.full((4, 2), 0.5),
        ("shape", "color"),
        "11",
        extra={
            "share_10": tuple(str(v) for v in share),
            "share_11": tuple(str(1 - v) for v in share),
        },
    )
    assert peak_share(traj, "10", 1) == {
        "value": 0.6,
        "step": 200.0,
    }  # the 0.9 before the training classes are drawn
    assert peak_share(traj, "10", 4) is None and peak_share(traj, "01", 0) is None


def test_left_corner_is_the_step_the_path_leaves_for_good():
    step = np.arange(6) * 100
    z = np.array([[0.5, 0.5], [0.95, 0.05], [0.5, 0.5], [1.0, 0.0], [0.8, 0.3], [0.6, 0.6]])
    assert left_corner(step, z, "10") == 400  # the visit at 100 does not count: it came back at 300
    assert left_corner(step[:4], z[:4], "10") is None  # still there at the end
    assert left_corner(step, z, "01") is None  # never went there


def test_cli_writes_json_and_figure(tmp_path, capsys):
    runs = [run(tmp_path / f"p{p}", p, 300 + 1000 * p, 100 + 500 * p) for p in (0.0, 0.5, 1.0)]
    assert main([str(r) for r in runs] + ["--out", str(tmp_path / "out")]) == 0
    doc = json.loads((tmp_path / "out" / "masking.json").read_text())
    assert [r["p"] for r in doc["runs"]] == [0.0, 0.5, 1.0]
    out = capsys.readouterr().out
    assert "p = 0.5: naive 80% at 1000.0" in out
    assert (
        "| 0.5 | - | 900 (0/1" not in out and "| 0.5 | - | 900 |" in out
    )  # naive 50%: ramp(800) passes 0.5 at 900
    assert "| 0 | - | 400 | 200 | 200 | 0 | never went there |" in out
    assert (
        "| 5 | never (1/1 not by 2,000); 1/1 went there |" in out
    )  # p = 1 reaches class 10 and stays
    assert doc["runs"][0]["masked_class"] == "10" and doc["runs"][0]["left_masked_class"] is None
    assert draw([str(tmp_path / "out" / "masking.json")]) == 0
    assert (tmp_path / "out" / "masking.png").stat().st_size > 20_000


def test_the_figure_draws_panel_c_at_the_rate_detail_names(tmp_path, capsys, monkeypatch):
    """--detail reaches the drawing through the figure frame (figures.command.one_figure); a rate
    outside [0, 1] is refused before anything is read."""
    import figures.masking as masking

    runs = [run(tmp_path / f"p{p}", p, 300 + 1000 * p, 100 + 500 * p) for p in (0.0, 1.0)]
    assert main([str(r) for r in runs] + ["--out", str(tmp_path / "out")]) == 0
    titles = []
    real = masking._detail_panel

    def spy(ax, results, detail):
        real(ax, results, detail)
        titles.append(ax.get_title())

    monkeypatch.setattr(masking, "_detail_panel", spy)
    out = tmp_path / "detail.svg"
    assert draw([str(tmp_path / "out"), "--detail", "0.9", "--out", str(out)]) == 0
    assert titles == ["(c) naive vs overprompt at p = 1 (Fig. 10)"] and out.stat().st_size > 0
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit:  # argparse's usage error
        draw([str(tmp_path / "nowhere"), "--detail", "1.5"])
    err = capsys.readouterr().err
    assert exit.value.code == 2
    assert "--detail" in err and "1.5: a masking rate in [0, 1]" in err and "nowhere" not in err


@pytest.mark.parametrize(
    "text, message",
    [
        (None, "no such file"),
        ("[]", "not a JSON object, so not the masking.json that python -m fitting.masking writes"),
        ('{"runs": [{"p": 0.5}]}', "lacks 'class', 'persist'"),
        (
            '{"class": "11", "persist": 3, "runs": [{"p": 0.5}]}',
            "runs[0] lacks 'class', 'concepts'",
        ),
        ('{"class": "11", "persist": 3, "runs": []}', "holds no runs"),
        (
            '{"log": "x.csv", "turns": []}',
            "(it looks like a turn.json, which python -m fitting.turn",
        ),
    ],
)
def test_the_figure_reads_only_a_valid_masking_json(tmp_path, capsys, text, message):
    if text is not None:
        (tmp_path / "masking.json").write_text(text)
    assert draw([str(tmp_path / "masking.json")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "masking.png").exists()


@pytest.mark.parametrize(
    "case, message",
    [
        ("missing", "no trajectory log here"),
        ("no-meta", "its meta has no config.mask_p"),
        ("same-p", "two runs share a masking rate and seed (p = 0.5, no seed recorded)"),
        ("same-seed", "(p = 0.5, seed 3)"),
        ("bad-seed", "config.seed 'x' is not an integer"),
        ("class", "no naive trajectory for class '01'"),
        ("persist", "persist 0: must be >= 1"),
    ],
)
def test_bad_input_is_named(tmp_path, capsys, case, message):
    good = run(tmp_path / "good", 0.5, 300, 100)
    args = {
        "missing": [str(tmp_path / "nope")],
        "no-meta": [str(run(tmp_path / "bare", 0.5, 300, 100, meta=False))],
        "same-p": [str(good), str(run(tmp_path / "twin", 0.5, 300, 100))],
        "same-seed": [
            str(run(tmp_path / "s3", 0.5, 300, 100, seed=3)),
            str(run(tmp_path / "s3b", 0.5, 900, 100, seed=3)),
        ],
        "bad-seed": [str(run(tmp_path / "sx", 0.5, 300, 100, seed="x"))],
        "class": [str(good), "--class", "01"],
        "persist": [str(good), "--persist", "0"],
    }[case]
    assert main(args) == 2
    assert message in capsys.readouterr().err
