"""figures.forecast_verdict: the registered forecast test's verdict drawn from verdict.json alone."""

import json

import numpy as np
import pytest

from figures import forecast_verdict as fig
from fitting.forecast_calibration import cut_row
from fitting.forecast_registered import CAUSAL, SCORED_BASELINES, verdict

BASELINES = (*SCORED_BASELINES, "base-rate")


def forecast(method, step, interval=None, p=None):
    return {"method": method, "behavior_step": step, "interval": interval, "p_compose": p}


def rows(seed=0, n_runs=6):
    """Rows of every causal cut for n_runs runs, one of which never composed (censored at 10,000); the
    default forecasts with an interval and a chance, each baseline its own point (lc-naive none at all)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n_runs):
        truth = None if i == 0 else float(rng.integers(3000, 8000))
        for cut, at in zip(CAUSAL, (2000, 3000, 2500, 2800)):
            step = float(rng.integers(3000, 9000))
            methods = [forecast("default", step, [step - 1500, step + 1500], p=0.8)]
            for b in BASELINES:
                guess = None if b == "lc-naive" else float(rng.integers(2000, 10000))
                methods.append(forecast(b, guess, p=0.7 if b == "base-rate" else None))
            out.append(cut_row(f"runs/r{i}", cut, at, truth, 10000.0, methods))
    return out


def whole(made):
    """verdict.json as the scoring writes it, around the registration's own verdict() of the rows."""
    head = {"registration_commit": "526a087", "code_changed_since": [], "runs": {}, "n_valid": 12}
    return json.loads(json.dumps({**head, **verdict(made, 12), "rows": made}))


@pytest.fixture
def doc():
    made = rows()
    return whole(made)


def test_the_errors_drawn_have_the_medians_the_scoring_wrote(doc):
    """The dots are the scoring's own errors (a censored run at its end, a lower bound): their median is each
    cut's median absolute error in the verdict, the default's and each baseline's on its paired rows."""
    for cut in CAUSAL:
        mine = [r for r in doc["rows"] if r["cut"] == cut]
        errors, bound = fig._errors(mine, "default")
        assert np.median(errors) == pytest.approx(doc["per_cut"][cut]["default"]["mae"])
        assert sum(bound) == 1  # the run that never composed
        for b, scored in doc["per_cut"][cut]["baselines"].items():
            errors, _ = fig._errors(mine, b)
            assert len(errors) == scored["rows"]
            if errors:
                assert np.median(errors) == pytest.approx(scored["baseline_mae"])


def test_the_figure_titles_say_the_rule_s_parts(doc, tmp_path, capsys):
    drawn = fig.draw(doc)
    cuts, intervals = drawn.axes[: len(CAUSAL)], drawn.axes[-1]
    for ax, cut in zip(cuts, CAUSAL):
        assert ax.get_title().startswith(f"cut {cut}: ")
        labels = [t.get_text().split(" (")[0] for t in ax.get_xticklabels()]
        assert labels == ["default", *SCORED_BASELINES]
        assert (
            ax.get_xticklabels()[SCORED_BASELINES.index("lc-naive") + 1].get_text().endswith("(0)")
        )
    coverage = doc["pooled"]["default"]["coverage"]
    assert f"{coverage:.2f} of the 80% intervals hold it" in intervals.get_title()
    assert doc["verdict"] in drawn._suptitle.get_text()
    stars = sum(len(line.get_xdata()) for line in intervals.lines if line.get_marker() == "*")
    assert stars == 5 * len(CAUSAL)  # every composed run's observed step at every cut
    path = tmp_path / "verdict.json"
    path.write_text(json.dumps(doc))
    assert fig.main([str(path)]) == 0
    assert (tmp_path / "verdict.png").stat().st_size > 10_000


def test_another_file_is_refused_in_one_line(tmp_path, capsys):
    path = tmp_path / "verdict.json"
    path.write_text(json.dumps({"verdict": "PASS", "rows": []}))
    assert fig.main([str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        len(err) == 1
        and "not the verdict.json that python -m fitting.forecast_registered" in err[0]
    )


def test_a_cut_no_run_reached_is_drawn_empty():
    """The scoring writes a causal cut with no row as {rows: 0, scored: False} (no scores): drawn, titled so."""
    made = [r for r in rows() if r["cut"] != "capability"]
    doc = whole(made)
    assert doc["per_cut"]["capability"] == {"rows": 0, "scored": False}
    drawn = fig.draw(doc)
    assert (
        drawn.axes[CAUSAL.index("capability")].get_title()
        == "cut capability: 0 rows: too few to score"
    )
