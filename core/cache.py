"""The package's folders in the user's cache: ``$XDG_CACHE_HOME/concept-dynamics/NAME``
(``~/.cache`` when XDG_CACHE_HOME is unset). What lives there can always be made again; a cache
that cannot be written is skipped, never an error."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def user_cache(name: str) -> Path:
    """The cache folder ``name`` (not created)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "concept-dynamics" / name


def source_digest(*paths: Path) -> str:
    """A short hash of files' bytes: a cache key that changes with the code that made an entry."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(Path(path).read_bytes())
    return digest.hexdigest()[:16]
