"""The error convention every command of the package follows.

Bad input ends a command with exit code 2 and one line on stderr, ``python -m <module>: error:
<what>`` (argparse's own prefix), which names the file (row, column) or flag, what was wrong and
what is valid. Output locations are checked before any work starts, so a bad ``--out`` never costs
minutes of training or fitting.

Usage, in a command module (``python -m mypackage.mycommand``)::

    @cli.command
    def main(argv=None) -> int:
        args = cli.parser().parse_args(argv)   # the module's docstring as --help
        out = cli.output_dir(args.out, "--out")
        ...

A command is named once, by its module; the parsers made while it runs take that name and the
module's docstring. :func:`command` turns :class:`ValueError` (this package's bad-input errors,
:class:`UsageError` among them) and :class:`OSError` (a file that is missing, a folder, unreadable,
a disk that is full) into that line. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import contextvars
import functools
import io
import math
import os
import sys
import tempfile
from pathlib import Path
from typing import Callable, Sequence

from core.pipe import PipeSafe

EXIT_USAGE = 2


class UsageError(ValueError):
    """A bad flag, value or file: exit code 2 with a one-line message."""


def shown(value: object) -> str:
    """A value as a user reads it: None (or NaN) is '-', never Python's 'None'."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:g}" if isinstance(value, float) else str(value)


def selection(**flags: object) -> str:
    """'--class 11 --run a' from the selecting flags that were given (None: not given, left out)."""
    given = [f"--{name.replace('_', '-')} {v}" for name, v in flags.items() if v is not None]
    return " ".join(given) or "no selection"


def one_line(text: str) -> str:
    """Text with every run of white space (newlines included) folded to one space."""
    return " ".join(str(text).split())


def report(module: str, message: str) -> int:
    """Print ``python -m module: error: message`` as one line on stderr; returns the exit code 2."""
    print(f"python -m {module}: error: {one_line(message)}", file=sys.stderr)
    return EXIT_USAGE


def describe_os_error(err: OSError) -> str:
    """'PATH: what went wrong' for an OSError, in words a user can act on."""
    path = err.filename if err.filename is not None else ""
    why = {
        FileNotFoundError: "no such file or folder",
        IsADirectoryError: "is a folder, not a file",
        NotADirectoryError: "a part of this path is a file, not a folder",
        PermissionError: "permission denied",
    }.get(type(err), err.strerror or str(err))
    return f"{path}: {why}" if path else why


# the command running now (its name and its module's docstring), for the parsers it makes
_RUNNING: contextvars.ContextVar[tuple[str, str | None]] = contextvars.ContextVar("command")


def _module_of(main: Callable[..., int]) -> tuple[str, str | None]:
    """(name, docstring) of the module that defines ``main``: its import name, also when it runs as
    ``python -m name`` (then ``__main__``, whose spec keeps the name) or by its path (no spec: the
    name its path in the checkout gives)."""
    module = sys.modules.get(main.__module__)
    spec, doc = getattr(module, "__spec__", None), getattr(module, "__doc__", None)
    if spec is not None:
        return spec.name, doc
    path = Path(getattr(module, "__file__", "") or ".").resolve().with_suffix("")
    inside = path.is_relative_to(ROOT) and path != ROOT
    return (".".join(path.relative_to(ROOT).parts) if inside else main.__module__), doc


def command(name: str | Callable[..., int]) -> Callable:
    """Decorate the ``main(argv=None) -> int`` of a command so that bad input exits 2 with one line.

    Bare (``@cli.command``) the command is named by its module; ``@cli.command("name")`` names it
    (a subcommand's module). While it runs, :func:`parser` takes that name and the module's
    docstring."""
    if callable(name):
        return command(_module_of(name)[0])(name)

    def wrap(main: Callable[..., int]) -> Callable[..., int]:
        doc = _module_of(main)[1]

        @functools.wraps(main)
        def run(argv: Sequence[str] | None = None) -> int:
            real, real_err = sys.stdout, sys.stderr
            sys.stdout = PipeSafe(real) if real is not None else real
            if real_err is None:  # started with stderr closed (`2>&-`): its messages go nowhere
                sys.stderr = open(os.devnull, "w")
            token = _RUNNING.set((name, doc))
            try:
                return main(argv)
            # the reader went away (`... | head`): stop quietly, as Unix tools do
            except BrokenPipeError:
                try:  # and keep the interpreter's final flush of stdout from failing again
                    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                except (OSError, ValueError, AttributeError):
                    pass
                return 0
            except ValueError as err:
                return report(name, str(err))
            except OSError as err:
                return report(name, describe_os_error(err))
            finally:
                _RUNNING.reset(token)
                try:
                    sys.stdout.flush()
                except (OSError, ValueError):
                    pass
                if real_err is None:
                    sys.stderr.close()
                sys.stdout, sys.stderr = real, real_err

        return run

    return wrap


