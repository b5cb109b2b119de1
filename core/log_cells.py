"""The trajectory log's cells, checked (:mod:`core.trajectory` is the format's specification): its
column names, and the readers of a file's rows, header and cells, each problem named by file, row,
line and column.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

from core.files import read_text

Z_PREFIX = "z_"
SHARE_PREFIX = "share_"
# optional, validated like accuracy
UNIT_COLUMNS = (
    "accuracy_lo",
    "accuracy_hi",
    "selection_accuracy",
)
BOUND_TOL = 1e-6  # coordinates may leave [0, 1] by this much (integrator round-off)


class _Where:
    """Formats the location of a cell for error messages: file, row (1 = first data row), line,
    column."""

    def __init__(self, path: Path | str) -> None:
        self.path = path  # the file, or a name for where the rows came from (e.g. "the DataFrame")

    def __call__(self, row: int | None, column: str | None, message: str) -> ValueError:
        where = str(self.path)
        if row is not None:
            where += f", row {row} (line {row + 1})"
        if column is not None:
            where += f", column {column!r}"
        return ValueError(f"{where}: {message}")


def _number(text: str, where: _Where, row: int, column: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise where(row, column, f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise where(row, column, f"{text!r} is not a finite number")
    return value


def _unit(text: str, where: _Where, row: int, column: str) -> float:
    value = _number(text, where, row, column)
    if not -BOUND_TOL <= value <= 1 + BOUND_TOL:
        raise where(row, column, f"{text} is outside [0, 1]")
    return value


def _is_int(text: str) -> bool:
    body = text[1:] if text[:1] in "+-" else text
    return body.isdigit()


def _rows(path: Path, where: _Where) -> list[list[str]]:
    text = read_text(path, "trajectory log (CSV)")
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        rows = list(reader)
    except csv.Error as err:
        raise where(None, None, f"line {reader.line_num}: not valid CSV ({err})") from None
    if text and text[-1] not in "\r\n" and len(rows) > 1:
        raise where(
            len(rows) - 1,
            None,
            "the file does not end with a newline, so its last row may have been cut off "
            "while it was written; if that row is complete, add a newline at the end of the file",
        )
    return rows


def _header(rows: list[list[str]], where: _Where) -> tuple[list[str], list[str]]:
    """The header's columns and concept names, checked: required columns, no duplicates, at least
    one data row."""
    if not rows or all(not any(cell.strip() for cell in r) for r in rows):
        raise where(None, None, "the file is empty (expected a header row and data rows)")
    header = [h.strip() for h in rows[0]]
    dup = sorted({h for h in header if header.count(h) > 1})
    if dup:
        raise where(None, dup[0], "column appears more than once in the header")
    for name in ("step", "class"):
        if name not in header:
            raise where(None, name, f"required column is missing (header: {header})")
    concepts = [h[len(Z_PREFIX) :] for h in header if h.startswith(Z_PREFIX)]
    if not concepts and "accuracy" not in header:
        raise where(
            None, "z_<concept>", "need at least one z_<concept> column or an accuracy column"
        )
    if any(not c for c in concepts):
        raise where(None, Z_PREFIX, "a concept column needs a name after 'z_'")
    if not any(any(cell.strip() for cell in r) for r in rows[1:]):
        raise where(None, None, "the file has a header but no data rows")
    return header, concepts


def _row(cell: dict[str, str], concepts: list[str], int_steps: bool, where: _Where, row_no: int):
    """One data row: (trajectory key, step, z, accuracy), each cell checked."""
    step = _number(cell["step"], where, row_no, "step")
    if step < 0:
        raise where(
            row_no,
            "step",
            f"{cell['step']} is negative; a step (training step or model time) counts from 0",
        )
    if int_steps:
        step = int(cell["step"])
    label = cell["class"]
    if not label:
        raise where(row_no, "class", "the class label is empty")
    seed = None
    if cell.get("seed", ""):
        if not _is_int(cell["seed"]):
            raise where(row_no, "seed", f"{cell['seed']!r} is not an integer")
        seed = int(cell["seed"])
    key = (cell.get("run", ""), seed, label, cell.get("protocol", "") or "naive")
    cells = [cell[Z_PREFIX + c] for c in concepts]
    if concepts and not any(cells):
        z = [math.nan] * len(concepts)  # a missing point: nothing was readable
    else:
        for c, text in zip(concepts, cells):
            if not text:
                raise where(
                    row_no,
                    Z_PREFIX + c,
                    "is empty while other z_ cells are not; a point is either whole or "
                    "missing (every z_ cell empty: nothing was readable)",
                )
        z = [_unit(text, where, row_no, Z_PREFIX + c) for c, text in zip(concepts, cells)]
    for name in [h for h in cell if h.startswith(SHARE_PREFIX) or h in UNIT_COLUMNS]:
        if cell[name]:
            _unit(cell[name], where, row_no, name)
    if cell.get("samples", "") and not cell["samples"].isdigit():
        raise where(row_no, "samples", f"{cell['samples']!r} is not a count of samples")
    acc = (
        _unit(cell["accuracy"], where, row_no, "accuracy") if cell.get("accuracy", "") else math.nan
    )
    return key, step, z, acc
