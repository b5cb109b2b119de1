"""Files every part reads and writes: UTF-8 text (plain or gzip-compressed) and JSON read with
errors that name the file, and the one atomic writer behind every output (logs, JSON, checkpoints,
figures), so an interrupted write never leaves half a file.

Only the standard library and numpy (to write its arrays and scalars as JSON).
"""

from __future__ import annotations

import contextlib
import glob
import gzip
import io
import json
import os
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import IO, Any, Callable, Iterator, Mapping

import numpy as np


# bytes a .gz may expand to (1 GiB): a small file must not fill the memory
MAX_DECOMPRESSED = 1 << 30
MAX_PLAIN = 1 << 30  # bytes a text file (a log, a record) may have
MAX_LINE = 16 << 20  # characters one line of a streamed log may have


def plain_or_gz(path: str | os.PathLike) -> Path:
    """``path``, or ``path`` + ``.gz`` where only that gzip-compressed copy exists (results keeps
    the training logs compressed); both present is refused, since one of them is stale."""
    path = Path(path)
    gz = path.with_name(path.name + ".gz")
    if path.exists() and gz.exists():
        raise ValueError(
            f"{path}: there is also {gz.name} beside it, and one of the two is stale; remove the "
            "older one"
        )
    return gz if gz.exists() else path


def _gunzip(path: Path, raw: bytes, what: str) -> bytes:
    """The decompressed bytes of a .gz file, bounded by MAX_DECOMPRESSED."""
    try:
        if not raw:
            raise EOFError("the file is empty")
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as fh:
            data = fh.read(MAX_DECOMPRESSED + 1)
    except (OSError, EOFError, zlib.error) as err:
        raise ValueError(
            f"{path}: not a whole gzip file ({err}); compress the {what} again with gzip"
        ) from None
    if len(data) > MAX_DECOMPRESSED:
        raise ValueError(
            f"{path}: expands to more than {MAX_DECOMPRESSED >> 20} MiB (the limit on a "
            f"compressed {what}); "
            "decompress it yourself if it is really that large"
        )
    return data


def text_lines(path: str | os.PathLike, what: str = "file") -> Iterator[str]:
    """The lines of a UTF-8 text file, one at a time (decompressed as they are read where the name
    ends in .gz): memory bounded by one line (MAX_LINE), time by MAX_DECOMPRESSED bytes in all,
    whatever the file holds; a ValueError naming the file and line otherwise."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{path}: is a folder, not a {what}")
    opener = gzip.open if path.suffix == ".gz" else open
    total = 0
    try:
        if path.suffix == ".gz" and path.stat().st_size > MAX_PLAIN:
            # refused before it is read: gzip steps through trailing zeros one byte at a time
            raise ValueError(
                f"{path}: {path.stat().st_size / 2**30:.1f} GiB compressed, more than the "
                f"{MAX_PLAIN >> 30} GiB a {what} may have"
            )
        with opener(path, "rt", encoding="utf-8-sig", newline="") as fh:
            for number in range(1, 1 << 62):
                line = fh.readline(MAX_LINE + 1)
                if not line:
                    return
                total += len(line)
                if len(line) > MAX_LINE or total > MAX_DECOMPRESSED:
                    raise ValueError(
                        f"{path}, line {number}: the {what} has a line over {MAX_LINE >> 20} MiB "
                        f"or more than {MAX_DECOMPRESSED >> 30} GiB in all; not a {what}?"
                    )
                yield line.rstrip("\r\n")
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not UTF-8; save the {what} as UTF-8") from None
    except (OSError, EOFError, zlib.error) as err:
        if path.suffix == ".gz" and not isinstance(err, (FileNotFoundError, PermissionError)):
            raise ValueError(
                f"{path}: not a whole gzip file ({err}); compress the {what} again with gzip"
            ) from None
        raise ValueError(f"{path}: cannot be read as a {what} ({err})") from None


def read_text(path: str | os.PathLike, what: str = "file") -> str:
    """A UTF-8 text file (decompressed first where its name ends in .gz), or a ValueError naming the
    file and why it is not one (folder, binary, encoding, broken gzip)."""
    try:
        size = Path(path).stat().st_size
        if (
            size > MAX_PLAIN
        ):  # refused before it is read (a sparse file of 1.5 GB was read whole first)
            raise ValueError(
                f"{path}: {size / 2**30:.1f} GiB, more than the {MAX_PLAIN >> 30} GiB a {what} "
                "may have"
            )
        raw = Path(path).read_bytes()
    except IsADirectoryError:
        raise ValueError(f"{path}: is a folder, not a {what}") from None
    if Path(path).suffix == ".gz":
        raw = _gunzip(Path(path), raw, what)
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
            f"{path}, line {line}: byte 0x{raw[err.start]:02x} is not UTF-8; save the {what} as "
            "UTF-8 "
            "(Latin-1 or another encoding?)"
        ) from None


def json_line(line: str, path: str | os.PathLike, row: int) -> dict:
    """One record of a JSON-lines file (a metrics log: an object a line), or a ValueError naming the
    file and row (not JSON, not an object, or nested deeper than a JSON reader takes)."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}, line {row}: not JSON ({err})") from None
    except RecursionError:
        raise ValueError(f"{path}, line {row}: {_TOO_DEEP}") from None
    if not isinstance(record, dict):
        raise ValueError(f"{path}, line {row}: not a JSON object ({type(record).__name__})")
    return record


