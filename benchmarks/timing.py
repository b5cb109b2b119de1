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


def cpuinfo() -> list[str]:
    """The lines of /proc/cpuinfo (none where there is no such file)."""
    try:
        return Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return []


def cpu_model() -> str:
    """The CPU's model name: speeds on two kinds of 2-core machine differ by 2x, so a number names
    its machine."""
    model = next(
        (x.split(":", 1)[1].strip() for x in cpuinfo() if x.startswith("model name")), None
    )
    return model or platform.processor() or platform.machine()


def cpu() -> str:
    """The CPU's model name and its core count."""
    return f"{cpu_model()}, {os.cpu_count()} cores"
