"""The trajectory log: the one format that joins theory, empirical and fitting (this docstring is
its specification).

A log is a CSV file (UTF-8, one header row, one row per (trajectory, step)):

    step,class,protocol,seed,run,z_color,z_size,accuracy
    0,11,sim,,a=2,0.5,0.5,
    0.125,11,sim,,a=2,0.47,0.56,

Required columns are ``step`` and ``class`` plus at least one ``z_<concept>`` column (or an
``accuracy`` column alone, for accuracy curves). ``protocol`` (default ``naive``), ``seed``,
``run`` and ``accuracy`` are optional; any other column is kept verbatim as text. The rows that
share (``run``, ``seed``, ``class``, ``protocol``) form one :class:`Trajectory`, whose steps must be
strictly increasing. Every malformed input raises :class:`ValueError` naming the file, row and
column.

A *missing point*: every ``z_`` cell of a row empty means no sample of the class could be read at
that step (the probe abstained on all of them); the row is kept (its accuracy and shares still
count) and its z is NaN in memory. :meth:`Trajectory.with_points` drops such rows. A row with some
``z_`` cells empty and others not is an error.

Optional reading columns (written by training and elicitation; validated when present, numbers in
[0, 1] or empty):

- ``share_<corner>``, one per corner of concept space (``share_00`` ... ``share_11``), and
  ``share_unreadable``: the share of the samples read as that corner (every concept's most likely
  value) and the share the probe refused; per row they sum to 1. A mixture of two corners and a
  sample set that sits between them have the same mean point but not the same shares.
- ``samples``: how many samples the row's reading is made of (an integer).
- ``accuracy_lo``, ``accuracy_hi``: the 95% (Wilson) interval of ``accuracy``.
- ``selection_accuracy``: for an elicitation protocol, the accuracy of the chosen setting on the
  independent draw that chose it (biased upward; ``accuracy`` is scored on a fresh draw).

Only numpy and the standard library are used here, so every part of the package can read logs.
"""

from __future__ import annotations

import csv
import dataclasses
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from core.files import atomic_write, folder_lock, write_json
from core.sidecar import meta_path
from core.log_cells import (  # noqa: F401  (the column names are part of the format's API)
    BOUND_TOL,
    SHARE_PREFIX,
    UNIT_COLUMNS,
    Z_PREFIX,
    _header,
    _is_int,
    _row,
    _rows,
    _Where,
)

KNOWN = ("step", "class", "protocol", "seed", "run", "accuracy")
# the share key (share_unreadable) of the samples the probe refused to read
UNREADABLE = "unreadable"


def corner_of(label: str, d: int) -> tuple[int, ...] | None:
    """The class's corner in concept space from its label's bits, one per concept ('10': the first
    concept present, the second absent); None for a label that is not d binary digits."""
    if len(label) == d and set(label) <= {"0", "1"}:
        return tuple(int(ch) for ch in label)
    return None


def target_of(label: str, d: int) -> tuple[int, ...]:
    """The corner a class's path heads for: :func:`corner_of`, or all ones for a label that is not d
    binary digits (the toy theory's target)."""
    return corner_of(label, d) or (1,) * d


