"""Shared by the benchmark scripts (run as ``python benchmarks/<name>.py``, which puts this folder on the path)."""

import os
import platform
import time
from pathlib import Path


def best_time(fn, repeats: int) -> float:
    """The fastest of ``repeats`` calls of fn(), in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def cpu() -> str:
    """The CPU's model name (from /proc/cpuinfo where there is one) and its core count: speeds on
    two kinds of 2-core machine differ by 2x, so a number names its machine."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        lines = []
    model = next((x.split(":", 1)[1].strip() for x in lines if x.startswith("model name")), None)
    return f"{model or platform.processor() or platform.machine()}, {os.cpu_count()} cores"
