"""Shared by the benchmark scripts (run as ``python benchmarks/<name>.py``, which puts this folder on the path)."""

import time


def best_time(fn, repeats: int) -> float:
    """The fastest of ``repeats`` calls of fn(), in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)
