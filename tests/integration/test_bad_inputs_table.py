"""The bad-input table of docs/reliability.md: each case is a clean exit-2 line or a correct acceptance.

The torch-free, quick cases run in process here (same cases, same scoring as benchmarks/bad_inputs.py);
the whole table, every command as a real subprocess, is a slow test.
"""

import importlib
import subprocess
import sys
from pathlib import Path

import pytest
from benchmark_script import load

ROOT = Path(__file__).resolve().parents[2]
bad_inputs = load("bad_inputs")

QUICK = [c for c in bad_inputs.CASES if not c.needs_torch and not c.slow]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    w = tmp_path_factory.mktemp("w")
    bad_inputs.prepare(w, torch=False)
    return w


def test_the_table_has_the_cases_the_issue_asks_for():
    kinds = {c.kind for c in bad_inputs.CASES}
    assert len(bad_inputs.CASES) >= 100
    assert {
        "injection",
        "lost data",
        "bounded work",
        "garbage fit",
        "output path",
        "unreadable log",
        "bad run folder",
        "bad config",
        "never elicited",
    } <= kinds
    assert {c.command for c in bad_inputs.CASES} == set(bad_inputs.COMMANDS)


@pytest.mark.parametrize("case", QUICK, ids=[f"{c.command}:{c.shown()[:40]}" for c in QUICK])
def test_case_in_process(case, workspace, tmp_path, monkeypatch, capsys):
    c = tmp_path / "case"
    c.mkdir()
    if case.setup is not None:
        case.setup(c, workspace)
    monkeypatch.chdir(c)
    args = [a.replace("{c}", str(c)).replace("{w}", str(workspace)) for a in case.args]
    main = importlib.import_module(case.command).main
    try:
        code = main(args)
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    err = capsys.readouterr().err
    outcome, message = bad_inputs.score(case, code, err, c, workspace)
    assert outcome in bad_inputs.GOOD, f"{outcome}: {message or err}"


@pytest.mark.slow
def test_the_whole_table_as_subprocesses(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "bad_inputs.py"),
            "--json",
            str(tmp_path / "out.json"),
        ],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_the_summary_counts_cases_per_command_and_kind():
    rows = [
        ("a.cmd", "bad flag", "clean error"),
        ("a.cmd", "bad flag", "traceback"),
        ("b.cmd", "output path", "accepted"),
    ]
    text = bad_inputs.summary(rows).splitlines()
    assert text[0] == "| command | cases | bad flag | output path | not clean |"
    assert text[2:] == ["| a.cmd | 2 | 2 |  | 1 |", "| b.cmd | 1 |  | 1 | 0 |"]


def test_write_docs_links_the_table_from_docs_to_results(tmp_path, monkeypatch):
    """The table lives in results/, the summary in docs/ (before: a ValueError from relative_to after the move)."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "results" / "reliability").mkdir(parents=True)
    doc = tmp_path / "docs" / "reliability.md"
    doc.write_text(f"intro\n{bad_inputs.MARK_BEGIN}\nold\n{bad_inputs.MARK_END}\nrest\n")
    monkeypatch.setattr(bad_inputs, "ROOT", tmp_path)
    monkeypatch.setattr(bad_inputs, "DOCS", doc)
    monkeypatch.setattr(bad_inputs, "TABLE", tmp_path / "results" / "reliability" / "table.md")
    bad_inputs.write_docs("2 cases: 2 clean error\n\n| table |\n")
    assert "2 cases: 2 clean error" in bad_inputs.TABLE.read_text()
    assert (
        "\n2 cases: 2 clean error; per command and case: "
        "[results/reliability/table.md](../results/reliability/table.md)\n"
    ) in doc.read_text()
    assert doc.read_text().startswith("intro\n") and doc.read_text().endswith("rest\n")