_TOO_DEEP = (
    f"nested deeper than a JSON reader takes (lists or objects inside one another over "
    f"{sys.getrecursionlimit()} times); no file of this package is"
)


def read_json(path: str | os.PathLike, what: str = "JSON file", fix: str = "") -> Any:
    """A JSON document, or a ValueError naming the file and what is wrong (not UTF-8, not JSON);
    ``fix`` says what to do."""
    try:
        return json.loads(read_text(Path(path), what))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON ({err})" + (f"; {fix}" if fix else "")) from None
    except RecursionError:
        raise ValueError(f"{path}: {_TOO_DEEP}") from None


def write_json(path: str | os.PathLike, obj: Mapping[str, Any], *, sort_keys: bool = False) -> Path:
    """Write a JSON document atomically (numpy arrays and scalars allowed). JSON has no NaN or
    infinity: a number that is not finite is written as null (a value not measured), so every reader
    of JSON can read the file."""
    text = json.dumps(_jsonable(dict(obj)), indent=2, sort_keys=sort_keys, allow_nan=False)
    return atomic_write(path, lambda fh: fh.write(text + "\n"))


def _jsonable(obj: Any) -> Any:
    """``obj`` as plain JSON values: numpy arrays and scalars as lists and numbers, non-finite
    floats as None."""
    if isinstance(obj, np.ndarray):
        obj = obj.tolist()
    elif isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float):
        return obj if np.isfinite(obj) else None
    if isinstance(obj, Mapping):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if obj is None or isinstance(obj, (str, int)):
        return obj
    raise TypeError(f"cannot write {type(obj).__name__} to JSON")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(
    path: str | os.PathLike, write: Callable[[IO], object], *, binary: bool = False
) -> Path:
    """Write a file so that a reader (or a kill -9) never sees half of it: a temp file in the same
    folder, then rename.

    The temp file's name holds this process's id: a later write of the same file removes the temp
    files that a killed writer left (its process gone, or the file untouched for a day).

    Args:
        path: the file to write; its folder is created.
        write: called with the open temp file (text, UTF-8, or bytes when ``binary``).

    Returns:
        The path written.
    """
    path = Path(path)
    if path.is_symlink():
        # replacing it would leave the file it points to stale, writing through it would change
        # another file
        raise ValueError(
            f"{path}: is a symbolic link (to {os.readlink(path)}); refusing to write through or "
            "over it: "
            "remove the link or write elsewhere"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(
        prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp", dir=path.parent
    )
    try:
        with (
            os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", newline="", encoding="utf-8")
        ) as fh:
            write(fh)
            fh.flush()
            os.fsync(
                fh.fileno()
            )  # on disk before it takes the name: a crash leaves the old file or the new
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the file the usual permissions
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    _remove_stale_temps(path)
    return path


def copy_file(source: str | os.PathLike, dest: str | os.PathLike) -> Path:
    """Copy a file with :func:`atomic_write` (never half a file, never through a symbolic link at
    ``dest``)."""
    data = Path(source).read_bytes()
    return atomic_write(dest, lambda fh: fh.write(data), binary=True)


def _remove_stale_temps(path: Path) -> None:
    """Remove the temp files of ``path`` whose writer was killed (see :func:`atomic_write`)."""
    for tmp in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        pid = tmp.name[len(path.name) + 2 :].split(".", 1)[0]
        try:
            old = time.time() - tmp.stat().st_mtime > 86400
            if old or (pid.isdigit() and not _alive(int(pid))):
                tmp.unlink()
        except OSError:  # gone already, or not ours to remove
            pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


@contextlib.contextmanager
def folder_lock(folder: str | os.PathLike) -> Iterator[None]:
    """Hold an exclusive lock on ``folder`` (made if missing) for the ``with`` block, waiting for
    another holder: two writers of files that belong together (a log and its sidecar) then never mix
    them. The lock is the kernel's on the folder itself (flock), released when its holder exits,
    kill -9 included; no lock file is left behind. Where flock is missing (Windows) it does
    nothing."""
    Path(folder).mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock
