"""A saved record: one frozen, typed class per JSON file (each part defines the records it writes).

An analysis (fitting) builds its record and writes it; a figure reads it back through the same class
and uses its fields, so the file's layout is stated once, here, and never re-derived by string keys
in two places:

    FitRecord(log=..., model=..., fits=rows, ...).write(out / FitRecord.FILE)     # the analysis
    rec = FitRecord.read(path)          # the figure: a folder holding fit.json, or the file itself
    rec.fits, rec.log

Reading checks what a figure would otherwise meet as a KeyError deep in matplotlib: the file exists
(else: the command that writes it), it is a JSON object with every required field, each row of a
listed field holds the keys the figures read (and the values they read have their JSON types: a
number, not the string '0.5'), and where a field is missing it says which record the file is instead
(a fit.json given where a study.json was wanted). Fields added after files were saved have defaults,
so older records still read. Fields a record does not know are kept (``extra``) and written back
after the known ones. The JSON keys are the field names, except ``class`` (a Python keyword), held
as ``label``. Each field's JSON type is checked on reading (a list, an object, a string, a number,
or null where the field allows it); nested values stay plain JSON (lists and mappings) as the file
holds them; the records are frozen, their contents are not copied.

Standard library only (and core.files), so theory, fitting and figures can all use it.
"""

from __future__ import annotations

import os
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar, Mapping, TypeVar

from core.files import read_json, write_json

R = TypeVar("R", bound="Record")
# every record class, in definition order (to say which one a file is)
KNOWN: list[type["Record"]] = []


def _label() -> Any:
    """The ``class`` key, held as ``label``."""
    return field(metadata={"key": "class"})


@dataclass(frozen=True, kw_only=True)
class Record:
    """A saved JSON record (see the module docstring); subclasses set FILE, WRITER and ROWS."""

    FILE: ClassVar[str] = ""  # the file's usual name, read when a folder is given
    WRITER: ClassVar[str] = ""  # the command that writes it, named in errors
    # list field -> {key: JSON type} of what the figures read in each of its rows ("float | None",
    # "Any"): every row holds the key, or may lack it where the key ends in "?" (typed if present)
    ROWS: ClassVar[Mapping[str, Mapping[str, str]]] = {}

    extra: Mapping[str, Any] = field(default_factory=dict, kw_only=True, repr=False, compare=False)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        KNOWN.append(cls)

    @classmethod
    def keys(cls) -> dict[str, str]:
        """JSON key -> field name, in the file's order."""
        return {f.metadata.get("key", f.name): f.name for f in fields(cls) if f.name != "extra"}

    @classmethod
    def required(cls) -> list[str]:
        """The JSON keys every such file holds."""
        out = []
        for f in fields(cls):
            if f.name != "extra" and f.default is MISSING and f.default_factory is MISSING:
                out.append(f.metadata.get("key", f.name))
        return out

    def to_json(self) -> dict[str, Any]:
        """The JSON object, known fields first in their order, then the unknown ones."""
        doc = {key: getattr(self, name) for key, name in self.keys().items()}
        return {**doc, **{k: v for k, v in self.extra.items() if k not in doc}}

    def write(self, path: str | os.PathLike) -> Path:
        """Write the record atomically to ``path`` (a file) and return it."""
        return write_json(path, self.to_json())

    @classmethod
    def from_json(cls: type[R], doc: Any, where: str = "") -> R:
        """The record held by a parsed JSON document; ValueError (naming ``where``) when it is not
        one."""
        where = where or f"a {cls.FILE}"
        if not isinstance(doc, dict):
            raise ValueError(
                f"{where}: not a JSON object, so not the {cls.FILE} that {cls.WRITER} writes"
            )
        missing = [k for k in cls.required() if k not in doc]
        if missing:
            raise ValueError(
                f"{where}: lacks {', '.join(map(repr, missing))}, so it is not the {cls.FILE} that "
                f"{cls.WRITER} writes{_looks_like(doc, cls)}; write it again with {cls.WRITER}"
            )
        for f in fields(cls):
            key = f.metadata.get("key", f.name)
            if key in doc and not _is(doc[key], str(f.type)):
                raise ValueError(
                    f"{where}: '{key}' is {type(doc[key]).__name__} {doc[key]!r:.40}, not "
                    f"{f.type}; "
                    f"write it again with {cls.WRITER}"
                )
        for key, types in cls.ROWS.items():
            _check_rows(doc.get(key), key, types, where, cls)
        cls._check_values(doc, where)
        known = cls.keys()
        values = {name: doc[key] for key, name in known.items() if key in doc}
        return cls(**values, extra={k: v for k, v in doc.items() if k not in known})

    @classmethod
    def _check_values(cls, doc: dict, where: str) -> None:
        """Checks of values beyond their JSON types (a subclass's); ValueError naming ``where``."""

    @classmethod
    def rows_of(cls, path, name: str) -> list:
        """The rows of list field ``name`` of the record at ``path``, read and checked; a ValueError
        when it holds none (nothing to draw)."""
        rows = getattr(cls.read(path), name)
        if not rows:
            raise ValueError(f"{path}: holds no {name}, so there is nothing to draw")
        return rows

    @classmethod
    def read(cls: type[R], path: str | os.PathLike) -> R:
        """The record in ``path`` (the file, or a folder holding FILE)."""
        path = Path(path)
        path = path / cls.FILE if path.is_dir() else path
        if not path.exists():
            raise ValueError(
                f"{path}: no such file; write it with {cls.WRITER} (--out {path.parent})"
            )
        return cls.from_json(read_json(path, cls.FILE), str(path))


