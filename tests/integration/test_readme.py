"""The README promises exactly two commands; CI must run the second one verbatim."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def readme_commands():
    text = (ROOT / "README.md").read_text()
    section = text.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.+?)\n```", section)


def test_readme_has_exactly_two_commands():
    commands = readme_commands()
    assert len(commands) == 2 and all("\n" not in c for c in commands)
    main_job, tests = commands
    assert main_job.endswith("python -m theory.simulate")
    assert tests.endswith("python -m pytest") and "-c constraints.txt" in tests


def test_ci_runs_the_readme_test_command():
    assert readme_commands()[1] in (ROOT / ".ci" / "run").read_text()


def test_constraints_keep_torch_on_the_cpu_build():
    lines = [ln.strip() for ln in (ROOT / "constraints.txt").read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    assert any(re.fullmatch(r"torch==[\d.]+", ln) for ln in lines)
