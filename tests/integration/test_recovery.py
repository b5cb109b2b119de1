"""Parameter recovery at full size (issue targets), 200 random cases each: run with -m slow."""

import numpy as np
import pytest

from fitting.curves import fit_logistic
from fitting.model_fit import fit_model
from fitting.synthetic import eq1_case, logistic_case

SPAN = 19_500
pytestmark = pytest.mark.slow


def test_switch_time_recovery_200_cases():
    """|t_switch error| <= 5% of the span in >= 95% of cases; 95% CIs cover 88-99%; z̃ within 0.1."""
    rng = np.random.default_rng(7)
    err, cover, bias = [], [], []
    for _ in range(200):
        case = eq1_case(rng)
        fit = fit_model(case.trajectory)
        w = case.weak
        truth = case.truth["t_switch"][w]
        got, ci = fit.params["t_switch"][w], fit.ci["t_switch"][w]
        err.append(np.inf if got is None else abs(got - truth) / SPAN)
        cover.append(ci is not None and ci[0] <= truth <= ci[1])
        bias.append(abs(fit.params["z_bias"][w] - case.truth["z_bias"][w]))
    within, coverage, z_ok = np.mean(np.array(err) <= 0.05), np.mean(cover), np.mean(np.array(bias) <= 0.1)
    print(f"t_switch within 5%: {within:.3f}, CI coverage: {coverage:.3f}, z_bias within 0.1: {z_ok:.3f}")
    assert within >= 0.95 and 0.88 <= coverage <= 0.99 and z_ok >= 0.95


def test_accuracy_t50_recovery_200_cases():
    rng = np.random.default_rng(8)
    err, cover = [], []
    for _ in range(200):
        steps, y, t50 = logistic_case(rng)
        fit = fit_logistic(steps, y)
        err.append(np.inf if fit.t50 is None else abs(fit.t50 - t50) / SPAN)
        lo, hi = fit.t50_ci if fit.t50_ci else (None, None)
        cover.append((lo is None or lo <= t50) and (hi is None or t50 <= hi) and fit.t50_ci is not None)
    within, coverage = np.mean(np.array(err) <= 0.05), np.mean(cover)
    print(f"t50 within 5%: {within:.3f}, CI coverage: {coverage:.3f}")
    assert within >= 0.95 and 0.88 <= coverage <= 0.99
