"""The sim2 fit (the structured identity mapping's two-layer model) and the eq1-vs-sim2 comparison by AIC:
each model is preferred on the data it generated."""

import json

import numpy as np
import pytest

from fitting.fit import main
from fitting.estimators.sim_fit import fit_sim
from fitting.analyses.synthetic import eq1_case
from core.trajectory import Trajectory, write_csv

from fitting.analyses.synthetic import SIM2_A as A, SIM2_U0 as U0, sim2_case  # noqa: E402


def test_sim2_fit_recovers_the_signals_and_the_start():
    fit = fit_sim(sim2_case())
    np.testing.assert_allclose(fit.params["a"], A, rtol=0.1)
    for (lo, hi), a in zip(fit.ci["a"], A):
        assert lo <= a <= hi
    np.testing.assert_allclose(fit.params["w0"], U0 @ U0.T, atol=0.02)
    assert fit.success and fit.rmse < 0.02 * 1.2
    assert fit.predict(np.array([0.0, 5000.0])).shape == (2, 2)


def test_each_model_wins_the_comparison_on_its_own_data(tmp_path):
    eq1_log = eq1_case(np.random.default_rng(1), n=40, last=5000).trajectory
    for name, traj, winner in (("sim2", sim2_case(), "sim2"), ("eq1", eq1_log, "eq1")):
        write_csv(tmp_path / f"{name}.csv", [traj])
        assert (
            main(
                [
                    str(tmp_path / f"{name}.csv"),
                    "--model",
                    "sim2",
                    "--compare",
                    "eq1",
                    "--no-figures",
                    "--out",
                    str(tmp_path / name),
                ]
            )
            == 0
        )
        record = json.loads((tmp_path / name / "fit.json").read_text())["fits"][0]
        assert record["model"] == "sim2" and set(record["params"]) == {"a", "mu_ratio", "w0"}
        assert record["comparison"]["better"] == winner, record["comparison"]
        assert record["comparison"]["models"]["eq1"]["n_params"] == 9 and record["n_params"] == 6
        assert isinstance(record["at_bounds"], list)  # the parameters on a bound, named per model
        assert record["comparison"]["models"]["eq1"]["at_bounds"] is not None


def test_sim2_refuses_what_it_cannot_fit(tmp_path, capsys):
    with pytest.raises(ValueError, match="at least 8 located points"):
        fit_sim(Trajectory(np.arange(5) * 10, np.full((5, 2), 0.5), ("color", "size"), "11"))
    write_csv(tmp_path / "log.csv", [sim2_case()])
    assert (
        main(
            [
                str(tmp_path / "log.csv"),
                "--model",
                "sim2",
                "--compare",
                "sim2",
                "--out",
                str(tmp_path / "o"),
            ]
        )
        == 2
    )
    assert "--compare sim2: give another model" in capsys.readouterr().err
    assert (
        main(
            [
                str(tmp_path / "log.csv"),
                "--model",
                "sim2",
                "--fix",
                "k=1",
                "--out",
                str(tmp_path / "o"),
            ]
        )
        == 2
    )
    assert "sim2 has no fixed parameters" in capsys.readouterr().err
