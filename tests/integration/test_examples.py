"""Every example command in the README and in each command's --help is run by a test.

All of them are run with the hidden ``--check-args``: the command parses and checks its flags and values, reads no
input and writes nothing, so an example whose flag was renamed or whose value became invalid fails here. The examples
that take seconds (the toy models, the data grid, the fit of a toy run) are also run for real in a scratch folder;
the ones that train a network or need a trained run are not (minutes to hours each).
"""

import contextlib
import importlib
import io
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = [
    "theory.simulate",
    "fitting.fit",
    "fitting.turn",
    "fitting.capability",
    "fitting.predict",
    "fitting.study",
    "fitting.masking",
    "fitting.ladder",
    "fitting.sim_joint",
    "fitting.forecast",
    "fitting.forecast_calibration",
    "fitting.outside",
    "empirical.train",
    "empirical.elicit",
    "pipeline.sweep",
    "empirical.data",
    "empirical.probe",
    "empirical.convert",
    "figures.training",
    "figures.masking",
    "figures.study",
    "figures.sim_joint",
    "figures.capability",
    "figures.fit",
    "figures.predict",
    "figures.forecast",
    "pipeline.batch",
    "pipeline.keep",
    "empirical.ensemble",
    "empirical.celeba",
]
SYNOPSIS = re.compile(r"[\[\]{}|]|\.\.")  # a usage line with placeholders, not an example


def command_lines(text: str) -> list[str]:
    """The `python -m ...` lines of a text, continuation lines (ending in a backslash) joined."""
    joined = re.sub(r"\\\n\s*", " ", text)
    return [m.group(1) for m in re.finditer(r"^\s*(python -m \S.*)$", joined, re.M)]


def readme_examples() -> list[str]:
    """The example commands of the README (but its two commands) and of the tutorial."""
    text = (ROOT / "README.md").read_text()
    two_commands = text.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    text = text.replace(two_commands, "") + (ROOT / "docs" / "tutorial.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    lines = [line for block in blocks for line in command_lines(block)]
    return [line for line in lines if not line.startswith("python -m pip ")]


def run(module: str, argv: list[str]) -> tuple[int, str]:
    """``python -m module argv`` in this process: (exit status, stdout and stderr)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            code = importlib.import_module(module).main(argv)
        except SystemExit as stop:  # argparse: --help, or a bad flag
            code = stop.code
    return code, out.getvalue()


def help_examples() -> list[str]:
    lines = []
    for module in COMMANDS:
        code, text = run(module, ["--help"])
        assert code == 0, text
        lines += [line for line in command_lines(text) if not SYNOPSIS.search(line)]
    return lines


def split(line: str) -> tuple[str, list[str]]:
    words = shlex.split(line, comments=True)
    assert words[:2] == ["python", "-m"], line
    return words[2], words[3:]


EXAMPLES = sorted(set(readme_examples()) | set(help_examples()))


def test_the_examples_are_found():
    modules = {split(line)[0] for line in EXAMPLES}
    assert (
        len(EXAMPLES) >= 30
        and {"theory.simulate", "pipeline.sweep", "fitting.predict", "figures.masking"} <= modules
    )
    assert any("--no-wait" in line for line in EXAMPLES)  # a continued line, joined


@pytest.mark.parametrize("line", EXAMPLES)
def test_every_example_passes_its_commands_checks(line, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    module, argv = split(line)
    code, text = run(module, [*argv, "--check-args"])
    assert code == 0, f"{line}\n{text}"
    assert not any(tmp_path.iterdir()), f"{line}: --check-args wrote {list(tmp_path.iterdir())}"


def test_check_args_refuses_what_the_command_refuses(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run("theory.simulate", ["--model", "eq1", "--param", "k=-1", "--check-args"])[0] == 2
    assert run("empirical.train", ["--preset", "tiny", "--set", "steps=0", "--check-args"])[0] == 2
    assert run("pipeline.sweep", ["--preset", "tiny", "--grid", "seed=", "--check-args"])[0] == 2
    assert (
        run("fitting.predict", ["a.csv", "--covariates", "c.csv", "--boot", "3", "--check-args"])[0]
        == 2
    )


QUICK = ("theory.simulate", "empirical.data")


MAIN_JOB = "python -m theory.simulate"  # 12 s; test_simulate_cli.py's module fixture runs it too


@pytest.mark.parametrize(
    "line",
    [
        pytest.param(line, marks=pytest.mark.slow) if line == MAIN_JOB else line
        for line in EXAMPLES
        if split(line)[0] in QUICK
    ],
)
def test_the_quick_examples_run(line, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, text = run(*split(line))
    assert code == 0, f"{line}\n{text}"
    assert "wrote" in text


def test_the_readme_fit_example_runs_on_the_main_jobs_output(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run("theory.simulate", ["--preset", "fig5"])[0] == 0
    line = next(
        line
        for line in readme_examples()
        if line.startswith("python -m fitting.fit runs/theory/fig5")
    )
    code, text = run(*split(line))
    assert code == 0, f"{line}\n{text}"
    assert (tmp_path / "runs/theory/fig5/fit/fit.json").is_file()
