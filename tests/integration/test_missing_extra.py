"""A command run without the optional dependency it needs says which extra to install, in one line (issue #52)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


@pytest.fixture
def without_torch(tmp_path):
    """An environment in which ``import torch`` fails as it does where torch is not installed."""
    fake = tmp_path / "torch"
    fake.mkdir()
    (fake / "__init__.py").write_text(
        'raise ModuleNotFoundError("No module named \'torch\'", name="torch")\n'
    )
    return os.environ | {"PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}


def _help(command: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", command, "--help"], cwd=ROOT, env=env, capture_output=True, text=True
    )


@pytest.mark.parametrize("command", ["empirical.train", "empirical.elicit", "empirical.probe"])
def test_a_missing_torch_is_one_line_naming_the_extra(without_torch, command):
    done = _help(command, without_torch)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert ".[torch]" in done.stderr and f"python -m {command}:" in done.stderr


def test_a_command_that_needs_no_torch_still_runs_without_it(without_torch):
    done = _help("empirical.data", without_torch)
    assert done.returncode == 0 and "usage" in done.stdout
