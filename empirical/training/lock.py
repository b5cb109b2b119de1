"""File locks that die with their holder: one per run folder (so two sweeps, or a resubmitted job,
never train the same run at once) and one per probe folder (so a probe is trained once).

``flock`` locks belong to the open file, so the kernel releases them when the holding process exits
for any reason, ``kill -9`` and a crashed node included: a stale lock cannot block a resumed sweep.
(On Linux NFS, flock is carried by NFS byte-range locks, so it holds across cluster nodes too.)
The lock file keeps the holder's pid and host for the error message; its presence means nothing.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import time
from pathlib import Path
from typing import Iterator

NAME = ".lock"


class Busy(RuntimeError):
    """The lock is held by another process (or another open of the same file)."""


@contextlib.contextmanager
def hold(folder: str | os.PathLike, *, wait: bool = False, poll: float = 0.5) -> Iterator[Path]:
    """Hold ``folder/.lock`` for the ``with`` block (the folder is created).

    Args:
        folder: the folder to lock.
        wait: block until the lock is free (polling every ``poll`` seconds) instead of raising Busy.
    """
    path = Path(folder) / NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        tries = 0
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                tries += 1
                # a few tries: held() takes the lock shared for an instant
                if not wait and tries > 3:
                    raise Busy(f"{folder}: in use by {holder(folder)}") from None
                time.sleep(poll if wait else 0.05)
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode())
        yield path
    finally:
        os.close(fd)  # releases the lock


def held(folder: str | os.PathLike) -> bool:
    """Whether some process holds ``folder/.lock`` now."""
    path = Path(folder) / NAME
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def holder(folder: str | os.PathLike) -> str:
    """Who holds (or last held) the lock, as its file says."""
    try:
        return (Path(folder) / NAME).read_text().strip() or "another process"
    except OSError:
        return "another process"
