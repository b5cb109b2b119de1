"""The error convention (core.cli): one line, exit 2, output locations checked before any work."""

import argparse
import errno
import tempfile

import pytest

from core import cli


@cli.command("demo")
def demo(argv=None):
    kind = argv[0]
    if kind == "value":
        raise ValueError("bad value\nover two lines")
    if kind == "missing":
        open("/nonexistent/folder/file.csv")
    if kind == "folder":
        open(tempfile.gettempdir())
    if kind == "bug":
        raise KeyError("a bug keeps its traceback")
    return 0


@pytest.mark.parametrize(
    "kind, words",
    [
        ("value", "python -m demo: error: bad value over two lines"),
        ("missing", "python -m demo: error: /nonexistent/folder/file.csv: no such file or folder"),
        ("folder", "is a folder, not a file"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(kind, words, capsys):
    assert demo([kind]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1


def test_a_bug_is_not_hidden():
    with pytest.raises(KeyError):
        demo(["bug"])
    assert demo(["ok"]) == 0


def test_output_dir_is_checked_without_creating_it(tmp_path):
    target = tmp_path / "a" / "b"
    assert cli.output_dir(target) == target
    assert not (tmp_path / "a").exists()
    (tmp_path / "f").write_text("x")
    with pytest.raises(cli.UsageError, match="is a file, not a folder"):
        cli.output_dir(tmp_path / "f", "--out")
    with pytest.raises(cli.UsageError, match=r"--out .*lies under .*f, which is a file"):
        cli.output_dir(tmp_path / "f" / "sub" / "deeper", "--out")


def test_an_unwritable_folder_is_refused(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):  # root can write anywhere, so the refusal is simulated
        raise PermissionError(errno.EACCES, "Permission denied", str(kwargs.get("dir")))

    monkeypatch.setattr(tempfile, "TemporaryFile", refuse)
    with pytest.raises(cli.UsageError, match=r"--out .*: cannot write in .* \(permission denied\)"):
        cli.output_dir(tmp_path / "new", "--out")
    with pytest.raises(cli.UsageError, match="cannot write in"):
        cli.output_file(tmp_path / "fig.png", "--out", suffix=".png")


def test_output_file_wants_a_file_with_the_suffix(tmp_path):
    with pytest.raises(cli.UsageError, match="is a folder"):
        cli.output_file(tmp_path, "--out", suffix=".png")
    with pytest.raises(cli.UsageError, match="must end in .png"):
        cli.output_file(tmp_path / "x.txt", "--out", suffix=".png")
    assert cli.output_file(tmp_path / "new" / "x.png", suffix=".png").name == "x.png"


@pytest.mark.parametrize("seed", [-1, 2**32])
def test_seeds_are_refused_outside_numpy_range(seed):
    with pytest.raises(cli.UsageError, match="--seed"):
        cli.nonnegative_seed(seed)


def test_a_closed_pipe_ends_a_command_quietly(capsys):
    from core import cli

    @cli.command("demo")
    def main(argv=None):
        raise BrokenPipeError(32, "Broken pipe")  # what print() raises once `| head` has gone

    assert main([]) == 0
    assert capsys.readouterr().err == ""


def test_a_check_in_process_gives_the_exit_code_and_the_error_lines_and_prints_nothing(capsys):
    def main(argv):
        parser = argparse.ArgumentParser(prog="python -m x")
        parser.add_argument("--n", type=int)
        args = parser.parse_args(argv)
        print("checked")
        return 0 if args.n is None or args.n > 0 else 3

    assert cli.check_in_process(main, ["--n", "2"]) == (0, [])
    code, lines = cli.check_in_process(main, ["--n", "x"])  # argparse exits 2
    assert code == 2 and "python -m x: error: argument --n: invalid int value: 'x'" in lines
    assert cli.check_in_process(main, ["--n", "-1"])[0] == 3
    assert capsys.readouterr() == ("", "")


@cli.command
def named_by_its_module(argv=None):
    """A command named once: by the module it is in."""
    args = cli.parser().parse_args(argv)
    if args.check_args:
        raise ValueError("checked")
    return 0


def test_a_bare_command_is_named_by_its_module_and_its_parser_follows(capsys):
    assert named_by_its_module(["--check-args"]) == 2
    assert capsys.readouterr().err == f"python -m {__name__}: error: checked\n"
    with pytest.raises(SystemExit):
        named_by_its_module(["--help"])
    shown = capsys.readouterr().out
    assert shown.startswith(f"usage: python -m {__name__} ") and __doc__.split(":")[0] in shown
    assert named_by_its_module.__doc__ == "A command named once: by the module it is in."


def test_a_parser_without_a_name_outside_a_command_is_a_bug():
    with pytest.raises(RuntimeError, match="inside a @cli.command"):
        cli.parser()
    assert cli.parser("named", "help").prog == "python -m named"


@cli.command
def with_its_own_help(argv=None):
    print(cli.parser(doc="its own help").description, cli.parser().description == __doc__)
    return 0


def test_a_parser_of_the_running_command_may_take_its_own_help(capsys):
    assert with_its_own_help([]) == 0
    assert capsys.readouterr().out == "its own help True\n"


@pytest.mark.parametrize(
    "how", [["-m", "pipeline.keep"], ["pipeline/keep.py"]], ids=["python -m", "its path"]
)
def test_a_command_run_as_typed_is_named_by_its_module(how):
    """``python -m pipeline.keep``: the module is __main__, its spec keeps the name; run by its path
    (no spec), the path in the checkout names it."""
    import subprocess
    import sys
    from pathlib import Path

    done = subprocess.run(
        [sys.executable, *how, "/nonexistent/run", "/nonexistent/kept"],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("python -m pipeline.keep: error: "), done.stderr