_TYPES = {"list": list, "dict": dict, "str": str, "int": int, "float": (int, float), "bool": bool}


def _is(value: Any, annotation: str) -> bool:
    """Whether a JSON value fits a field's annotation ("list", "str | None", "Any", ...)."""
    allowed = [t.strip() for t in annotation.split("|")]
    if value is None:
        return "None" in allowed or "Any" in allowed
    if isinstance(value, bool) and "bool" not in allowed:  # JSON true is not a number here
        return "Any" in allowed
    return any(t == "Any" or (t in _TYPES and isinstance(value, _TYPES[t])) for t in allowed)


def _numbers(value: Any, where: str, cls: type[Record]) -> None:
    """``value`` is a number, null, or a list or object of them (nested); ValueError naming the
    first that is not."""
    if value is None or _is(value, "float"):
        return
    if isinstance(value, (list, dict)):
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            _numbers(item, f"{where}[{key!r}]", cls)
        return
    raise ValueError(
        f"{where} is {type(value).__name__} {value!r:.40}, not a number; write it again with "
        f"{cls.WRITER}"
    )


def _check_rows(
    rows: Any, key: str, types: Mapping[str, str], where: str, cls: type[Record]
) -> None:
    """Every row of the list ``key`` (its type already checked) is an object holding the keys of
    ``types`` (but those ending in "?"), each value of its JSON type (a number, not the string
    '0.5')."""
    needs = [k for k in types if not k.endswith("?")]
    for i, row in enumerate(rows if isinstance(rows, list) else []):
        lacks = [k for k in needs if not isinstance(row, dict) or k not in row]
        if lacks:
            raise ValueError(
                f"{where}: {key}[{i}] lacks {', '.join(map(repr, lacks))} (written by an older "
                f"{cls.WRITER}?); write it again with {cls.WRITER}"
            )
        for name, annotation in types.items():
            name = name.removesuffix("?")
            if name in row and not _is(row[name], annotation):
                value = row[name]
                raise ValueError(
                    f"{where}: {key}[{i}].{name} is {type(value).__name__} {value!r:.40}, not "
                    f"{annotation}; write it again with {cls.WRITER}"
                )


def _looks_like(doc: dict, wanted: type[Record]) -> str:
    """' (it looks like a X.json)' when the keys are another record's, else ''."""
    for other in KNOWN:
        if other is not wanted and all(k in doc for k in other.required()):
            return f" (it looks like a {other.FILE}, which {other.WRITER} writes)"
    return ""
