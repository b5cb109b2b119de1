"""The frame of a command that draws one figure of one saved output: read it, draw it, save the PNG
beside it (or where --out says), one line on stderr for a file that cannot be drawn."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

from core import cli
from core.plot import save


def one_figure(
    module: str,
    doc: str | None,
    source: tuple[str, str],
    png: str,
    read: Callable[[Path], Any],
    draw: Callable[[Any], Any],
    argv: Sequence[str] | None,
) -> int:
    """Parse ``argv`` (``source``: the positional's name and help), then save ``draw(read(path))``
    as ``png`` beside the source unless --out names a place. A ValueError, KeyError or TypeError
    while drawing (a file of another shape) is a usage error naming the file."""
    name, help = source
    out_help = f"a .png, or a folder (default: {png} beside the {name})"
    args = cli.reader_parser(module, doc, name, help, out_help).parse_args(argv)
    path = getattr(args, name)
    out = cli.figure_path(cli.out_or_beside(args.out, path), png)
    if cli.checking(args):
        return 0
    record = read(path)
    try:
        fig = draw(record)
    except ValueError as err:
        raise cli.UsageError(f"{path}: {err}") from None
    except (KeyError, TypeError) as err:  # a file of another shape than the figure reads
        raise cli.UsageError(f"{path}: not drawable ({type(err).__name__}: {err})") from None
    save(fig, out)
    print(f"wrote {out}")
    return 0
