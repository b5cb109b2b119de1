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
