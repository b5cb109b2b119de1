"""The covariates table of a sweep (COV.csv: a ``run`` column and numeric ``<name>_<concept>``
columns, as ``python -m pipeline.sweep collect`` writes covariates.csv): reading one or several,
each run's covariates, its masking fraction, and choosing runs by id or by ``COLUMN=VALUE``. Every
error names the file, row and column."""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Sequence

from core.cli import UsageError
from core.files import read_text


def read_table(path: Path) -> dict[str, dict[str, str]]:
    """COV.csv as run -> {column: text} (plus ``_row`` and ``_file``, for messages); ValueError
    naming the file and row."""
    rows = list(csv.reader(read_text(path, "covariates table (CSV)").splitlines()))
    if not rows or "run" not in rows[0]:
        raise ValueError(
            f"{path}: no 'run' column in the header; a covariates table has run and "
            "<name>_<concept> columns "
            "(python -m pipeline.sweep collect writes one)"
        )
    header, table = rows[0], {}
    for line, row in enumerate(rows[1:], 2):
        if not any(cell.strip() for cell in row):
            continue
        cells = dict(zip(header, row))
        run = cells.get("run", "")
        if run in table:
            raise ValueError(f"{path}, row {line}: run {run!r} appears twice")
        table[run] = cells | {"_row": str(line), "_file": str(path)}
    return table


def read_tables(paths: Sequence[Path]) -> dict[str, dict[str, str]]:
    """Several covariates tables as one (pooled sweeps); a run in two of them is an error naming
    both."""
    table: dict[str, dict[str, str]] = {}
    for path in paths:
        for run, cells in read_table(path).items():
            if run in table:
                raise ValueError(
                    f"{path}, row {cells['_row']}: run {run!r} is also in {table[run]['_file']}, "
                    f"row {table[run]['_row']}; pooled sweeps need distinct run ids (e.g. "
                    "distinct seeds)"
                )
            table[run] = cells
    return table


LOW, HIGH = 1e-12, 1e12  # covariates beyond these overflow the laws' powers of them


def read_covariates(
    table: dict[str, dict[str, str]], name: str, concepts: Sequence[str]
) -> dict[str, list[float]]:
    """run -> [covariate per concept] from the ``<name>_<concept>`` columns; ValueError naming file,
    row, column."""
    wanted = [f"{name}_{c}" for c in concepts]
    for path in dict.fromkeys(cells["_file"] for cells in table.values()):
        header = set().union(*(cells.keys() for cells in table.values() if cells["_file"] == path))
        missing = [w for w in wanted if w not in header]
        if missing:
            have = sorted(
                {h.rsplit("_", 1)[0] for h in header if any(h.endswith("_" + c) for c in concepts)}
            )
            raise ValueError(
                f"{path}: no column {', '.join(missing)} for --covariate {name}; covariates here: "
                f"{', '.join(have) or 'none'} (columns <name>_<concept> for concepts "
                f"{', '.join(concepts)})"
            )
    out = {}
    for run, cells in table.items():
        values = []
        for w in wanted:
            text = cells.get(w, "")
            where = f"{cells['_file']}, row {cells['_row']}, column {w}"
            try:
                v = float(text)
            except ValueError:
                raise ValueError(f"{where}: {text!r} is not a number") from None
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"{where}: {v} must be a positive number (the law takes its log)")
            if not LOW <= v <= HIGH:
                raise ValueError(
                    f"{where}: {v:g} is outside [{LOW:g}, {HIGH:g}], the range a covariate law "
                    "can use "
                    "(rescale the column)"
                )
            values.append(v)
        out[run] = values
    constant = constant_columns(out, concepts, name)
    if constant and len(constant) == len(wanted):
        first = next(iter(table.values()))
        raise ValueError(
            f"{first['_file']}, column{'s' if len(constant) > 1 else ''} {', '.join(constant)}: "
            "the same "
            "value in every run; a covariate law needs a covariate that varies (choose another "
            "--covariate)"
        )
    return out


def constant_columns(
    values: dict[str, list[float]], concepts: Sequence[str], name: str
) -> list[str]:
    """The ``<name>_<concept>`` columns whose value is the same in every run: the law cannot tell
    that concept's exponent from its scale (a Δcolor sweep's size signal, say); the caller says
    so."""
    runs = list(values.values())
    return [
        f"{name}_{c}"
        for i, c in enumerate(concepts)
        if len(runs) > 1 and len({v[i] for v in runs}) == 1
    ]


def read_shift(table: dict[str, dict[str, str]], column: str) -> dict[str, float]:
    """run -> masking fraction p in [0, 1] from ``column``; ValueError naming the file, row and
    column."""
    out = {}
    for run, cells in table.items():
        if column not in cells:
            raise UsageError(
                f"{cells['_file']}: no column {column!r} (--shift): eq2 needs each run's masking "
                "fraction"
            )
        where = f"{cells['_file']}, row {cells['_row']}, column {column}"
        try:
            v = float(cells[column])
        except ValueError:
            raise UsageError(f"{where}: {cells[column]!r} is not a number") from None
        if not 0 <= v <= 1:
            raise UsageError(f"{where}: {v} is not a masking fraction in [0, 1]")
        out[run] = v
    return out


def select(
    text: str, flag: str, runs: Sequence[str], table: dict[str, dict[str, str]], log: str
) -> list[str]:
    """Runs named by ``RUN,..`` (ids may hold commas, as a sweep's do: the longest id that matches
    wins) or by ``COLUMN=VALUE`` of the covariates table (``sep_color=0.5``: every run at that
    value, e.g. all its seeds)."""
    if not text.strip(" ,"):
        raise ValueError(
            f"{flag} {text!r}: give one or more run ids, or COLUMN=VALUE of the covariates (e.g. "
            "sep_color=0.5)"
        )
    tokens, chosen, i = text.split(","), [], 0
    while i < len(tokens):
        j = next(
            (j for j in range(len(tokens), i, -1) if ",".join(tokens[i:j]).strip() in runs), None
        )
        if j is not None:
            chosen.append(",".join(tokens[i:j]).strip())
            i = j
            continue
        key, _, value = tokens[i].partition("=")
        key = key.strip()
        if value and any(key in cells for cells in table.values()):
            hits = [r for r in runs if _same(table.get(r, {}).get(key), value)]
            if not hits:
                raise UsageError(f"{flag} {tokens[i]!r}: no run of {log} has {key} = {value}")
            chosen += hits
            i += 1
            continue
        if tokens[i].strip():
            raise UsageError(
                f"{flag} {tokens[i]!r}: not a run of {log}, nor COLUMN=VALUE of the covariates; "
                "runs: "
                f"{', '.join(runs)}"
            )
        i += 1
    if not chosen:
        raise UsageError(f"{flag} {text!r}: names no run")
    return list(dict.fromkeys(chosen))


def _same(cell: str | None, value: str) -> bool:
    if cell is None:
        return False
    try:
        return math.isclose(float(cell), float(value), rel_tol=1e-9)
    except ValueError:
        return cell.strip() == value.strip()
