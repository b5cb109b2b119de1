"""Files of tensors (checkpoints, the probe): saved atomically, loaded without running code.

``torch.load(weights_only=False)`` unpickles arbitrary objects, so a crafted file handed to a
command could run code. Every file is read here with ``weights_only=True`` (tensors, numbers,
strings, lists, dicts only); anything else is refused with a message naming the file.
"""

from __future__ import annotations

import errno
import shutil
import warnings
from pathlib import Path
from typing import Any

import torch

from core.files import atomic_write


def save(path: Path, obj: dict[str, Any]) -> None:
    """torch.save to a temp file in the same folder, then rename: a reader never sees half a
    file. A write torch's zip writer cannot finish (a full disk: "unexpected pos") is an OSError
    naming the file and the space left, not torch's message."""
    try:
        atomic_write(path, lambda fh: torch.save(obj, fh), binary=True)
    except RuntimeError as err:
        if "unexpected pos" not in str(err) and "write" not in str(err).lower():
            raise
        free = shutil.disk_usage(Path(path).parent).free
        raise OSError(
            errno.ENOSPC,
            f"{path}: could not be written ({free / 2**20:.0f} MiB free on its disk: full?); "
            "free space and run the same command again to resume",
        ) from None


def load(path: Path, what: str = "checkpoint") -> dict[str, Any]:
    """The dict saved in ``path``, loaded safely; ValueError naming the file if it is not one."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{path}: is a folder, not a {what} file")
    try:
        # a foreign file makes torch warn before it fails: keep the error one line
        with warnings.catch_warnings():
            warnings.filterwarnings(
                "ignore", message="Detected pickle protocol", category=UserWarning
            )
            blob = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise
    # torch's unpickler fails on foreign bytes with any of a dozen exception types (fuzzed)
    except Exception as err:  # noqa: BLE001
        first = (str(err).strip().splitlines() or [type(err).__name__])[0][:200]
        raise ValueError(
            f"{path}: cannot read this {what} (truncated, foreign or unsafe file: {first})"
        ) from None
    if not isinstance(blob, dict):
        raise ValueError(f"{path}: not a {what} (holds a {type(blob).__name__}, not a dict)")
    return blob
