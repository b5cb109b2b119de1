"""The saved records that join the analyses to the figures: one frozen, typed class per JSON file.

An analysis (fitting) builds its record and writes it; a figure reads it back through the same class and uses
its fields, so the file's layout is stated once, here, and never re-derived by string keys in two places:

    FitRecord(log=..., model=..., fits=rows, ...).write(out / FitRecord.FILE)     # fitting.fit
    rec = FitRecord.read(path)          # figures.fit: a folder holding fit.json, or the file itself
    rec.fits, rec.log

Reading checks what a figure would otherwise meet as a KeyError deep in matplotlib: the file exists (else: the
command that writes it), it is a JSON object with every required field, each row of a listed field holds the
keys the figures read, and where a field is missing it says which record the file is instead (a fit.json given
where a study.json was wanted). Fields added after files were saved have defaults, so older records still read.
Fields a record does not know are kept (``extra``) and written back after the known ones. The JSON keys are
the field names, except ``class`` (a Python keyword), held as ``label``. Each field's JSON type is checked on
reading (a list, an object, a string, a number, or null where the field allows it); nested values stay plain
JSON (lists and mappings) as the file holds them; the records are frozen, their contents are not copied.

Standard library only (and theory.files), so theory, fitting and figures can all use it.
"""

from __future__ import annotations

import os
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar, Mapping, TypeVar

from theory.files import read_json, write_json

R = TypeVar("R", bound="Record")


def _label() -> Any:
    """The ``class`` key, held as ``label``."""
    return field(metadata={"key": "class"})


@dataclass(frozen=True, kw_only=True)
class Record:
    """A saved JSON record (see the module docstring); subclasses set FILE, WRITER and ROWS."""

    FILE: ClassVar[str] = ""  # the file's usual name, read when a folder is given
    WRITER: ClassVar[str] = ""  # the command that writes it, named in errors
    ROWS: ClassVar[Mapping[str, tuple[str, ...]]] = {}  # list field -> keys each of its rows holds

    extra: Mapping[str, Any] = field(default_factory=dict, kw_only=True, repr=False, compare=False)

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
        """The record held by a parsed JSON document; ValueError (naming ``where``) when it is not one."""
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
                    f"{where}: '{key}' is {type(doc[key]).__name__} {doc[key]!r:.40}, not {f.type}; "
                    f"write it again with {cls.WRITER}"
                )
        for key, needs in cls.ROWS.items():
            _check_rows(doc.get(key), key, needs, where, cls)
        known = cls.keys()
        values = {name: doc[key] for key, name in known.items() if key in doc}
        return cls(**values, extra={k: v for k, v in doc.items() if k not in known})

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
    return any(t == "Any" or isinstance(value, _TYPES.get(t, object)) for t in allowed)


def _check_rows(rows: Any, key: str, needs: tuple[str, ...], where: str, cls: type[Record]) -> None:
    """Every row of the list ``key`` (its type already checked) is an object holding ``needs``."""
    for i, row in enumerate(rows or []):
        lacks = [k for k in needs if not isinstance(row, dict) or k not in row]
        if lacks:
            raise ValueError(
                f"{where}: {key}[{i}] lacks {', '.join(map(repr, lacks))} (written by an older "
                f"{cls.WRITER}?); write it again with {cls.WRITER}"
            )


def _looks_like(doc: dict, wanted: type[Record]) -> str:
    """' (it looks like a X.json)' when the keys are another record's, else ''."""
    for other in RECORDS:
        if other is not wanted and all(k in doc for k in other.required()):
            return f" (it looks like a {other.FILE}, which {other.WRITER} writes)"
    return ""


@dataclass(frozen=True, kw_only=True)
class FitRecord(Record):
    """fit.json: the per-run model fits of one log."""

    FILE = "fit.json"
    WRITER = "python -m fitting.fit"
    ROWS = {"fits": ("run", "seed", "class", "protocol", "memorization_point")}

    log: str
    model: str
    fits: list
    skipped: list = field(default_factory=list)
    lags: list = field(default_factory=list)
    stamp: dict = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class SimJointRecord(Record):
    """sim_joint.json: SIM and eq1 fitted jointly to every class of each run."""

    FILE = "sim_joint.json"
    WRITER = "python -m fitting.sim_joint"
    ROWS = {"runs": ("run", "seed", "concepts", "classes", "models", "curves")}

    log: str
    protocol: str
    runs: list
    skipped: list = field(default_factory=list)
    stamp: dict = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class TurnRecord(Record):
    """turn.json: a run's turns toward the held-out classes' corners."""

    FILE = "turn.json"
    WRITER = "python -m fitting.turn"
    ROWS = {"turns": ("class", "protocol", "turn_step", "turn_point")}

    log: str
    min_dev: float | None = None
    min_angle: float | None = None
    turns: list = field()