@dataclass(frozen=True, eq=False)
class Trajectory:
    """One trajectory in concept space: a class under one protocol in one run.

    Args:
        step: (T,) training step (int) or model time (float), strictly increasing.
        z: (T, D) concept-space coordinates in [0, 1], time-major; D may be 0 for accuracy-only
        logs. concepts: (D,) concept names, e.g. ``("color", "size")`` (the CSV columns are
        ``z_<name>``). label: class label, e.g. ``"11"`` (a string: leading zeros matter).
        protocol: ``naive``, ``overprompt``, ``intervention``, ``patch``, ``cfg``, ``sim``, ...
        seed: integer seed of the run, or None.
        run: free-form run id.
        accuracy: (T,) joint accuracy in [0, 1] (NaN where not logged), or None.
        extra: extra CSV columns, name -> (T,) tuple of strings, kept verbatim.
    """

    step: NDArray
    z: NDArray[np.float64]
    concepts: tuple[str, ...]
    label: str
    protocol: str = "naive"
    seed: int | None = None
    run: str = ""
    accuracy: NDArray[np.float64] | None = None
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        step = np.asarray(self.step)
        if step.dtype.kind not in "iuf":
            raise ValueError(f"step must be numeric, got dtype {step.dtype}")
        step = step.astype(np.int64 if step.dtype.kind in "iu" else np.float64)
        z = np.asarray(self.z, dtype=np.float64)
        if z.ndim == 1 and len(self.concepts) == 1:
            z = z[:, None]
        if step.ndim != 1 or step.size == 0:
            raise ValueError(f"step must be a non-empty 1-d array, got shape {step.shape}")
        if z.shape != (step.size, len(self.concepts)):
            raise ValueError(
                f"z must have shape (T, D) = ({step.size}, {len(self.concepts)}) "
                f"for concepts {self.concepts}, got {z.shape}"
            )
        if np.any(np.diff(step) <= 0):
            i = int(np.argmax(np.diff(step) <= 0)) + 1
            raise ValueError(
                f"steps must be strictly increasing: step[{i}] = {step[i]} <= {step[i - 1]}"
            )
        present = ~np.isnan(z).all(axis=1) if z.shape[1] else np.ones(step.size, bool)
        if z.shape[1] and np.isnan(z[present]).any():
            i = int(np.argmax(np.isnan(z).any(axis=1) & present))
            raise ValueError(
                f"z row {i} (step {step[i]}) is partly missing; a point is either whole or "
                "missing (all NaN)"
            )
        _check_unit(z[present], "z")
        acc = None
        if self.accuracy is not None:
            acc = np.asarray(self.accuracy, dtype=np.float64)
            if acc.shape != step.shape:
                raise ValueError(f"accuracy must have shape {step.shape}, got {acc.shape}")
            _check_unit(acc[~np.isnan(acc)], "accuracy")
        if not self.concepts and acc is None:
            raise ValueError(
                "a trajectory needs at least one concept coordinate or an accuracy curve"
            )
        if len(set(self.concepts)) != len(self.concepts):
            raise ValueError(f"concept names must be distinct, got {self.concepts}")
        extra = {str(k): tuple(str(v) for v in vals) for k, vals in self.extra.items()}
        for name, vals in extra.items():
            if name in KNOWN or name.startswith(Z_PREFIX):
                raise ValueError(f"extra column {name!r} clashes with a standard column")
            if len(vals) != step.size:
                raise ValueError(
                    f"extra column {name!r} has {len(vals)} values, expected {step.size}"
                )
        for name, value in (("step", step), ("z", z), ("accuracy", acc), ("extra", extra)):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "label", str(self.label))
        object.__setattr__(self, "protocol", str(self.protocol) or "naive")
        object.__setattr__(self, "run", str(self.run))
        object.__setattr__(self, "concepts", tuple(str(c) for c in self.concepts))

    @property
    def missing(self) -> NDArray[np.bool_]:
        """(T,) True where the point is missing (no sample could be read)."""
        return np.isnan(self.z).all(axis=1) if self.z.shape[1] else np.zeros(self.step.size, bool)

    def with_points(self) -> "Trajectory":
        """The trajectory without its missing points; ValueError when every point is missing."""
        keep = ~self.missing
        if keep.all():
            return self
        if not keep.any():
            raise ValueError(
                f"class {self.label} ({self.protocol}): no step has a point (nothing was readable)"
            )
        return dataclasses.replace(
            self,
            step=self.step[keep],
            z=self.z[keep],
            accuracy=None if self.accuracy is None else self.accuracy[keep],
            extra={
                k: tuple(v for v, ok in zip(vals, keep) if ok) for k, vals in self.extra.items()
            },
        )

    def shares(self) -> dict[str, NDArray[np.float64]]:
        """corner (or ``unreadable``) -> (T,) the share of samples read as it (NaN where not
        logged); {} if none."""
        return {
            k[len(SHARE_PREFIX) :]: np.array([float(v) if v else math.nan for v in vals])
            for k, vals in self.extra.items()
            if k.startswith(SHARE_PREFIX)
        }

    @property
    def key(self) -> tuple[str, int | None, str, str]:
        """The identity of the trajectory in a log: (run, seed, class, protocol)."""
        return (self.run, self.seed, self.label, self.protocol)

    def coordinate(self, concept: str) -> NDArray[np.float64]:
        """(T,) the coordinate of one concept."""
        try:
            return self.z[:, self.concepts.index(concept)]
        except ValueError:
            raise ValueError(
                f"no concept {concept!r}; this trajectory has {list(self.concepts)}"
            ) from None


def _check_unit(values: NDArray[np.float64], what: str) -> None:
    if values.size and not np.all(np.isfinite(values)):
        raise ValueError(f"{what} must be finite")
    if values.size and (values.min() < -BOUND_TOL or values.max() > 1 + BOUND_TOL):
        raise ValueError(f"{what} must lie in [0, 1], got range [{values.min()}, {values.max()}]")


# ---------------------------------------------------------------------------------------------
# reading


def read_csv(path: str | os.PathLike) -> list[Trajectory]:
    """Read and validate a trajectory log.

    Args:
        path: the CSV file.

    Returns:
        The trajectories in order of first appearance. Steps are int64 when every step in the
        file is an integer, else float64.

    Raises:
        ValueError: naming the file, row and column of the first problem found.
        FileNotFoundError: if the file does not exist.
    """
    path = Path(path)
    where = _Where(path)
    return parse_rows(_rows(path, where), where)


