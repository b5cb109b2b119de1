"""Trajectories made elsewhere: a pandas DataFrame or a numpy array in, the package's trajectories
out (and back).

- :func:`to_frame` / :func:`from_frame`: the log as a DataFrame, one row per (trajectory, step), the
  columns of the CSV (core/trajectory.py), and back, every cell checked as a file's is (errors name
  the DataFrame's row and column). pandas is needed for :func:`to_frame` only (``pip install
  'concept-dynamics[pandas]'``).
- :func:`from_array`: an array of concept-space points in any axis order, e.g. the official code's
  exported trajectories (conditions, classes, checkpoints, concepts), with the steps of its
  checkpoints.

Then ``write_csv(path, trajectories)`` gives a log every command reads.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from core.trajectory import Trajectory, parse_rows, table_rows

AXES = ("run", "class", "step", "concept")


def to_frame(trajectories: Sequence[Trajectory]):
    """A pandas DataFrame of the log: the CSV's columns, numbers as numbers, ``class``, ``run`` and
    ``protocol`` as text (a class label such as ``01`` keeps its leading zero), empty cells as
    NaN."""
    import pandas as pd

    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows(table_rows(trajectories, "the DataFrame"))
    text.seek(0)
    frame = pd.read_csv(
        text,
        dtype={"class": str, "run": str, "protocol": str},
        keep_default_na=False,
        na_values=[""],
    )
    for name in ("class", "run", "protocol"):
        frame[name] = frame[name].fillna("")
    frame["seed"] = frame["seed"].astype("Int64")
    return frame


def from_frame(frame: Any, *, name: str = "the DataFrame") -> list[Trajectory]:
    """Trajectories from a DataFrame with the log's columns (``step``, ``class``,
    ``z_<concept>``..., optional ``protocol``, ``seed``, ``run``, ``accuracy`` and the reading
    columns); ValueError naming the row and column."""
    columns = [str(c) for c in getattr(frame, "columns", [])]
    if not columns:
        raise ValueError(
            f"{name}: not a DataFrame with the log's columns (step, class, z_<concept>...)"
        )
    rows = [columns] + [
        [_cell(v) for v in values] for values in frame.itertuples(index=False, name=None)
    ]
    return parse_rows(rows, name)


def _cell(value: Any) -> str:
    if (
        value is None
        or (isinstance(value, float) and math.isnan(value))
        or str(value) in ("<NA>", "nan", "NaT")
    ):
        return ""
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    if isinstance(value, (np.integer,)):
        return str(int(value))
    return str(value)


def from_array(
    z: Any,
    steps: Sequence[float],
    *,
    layout: str,
    concepts: Sequence[str],
    classes: Sequence[str],
    runs: Sequence[str] | None = None,
    protocol: str = "naive",
    seed: int | None = None,
) -> list[Trajectory]:
    """Trajectories from an array of points: ``layout`` names its axes in order, from ``run``
    (optional), ``class``, ``step`` and ``concept``, e.g. ``"run,class,step,concept"`` for
    (conditions, classes, checkpoints, concepts). Points lie in [0, 1]; a point whose coordinates
    are all NaN is a missing point (nothing readable). One trajectory per (run, class), named by
    ``runs`` (default ``run0``, ``run1``...)."""
    axes = [a.strip() for a in layout.split(",")]
    if sorted(axes) not in (sorted(AXES), sorted(AXES[1:])):
        raise ValueError(
            f"layout {layout!r}: name the axes of the array in order, each once: class, step and "
            "concept, "
            "and run if the array holds several runs (e.g. run,class,step,concept)"
        )
    arr = np.asarray(z, dtype=float)
    if arr.ndim != len(axes):
        raise ValueError(
            f"layout {layout!r} names {len(axes)} axes; the array has {arr.ndim} (shape "
            f"{arr.shape})"
        )
    if "run" not in axes:
        arr, axes = arr[None], ["run", *axes]
    arr = np.transpose(arr, [axes.index(a) for a in AXES])  # (runs, classes, steps, concepts)
    n_runs, n_classes, n_steps, n_concepts = arr.shape
    steps = np.asarray(steps)
    names = [f"run{i}" for i in range(n_runs)] if runs is None else [str(r) for r in runs]
    for what, given, axis_len, axis in (
        ("steps", len(steps), n_steps, "step"),
        ("classes", len(classes), n_classes, "class"),
        ("concepts", len(concepts), n_concepts, "concept"),
        ("runs", len(names), n_runs, "run"),
    ):
        if given != axis_len:
            raise ValueError(f"{what}: {given} given, but the array's {axis} axis has {axis_len}")
    _check_points(arr, names, classes, steps, concepts)
    return [
        Trajectory(
            steps.copy(),
            arr[r, c].copy(),
            tuple(concepts),
            str(classes[c]),
            protocol,
            seed,
            names[r],
        )
        for r in range(n_runs)
        for c in range(n_classes)
    ]


def _check_points(arr: np.ndarray, names, classes, steps, concepts) -> None:
    """Every point (runs, classes, steps, concepts) is finite or wholly missing, and lies in [0, 1];
    the first that is not is named by run, class, step and concept."""
    whole = np.isfinite(arr).all(-1) | np.isnan(arr).all(-1)
    if not whole.all():
        r, c, s = np.argwhere(~whole)[0]
        raise ValueError(
            f"run {names[r]}, class {classes[c]}, step {steps[s]}: point {arr[r, c, s].tolist()} "
            "is neither "
            "finite nor missing (all NaN)"
        )
    finite = arr[np.isfinite(arr)]
    if finite.size and (finite.min() < 0 or finite.max() > 1):
        r, c, s, k = np.argwhere(np.isfinite(arr) & ((arr < 0) | (arr > 1)))[0]
        raise ValueError(
            f"run {names[r]}, class {classes[c]}, step {steps[s]}, concept {concepts[k]}: "
            f"{arr[r, c, s, k]:g} "
            "lies outside [0, 1]; concept-space coordinates are probabilities or shares"
        )
