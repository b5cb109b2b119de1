"""A command run without the optional dependency it needs says which extra to install, in one line (issue #52)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


@pytest.mark.parametrize(
    "command, extra",
    [("empirical.train", "torch"), ("empirical.elicit", "torch"), ("empirical.probe", "torch")],
)
def test_a_missing_torch_is_one_line_naming_the_extra(tmp_path, command, extra):
    fake = tmp_path / "torch"
    fake.mkdir()
    (fake / "__init__.py").write_text(
        'raise ModuleNotFoundError("No module named \'torch\'", name="torch")\n'
    )
    env = os.environ | {"PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    done = subprocess.run(
        [sys.executable, "-m", command, "--help"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert f".[{extra}]" in done.stderr and f"python -m {command}:" in done.stderr


def test_a_command_that_needs_no_torch_still_runs_without_it(tmp_path):
    fake = tmp_path / "torch"
    fake.mkdir()
    (fake / "__init__.py").write_text(
        'raise ModuleNotFoundError("No module named \'torch\'", name="torch")\n'
    )
    env = os.environ | {"PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    done = subprocess.run(
        [sys.executable, "-m", "empirical.data", "--help"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0 and "usage" in done.stdout
