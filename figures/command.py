"""The frame of a command that draws one figure of one saved output: read it, draw it, save the PNG
beside it (or where --out says), one line on stderr for a file that cannot be drawn."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

from core import cli
from core.plot import save


def one_figure(
    source: tuple[str, str],
    png: str,
    read: Callable[[Path], Any],
    draw: Callable[[Any], Any],
    argv: Sequence[str] | None,
    options: Sequence[tuple[str, dict[str, Any]]] = (),
) -> int:
    """The running command (core.cli.command): parse ``argv`` (``source``: the positional's name
    and help; ``options``: further flags, each its name and argparse keywords), then save
    ``draw(read(path), **options)`` as ``png`` beside the source unless --out names a place (a .png,
    .pdf or .svg path, or a folder). A ValueError, KeyError or TypeError while drawing (a file of
    another shape) is a usage error naming the file."""
    name, help = source
    out_help = f"a .png, .pdf or .svg path, or a folder (default: {png} beside the {name})"
    parser = cli.reader_parser(name, help, out_help)
    dests = [parser.add_argument(flag, **keywords).dest for flag, keywords in options]
    args = parser.parse_args(argv)
    path = getattr(args, name)
    out = cli.figure_path(cli.out_or_beside(args.out, path), png, folder=args.out is None)
    if cli.checking(args):
        return 0
    record = read(path)
    try:
        fig = draw(record, **{dest: getattr(args, dest) for dest in dests})
    except ValueError as err:
        raise cli.UsageError(f"{path}: {err}") from None
    except (KeyError, TypeError) as err:  # a file of another shape than the figure reads
        raise cli.UsageError(f"{path}: not drawable ({type(err).__name__}: {err})") from None
    save(fig, out)
    print(f"wrote {out}")
    return 0