def running() -> tuple[str, str | None]:
    """(name, module docstring) of the command running now in this thread; a parser made outside a
    command (or in a thread a command started) is a bug: name it, ``parser(module, doc)``."""
    try:
        return _RUNNING.get()
    except LookupError:
        raise RuntimeError("cli.parser() without a name is made inside a @cli.command") from None


def _nearest_existing(path: Path) -> Path:
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return probe


def _check_writable(folder: Path, what: str) -> None:
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as err:
        raise UsageError(
            f"{what}: cannot write in {folder} ({describe_os_error(err).split(': ', 1)[-1]})"
        ) from None


ROOT = Path(__file__).resolve().parents[1]  # the checkout (its results: the committed results)
RESULTS_ENV = "CONCEPT_DYNAMICS_RESULTS"  # =write: defaults may write into the committed results


def default_out(path: str | os.PathLike) -> Path:
    """Where a command writes when no output is named: ``path``, except inside the committed results
    of a checkout (``results``), which an analysis leaves as committed: there, the same place under
    ``runs/results/``, said on stderr. A named --out is taken as given; the regenerate scripts set
    CONCEPT_DYNAMICS_RESULTS=write to remake the committed files."""
    path = Path(path)
    moved = results_copy(path)
    if moved is None or os.environ.get(RESULTS_ENV) == "write":
        return path
    print(
        f"note: {path} holds committed results, left as they are; writing to {moved} instead "
        "(name --out to write elsewhere)",
        file=sys.stderr,
    )
    return moved


def results_copy(path: str | os.PathLike) -> Path | None:
    """Where :func:`default_out` writes for ``path`` inside the checkout's committed results
    (``runs/results/...``); None for a path outside them."""
    results = ROOT / "results"
    try:
        inside = Path(path).resolve().relative_to(results)
    except ValueError:
        return None
    return ROOT / "runs" / "results" / inside if results.is_dir() else None


def output_dir(path: str | os.PathLike, flag: str = "--out") -> Path:
    """Check, before any work, that ``path`` is (or can become) a folder this process can write in.

    Nothing is created. Raises :class:`UsageError` naming the flag when ``path`` is a file, lies
    under a file, or its nearest existing folder is not writable.
    """
    path = Path(path)
    what = f"{flag} {path}"
    if path.exists() and not path.is_dir():
        raise UsageError(f"{what}: is a file, not a folder; give a folder")
    base = _nearest_existing(path.absolute())
    if not base.is_dir():
        raise UsageError(f"{what}: lies under {base}, which is a file, not a folder")
    _check_writable(base, what)
    return path


def guarded() -> dict[str, str]:
    """Every record's file name (the record classes defined so far, core.record.KNOWN) and what
    writes it."""
    from core.record import KNOWN

    return {cls.FILE: f"what {cls.WRITER} writes" for cls in KNOWN if cls.FILE}


def _read_as(path: Path) -> str | None:
    """What the package would read a file at ``path`` as (None: nothing reads it by name)."""
    from core.layout import held

    return held(path) or guarded().get(path.name)


def output_file(
    path: str | os.PathLike,
    flag: str = "--out",
    *,
    suffix: str | tuple[str, ...] | None = None,
    owns: tuple[str, ...] = (),
) -> Path:
    """Check that ``path`` can be written as a file (its folder can be made and written in);
    ``suffix``: the file name ending (or endings) accepted; ``owns``: the names of guarded files
    this command writes (any other name in :mod:`core.layout` or of a record is refused: another
    command writes it and the package reads it)."""
    path = Path(path)
    what = f"{flag} {path}"
    read_as = _read_as(path)
    if read_as and path.name not in owns:
        raise UsageError(
            f"{what}: {path.name} is the name of {read_as}, which other commands read; give the "
            "output another name"
        )
    if path.is_symlink():
        raise UsageError(
            f"{what}: is a symbolic link; refusing to write through it; write elsewhere"
        )
    endings = (suffix,) if isinstance(suffix, str) else suffix
    valid = None if endings is None else " or ".join(endings)
    if path.is_dir():
        raise UsageError(
            f"{what}: is a folder; give a file name" + (f" ending in {valid}" if valid else "")
        )
    if endings is not None and path.suffix.lower() not in endings:
        raise UsageError(f"{what}: must end in {valid}")
    base = _nearest_existing(path.absolute().parent)
    if not base.is_dir():
        raise UsageError(f"{what}: lies under {base}, which is a file, not a folder")
    _check_writable(base, what)
    return path


