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
    lines = [
        ln.strip()
        for ln in (ROOT / "constraints.txt").read_text().splitlines()
        if ln.strip() and not ln.startswith("#")
    ]
    assert any(re.fullmatch(r"torch==[\d.]+", ln) for ln in lines)


def test_licence_citation_and_changelog_are_shipped_and_linked():
    readme = (ROOT / "README.md").read_text()
    licence = (ROOT / "LICENSE").read_text()
    assert licence.startswith("MIT License") and "WITHOUT WARRANTY" in licence
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'license = "MIT"' in pyproject and 'license-files = ["LICENSE"]' in pyproject
    cff = (ROOT / "CITATION.cff").read_text()
    assert re.search(r"^cff-version: 1\.2\.0$", cff, re.M) and re.search(
        r"^preferred-citation:$", cff, re.M
    )
    assert "arXiv:2406.19370" in cff and re.search(r"^license: MIT$", cff, re.M)
    version = re.search(r'^version = "([\d.]+)"', pyproject, re.M).group(1)
    assert re.search(rf"^version: {re.escape(version)}$", cff, re.M)  # one version, in both files
    for link in (
        "(LICENSE)",
        "(CITATION.cff)",
        "(CHANGELOG.md)",
        "arxiv.org/abs/2406.19370",
        "cfpark00/concept-learning",
    ):
        assert link in readme
    assert re.search(
        rf"^## {re.escape(version)} - \d{{4}}-\d\d-\d\d$", (ROOT / "CHANGELOG.md").read_text(), re.M
    )


def test_the_readme_map_names_every_module_of_the_package():
    """The README's table of the parts is the newcomer's map of the house: each part's row names every
    module in it (a module added later joins the map, or this fails naming it)."""
    text = (ROOT / "README.md").read_text()
    missing = []
    for part in ("core", "theory", "empirical", "fitting", "figures", "pipeline"):
        row = re.search(rf"^\| `{part}/` \|(.*)$", text, re.M)
        assert row, f"README.md: no row for {part}/ in the table of the parts"
        named = set(re.findall(r"`([\w/]+)`", row.group(1)))
        for path in sorted((ROOT / part).rglob("*.py")):
            if path.name != "__init__.py" and path.stem not in named:
                missing.append(path.relative_to(ROOT).as_posix())
    assert not missing, f"README.md's table of the parts does not name: {missing}"
