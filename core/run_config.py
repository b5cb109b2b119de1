"""A run folder's ``config.json`` as the readers of finished runs need it: a 'train' section that
is an object, whole-number seed and steps, and a separation per concept that is a number.

Training writes the file; this module only reads it, checked, so that a config edited by hand is
named in one line rather than met as a traceback deep in a fit.
"""

from __future__ import annotations

import numbers
from pathlib import Path
from typing import Any

from core.files import read_json


def _whole(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def read_run_config(run: Path, *, required: bool = True) -> dict[str, Any]:
    """``run/config.json``, its 'train' section checked; ``{}`` where the file is absent and not
    ``required``. ValueError naming the run and the key that is wrong."""
    path = Path(run) / "config.json"
    if not path.exists() and not required:
        return {}
    doc = read_json(path, "config")  # its errors name the file and quote no reading
    if not isinstance(doc, dict) or not isinstance(doc.get("train"), dict):
        raise ValueError(f"{run}: not a training run's config (no 'train' section in config.json)")
    train = doc["train"]
    for key in ("seed", "steps"):
        value = train.get(key)
        if value is not None and not _whole(value):
            raise ValueError(f"{run}: config.json's train.{key} is {value!r}, not a whole number")
    sep = train.get("sep")
    if sep is not None and not (isinstance(sep, dict) and all(_real(v) for v in sep.values())):
        raise ValueError(
            f"{run}: config.json's train.sep is {sep!r}; it needs a number for each concept"
        )
    return doc
