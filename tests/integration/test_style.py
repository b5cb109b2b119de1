"""One style for the tree (issue #30): `ruff format` at 100 columns leaves every file as it is, and `ruff check`
(pyflakes and pycodestyle's errors, pyproject.toml) finds nothing."""

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ruff")

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("command", [["format", "--check"], ["check"]])
def test_the_tree_is_formatted_and_lint_clean(command):
    done = subprocess.run(
        [sys.executable, "-m", "ruff", *command, "."], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, (
        f"ruff {' '.join(command)}: run it to fix\n{done.stdout[-3000:]}{done.stderr[-1000:]}"
    )


# Issue #30's size rule: no file over 400 lines and no function over 60 in the package, benchmarks and
# examples (tests are exempt). Nothing is over; an exception would be listed in OVER with its size, and
# could only shrink.
FILE_LINES, FUNCTION_LINES = 400, 60
OVER: dict[str, int] = {}  # what is over, with its size (it can only shrink); nothing now


def sizes() -> dict[str, int]:
    """Lines of every file over FILE_LINES and every function over FUNCTION_LINES."""
    import ast

    found = {}
    for folder in (
        "core",
        "theory",
        "fitting",
        "empirical",
        "figures",
        "pipeline",
        "benchmarks",
        "examples",
    ):
        for path in sorted((ROOT / folder).rglob("*.py")):
            name, source = path.relative_to(ROOT).as_posix(), path.read_text()
            if source.count("\n") > FILE_LINES:
                found[name] = source.count("\n")
            for node in ast.walk(ast.parse(source)):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    length = node.end_lineno - node.lineno + 1
                    if length > FUNCTION_LINES:
                        found[f"{name}:{node.name}"] = length
    return found


def test_no_file_or_function_grows_past_the_size_rule():
    grown = {k: (v, OVER.get(k)) for k, v in sizes().items() if v > OVER.get(k, 0)}
    assert not grown, (
        f"over {FILE_LINES} lines a file or {FUNCTION_LINES} a function (now, allowed): {grown}; "
        "split it (small files that each own one idea)"
    )


def test_the_list_of_what_is_over_is_kept_tight():
    """A file or function that shrank is lowered in OVER (or dropped), so that it cannot grow back."""
    now = sizes()
    stale = {k: (now.get(k), v) for k, v in OVER.items() if now.get(k, 0) < v}
    assert not stale, f"shrunk (now, listed): {stale}; lower or drop them in OVER"
