"""The reproducibility stamp written into every ``config.json`` and ``fit.json``: which code (git
commit and whether the working tree had changes), which versions of Python and of the numerical
libraries, which device and host, which command line, and when it started.

Versions are read from the installed distributions' metadata, so stamping never imports torch
(theory and fitting must run without it). Only the standard library is used.
"""

from __future__ import annotations

import datetime
import functools
import platform
import shlex
import socket
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any, Sequence

ROOT = Path(__file__).resolve().parents[1]  # the source tree the package runs from
LIBRARIES = ("numpy", "scipy", "sympy", "numba", "torch")


def version(dist: str) -> str | None:
    """The installed version of a distribution, or None when it is not installed."""
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


@functools.lru_cache(maxsize=1)
def git_state() -> tuple[str | None, bool | None]:
    """(commit, dirty) of the source tree the package runs from; (None, None) outside a git
    checkout.

    ``dirty``: tracked files differ from the commit (untracked files, like runs/, do not count)."""
    if not (ROOT / ".git").exists():
        return None, None
    try:
        head = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        status = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None, None
    if head.returncode or status.returncode:
        return None, None
    return head.stdout.strip(), bool(status.stdout.strip())


def stamp(*, device: str = "cpu", command: Sequence[str] | None = None) -> dict[str, Any]:
    """The stamp of this process, now.

    Args:
        device: what the work runs on (e.g. ``cuda: NVIDIA H100``); ``cpu`` by default.
        command: the command line to record (default: this process's, ``sys.orig_argv``).
    """
    commit, dirty = git_state()
    argv = list(command) if command is not None else list(getattr(sys, "orig_argv", sys.argv))
    return {
        "commit": commit,
        "dirty": dirty,
        "package": version("concept-dynamics"),
        "python": platform.python_version(),
        **{lib: version(lib) for lib in LIBRARIES},
        "device": device,
        "host": socket.gethostname(),
        "command": shlex.join(argv),
        "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