@dataclass(frozen=True, kw_only=True)
class StudyRecord(Record):
    """study.json: learning, turn, behavior and capability per run and per level of a sweep."""

    FILE = "study.json"
    WRITER = "python -m fitting.study"
    ROWS = {"runs": ("seed", "learning", "held_out"), "levels": ("signal",)}

    sweep: str
    by: str
    level: float
    persist: int
    held_out: list
    runs: list
    levels: list
    relations: dict = field(default_factory=dict)
    only: str = ""  # fitting.study --only: the runs studied, when not the whole sweep


@dataclass(frozen=True, kw_only=True)
class MaskingRecord(Record):
    """masking.json: a masking sweep's delays, bias and over-prompting rescue (paper Fig. 8-10)."""

    FILE = "masking.json"
    WRITER = "python -m fitting.masking"
    ROWS = {
        "runs": (
            "p",
            "class",
            "concepts",
            "path",
            "curves",
            "first_step",
            "masked_class",
            "steps_near_masked_class",
            "left_masked_class",
        )
    }

    label: str = _label()
    persist: int = field()
    runs: list = field()
    levels: list | None = None


@dataclass(frozen=True, kw_only=True)
class ElicitationRecord(Record):
    """elicitation.json: one run's behavior and capability steps (paper Fig. 6)."""

    FILE = "elicitation.json"
    WRITER = "python -m fitting.capability"

    run: str
    label: str = _label()
    persist: int = field()
    protocols: list = field()
    capability_unbiased: Any = None
    capability_protocol: list = field(default_factory=list)
    first_step: dict = field()
    lag_behavior_minus_capability: Any = field()
    settled_step: dict | None = None
    settled_lag_behavior_minus_capability: Any = None
    curves: dict = field()
    intervals: Any = None
    control: Any = None


@dataclass(frozen=True, kw_only=True)
class ElicitationSummaryRecord(Record):
    """elicitation_summary.json: behavior and capability over runs, with each run's curves."""

    FILE = "elicitation_summary.json"
    WRITER = "python -m fitting.capability"
    ROWS = {"per_run": ("curves",)}

    runs: list
    label: str = _label()
    summary: dict = field()
    settled: dict = field()
    mean_curves: dict = field(default_factory=dict)
    per_run: list | None = None


@dataclass(frozen=True, kw_only=True)
class PredictionRecord(Record):
    """prediction.json: a pooled law fitted on some runs and scored on the held-out ones."""

    FILE = "prediction.json"
    WRITER = "python -m fitting.predict"

    model: str
    law_name: str | None = None
    label: str = _label()
    protocol: str = field()
    covariate: str = field()
    concepts: list = field()
    law: dict = field()
    train: dict = field()
    rmse_train: float = field()
    holdout: dict = field()
    log: list = field(default_factory=list)
    covariates: list = field(default_factory=list)
    stamp: dict = field(default_factory=dict)
    seconds: dict = field(default_factory=dict)
    per_run_fits: dict = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class LeaveOutRecord(Record):
    """leave_out.json: a pooled law against the baselines, one level of a covariate left out at a time."""

    FILE = "leave_out.json"
    WRITER = "python -m fitting.predict --leave-out"
    ROWS = {"levels": ("left_out", "law")}

    column: str
    label: str = _label()
    protocol: str = field()
    model: str = ""
    law_name: str | None = None
    onset: bool = False
    compete: bool = False
    discrepancy: str | None = None
    covariate: str | None = None
    train_per_level: int | None = None
    draws: int | None = None
    levels: list = field()
    means: dict = field(default_factory=dict)
    differences: dict = field(default_factory=dict)
    stamp: dict = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class LadderRecord(Record):
    """ladder.json: one row per training run (memorized as, turn, composed, capability, cost)."""

    FILE = "ladder.json"
    WRITER = "python -m fitting.ladder"
    ROWS = {"rows": ("run",)}

    label: str = _label()
    persist: int = field()
    rows: list = field()


RECORDS: tuple[type[Record], ...] = (
    FitRecord,
    SimJointRecord,
    TurnRecord,
    StudyRecord,
    MaskingRecord,
    ElicitationRecord,
    ElicitationSummaryRecord,
    PredictionRecord,
    LeaveOutRecord,
    LadderRecord,
)
