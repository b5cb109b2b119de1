"""A file of training runs, one per line, as ``python -m pipeline.batch`` trains them:

  FOLDER --preset NAME --set KEY=VALUE ...      (# starts a comment, to the end of the line)

  python -m pipeline.job_file JOBS [JOBS ...] [--runs DIR]

checks every line as ``python -m empirical.train ARGS --out DIR/FOLDER`` would take it (its flags,
the preset, every --set value, the run folder), reading and training nothing, and exits 2 naming
each bad line (file, line number, folder, what is wrong): a folder named twice (in any spelling:
'a', './a' and 'a/' are one folder), a folder outside the runs folder (absolute, or through '..'), a
line that names its own --out, a line asking only for help or the version (it would train nothing
and be marked finished), or arguments python -m empirical.train refuses. pipeline.batch runs it
before a batch starts, so a bad line costs seconds instead of a GPU session's minutes. Exit 0 when
every line is good.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Sequence

from core import cli
from core.files import read_text


def folder_name(path: Path, number: int, written: str) -> str:
    """A line's folder in one spelling ('./a/' and 'a//' are 'a'), refused where it would leave the
    runs folder."""
    where = f"{path}:{number} ({written})"
    if written.startswith(("/", "~")) or PureWindowsPath(written).drive:
        raise cli.UsageError(f"{where}: the folder must be relative, under the runs folder")
    parts = [part for part in PurePosixPath(written).parts if part != "."]
    if ".." in parts or not parts:
        raise cli.UsageError(
            f"{where}: the folder must name a folder under the runs folder (no '..')"
        )
    return "/".join(parts)


def lines(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line number, folder, train arguments) of every run line of a job file (the one parser of job
    lines)."""
    out = []
    for number, text in enumerate(read_text(path, "job file").splitlines(), 1):
        try:
            words = shlex.split(text, comments=True)
        except ValueError as err:  # an unclosed quote
            raise cli.UsageError(f"{path}:{number}: {err}") from None
        if words:
            out.append((number, folder_name(path, number, words[0]), words[1:]))
    return out


def _train_refuses(args: list[str], out: Path) -> str | None:
    """What python -m empirical.train says about these arguments with --check-args (None:
    nothing)."""
    from empirical import train

    code, text = cli.check_in_process(train.main, [*args, "--out", str(out), cli.CHECK_ARGS])
    if code == 0:
        return None
    text = [line for line in text if line.strip()]
    return cli.one_line(text[-1] if text else f"exit {code}").removeprefix(
        "python -m empirical.train: error: "
    )


NOT_A_RUN = (
    "-h",
    "--help",
    "--version",
    cli.CHECK_ARGS,
)  # a train line with one of these trains nothing


def problems(path: Path, runs: Path) -> list[str]:
    """Every bad line of one job file, as 'FILE:LINE (FOLDER): what is wrong'."""
    found, seen = [], {}
    for number, folder, args in lines(path):
        where = f"{path}:{number} ({folder})"
        if folder in seen:
            found.append(
                f"{where}: the folder is also line {seen[folder]}'s; two runs would share it"
            )
            continue
        seen[folder] = number
        if any(a == "--out" or a.startswith("--out=") for a in args):
            found.append(
                f"{where}: names --out; the line's first word is its folder under the runs"
            )
        elif asks := [a for a in args if a in NOT_A_RUN]:
            found.append(f"{where}: {asks[0]} prints and exits: nothing would train; remove it")
        elif (why := _train_refuses(args, runs / folder)) is not None:
            found.append(f"{where}: {why}")
    return found


@cli.command
def main(argv: Sequence[str] | None = None) -> int:
    parser = cli.parser()
    parser.add_argument("jobs", nargs="+", type=Path, help="job files, one run per line")
    parser.add_argument(
        "--runs",
        type=Path,
        default=Path("runs/device"),
        help="the folder the runs go under (pipeline.batch --runs; default runs/device)",
    )
    args = parser.parse_args(argv)
    found = [p for path in args.jobs for p in problems(path, args.runs)]
    for line in found:
        print(line, file=sys.stderr)
    if found:
        return cli.report("pipeline.job_file", f"{len(found)} bad line(s); nothing was started")
    count = sum(len(lines(p)) for p in args.jobs)
    print(f"{count} run line(s) checked in {len(args.jobs)} file(s): all good")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
