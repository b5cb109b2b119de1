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


@pytest.mark.parametrize("command", ["pipeline.batch", "pipeline.keep", "pipeline.job_file"])
def test_the_pipeline_commands_need_no_torch_for_their_help(without_torch, command):
    done = _help(command, without_torch)
    assert done.returncode == 0 and f"python -m {command}" in done.stdout


def test_a_pipeline_command_that_needs_torch_names_itself(without_torch):
    done = _help("pipeline.sweep", without_torch)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("python -m pipeline.sweep: error: this command needs torch")


@pytest.mark.parametrize(
    "argv0, named",
    [("/x/pipeline/sweep.py", "pipeline.sweep"), ("/x/empirical/train.py", "empirical.train")],
)
def test_the_missing_extra_line_names_the_command_that_ran(monkeypatch, capsys, argv0, named):
    import empirical

    monkeypatch.setattr(sys, "argv", [argv0])
    monkeypatch.setattr(os, "_exit", lambda code: (_ for _ in ()).throw(SystemExit(code)))
    err = ModuleNotFoundError("No module named 'submitit'", name="submitit")
    with pytest.raises(SystemExit):
        empirical._missing_extra(type(err), err, None)
    assert capsys.readouterr().err.startswith(
        f"python -m {named}: error: this command needs submitit"
    )