def parse_rows(rows: list[list[str]], where: "_Where | str") -> list[Trajectory]:
    """Trajectories from a log's rows as text (the header row first), every cell checked as
    :func:`read_csv` checks a file's; ``where`` names the source in error messages (a path, or e.g.
    ``"the DataFrame"``)."""
    where = where if isinstance(where, _Where) else _Where(where)
    header, concepts = _header(rows, where)
    col = {h: i for i, h in enumerate(header)}
    extras = [h for h in header if h not in KNOWN and not h.startswith(Z_PREFIX)]
    body = [r for r in rows[1:] if any(cell.strip() for cell in r)]
    int_steps = all(_is_int(r[col["step"]].strip()) for r in body if len(r) == len(header))
    groups: dict[tuple, dict[str, list]] = {}
    for row_no, r in enumerate(rows[1:], start=1):
        if not any(cell.strip() for cell in r):
            continue
        if len(r) != len(header):
            raise where(row_no, None, f"has {len(r)} fields, the header has {len(header)}")
        cell = {h: r[i].strip() for h, i in col.items()}
        key, step, z, acc = _row(cell, concepts, int_steps, where, row_no)
        g = groups.setdefault(key, {"step": [], "z": [], "acc": [], "rows": [], "extra": []})
        if g["step"] and step <= g["step"][-1]:
            kind = "duplicate" if step == g["step"][-1] else "decreasing"
            raise where(
                row_no,
                "step",
                f"{kind} step {cell['step']} after step {g['step'][-1]} (row {g['rows'][-1]}) in "
                f"trajectory run={key[0]!r} seed={key[1]} class={key[2]!r} protocol={key[3]!r}; "
                "steps must be strictly increasing",
            )
        for name, value in (
            ("step", step),
            ("z", z),
            ("acc", acc),
            ("rows", row_no),
            ("extra", [r[col[h]] for h in extras]),
        ):
            g[name].append(value)

    out = []
    for (run, seed, label, protocol), g in groups.items():
        acc = np.array(g["acc"], dtype=np.float64) if "accuracy" in col else None
        ex = {h: tuple(vals[j] for vals in g["extra"]) for j, h in enumerate(extras)}
        z = np.array(g["z"], dtype=np.float64).reshape(len(g["step"]), len(concepts))
        out.append(
            Trajectory(np.array(g["step"]), z, tuple(concepts), label, protocol, seed, run, acc, ex)
        )
    return out


# ---------------------------------------------------------------------------------------------
# writing


def _fmt(x: float) -> str:
    return repr(float(x))  # shortest string that reads back to the same double


def write_csv(
    path: str | os.PathLike,
    trajectories: Sequence[Trajectory],
    *,
    meta: Mapping[str, Any] | None = None,
) -> Path:
    """Write trajectories as one log, atomically (temp file + rename).

    Args:
        path: the CSV file to write.
        trajectories: trajectories sharing one set of concepts; keys must be distinct.
        meta: if given, written as the sidecar ``<name>.meta.json`` (config, concept names,
        targets).

    Returns:
        The path written.
    """
    path = Path(path)
    table = table_rows(trajectories, path)
    with folder_lock(path.parent):  # two writers of one log never mix their rows and sidecars
        atomic_write(path, lambda fh: csv.writer(fh, lineterminator="\n").writerows(table))
        if meta is not None:
            write_json(meta_path(path), meta, sort_keys=True)
    return path


def table_rows(
    trajectories: Sequence[Trajectory], where: str | os.PathLike = "the log"
) -> list[list[str]]:
    """The log's rows as text, the header first (what :func:`write_csv` writes); ``where`` names the
    destination in error messages."""
    trajectories = list(trajectories)
    if not trajectories:
        raise ValueError(f"{where}: nothing to write (no trajectories)")
    concepts = trajectories[0].concepts
    seen = set()
    for tr in trajectories:
        if tr.concepts != concepts:
            raise ValueError(
                f"{where}: all trajectories in a log need the same concepts: {concepts} vs "
                f"{tr.concepts}"
            )
        if tr.key in seen:
            raise ValueError(
                f"{where}: two trajectories share (run, seed, class, protocol) = {tr.key}"
            )
        seen.add(tr.key)
    has_acc = any(tr.accuracy is not None for tr in trajectories)
    extras: list[str] = []
    for tr in trajectories:
        extras += [k for k in tr.extra if k not in extras]
    header = ["step", "class", "protocol", "seed", "run", *(Z_PREFIX + c for c in concepts)]
    header += ["accuracy"] * has_acc + extras

    def rows() -> Iterable[list[str]]:
        for tr in trajectories:
            seed = "" if tr.seed is None else str(tr.seed)
            for i in range(tr.step.size):
                step = str(int(tr.step[i])) if tr.step.dtype.kind == "i" else _fmt(tr.step[i])
                # a missing point: empty cells
                point = ["" if math.isnan(v) else _fmt(v) for v in tr.z[i]]
                row = [step, tr.label, tr.protocol, seed, tr.run, *point]
                if has_acc:
                    a = math.nan if tr.accuracy is None else tr.accuracy[i]
                    row.append("" if math.isnan(a) else _fmt(a))
                row += [tr.extra[k][i] if k in tr.extra else "" for k in extras]
                yield row

    return [header, *rows()]
