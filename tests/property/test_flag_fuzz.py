"""A fuzzer over every command's flags (issue #74): flags read from each command's own --help, values drawn from
numbers that are not numbers, paths that are not there or are links, and text. The invariant, checked on every
draw: the command ends with exit 0 or exit 2 (argparse's usage errors included) and no other exception; exit 2
says one line on stderr; no file appears in the working folder and no input file changes.

Each command is asked with ``--check-args`` (it checks its flags and values, reads no input, writes nothing), so a
draw never trains or integrates for long; the file-mutation fuzzing of the readers is tests/property/test_fuzz.py.
The default run draws a few examples a command (well inside a minute for all); ``-m slow`` draws many more.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

COMMANDS = (
    "theory.simulate",
    "pipeline.batch",
    "empirical.celeba",
    "empirical.convert",
    "empirical.data",
    "empirical.elicit",
    "empirical.ensemble",
    "pipeline.job_file",
    "pipeline.keep",
    "empirical.probe",
    "pipeline.sweep",
    "pipeline.registered_queue",
    "empirical.train",
    "fitting.capability",
    "fitting.fit",
    "fitting.forecast",
    "fitting.forecast_calibration",
    "fitting.forecast_registered",
    "fitting.ladder",
    "fitting.masking",
    "fitting.outside",
    "fitting.predict",
    "fitting.sim_joint",
    "fitting.study",
    "fitting.turn",
    "figures.capability",
    "figures.fit",
    "figures.forecast",
    "figures.forecast_verdict",
    "figures.masking",
    "figures.outside",
    "figures.predict",
    "figures.sim_joint",
    "figures.study",
    "figures.training",
)
NEEDS_TORCH = {"empirical.elicit", "empirical.ensemble", "empirical.probe", "empirical.train"}
VALUES = (
    "",
    "0",
    "-1",
    "1e400",
    "-1e-300",
    "nan",
    "inf",
    "abc",
    "1,2",
    "a=b",
    "=1",
    "k=",
    "/nonexistent/x",
    "../../x",
    "link",
    "file.txt",
    "folder",
    "--help",
    "\u00e9t\u00e9",
)
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")


def _main(module: str):
    return importlib.import_module(module).main


def flags_of(module: str) -> list[str]:
    """The long flags a command's --help lists (its own parser, so a new flag is fuzzed without a line here)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        with contextlib.suppress(SystemExit):
            _main(module)(["--help"])
    return sorted(set(FLAG.findall(out.getvalue())) - {"--help"})


def run(module: str, argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            code = _main(module)([*argv, "--check-args"])
        except SystemExit as stop:  # argparse: exit 2 for a usage error, 0 for --help
            code = stop.code if isinstance(stop.code, int) else 2
    return code, err.getvalue()


def _draws(module: str):
    flags = flags_of(module)
    positional = st.lists(st.sampled_from(VALUES), max_size=2)
    pairs = st.lists(
        st.tuples(st.sampled_from(flags or ["--x"]), st.sampled_from(VALUES)), max_size=3
    )
    return st.tuples(positional, pairs)


def check(module: str, draw, folder: Path) -> tuple[int, str]:
    """Run one draw and assert the invariant; the exit code and what was said on stderr."""
    positional, pairs = draw
    argv = [*positional, *(w for pair in pairs for w in pair)]
    before = sorted(p.name for p in folder.iterdir())
    inputs = {
        p.name: p.read_bytes() for p in folder.iterdir() if p.is_file() and not p.is_symlink()
    }
    code, err = run(module, argv)
    assert code in (0, 2), f"python -m {module} {argv}: exit {code}\n{err[-2000:]}"
    assert "Traceback" not in err, f"python -m {module} {argv}:\n{err[-2000:]}"
    if code == 2 and not err.startswith("usage:"):  # argparse's own errors print the usage first
        assert err.strip().count("\n") == 0, f"python -m {module} {argv}: more than one line\n{err}"
    assert sorted(p.name for p in folder.iterdir()) == before, f"python -m {module} {argv} wrote"
    for name, data in inputs.items():
        assert (folder / name).read_bytes() == data, f"python -m {module} {argv} changed {name}"
    return code, err


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A working folder holding what the values name: a file, a folder, a link to the file."""
    (tmp_path / "file.txt").write_text("step,class,z_color\n0,11,0.5\n")
    (tmp_path / "folder").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "file.txt")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _fuzz(module: str, examples: int, folder: Path) -> None:
    if module in NEEDS_TORCH:
        pytest.importorskip("torch")

    @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck))
    @given(_draws(module))
    def one(draw):
        check(module, draw, folder)

    one()


@pytest.mark.parametrize("module", COMMANDS)
def test_every_command_keeps_the_invariant_on_hostile_flags(module, folder):
    _fuzz(module, 6, folder)


@pytest.mark.slow
@pytest.mark.parametrize("module", COMMANDS)
def test_every_command_keeps_the_invariant_on_hostile_flags_long(module, folder):
    _fuzz(module, 150, folder)


def test_the_commands_listed_are_every_command():
    """A command added later joins the fuzzer: every module decorated with cli.command is listed."""
    root = Path(__file__).resolve().parents[2]
    found = set()
    for pkg in ("theory", "empirical", "fitting", "figures", "pipeline"):
        for path in (root / pkg).rglob("*.py"):
            text = path.read_text()
            module = path.relative_to(root).with_suffix("").as_posix().replace("/", ".")
            for name in re.findall(r'^@cli\.command(?:\("([\w.]+)"\))?$', text, re.M):
                found.add(name or module)
    assert found == set(COMMANDS), (sorted(found - set(COMMANDS)), sorted(set(COMMANDS) - found))


def test_the_fuzzer_catches_a_traceback_and_a_second_line(folder, monkeypatch):
    """The check can fail: a planted command that raises, or that says two lines, is caught."""
    import sys

    me = sys.modules[__name__]

    def broken(argv):
        raise KeyError("planted")

    def wordy(argv):
        print("one\ntwo", file=sys.stderr)
        return 2

    for planted, caught in ((broken, KeyError), (wordy, AssertionError)):
        monkeypatch.setattr(me, "_main", lambda module, f=planted: f)
        with pytest.raises(caught):
            check("planted", ([], []), folder)
