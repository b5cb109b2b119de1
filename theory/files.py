"""Files every part reads and writes: UTF-8 text (plain or gzip-compressed) and JSON read with errors that name
the file, and the one atomic writer behind every output (logs, JSON, checkpoints, figures), so an interrupted
write never leaves half a file.

Only the standard library and numpy (to write its arrays and scalars as JSON).
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
import zlib
from pathlib import Path
from typing import IO, Any, Callable, Mapping

import numpy as np


def plain_or_gz(path: str | os.PathLike) -> Path:
    """``path``, or ``path`` + ``.gz`` where only that gzip-compressed copy exists (docs/results keeps the
    training logs compressed)."""
    path = Path(path)
    gz = path.with_name(path.name + ".gz")
    return gz if not path.exists() and gz.exists() else path


def read_text(path: str | os.PathLike, what: str = "file") -> str:
    """A UTF-8 text file (decompressed first where its name ends in .gz), or a ValueError naming the file and why
    it is not one (folder, binary, encoding, broken gzip)."""
    try:
        raw = Path(path).read_bytes()
    except IsADirectoryError:
        raise ValueError(f"{path}: is a folder, not a {what}") from None
    if Path(path).suffix == ".gz":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as err:
            raise ValueError(
                f"{path}: not a whole gzip file ({err}); compress the {what} again with gzip"
            ) from None
    if b"\x00" in raw:
        hint = (
            " (UTF-16? save it as UTF-8)"
            if raw[:2] in (b"\xff\xfe", b"\xfe\xff")
            else " (a binary file?)"
        )
        raise ValueError(f"{path}: contains NUL bytes, so it is not a UTF-8 {what}{hint}")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise ValueError(
            f"{path}, line {line}: byte 0x{raw[err.start]:02x} is not UTF-8; save the {what} as UTF-8 "
            "(Latin-1 or another encoding?)"
        ) from None


def read_json(path: str | os.PathLike, what: str = "JSON file", fix: str = "") -> Any:
    """A JSON document, or a ValueError naming the file and what is wrong (not UTF-8, not JSON); ``fix`` says what to do."""
    try:
        return json.loads(read_text(Path(path), what))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON ({err})" + (f"; {fix}" if fix else "")) from None


def write_json(path: str | os.PathLike, obj: Mapping[str, Any], *, sort_keys: bool = False) -> Path:
    """Write a JSON document atomically (numpy arrays and scalars allowed)."""
    text = json.dumps(dict(obj), indent=2, sort_keys=sort_keys, default=_jsonable)
    return atomic_write(path, lambda fh: fh.write(text + "\n"))


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    raise TypeError(f"cannot write {type(obj).__name__} to JSON")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(
    path: str | os.PathLike, write: Callable[[IO], object], *, binary: bool = False
) -> Path:
    """Write a file so that a reader (or a kill -9) never sees half of it: a temp file in the same folder, then rename.

    Args:
        path: the file to write; its folder is created.
        write: called with the open temp file (text, UTF-8, or bytes when ``binary``).

    Returns:
        The path written.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with (
            os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", newline="", encoding="utf-8")
        ) as fh:
            write(fh)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the file the usual permissions
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return path
