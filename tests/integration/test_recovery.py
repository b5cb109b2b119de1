"""Parameter recovery at full size (issue targets), 200 random cases each: run with -m slow."""

import pytest

from fitting.analyses.synthetic import switch_recovery, t50_recovery

pytestmark = pytest.mark.slow


def test_switch_time_recovery_200_cases():
    """|t_switch error| <= 5% of the span in >= 95% of cases; 95% CIs cover 88-99%; z̃ within 0.1."""
    score = switch_recovery(200, seed=7)
    print(score)
    assert (
        score.within_5pct >= 0.95
        and 0.88 <= score.coverage <= 0.99
        and score.bias_within_0_1 >= 0.95
    )


def test_accuracy_t50_recovery_200_cases():
    score = t50_recovery(200, seed=8)
    print(score)
    assert score.within_5pct >= 0.95 and 0.88 <= score.coverage <= 0.99
