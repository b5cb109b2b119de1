"""prediction.json's law curves (fitting.analyses.prediction.law_curves) against the laws' closed forms, and
figures.predict on bad input."""

import json

import numpy as np
import pytest
from scipy.special import expit

from figures.predict import main as draw_main
from fitting.estimators.pooled import Law, PooledFit
from fitting.analyses.prediction import law_curves
from fitting.analyses.synthetic import COUPLED_LAW, TRUE_LAW


def fitted(law: Law, coefs: dict) -> PooledFit:
    theta = law.theta(coefs)
    return PooledFit(law, theta, law.natural(theta), {}, "wald", 0.0, [], True, "")


X = np.array([[0.01, 0.02], [0.04, 0.03], [0.08, 0.05]])


@pytest.mark.parametrize("onset", [False, True])
def test_the_clock_timed_laws_curves_are_their_closed_forms(onset):
    law = Law(d=2, scale=5000.0, x_ref=0.03, options=("onset",) * onset)
    fit = fitted(law, TRUE_LAW | {"t_on": 300.0})
    c = fit.coefficients
    got = law_curves(fit, X)
    grid = np.array(got["speed"]["x"])
    assert grid[0] == pytest.approx(0.7 * 0.01) and grid[-1] == pytest.approx(1.4 * 0.08)
    ratio = grid / law.x_ref
    assert got["speed"]["y"] == pytest.approx(c["lam_ref"] * ratio ** c["b_lam"], rel=1e-9)
    on = 300.0 if onset else 0.0
    assert got["switch"]["gate"] == "time"
    assert got["switch"]["y"] == pytest.approx(on + c["t_ref"] * ratio ** c["b_t"], rel=1e-9)
    lead = np.array(got["bias"]["x"])
    assert got["bias"]["y"] == pytest.approx(c["m"] * (1 - expit(c["gamma"] * lead)), abs=1e-12)


def test_the_coupled_gate_is_drawn_against_progress_and_compete_has_no_shared_speed():
    law = Law(2, 5000.0, 0.03, order="target-first", gate="state", options=("compete",))
    fit = fitted(law, COUPLED_LAW | {"c_lam": 1.2})
    got = law_curves(fit, X)
    progress = np.array(got["switch"]["x"])
    assert got["switch"]["gate"] == "state" and progress[0] == 0 and progress[-1] == 1
    expected = expit(COUPLED_LAW["kappa"] * (progress - COUPLED_LAW["theta"]))
    assert got["switch"]["y"] == pytest.approx(expected, rel=1e-6)
    assert (
        got["speed"] is None
    )  # under compete the speed depends on the lead: the runs' own are drawn


def test_eq2s_curves_need_no_masking_fraction():
    law = Law(d=2, scale=5000.0, x_ref=0.03, masked=1)
    got = law_curves(fitted(law, TRUE_LAW | {"beta": 0.5}), X)
    assert len(got["speed"]["y"]) == 100 and np.isfinite(got["bias"]["y"]).all()


def test_figures_predict_names_what_is_missing(tmp_path, capsys):
    assert draw_main([str(tmp_path)]) == 2
    assert "no prediction.json or leave_out.json" in capsys.readouterr().err
    doc = {
        "model": "eq1",
        "class": "11",
        "protocol": "naive",
        "covariate": "signal",
        "concepts": [],
    }
    doc |= {"law": {"curves": {}}, "train": {}, "rmse_train": 0.1, "holdout": {"r1": {}}}
    doc["log"] = [str(tmp_path / "moved.csv")]
    (tmp_path / "prediction.json").write_text(json.dumps(doc))
    (tmp_path / "predicted.csv").write_text("")
    assert draw_main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "moved.csv, which is not there" in err and "--log" in err
    (tmp_path / "prediction.json").write_text(json.dumps(doc | {"law": {}}))
    assert draw_main([str(tmp_path)]) == 0
    assert "no law curves" in capsys.readouterr().err


def test_figures_predict_refuses_a_leave_out_record_it_cannot_read(tmp_path, capsys):
    (tmp_path / "leave_out.json").write_text(json.dumps({"column": "sep_color"}))
    assert draw_main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "leave_out.json: lacks 'class', 'protocol', 'levels'" in err
    assert "fitting.predict --leave-out" in err
