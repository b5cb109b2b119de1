"""Benchmark: the test command's time, and its 25 slowest tests.

    python benchmarks/suite_time.py --json benchmarks/results/suite_time.json [-- PYTEST ARGS]
    python benchmarks/suite_time.py --compare BEFORE.log AFTER.log   # the 25 slowest, before and after

Runs the README's test command's pytest (``python -m pytest``, the default selection: ``-m 'not slow'``) in a
new process from the repository root with ``--durations=25``, and counts the long checks ``-m slow`` keeps
out. Report the load average too: a number measured beside other work is not the suite's time. The README's
sentence on the suite's time is written from the JSON (``python benchmarks/doc_tables.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from timing import cpu  # noqa: E402

SUMMARY = re.compile(r"^=*\s*((?:\d+ \w+(?:, )?)+) in ([0-9.]+)s", re.M)  # with -q: no =
DURATION = re.compile(r"^([0-9.]+)s (setup|call|teardown)\s+(.+?)\s*$")


def gzip_or_text(path: Path) -> str:
    """A log's text, gzipped (.gz) or not."""
    import gzip

    return gzip.open(path, "rt").read() if path.suffix == ".gz" else path.read_text()


def counts(summary: str) -> dict[str, int]:
    """'1760 passed, 3 skipped, 12 deselected' -> {'passed': 1760, 'skipped': 3, 'deselected': 12}."""
    return {word: int(n) for n, word in re.findall(r"(\d+) (\w+)", summary)}


def parse(output: str) -> dict:
    """The pytest run's counts, its own wall time and the slowest phases (test, phase, seconds)."""
    found = SUMMARY.findall(output)
    if not found:
        raise SystemExit("no pytest summary line in the output:\n" + output[-2000:])
    summary, seconds = found[-1]
    slowest = [
        {"test": m.group(3), "phase": m.group(2), "seconds": float(m.group(1))}
        for m in map(DURATION.match, output.splitlines())
        if m
    ]
    slowest.sort(key=lambda r: -r["seconds"])
    return {"seconds": float(seconds), **counts(summary), "slowest": slowest[:25]}


def test_seconds(output: str) -> dict[str, float]:
    """Each test's seconds (setup, call and teardown summed) in a pytest output with --durations."""
    out: dict[str, float] = {}
    for m in map(DURATION.match, output.splitlines()):
        if m:
            out[m.group(3)] = out.get(m.group(3), 0.0) + float(m.group(1))
    return out


def compare(before: str, after: str, n: int = 25) -> str:
    """A markdown table of the n slowest tests of ``before`` (two pytest outputs run with
    --durations=0) with their seconds after: "slow" where the default run no longer has them."""
    b, a = test_seconds(before), test_seconds(after)
    rows = ["| test | before (s) | after (s) |", "|---|---|---|"]
    for test, s in sorted(b.items(), key=lambda x: -x[1])[:n]:
        rows.append(f"| `{test}` | {s:.1f} | {f'{a[test]:.1f}' if test in a else 'slow'} |")
    rows.append(f"| all tests | {sum(b.values()):.0f} | {sum(a.values()):.0f} |")
    return "\n".join(rows)


def _workers(pytest_args: list[str]) -> int | None:
    """The pytest-xdist workers asked for with -n N among the arguments (None: one process)."""
    for flag, value in zip(pytest_args, pytest_args[1:]):
        if flag == "-n" and value.isdigit():
            return int(value)
    return None


def _slow_count() -> int:
    """How many tests ``-m slow`` selects (the long checks the default run leaves out)."""
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--collect-only", "-m", "slow"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout
    return sum(1 for line in collected.splitlines() if "::" in line)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--log", type=Path, help="write pytest's whole output here")
    parser.add_argument(
        "--compare",
        nargs=2,
        type=Path,
        metavar=("BEFORE", "AFTER"),
        help="print the 25 slowest tests of two --log files (run with -- --durations=0), and exit",
    )
    parser.add_argument("pytest_args", nargs="*", help="more arguments for pytest (after --)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.compare:
        print(compare(*(gzip_or_text(p) for p in args.compare)))
        return 0
    load = os.getloadavg()[0]
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    start = time.perf_counter()
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--durations=25",
            *args.pytest_args,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - start
    print(run.stdout[-6000:])
    if args.log:
        args.log.write_text(run.stdout + run.stderr)
    slow = _slow_count()
    result = {
        "machine": cpu(),
        "commit": commit,
        "load_at_start": load,
        "exit_code": run.returncode,
        "wall_s": wall,
        **parse(
            run.stdout
        ),  # (the 25 slowest: --durations=0 among the pytest args lists all in --log)
        "slow": slow,
        "workers": _workers(args.pytest_args),
    }
    print(
        f"pytest time {result['seconds'] / 60:.1f} min ({wall / 60:.1f} min end to end), {slow} slow tests"
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return run.returncode


if __name__ == "__main__":
    raise SystemExit(main())
