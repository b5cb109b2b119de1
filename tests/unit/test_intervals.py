"""fitting.estimators.intervals: the clustered t-interval of a mean over held-out runs, and its coverage with few levels."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from fitting.estimators.intervals import clustered_mean

finite = st.floats(-10, 10, allow_nan=False)


def t_interval(x):
    """The textbook 95% t-interval of the mean of x."""
    half = stats.t.ppf(0.975, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size)
    return [x.mean() - half, x.mean() + half]


def simulated_sweep(gen, levels: int, level_sd: float, sizes: tuple[int, int]):
    """Held-out differences of one leave-one-level-out comparison whose truth is 0: a random effect per level (the
    fit that the level's runs share) plus run noise (sd 1); (values, level of each value)."""
    n = gen.integers(sizes[0], sizes[1] + 1, levels)
    effect = gen.normal(0, level_sd, levels)
    values = np.concatenate([e + gen.normal(0, 1, k) for e, k in zip(effect, n)])
    return values, np.repeat(np.arange(levels), n)


def run_bootstrap(gen, values):
    """The interval this module replaced: a percentile bootstrap over runs, as if they were independent."""
    means = values[gen.integers(0, values.size, (400, values.size))].mean(axis=1)
    return np.quantile(means, [0.025, 0.975])


@pytest.mark.parametrize("levels", [2, 3, 4, 6])
@pytest.mark.parametrize("level_sd", [0.0, 0.5, 2.0])
@pytest.mark.parametrize("sizes", [(1, 1), (2, 7)], ids=["one-run-a-level", "2-to-7-runs-a-level"])
def test_the_nominal_95_percent_covers_at_least_90_percent_of_simulated_sweeps(
    levels, level_sd, sizes
):
    gen = np.random.default_rng(levels * 100 + int(level_sd * 10) + sizes[1])
    hits = 0
    for _ in range(400):
        low, high = clustered_mean(*simulated_sweep(gen, levels, level_sd, sizes))["ci95"]
        hits += low <= 0 <= high
    assert hits / 400 >= 0.90


def test_the_run_bootstrap_it_replaces_fails_that_check_where_levels_differ():
    gen = np.random.default_rng(7)
    hits = 0
    for _ in range(200):
        values, _ = simulated_sweep(gen, 4, 2.0, (2, 7))
        low, high = run_bootstrap(gen, values)
        hits += low <= 0 <= high
    assert hits / 200 < 0.75  # about 55%: runs of one level share their fit


@given(st.lists(finite, min_size=2, max_size=12, unique=True))
def test_one_run_a_cluster_is_the_ordinary_t_interval(values):
    got = clustered_mean(values, range(len(values)))
    x = np.array(values)
    assert got["ci95"] == pytest.approx(t_interval(x), rel=1e-9, abs=1e-12)
    assert got["df"] == x.size - 1 and got["clusters"] == got["runs"] == x.size


@given(st.lists(st.lists(finite, min_size=3, max_size=3), min_size=2, max_size=6))
def test_equal_clusters_give_the_t_interval_of_the_cluster_means(groups):
    values = [v for g in groups for v in g]
    got = clustered_mean(values, [i for i, g in enumerate(groups) for _ in g])
    assert got["ci95"] == pytest.approx(
        t_interval(np.array(groups).mean(axis=1)), rel=1e-7, abs=1e-9
    )


def test_one_cluster_has_a_mean_and_no_interval():
    got = clustered_mean([0.1, 0.3, 0.2], ["a", "a", "a"])
    assert (
        got["mean"] == pytest.approx(0.2)
        and got["ci95"] is None
        and got["se"] is None
        and got["df"] == 0
    )


@pytest.mark.parametrize(
    "values, clusters, match",
    [
        ([], [], "non-empty"),
        ([1.0, 2.0], [0], "2 values but 1 cluster labels"),
        ([1.0, float("nan")], [0, 1], "finite"),
        ([[1.0]], [0], "non-empty list of numbers"),
    ],
)
def test_bad_input_is_refused_by_name(values, clusters, match):
    with pytest.raises(ValueError, match=match):
        clustered_mean(values, clusters)