def parser(module: str | None = None, doc: str | None = None, **kwargs) -> argparse.ArgumentParser:
    """The argument parser of ``python -m module``: the module's docstring as its --help text,
    layout kept. Without ``module``, the running command's name and docstring (:func:`command`).

    Every parser takes a hidden ``--check-args``: a command that honours it (:func:`checking`)
    checks its flags and values, reads no input, writes nothing and exits 0, so a chained step (a
    sweep's ``--then``) is checked before the first run trains."""
    if module is None:
        module, module_doc = running()
        doc = module_doc if doc is None else doc
    made = argparse.ArgumentParser(
        prog=f"python -m {module}",
        description=doc,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        **kwargs,
    )
    made.add_argument(CHECK_ARGS, action="store_true", help=argparse.SUPPRESS)
    return made


CHECK_ARGS = "--check-args"


def reader_parser(
    source: str, source_help: str, out_help: str, nargs=None
) -> argparse.ArgumentParser:
    """The running command's parser when it reads saved outputs (``source``, a positional path,
    ``nargs`` of them) and writes beside them unless ``--out`` names a place: a figure of a record,
    most often."""
    made = parser()
    made.add_argument(source, type=Path, nargs=nargs, help=source_help)
    made.add_argument("--out", type=Path, default=None, help=out_help)
    return made


def add_set(parser: argparse.ArgumentParser, help: str, dest: str = "overrides") -> None:
    """The repeatable ``--set KEY=VALUE`` of the commands that configure runs (``help``: what
    it sets)."""
    parser.add_argument(
        "--set", dest=dest, action="append", default=[], metavar="KEY=VALUE", help=help
    )


def out_or_beside(out: str | os.PathLike | None, source: str | os.PathLike) -> Path:
    """``out`` when named, else the folder of ``source`` (a folder, or a file's folder) as
    :func:`default_out` gives it: where a command that reads ``source`` writes by default."""
    if out is not None:
        return Path(out)
    source = Path(source)
    return default_out(source if source.is_dir() else source.parent)


def checking(args: argparse.Namespace) -> bool:
    """Whether the command was asked only to check its arguments (``--check-args``): it returns 0 at
    this point, after its flag and value checks and before it reads any input."""
    return bool(getattr(args, "check_args", False))


def check_in_process(main: Callable[..., int], argv: Sequence[str]) -> tuple[int, list[str]]:
    """A command's ``main(argv)`` run in this process with its output captured: (exit code, its
    error output's lines). For ``--check-args`` checks, which read and write nothing: a new
    interpreter for each took 2-4 s, most of it imports. argparse's usage errors exit 2."""
    errors = io.StringIO()
    with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(list(argv))
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else 2
    return code, errors.getvalue().splitlines()


def not_an_input(outputs, inputs, flag: str = "--out") -> None:
    """Refuse, before any work, an output path that is (or resolves to) one of the command's inputs:
    a command never overwrites what it reads."""
    read = {Path(p).resolve(): Path(p) for p in inputs}
    for out in outputs:
        if Path(out).resolve() in read:
            raise UsageError(
                f"{flag} {out}: would overwrite the input {read[Path(out).resolve()]}; write "
                "elsewhere"
            )


FIGURE_FORMATS = (".png", ".pdf", ".svg")


def figure_path(
    out: str | os.PathLike, name: str, flag: str = "--out", folder: bool = False
) -> Path:
    """Where a figure command writes: ``out/name`` when ``out`` is a folder (``folder``: a default
    folder, even one not made yet whose name has a dot, such as a run's ``sep.color=0.3,seed=1``)
    or has no suffix, else ``out`` (a .png, .pdf or .svg: the format follows the name)."""
    out = Path(out)
    as_folder = folder or out.is_dir() or not out.suffix
    return output_file(out / name if as_folder else out, flag, suffix=FIGURE_FORMATS)


def assignment(item: str, flag: str, form: str = "NAME=VALUE") -> tuple[str, str]:
    """``'lam=0.5'`` -> ``('lam', '0.5')``, stripped: the one NAME=VALUE syntax of every command's
    flags."""
    name, eq, value = item.partition("=")
    if not eq or not name.strip() or not value.strip():
        raise UsageError(f"{flag} {item!r}: expected {form}")
    return name.strip(), value.strip()


def numbers(text: str, flag: str, name: str) -> list[float]:
    """``'1,2.5'`` -> ``[1.0, 2.5]``: finite numbers, comma-separated, or a UsageError naming the
    flag."""
    values = []
    for part in text.split(","):
        try:
            values.append(float(part))
        except ValueError:
            raise UsageError(
                f"{flag} {name}={text}: {part.strip()!r} is not a number; values must be numbers, "
                "comma-separated"
            ) from None
    if not all(math.isfinite(v) for v in values):
        raise UsageError(f"{flag} {name}={text}: values must be finite numbers")
    return values


def nonnegative_seed(seed: int, flag: str = "--seed") -> int:
    """Seeds feed numpy and torch generators, which take integers in [0, 2**32)."""
    if not 0 <= seed < 2**32:
        raise UsageError(f"{flag} {seed}: a seed must be an integer in [0, 2**32)")
    return seed
