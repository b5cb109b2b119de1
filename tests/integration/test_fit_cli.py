"""``python -m fitting.fit``: fits a theory.simulate log and recovers its parameters; bad logs exit 2, write nothing."""

import os
import json

import numpy as np
import pytest

from figures.fit import main as draw
from fitting.fit import main
from fitting.analyses.synthetic import quadratic_steps
from theory.simulate import main as simulate
from core.trajectory import Trajectory, write_csv


@pytest.fixture(scope="module")
def simulated_log(tmp_path_factory):
    out = tmp_path_factory.mktemp("sim")
    assert (
        simulate(
            [
                "--model",
                "eq1",
                "--param",
                "lam=0.5,1",
                "--param",
                "k=1.5",
                "--sweep",
                "t_switch_1=5,9",
                "--points",
                "120",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    return out / "trajectories.csv"


def test_fit_recovers_a_simulated_log(simulated_log, tmp_path, capsys):
    assert main([str(simulated_log), "--out", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "fit.json").read_text())
    assert doc["model"] == "eq1" and len(doc["fits"]) == 2
    assert (
        doc["stamp"]["command"].endswith(f"--out {tmp_path}")
        or "pytest" in doc["stamp"]["command"]
        or os.environ.get("PYTEST_XDIST_WORKER")  # a pytest-xdist worker's command line
    )
    assert {"commit", "dirty", "numpy", "numba", "host", "started"} <= set(doc["stamp"])
    for record, t_switch in zip(doc["fits"], (5.0, 9.0)):
        assert record["class"] == "11" and record["protocol"] == "sim" and record["model"] == "eq1"
        p = record["params"]
        assert p["t_switch"][0] == pytest.approx(t_switch, abs=1e-4) and p["t_switch"][1] is None
        np.testing.assert_allclose(p["lam"], [0.5, 1.0], rtol=1e-4)
        assert p["k"] == pytest.approx(1.5, rel=1e-4) and p["p_beta"] is None
        np.testing.assert_allclose(p["z0"], [0.5, 0.5], atol=1e-6)
        assert record["switch_identifiable"] == [True, False] and record["rmse"] < 1e-6
        assert record["ci"]["t_switch"][0][0] <= t_switch <= record["ci"]["t_switch"][0][1]
        assert record["turn_step"] < t_switch + 2 and record["turn_ci"][0] <= record["turn_step"]
        assert set(record["threshold_steps"]) == {"50%", "80%"}
        assert (
            record["accuracy_t50"] is None and record["accuracy_t50_ci"] is None
        )  # no accuracy column
        assert len(record["curves"]["step"]) == len(record["curves"]["z"]) == 200
    assert "fitted 2 trajectories" in capsys.readouterr().out
    assert not list(tmp_path.glob("*.png"))  # analysis writes, figures draw
    assert draw([str(tmp_path)]) == 0
    assert len(list(tmp_path.glob("*.png"))) == 2 and all(
        p.stat().st_size > 10_000 for p in tmp_path.glob("*.png")
    )


def test_the_figures_name_what_they_cannot_draw(simulated_log, tmp_path, capsys):
    assert main([str(simulated_log), "--out", str(tmp_path / "bare"), "--no-figures"]) == 0
    assert "curves" not in json.loads((tmp_path / "bare" / "fit.json").read_text())["fits"][0]
    assert draw([str(tmp_path / "bare")]) == 0 and not list((tmp_path / "bare").glob("*.png"))
    assert "no curves (fitted with --no-figures)" in capsys.readouterr().err
    assert main([str(simulated_log), "--out", str(tmp_path / "moved")]) == 0
    doc = json.loads((tmp_path / "moved" / "fit.json").read_text())
    (tmp_path / "moved" / "fit.json").write_text(
        json.dumps({**doc, "log": str(tmp_path / "gone.csv")})
    )
    assert draw([str(tmp_path / "moved")]) == 2
    assert "which is not there; give it with --log LOG.csv" in capsys.readouterr().err
    assert draw([str(tmp_path / "moved"), "--log", str(simulated_log)]) == 0
    assert draw([str(tmp_path / "nothing")]) == 2


def test_schema_keys(simulated_log, tmp_path):
    assert main([str(simulated_log), "--out", str(tmp_path), "--no-figures"]) == 0
    record = json.loads((tmp_path / "fit.json").read_text())["fits"][0]
    for key in (
        "run",
        "seed",
        "class",
        "protocol",
        "model",
        "params",
        "ci",
        "rmse",
        "turn_step",
        "turn_ci",
        "threshold_steps",
        "accuracy_t50",
        "accuracy_t50_ci",
    ):
        assert key in record
    assert set(record["params"]) == {"t_switch", "k", "lam", "z_bias", "z_target", "z0", "p_beta"}
    assert not list(tmp_path.glob("*.png"))


def test_accuracy_curves_protocols_and_lags(tmp_path):
    steps = quadratic_steps(40, 500, 20_000)
    rng = np.random.default_rng(0)
    trajs = []
    for protocol, t50 in (("naive", 9_000), ("overprompt", 6_000)):
        acc = np.clip(
            1 / (1 + np.exp(-(steps - t50) / 500)) + rng.normal(0, 0.02, steps.size), 0, 1
        )
        trajs.append(Trajectory(steps, np.zeros((steps.size, 0)), (), "11", protocol, 0, "r", acc))
    write_csv(tmp_path / "acc.csv", trajs)
    assert main([str(tmp_path / "acc.csv"), "--out", str(tmp_path / "fit")]) == 0
    doc = json.loads((tmp_path / "fit" / "fit.json").read_text())
    by_protocol = {r["protocol"]: r for r in doc["fits"]}
    assert by_protocol["naive"]["accuracy_t50"] == pytest.approx(9_000, abs=300)
    assert (
        by_protocol["naive"]["model"] is None and by_protocol["naive"]["params"]["t_switch"] is None
    )
    (lag,) = doc["lags"]
    assert lag["protocol"] == "overprompt" and lag["lag_t50"] == pytest.approx(3_000, abs=400)
    assert lag["lag"] == lag["naive_step"] - lag["protocol_step"] > 0


BAD_LOGS = [
    ("", "the file is empty"),
    ("step,class,z_color\n0,11,0.5\n0,11,0.6\n", "row 2 (line 3), column 'step': duplicate step"),
    (
        "step,class,z_color\n0,11,0.5\n1,11,1.7\n",
        "row 2 (line 3), column 'z_color': 1.7 is outside [0, 1]",
    ),
    ("step,z_color\n0,0.5\n", "column 'class': required column is missing"),
]


@pytest.mark.parametrize("text,message", BAD_LOGS)
def test_malformed_logs_exit_2_and_write_nothing(tmp_path, capsys, text, message):
    log = tmp_path / "bad.csv"
    log.write_text(text)
    out = tmp_path / "out"
    assert main([str(log), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and str(log) in err
    assert not out.exists()


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--class", "42"], "no trajectory matches --class 42"),
        (["--model", "notebook", "--fix", "z_bias=0"], "cannot fix ['z_bias'] for notebook"),
        (["--fix", "lam"], "expected NAME=VALUE"),
        (["--fix", "lam=x"], "values must be numbers"),
        (["--boot", "3"], "need at least 10 resamples"),
        (["--persist", "0"], "must be >= 1"),
    ],
)
def test_bad_options_exit_2(simulated_log, tmp_path, capsys, argv, message):
    out = tmp_path / "out"
    assert main([str(simulated_log), *argv, "--out", str(out)]) == 2
    assert message in capsys.readouterr().err
    assert not (out / "fit.json").exists()


def test_missing_log_exits_2(tmp_path, capsys):
    assert main([str(tmp_path / "nope.csv")]) == 2
    assert "nope.csv" in capsys.readouterr().err


def test_a_short_trajectory_is_skipped_with_why_and_the_others_are_fitted(
    simulated_log, tmp_path, capsys
):
    from core.trajectory import read_csv

    trajs = read_csv(simulated_log)
    short = Trajectory(
        trajs[0].step[:5], trajs[0].z[:5], trajs[0].concepts, "11", "sim", None, "short"
    )
    log = tmp_path / "mixed.csv"
    write_csv(log, [*trajs, short])
    assert main([str(log), "--out", str(tmp_path / "out"), "--no-figures"]) == 0
    doc = json.loads((tmp_path / "out" / "fit.json").read_text())
    assert len(doc["fits"]) == 2 and [s["run"] for s in doc["skipped"]] == ["short"]
    assert "at least 8 logged points" in doc["skipped"][0]["reason"]
    assert "skipped run='short'" in capsys.readouterr().err
    write_csv(log, [short])  # nothing left to fit: an error, and nothing written
    assert main([str(log), "--out", str(tmp_path / "none")]) == 2
    assert "none of the 1 trajectories could be fitted" in capsys.readouterr().err
    assert not (tmp_path / "none" / "fit.json").exists()
