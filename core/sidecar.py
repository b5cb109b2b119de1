"""A log's sidecar (``trajectories.meta.json``: the run's configuration, concepts and held-out
classes), where a run folder keeps its log, and the held-out classes a log is about.

Only the standard library is used here, so every part of the package can read sidecars.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from core.files import read_json


def held_out_of(labels, meta: dict | None = None) -> list[str]:
    """The held-out classes of a log: its sidecar's ``held_out`` (even an empty one), else the rule
    training uses on binary labels (more than one concept present: 11 of two concepts; 011, 101,
    110, 111 of three), else 11 (labels of other kinds: converted logs, more than two values a
    concept)."""
    if meta and "held_out" in meta and isinstance(meta["held_out"], list):
        return list(meta["held_out"])
    binary = [label for label in set(labels) if label and set(label) <= {"0", "1"}]
    return sorted(label for label in binary if label.count("1") > 1) or ["11"]


def headline_class(labels, meta: dict | None = None) -> str:
    """The class a run is about: the held-out class with every concept present (11, 111), else the
    last held-out class, else 11."""
    held = held_out_of(labels, meta)
    full = [label for label in held if label and set(label) == {"1"}]
    return (full or held or ["11"])[-1]


def run_log(path: str | os.PathLike) -> Path:
    """A run folder's trajectory log, ``RUN/trajectories.csv`` (a path to a CSV is returned as
    is)."""
    path = Path(path)
    return path / "trajectories.csv" if path.is_dir() else path


def meta_path(path: str | os.PathLike) -> Path:
    """The sidecar of a log: ``trajectories.csv`` -> ``trajectories.meta.json``."""
    path = Path(path)
    return path.with_name(path.stem + ".meta.json")


# the sidecar's keys that readers use, and their JSON types (others are kept as written)
META_TYPES = {
    "config": (dict, "a JSON object (the run's configuration)"),
    "concepts": (list, "a list of concept names"),
    "held_out": (list, "a list of class labels"),
    "probe_hash": (str, "a string"),
    "source": (str, "a string"),
}


def read_meta(path: str | os.PathLike) -> dict[str, Any] | None:
    """The sidecar of a log as a dict, or None when there is none."""
    side = meta_path(path)
    if not side.exists():
        return None
    doc = read_json(side, "sidecar (JSON)")
    if not isinstance(doc, dict):
        raise ValueError(f"{side}: a log's sidecar must be a JSON object, got {type(doc).__name__}")
    for key, kind in META_TYPES.items():
        if key in doc and doc[key] is not None and not isinstance(doc[key], kind[0]):
            got = type(doc[key]).__name__
            raise ValueError(f"{side}: '{key}' must be {kind[1]}, got {got}")
    return doc
